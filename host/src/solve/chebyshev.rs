//! Chebyshev polynomial preconditioning on the GPU: `z = p(A) r`, `degree` steps of the Chebyshev
//! iteration for `A z = r` from `z = 0` on an interval that holds `A`'s eigenvalues (Saad,
//! "Iterative Methods for Sparse Linear Systems", 2nd ed., section 12.3, Algorithm 12.1), launch
//! for launch as its CPU oracle [`reference::chebyshev::apply`](crate::reference::chebyshev::apply)
//! computes it. Each step is one product and four elementwise passes, with no reduction and nothing
//! to factor: it runs as fast as the product does, which is why multigrid codes on GPUs smooth with
//! it (Adams, Brezina, Hu & Tuminaro, "Parallel multigrid smoothing: polynomial versus
//! Gauss-Seidel", J. Comput. Phys. 188, 2003).

use super::operator::{Operator, Precondition};
use crate::device::{DeviceVector, Gpu};
use crate::enqueue::krylov::{ungated_axpy, ungated_scale};
use crate::formats::convert::narrow;
use crate::iterative::{ChebyshevSteps, EigenBounds, power, square_order};
use crate::scalar::Scalar;
use crate::{Error, Result};

/// The Chebyshev preconditioner: `z = p(A) r`, `p` the polynomial of degree `degree` for which
/// `1 - λ p(λ)` is smallest on [`EigenBounds`]; `degree` products of its own operator an apply.
/// Made for matrices whose eigenvalues are real and positive, or near it (symmetric positive
/// definite ones, diffusion-dominated ones): the interval is of the real line. An eigenvalue below
/// the interval is damped less than those in it, one a little above it too, and one above
/// `max + min` is amplified, by `|T_m((λ - θ) / δ)| / T_m(σ) > 1` (the notation of
/// `iterative::ChebyshevSteps`): a solve preconditioned so may diverge. Hence the 10% that
/// [`EigenBounds::from_radius`] adds above the power iteration's estimate. The interval is not
/// refreshed when the operator's values change ([`DeviceCsr::update_values`](crate::DeviceCsr::update_values)):
/// estimate it anew and make a new preconditioner where they change much.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Bicgstab, Chebyshev, Preconditioner, SolverOptions};
/// use gpu_spmv::{Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(4);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// // The preconditioner has a plan of its own: it multiplies by `A` as the solver does.
/// let inner = gpu.plan(&device_a, Kernel::Auto)?;
/// let bounds = Chebyshev::estimate_bounds(&inner, 20, 30.0)?;
/// let preconditioner = Chebyshev::new(inner, bounds, 4)?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let plan = gpu.plan(&device_a, Kernel::Auto)?;
/// let mut solver = Bicgstab::with_preconditioner(plan, options, Box::new(preconditioner))?;
/// # let _ = &mut solver;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Chebyshev<T, O> {
    op: O,
    bounds: EigenBounds,
    steps: ChebyshevSteps,
    /// The step `d`, its product `w = A d`, and the inner iteration's residual.
    d: DeviceVector<T>,
    w: DeviceVector<T>,
    residual: DeviceVector<T>,
}

impl<T: Scalar, O: Operator<T>> Chebyshev<T, O> {
    /// The preconditioner of `degree` steps on `bounds`, multiplying by `op` (a plan of the
    /// solver's matrix, or any operator on the solver's stream), with its three vectors allocated.
    ///
    /// Refused, in the order of the CPU oracle: a degree past
    /// [`MAX_CHEBYSHEV_DEGREE`](super::MAX_CHEBYSHEV_DEGREE) ([`SolveError::InvalidDegree`](crate::solve::SolveError::InvalidDegree)), an
    /// interval that is not `0 < min < max` with both ends finite or whose constants are not finite
    /// in `T` ([`Error::InvalidNumber`]), an operator that is not square ([`SolveError::NotSquare`](crate::solve::SolveError::NotSquare));
    /// and while the stream captures a graph (it allocates).
    pub fn new(op: O, bounds: EigenBounds, degree: usize) -> Result<Self> {
        let steps = ChebyshevSteps::new::<T>(bounds, degree)?;
        let n = square_order(op.nrows(), op.ncols())?;
        let gpu = op.gpu();
        let (d, w, residual) = (gpu.zeros(n)?, gpu.zeros(n)?, gpu.zeros(n)?);
        Ok(Self { op, bounds, steps, d, w, residual })
    }

    /// An interval for `op`: [`EigenBounds::from_radius`] of its spectral radius estimated by
    /// `steps` steps of the power iteration, the products on the device and the norms on the host,
    /// from the start
    /// [`reference::chebyshev::spectral_radius`](crate::reference::chebyshev::spectral_radius) takes
    /// on the CPU, step for step. A setup step: it waits for the GPU at every step.
    ///
    /// Refused as the CPU estimate and [`EigenBounds::from_radius`] refuse, and while the stream
    /// captures a graph (it uploads and reads back).
    pub fn estimate_bounds(op: &O, steps: usize, ratio: f64) -> Result<EigenBounds> {
        ChebyshevSteps::check_power_steps(steps)?;
        let n = square_order(op.nrows(), op.ncols())?;
        // A caller's operator may report any order: refused past the kernels' 32-bit indices
        // before the host allocates its start vector.
        narrow("the unknowns", n)?;
        let gpu = op.gpu();
        let mut v = gpu.upload_vector(&power::start::<T>(n))?;
        let mut w = gpu.zeros::<T>(n)?;
        let mut radius = 0.0;
        for _ in 0..steps {
            op.apply(&v, &mut w)?;
            let next;
            (radius, next) = power::step(&w.to_host(gpu)?)?;
            v.copy_from_host(gpu, &next)?;
        }
        EigenBounds::from_radius(radius, ratio)
    }

    /// The interval the polynomial is built on.
    pub fn bounds(&self) -> EigenBounds {
        self.bounds
    }

    /// The products an apply makes.
    pub fn degree(&self) -> usize {
        self.steps.steps.len()
    }
}

impl<T: Scalar, O: Operator<T>> Precondition<T> for Chebyshev<T, O> {
    /// Refused, with nothing enqueued, where the solver's stream is not the operator's (their
    /// launches would not be ordered), and for `r` or `z` of another length than the operator's
    /// order or of another context.
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        if gpu.stream().cu_stream() != self.op.gpu().stream().cu_stream() {
            return Err(Error::Unsupported(
                "a Chebyshev preconditioner whose operator runs on another stream",
            ));
        }
        let n = self.d.len();
        gpu.check_operand("r", r, n)?;
        gpu.check_operand("z", z, n)?;
        let what = "a Chebyshev preconditioner's vector";
        let first = T::from_f64(self.steps.first);
        ungated_scale(gpu, what, first, Some(r), z)?;
        if self.steps.steps.is_empty() {
            return Ok(());
        }
        ungated_scale(gpu, what, first, Some(r), &mut self.d)?;
        let minus_one = T::from_f64(-1.0);
        for (k, &(keep, add)) in self.steps.steps.iter().enumerate() {
            self.op.apply(&self.d, &mut self.w)?;
            // The inner residual starts as `r`: its first update reads `r` itself.
            let from = if k == 0 { Some(r) } else { None };
            ungated_axpy(gpu, what, minus_one, &self.w, from, &mut self.residual)?;
            ungated_scale(gpu, what, T::from_f64(keep), None, &mut self.d)?;
            ungated_axpy(gpu, what, T::from_f64(add), &self.residual, None, &mut self.d)?;
            ungated_axpy(gpu, what, T::from_f64(1.0), &self.d, None, z)?;
        }
        Ok(())
    }

    fn order(&self) -> Option<usize> {
        Some(self.d.len())
    }
}
