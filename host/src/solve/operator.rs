//! The seams of the solver tier: [`Operator`], what a solver multiplies by (every [`Plan`], so every
//! device format and the transposed view, and a caller's own matrix-free operator), and
//! [`Precondition`], what it preconditions with (the [`Jacobi`] the solvers build from
//! [`Preconditioner::Jacobi`](super::Preconditioner::Jacobi), or a caller's own).

use crate::device::{DeviceVector, Gpu};
use crate::enqueue::krylov::diag_scale;
use crate::enqueue::{DeviceMatrix, Plan};
use crate::reference::{DiagonalNeed, inverse_diagonal};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;

/// A linear operator on the device, `y = A x`, as a solver applies it.
///
/// `apply` enqueues on [`Gpu::stream`] of [`Operator::gpu`] and must neither allocate nor wait for
/// the host, so that a solver's iterations can be captured into a CUDA graph; it may be called
/// after the solve stopped (a solver enqueues its iterations in batches) and must then be harmless.
/// A caller's operator (matrix-free: a finite element operator applied element by element, a
/// stencil; or a composition, as here) implements it over its own kernels or the library's:
///
/// ```no_run
/// use gpu_spmv::solve::Operator;
/// use gpu_spmv::{DeviceCsr, DeviceVector, Gpu, Plan, Result};
///
/// /// `y = s A x`: a scaled operator, with the product of a plan.
/// struct Scaled<'a> {
///     plan: Plan<'a, f64, DeviceCsr<f64>>,
///     s: f64,
/// }
///
/// impl Operator<f64> for Scaled<'_> {
///     fn gpu(&self) -> &Gpu {
///         self.plan.gpu()
///     }
///     fn nrows(&self) -> usize {
///         self.plan.matrix().nrows()
///     }
///     fn ncols(&self) -> usize {
///         self.plan.matrix().ncols()
///     }
///     fn apply(&self, x: &DeviceVector<f64>, y: &mut DeviceVector<f64>) -> Result<()> {
///         self.plan.spmv(self.s, x, 0.0, y)
///     }
/// }
/// ```
pub trait Operator<T: Scalar> {
    /// The GPU whose stream the products run on; the solver's vectors are allocated there.
    fn gpu(&self) -> &Gpu;
    fn nrows(&self) -> usize;
    fn ncols(&self) -> usize;
    /// Enqueues `y = A x` (`x` of [`Operator::ncols`] elements, `y` of [`Operator::nrows`]).
    fn apply(&self, x: &DeviceVector<T>, y: &mut DeviceVector<T>) -> Result<()>;
    /// The count of updates of the operator's values (see `DeviceCsr::values_generation`): a
    /// solver's Jacobi diagonal, made at one count, refuses to run at another. 0 for an operator
    /// whose values do not change.
    fn values_generation(&self) -> u64 {
        0
    }
}

impl<T: Scalar, A: DeviceMatrix<T> + ?Sized> Operator<T> for Plan<'_, T, A> {
    fn gpu(&self) -> &Gpu {
        Plan::gpu(self)
    }

    fn nrows(&self) -> usize {
        self.matrix().nrows()
    }

    fn ncols(&self) -> usize {
        self.matrix().ncols()
    }

    fn apply(&self, x: &DeviceVector<T>, y: &mut DeviceVector<T>) -> Result<()> {
        self.spmv(T::from_f64(1.0), x, T::ZERO, y)
    }

    fn values_generation(&self) -> u64 {
        self.matrix().values_generation()
    }
}

/// A preconditioner on the device: `z = M⁻¹ r`, with `M ≈ A`. The solvers precondition on the right
/// (they solve `A M⁻¹ u = b`, `x = M⁻¹ u`), so the residual they test is the true one's recurrence.
///
/// As [`Operator::apply`], `apply` enqueues on the solver's stream, allocates nothing, waits for
/// nothing, and may run after the solve stopped: it must write only `z` and buffers of its own.
pub trait Precondition<T: Scalar> {
    /// Enqueues `z = M⁻¹ r` on `gpu`'s stream (the solver's operator's).
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()>;

    /// The length of the vectors [`Precondition::apply`] takes, where the preconditioner knows
    /// it: a solver refuses a preconditioner of another order when it is made
    /// ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch), "the preconditioner"),
    /// instead of at its first apply, in the middle of a solve's start. `None`, the default, for
    /// one that checks its vectors in `apply` alone.
    fn order(&self) -> Option<usize> {
        None
    }
}

/// Jacobi: `z = D⁻¹ r`, `D` the diagonal of `A` (Saad, "Iterative Methods for Sparse Linear
/// Systems", 2nd ed., section 10.2). Cheap and embarrassingly parallel; it undoes a bad row scaling,
/// little more.
#[derive(Debug)]
pub struct Jacobi<T> {
    inv_diag: CudaSlice<T>,
    /// The operator's values generation the diagonal was given at.
    generation: u64,
}

impl<T: Scalar> Jacobi<T> {
    /// `1 / diagonal`, uploaded; refused where an entry is zero or not finite
    /// ([`SolveError::SingularDiagonal`](super::SolveError::SingularDiagonal)), and while the
    /// stream captures a graph (it uploads).
    pub fn new(gpu: &Gpu, diagonal: &[T]) -> Result<Self> {
        Self::with_need(gpu, diagonal, DiagonalNeed::NonZero, 0)
    }

    /// As [`Jacobi::new`], with what the solver needs of the diagonal (CG: positive) and the
    /// operator's values generation it belongs to.
    pub(crate) fn with_need(gpu: &Gpu, diagonal: &[T], need: DiagonalNeed, generation: u64) -> Result<Self> {
        let inv_diag = gpu.upload(&inverse_diagonal(diagonal, need)?)?;
        Ok(Self { inv_diag, generation })
    }

    /// The diagonal of the operator's current values, copied in place on the stream, recorded at
    /// `generation`. Refused as [`Jacobi::new`] refuses, and for a diagonal of another length.
    pub(crate) fn set(
        &mut self,
        gpu: &Gpu,
        diagonal: &[T],
        need: DiagonalNeed,
        generation: u64,
    ) -> Result<()> {
        if diagonal.len() != self.inv_diag.len() {
            let (expected, got) = (self.inv_diag.len(), diagonal.len());
            return Err(Error::DimensionMismatch { what: "the diagonal", expected, got });
        }
        gpu.not_capturing("a copy from the host while the stream captures a graph")?;
        let inverse = inverse_diagonal(diagonal, need)?;
        if !inverse.is_empty() {
            gpu.stream().memcpy_htod(&inverse, &mut self.inv_diag)?;
        }
        self.generation = generation;
        Ok(())
    }

    /// `1 / diagonal` on the device, for a fused pass that applies it (`Space::cg_update`).
    pub(crate) fn inverse(&self) -> &CudaSlice<T> {
        &self.inv_diag
    }

    /// Refuses a diagonal given before the operator's last update of its values.
    pub(crate) fn check_fresh(&self, generation: u64, refresh: &'static str) -> Result<()> {
        if self.generation != generation {
            return Err(Error::StaleValues { what: "the solver's Jacobi diagonal", refresh });
        }
        Ok(())
    }
}

impl<T: Scalar> Precondition<T> for Jacobi<T> {
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        diag_scale(gpu, &self.inv_diag, r, z)
    }

    fn order(&self) -> Option<usize> {
        Some(self.inv_diag.len())
    }
}
