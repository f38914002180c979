//! Block-Jacobi on the GPU: the inverses of `A`'s diagonal blocks, computed on the host by
//! [`BlockInverse`] and uploaded, applied by `kernels-gpu/src/block_jacobi.rs`, one row per thread.

use super::operator::Precondition;
use crate::device::{DeviceVector, Gpu};
use crate::enqueue::krylov::block_jacobi;
use crate::formats::csr::CsrRef;
use crate::reference::block_jacobi::BlockInverse;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;

/// Block-Jacobi: `z = B⁻¹ r`, `B` the block diagonal of `A` in blocks of `block` consecutive rows
/// and columns (the last one shorter when `block` does not divide the order). Stronger than
/// [`Jacobi`](super::Jacobi) where the unknowns of a block are coupled (the degrees of freedom of a
/// node, a grid line); it costs `block` multiply-adds a row and `block * n` stored entries.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Bicgstab, BlockJacobi, Preconditioner, SolverOptions};
/// use gpu_spmv::{CsrRef, Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(4);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let preconditioner = BlockJacobi::new(&gpu, CsrRef::from(&a), 2)?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let plan = gpu.plan(&device_a, Kernel::Auto)?;
/// let mut solver = Bicgstab::with_preconditioner(plan, options, Box::new(preconditioner))?;
/// # let _ = &mut solver;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct BlockJacobi<T> {
    inverses: CudaSlice<T>,
    n: usize,
    block: u32,
}

impl<T: Scalar> BlockJacobi<T> {
    /// Inverts the diagonal blocks of `a` on the host (in f64, rounded once to `T`) and uploads
    /// them. Refused as [`BlockInverse::new`] refuses (the block size outside
    /// `1..=MAX_BLOCK`, a matrix that is not square, a singular block, naming its rows), and
    /// while the stream captures a graph (it uploads).
    pub fn new(gpu: &Gpu, a: CsrRef<'_, T>, block: usize) -> Result<Self> {
        let host = BlockInverse::new(a, block)?;
        let inverses = gpu.upload(host.entries())?;
        // `BlockInverse` holds `block <= MAX_BLOCK`.
        let block = u32::try_from(block).unwrap_or(u32::MAX);
        Ok(Self { inverses, n: host.n(), block })
    }

    /// The inverses of `a`'s blocks after a change of its values, copied in place on the stream (no
    /// device allocation). Refused as [`BlockJacobi::new`] refuses and for a matrix of another
    /// order; a refusal leaves the old inverses.
    pub fn set(&mut self, gpu: &Gpu, a: CsrRef<'_, T>) -> Result<()> {
        if (a.nrows(), a.ncols()) != (self.n, self.n) {
            let got = if a.nrows() != self.n { a.nrows() } else { a.ncols() };
            return Err(Error::DimensionMismatch {
                what: "the block-Jacobi matrix's order",
                expected: self.n,
                got,
            });
        }
        gpu.not_capturing("a copy from the host while the stream captures a graph")?;
        let host = BlockInverse::new(a, self.block as usize)?;
        if !host.entries().is_empty() {
            gpu.stream().memcpy_htod(host.entries(), &mut self.inverses)?;
        }
        Ok(())
    }

    /// The order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The block size.
    pub fn block(&self) -> usize {
        self.block as usize
    }
}

impl<T: Scalar> Precondition<T> for BlockJacobi<T> {
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        block_jacobi(gpu, &self.inverses, self.n, self.block, r, z)
    }

    fn order(&self) -> Option<usize> {
        Some(self.n())
    }
}
