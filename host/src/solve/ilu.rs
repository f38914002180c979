//! ILU(0) and IC(0) on the GPU: the incomplete LU (or Cholesky) factors of `A`, computed on the host
//! by [`IluFactors`](crate::reference::ilu::IluFactors) and uploaded with their level schedules,
//! applied by `kernels-gpu/src/ilu.rs`: a wide level a launch, a run of narrow levels one launch of
//! one block, its levels software-pipelined (`docs/PERF.md`, section 22).

use super::operator::Precondition;
use crate::Result;
use crate::device::{DeviceVector, Gpu};
use crate::enqueue::krylov::DeviceIlu;
use crate::formats::csr::CsrRef;
use crate::reference::ilu::IluFactors;
use crate::scalar::Scalar;

/// ILU(0): `z = U⁻¹ L⁻¹ r`, `L U ≈ A` on `A`'s own pattern (Saad, "Iterative Methods for Sparse
/// Linear Systems", 2nd ed., section 10.3.2). Stronger than Jacobi and block-Jacobi where the
/// couplings reach beyond a block (convection along a grid, a circuit), at the cost of two
/// triangular solves an apply, each as many sequential steps as its schedule has levels (the rows of
/// a level are solved at once): about `nx + ny` a solve on an `nx × ny` grid, a barrier each where
/// the levels are narrow and a launch each where they are wide ([`Ilu0::launches`]). The GPU apply
/// matches [`IluFactors::apply`](crate::reference::ilu::IluFactors::apply) bit for bit.
///
/// The factors are made from the host matrix and not refreshed by
/// [`DeviceCsr::update_values`](crate::DeviceCsr::update_values): make a new one for new values.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Gmres, Ilu0, Preconditioner, SolverOptions};
/// use gpu_spmv::{CsrRef, Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(4);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let preconditioner = Ilu0::new(&gpu, CsrRef::from(&a))?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let plan = gpu.plan(&device_a, Kernel::Auto)?;
/// let mut solver = Gmres::with_preconditioner(plan, options, 30, Box::new(preconditioner))?;
/// # let _ = &mut solver;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Ilu0<T> {
    device: DeviceIlu<T>,
}

impl<T: Scalar> Ilu0<T> {
    /// Factorises `a` on the host and uploads the factors. Refused as
    /// [`IluFactors::new`](crate::reference::ilu::IluFactors::new) refuses (not square, an order
    /// past `u32`, an entry not finite, a row without a diagonal entry or a zero or non-finite
    /// pivot naming its row, a factor entry not finite in `T`), for more entries than `u32`
    /// counts, and while the stream captures a graph (it uploads).
    pub fn new(gpu: &Gpu, a: CsrRef<'_, T>) -> Result<Self> {
        Self::upload(gpu, &IluFactors::new(a)?)
    }

    fn upload(gpu: &Gpu, factors: &IluFactors<T>) -> Result<Self> {
        Ok(Self { device: DeviceIlu::upload(gpu, factors)? })
    }

    /// The order of the matrix.
    pub fn n(&self) -> usize {
        self.device.n()
    }

    /// The levels of the lower and the upper solve: their sequential steps.
    pub fn levels(&self) -> (usize, usize) {
        self.device.levels()
    }

    /// The launches of the lower and the upper solve: a wide level's own, and one for each run of
    /// consecutive levels of at most `ILU_RUN_ROWS` rows (`kernels_gpu::abi`), which a block solves
    /// with a barrier between levels. One each on a 2-D grid of up to 512 unknowns a side.
    pub fn launches(&self) -> (usize, usize) {
        self.device.launches()
    }
}

impl<T: Scalar> Precondition<T> for Ilu0<T> {
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        self.device.apply(gpu, r, z)
    }
}

/// IC(0): `z = (L Lᵀ)⁻¹ r`, `L Lᵀ ≈ A` on the pattern of `A`'s lower triangle (Meijerink & van der
/// Vorst 1977; Saad, section 10.3.5), for symmetric positive definite systems: the preconditioner
/// keeps the symmetry that CG needs, which ILU(0)'s rounding does not. Only the lower triangle of
/// `A` is read. The factors are kept in ILU(0)'s layout
/// ([`IluFactors::incomplete_cholesky`](crate::reference::ilu::IluFactors::incomplete_cholesky)), so
/// the apply is [`Ilu0`]'s, level by level ([`Ilu0::launches`]), and matches the oracle's
/// [`IluFactors::apply`](crate::reference::ilu::IluFactors::apply) bit for bit. Not refreshed by an
/// update of the matrix's values: make a new one for new values.
#[derive(Debug)]
pub struct Ic0<T>(Ilu0<T>);

impl<T: Scalar> Ic0<T> {
    /// Factorises the lower triangle of `a` on the host and uploads the factors. Refused as
    /// [`IluFactors::incomplete_cholesky`](crate::reference::ilu::IluFactors::incomplete_cholesky)
    /// refuses (not square, an order past `u32`, an entry of the lower triangle not finite, a row
    /// without a diagonal entry or a pivot that is not positive, naming its row, a factor entry not
    /// finite in `T`), for more entries than `u32` counts, and while the stream captures a graph.
    pub fn new(gpu: &Gpu, a: CsrRef<'_, T>) -> Result<Self> {
        Ok(Self(Ilu0::upload(gpu, &IluFactors::incomplete_cholesky(a)?)?))
    }

    /// The order of the matrix.
    pub fn n(&self) -> usize {
        self.0.n()
    }

    /// The levels of the lower and the upper solve.
    pub fn levels(&self) -> (usize, usize) {
        self.0.levels()
    }

    /// The launches of the lower and the upper solve, as [`Ilu0::launches`].
    pub fn launches(&self) -> (usize, usize) {
        self.0.launches()
    }
}

impl<T: Scalar> Precondition<T> for Ic0<T> {
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        self.0.apply(gpu, r, z)
    }
}
