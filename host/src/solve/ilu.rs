//! ILU(0) and IC(0) on the GPU: the incomplete LU (or Cholesky) factors of `A`, computed on the host
//! by [`IluFactors`](crate::reference::ilu::IluFactors) and uploaded with their level schedules, or
//! computed on the device from a [`DeviceCsr`] over the same schedules (`kernels-gpu/src/ilu_factor.rs`,
//! and again for new values of its pattern: [`Ilu0::refactor`]), applied by
//! `kernels-gpu/src/ilu.rs`: a wide level a launch, a run of narrow levels one launch of one block,
//! its levels software-pipelined (`docs/PERF.md`, section 22).

use super::operator::Precondition;
use crate::device::{DeviceCsr, DeviceVector, Gpu};
use crate::enqueue::ilu_factor::DeviceFactorisation;
use crate::enqueue::krylov::DeviceIlu;
use crate::formats::csr::CsrRef;
use crate::reference::ilu::IluFactors;
use crate::reference::ilu_pattern::FactorKind;
use crate::scalar::Scalar;
use crate::{Error, Result};

/// ILU(0): `z = U⁻¹ L⁻¹ r`, `L U ≈ A` on `A`'s own pattern (Saad, "Iterative Methods for Sparse
/// Linear Systems", 2nd ed., section 10.3.2). Stronger than Jacobi and block-Jacobi where the
/// couplings reach beyond a block (convection along a grid, a circuit), at the cost of two
/// triangular solves an apply, each as many sequential steps as its schedule has levels (the rows of
/// a level are solved at once): about `nx + ny` a solve on an `nx × ny` grid, a barrier each where
/// the levels are narrow and a launch each where they are wide ([`Ilu0::launches`]). The GPU apply
/// matches [`IluFactors::apply`](crate::reference::ilu::IluFactors::apply) bit for bit.
///
/// Made from the host matrix ([`Ilu0::new`]), the factors are the oracle's and are not refreshed by
/// [`DeviceCsr::update_values`]: make a new one for new values. Made from a device matrix
/// ([`Ilu0::on_device`]), they are factorised on the device, in the matrix's precision as cuSPARSE's
/// `csrilu02` factorises (f64: the oracle's bit for bit; f32: rounded at every step where the oracle
/// factorises in f64 and rounds once, so they differ by rounding, growing with the levels), and
/// [`Ilu0::refactor`] factorises new values of the same pattern again on the stream: a Newton loop's
/// `update_values` then `refactor`, with nothing allocated, capturable in a graph.
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
    /// The device factorisation's pattern data, when the factors were made on the device.
    factorisation: Option<DeviceFactorisation<T>>,
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
        Ok(Self { device: DeviceIlu::upload(gpu, factors)?, factorisation: None })
    }

    /// Factorises `a` on the device. The host computes, once, only what the pattern gives (it reads
    /// `a`'s column indices back): each entry's place in the sorted, merged rows, each row's
    /// diagonal, the level schedules and the solves' layout; then the device factorises row by row
    /// in the IKJ order (Saad, section 10.3.2, Algorithm 10.4), a level of the lower solve's
    /// schedule at a time (the rows a row's `L` part names are in earlier levels: Anderson & Saad
    /// 1989, Naumov 2011), with the solve's launches, and writes the factors straight into the
    /// solves' layout. Waits for the stream to read the faults. Refused: `a` of another `Gpu`; as
    /// [`IluFactors::new`](crate::reference::ilu::IluFactors::new) refuses (not square, an order
    /// past `u32`, a row without a diagonal entry, which is refused before any value is read, an
    /// entry not finite, a zero or non-finite pivot naming its row, a factor entry not finite), but
    /// in `T`; for more than `2³¹ - 1` entries or factors of more entries than `u32` counts
    /// ([`Error::TooLarge`]); and while the stream captures a graph.
    pub fn on_device(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<Self> {
        Self::factorised(gpu, FactorKind::Ilu0, a)
    }

    fn factorised(gpu: &Gpu, kind: FactorKind, a: &DeviceCsr<T>) -> Result<Self> {
        let (factorisation, device) = DeviceFactorisation::new(gpu, kind, a)?;
        Ok(Self { device, factorisation: Some(factorisation) })
    }

    /// Enqueues the factorisation of `a`'s values, the pattern [`Ilu0::on_device`] was made for
    /// (after [`DeviceCsr::update_values`]), into these factors: a memset and the lower schedule's
    /// launches, nothing allocated or read back, so it may be captured in a graph. It does not wait
    /// for the device: a zero pivot or a value that is not finite is reported by
    /// [`Ilu0::verify`], and until then shows in the applies, which then give values that are not
    /// finite (the solvers report that as a breakdown). Refused before anything is enqueued:
    /// factors made on the host ([`Error::Unsupported`]), `a` of another `Gpu`, of another order or
    /// entry count than the pattern's ([`Error::DimensionMismatch`]). A matrix of the same order
    /// and entry count with another pattern is read safely, into wrong factors.
    pub fn refactor(&mut self, gpu: &Gpu, a: &DeviceCsr<T>) -> Result<()> {
        let factorisation = self.factorisation.as_mut().ok_or(Error::Unsupported(
            "a refactorisation of factors made on the host: make them with `on_device`",
        ))?;
        factorisation.enqueue(gpu, &mut self.device, a)
    }

    /// Waits for the stream and reports the last device factorisation's faults, as
    /// [`Ilu0::on_device`] refuses values (naming the first row with a zero pivot); `Ok` for factors
    /// made on the host, which were checked when made. Refused while the stream captures a graph.
    pub fn verify(&self, gpu: &Gpu) -> Result<()> {
        self.factorisation.as_ref().map_or(Ok(()), |f| f.verify(gpu, &self.device))
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

    fn order(&self) -> Option<usize> {
        Some(self.n())
    }
}

/// IC(0): `z = (L Lᵀ)⁻¹ r`, `L Lᵀ ≈ A` on the pattern of `A`'s lower triangle (Meijerink & van der
/// Vorst 1977; Saad, section 10.3.5), for symmetric positive definite systems: the preconditioner
/// keeps the symmetry that CG needs, which ILU(0)'s rounding does not. Only the lower triangle of
/// `A` is read. The factors are kept in ILU(0)'s layout
/// ([`IluFactors::incomplete_cholesky`](crate::reference::ilu::IluFactors::incomplete_cholesky)), so
/// the apply is [`Ilu0`]'s, level by level ([`Ilu0::launches`]), and matches the oracle's
/// [`IluFactors::apply`](crate::reference::ilu::IluFactors::apply) bit for bit. Made on the host
/// ([`Ic0::new`]), not refreshed by an update of the matrix's values; made on the device
/// ([`Ic0::on_device`], in the matrix's precision, as `csric02`), factorised again by
/// [`Ic0::refactor`], as [`Ilu0`]'s.
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

    /// Factorises the lower triangle of `a` on the device, as [`Ilu0::on_device`] does with
    /// IC(0)'s formulas (each `l_ic` then the pivot `a_ii - Σ l_ij²`, over the schedule of the
    /// lower solve), written in ILU(0)'s layout. Refused as [`Ilu0::on_device`] is, with IC(0)'s
    /// refusals (a pivot that is not positive, [`SolveError::NonPositivePivot`](crate::solve::SolveError::NonPositivePivot)).
    pub fn on_device(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<Self> {
        Ok(Self(Ilu0::factorised(gpu, FactorKind::Ic0, a)?))
    }

    /// Enqueues the factorisation of `a`'s new values, as [`Ilu0::refactor`].
    pub fn refactor(&mut self, gpu: &Gpu, a: &DeviceCsr<T>) -> Result<()> {
        self.0.refactor(gpu, a)
    }

    /// The last device factorisation's faults, as [`Ilu0::verify`].
    pub fn verify(&self, gpu: &Gpu) -> Result<()> {
        self.0.verify(gpu)
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

    fn order(&self) -> Option<usize> {
        Some(self.n())
    }
}
