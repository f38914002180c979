//! [`DeviceMatrix`]: what every matrix on the device offers, so that [`Gpu::spmv`] takes any format.
//!
//! The checks and degenerate cases every product shares live here, once: the operands must belong to
//! the launching [`Gpu`] and match the matrix's shape, nothing is launched for a matrix without rows,
//! and a product to which `A * x` contributes nothing (`alpha == 0`, or no entries) is the one
//! launch of `y = beta * y`. Only then does a format enqueue its own kernels.

use crate::device::{DeviceCsr, DeviceVector, Gpu};
use crate::launch::formats::scale_vector;
use crate::plan::Kernel;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{Accumulate, Axpby};

pub(crate) mod sealed {
    use super::*;

    /// The crate-private half of [`DeviceMatrix`]. It cannot be named outside the crate, so no other
    /// type implements it, and its [`Launch::launch`] takes [`Operands`], which only [`spmv`] makes,
    /// after its checks.
    pub trait Launch<T: Scalar> {
        /// Whether the matrix's buffers live in `gpu`'s context.
        fn belongs_to(&self, gpu: &Gpu) -> bool;

        /// Enqueues `y = alpha * A * x + beta * y` on `gpu`'s stream. The matrix has rows and entries,
        /// and `alpha != 0`.
        fn launch(&self, gpu: &Gpu, op: Operands<'_, T>) -> Result<()>;
    }

    /// The operands of one product, checked against the matrix and the [`Gpu`].
    #[derive(Debug)]
    pub struct Operands<'a, T> {
        pub(crate) alpha: T,
        pub(crate) beta: T,
        pub(crate) x: &'a DeviceVector<T>,
        pub(crate) y: &'a mut DeviceVector<T>,
    }

    impl<T: Scalar> Operands<'_, T> {
        /// The kernels' view for `y = alpha * A * x + beta * y`.
        pub(crate) fn axpby(&self, gpu: &Gpu) -> Axpby<T> {
            Axpby { x: self.x.addr(gpu), y: self.y.addr(gpu), alpha: self.alpha, beta: self.beta }
        }

        /// The kernels' view for `y += alpha * A * x`.
        pub(crate) fn accumulate(&self, gpu: &Gpu) -> Accumulate<T> {
            Accumulate { x: self.x.addr(gpu), y: self.y.addr(gpu), alpha: self.alpha }
        }
    }
}

use sealed::{Launch, Operands};

/// A matrix on the device in one of the crate's formats: CSR ([`DeviceCsr`], with [`Kernel::Auto`]),
/// ELL, COO, HYB, BRC or dense blocks. [`Gpu::spmv`] takes any of them; every product returns `y` in
/// the caller's row order, whatever order the format keeps its rows in. Sealed: implemented by this
/// crate's device types only.
///
/// ```no_run
/// use gpu_spmv::{Brc, CsrRef, DeviceMatrix, Gpu, brc_model_b2};
/// use nalgebra_sparse::{CooMatrix, CsrMatrix};
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// let mut coo = CooMatrix::new(2, 3);
/// coo.push(0, 0, 2.0f64);
/// coo.push(1, 2, -1.0);
/// let csr = CsrMatrix::from(&coo);
/// let a = CsrRef::from(&csr);
///
/// let gpu = Gpu::new()?;
/// let brc = gpu.upload_brc(&Brc::try_from_csr(a, brc_model_b2(&a.stats(), gpu.sm_count()))?)?;
/// let x = gpu.upload_vector(&[1.0, 2.0, 3.0])?;
/// let mut y = gpu.zeros::<f64>(brc.nrows())?;
/// gpu.spmv(1.0, &brc, &x, 0.0, &mut y)?;
/// assert_eq!(y.to_host(&gpu)?, vec![2.0, -3.0]);
/// # Ok(())
/// # }
/// ```
pub trait DeviceMatrix<T: Scalar>: Launch<T> {
    fn nrows(&self) -> usize;
    fn ncols(&self) -> usize;
    /// Entries of the matrix it was built from (padding not counted).
    fn nnz(&self) -> usize;
}

/// The checks every product makes before anything is launched: all buffers in `gpu`'s context (the
/// matrix's answer is `matrix_on_gpu`), `x` of `ncols` and `y` of `nrows` elements.
pub(crate) fn check_operands<T: Scalar>(
    gpu: &Gpu,
    matrix_on_gpu: bool,
    (nrows, ncols): (usize, usize),
    x: &DeviceVector<T>,
    y: &DeviceVector<T>,
) -> Result<()> {
    if !matrix_on_gpu {
        return Err(Error::ForeignBuffer("the matrix"));
    }
    x.check_gpu(gpu)?;
    y.check_gpu(gpu)?;
    if x.len() != ncols {
        return Err(Error::DimensionMismatch { what: "x", expected: ncols, got: x.len() });
    }
    if y.len() != nrows {
        return Err(Error::DimensionMismatch { what: "y", expected: nrows, got: y.len() });
    }
    Ok(())
}

/// `y = alpha * A * x + beta * y` on any format: the shared checks and degenerate cases, then the
/// format's launches (see [`Gpu::spmv`]).
pub(crate) fn spmv<T: Scalar, A: DeviceMatrix<T> + ?Sized>(
    gpu: &Gpu,
    alpha: T,
    a: &A,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_operands(gpu, a.belongs_to(gpu), (a.nrows(), a.ncols()), x, y)?;
    if let Some(done) = without_matrix(gpu, alpha, (a.nrows(), a.nnz()), beta, y) {
        return done;
    }
    a.launch(gpu, Operands { alpha, beta, x, y })
}

/// The products in which `A * x` contributes nothing, done without the matrix: nothing at all for a
/// matrix without rows, `y = beta * y` when `alpha == 0` (BLAS reads neither `A` nor `x` then) or the
/// matrix has no entries. `None` when the product needs the matrix.
pub(crate) fn without_matrix<T: Scalar>(
    gpu: &Gpu,
    alpha: T,
    (nrows, nnz): (usize, usize),
    beta: T,
    y: &mut DeviceVector<T>,
) -> Option<Result<()>> {
    if nrows == 0 {
        Some(Ok(()))
    } else if alpha == T::ZERO || nnz == 0 {
        Some(scale_vector(gpu, y, beta))
    } else {
        None
    }
}

impl<T: Scalar> Launch<T> for DeviceCsr<T> {
    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceCsr::belongs_to(self, gpu)
    }

    fn launch(&self, gpu: &Gpu, op: Operands<'_, T>) -> Result<()> {
        gpu.spmv_with(Kernel::Auto, op.alpha, self, op.x, op.beta, op.y)
    }
}

impl<T: Scalar> DeviceMatrix<T> for DeviceCsr<T> {
    fn nrows(&self) -> usize {
        DeviceCsr::nrows(self)
    }

    fn ncols(&self) -> usize {
        DeviceCsr::ncols(self)
    }

    fn nnz(&self) -> usize {
        DeviceCsr::nnz(self)
    }
}
