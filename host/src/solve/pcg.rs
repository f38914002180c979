//! Preconditioned conjugate gradients (Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed.,
//! Algorithm 9.1) on any [`Operator`] with any [`Precondition`]: the recurrence of
//! [`crate::reference::cg`], written once as the sequence of its launches over the Krylov core that
//! BiCGSTAB and GMRES share, every scalar on the device.
//!
//! An iteration is one product, the pass of `pᵀq`, a scalar program (`α`), the update
//! ([`Space::cg_update`]: `r -= α q`, `z = M⁻¹ r`, `x += α p`, `rᵀz` and `rᵀr`), a scalar program
//! (`β`, the tests) and `p = z + β p`: six launches with no preconditioner or Jacobi, whose update is
//! one pass, and with a caller's preconditioner its apply between three passes instead (`docs/PERF.md`,
//! section 24). Without a preconditioner `z` is `r` itself. [`Cg`](super::Cg) is the faster
//! choice where it applies (no preconditioner or Jacobi, on a plan): its vector passes are one
//! cooperative launch an iteration; this one takes the preconditioners that make CG worth running on
//! hard problems ([`Ic0`](super::Ic0), [`BlockJacobi`](super::BlockJacobi),
//! [`Chebyshev`](super::Chebyshev), a caller's own), which must be symmetric positive definite.

use super::krylov::{
    Breakdowns, Core, PrecondSource, RUNNING, Recurrence, STARTING, iterate_on, solve_on, start_on,
};
use super::operator::{Operator, Precondition};
use super::program::{BB, Ends, FIRST_FREE, converged, copy, count, div, finite, limit, positive, start};
use super::space::{OneGpu, Space};
use super::{Outcome, SolverOptions};
use crate::Result;
use crate::device::{VectorMut, VectorRef};
use crate::enqueue::krylov::{coef, constant};
use crate::iterative::{NOT_SPD, why};
use crate::reference::DiagonalNeed;
use crate::scalar::Scalar;
use kernels_gpu::abi::KRYLOV_NO_TAG;

const RZ: u32 = FIRST_FREE;
const RZ_NEW: u32 = FIRST_FREE + 1;
const PQ: u32 = FIRST_FREE + 2;
const ALPHA: u32 = FIRST_FREE + 3;
const BETA: u32 = FIRST_FREE + 4;
const RR: u32 = FIRST_FREE + 5;
const SLOTS: u32 = FIRST_FREE + 6;

/// The breakdown tags of both CGs on the Krylov core (this one and the pipelined one), indexes of
/// [`CG_BREAKDOWNS`].
pub(super) const RR_TAG: u32 = 0;
pub(super) const RZ_TAG: u32 = 1;
pub(super) const PQ_TAG: u32 = 2;

/// What each breakdown stops on, and why, tested in the CPU oracle's order and named as it names
/// them, but for two overflows it folds into its names: a residual `rᵀr` that is not finite while
/// `rᵀz` is stops as "rᵀr" here ("rᵀz" there), and an `α = rᵀz / pᵀAp` that overflows reports
/// `α`'s value under "pᵀAp" (there `pᵀAp`'s).
pub(super) const CG_BREAKDOWNS: Breakdowns = &[("rᵀr", why::NOT_FINITE), ("rᵀz", NOT_SPD), ("pᵀAp", NOT_SPD)];

/// A preconditioned CG solver for one operator, with the vectors and device state of its solves,
/// allocated once.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Ic0, Pcg, Preconditioner, SolverOptions};
/// use gpu_spmv::{CsrRef, Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(3);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let ic0 = Box::new(Ic0::new(&gpu, CsrRef::from(&a))?);
/// let mut solver = Pcg::with_preconditioner(gpu.plan(&device_a, Kernel::Auto)?, options, ic0)?;
/// let b = gpu.upload_vector(&[1.0, 2.0, 3.0])?;
/// let mut x = gpu.zeros::<f64>(3)?;
/// let outcome = solver.solve(&b, &mut x)?;
/// println!("{} iterations, relative residual {:e}", outcome.iterations, outcome.relative_residual);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Pcg<'a, T: Scalar, A: Operator<T>> {
    cg: PcgIn<T, OneGpu<'a, T, A>>,
}

/// Preconditioned CG in any [`Space`]: the recurrence's vectors and state, and its launches, the
/// one source of [`Pcg`] (one GPU) and of the distributed tier's solver (several).
#[derive(Debug)]
pub(crate) struct PcgIn<T: Scalar, S: Space<T>> {
    pub core: Core<T, S>,
    r: S::Vector,
    p: S::Vector,
    q: S::Vector,
    /// `M⁻¹ r`, with a preconditioner only.
    z: Option<S::Vector>,
}

impl<'a, T: Scalar, A: Operator<T>> Pcg<'a, T, A> {
    /// A solver for the operator. `diagonal`, the diagonal of `A`, is needed for
    /// [`Preconditioner::Jacobi`](super::Preconditioner::Jacobi) and ignored otherwise.
    ///
    /// Refused: options out of their ranges, an operator that is not square
    /// ([`SolveError::NotSquare`](super::SolveError::NotSquare)), a missing or short diagonal
    /// ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch)), a diagonal entry that is not
    /// positive ([`SolveError::NonPositiveDiagonal`](super::SolveError::NonPositiveDiagonal)).
    pub fn new(op: A, options: SolverOptions, diagonal: Option<&[T]>) -> Result<Self> {
        Self::build(op, options, diagonal.map(PrecondSource::Diagonal))
    }

    /// A solver preconditioned by the caller's `preconditioner`, which must be symmetric positive
    /// definite; `options.preconditioner` must be `None`
    /// ([`Error::Unsupported`](crate::Error::Unsupported) otherwise), and a preconditioner that tells
    /// its order ([`Precondition::order`]) must have the operator's
    /// ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch) otherwise).
    pub fn with_preconditioner(
        op: A,
        options: SolverOptions,
        preconditioner: Box<dyn Precondition<T> + 'a>,
    ) -> Result<Self> {
        Self::build(op, options, Some(PrecondSource::Custom(preconditioner)))
    }

    fn build(op: A, options: SolverOptions, source: Option<PrecondSource<'a, '_, T>>) -> Result<Self> {
        let core = Core::new(op, options, source, (SLOTS, 0), CG_BREAKDOWNS, DiagonalNeed::Positive)?;
        Ok(Self { cg: PcgIn::new(core)? })
    }

    /// Iterations between two reads of the state in [`Pcg::solve`] (at least 1).
    pub fn set_check_every(&mut self, iterations: u32) {
        self.cg.core.check_every = iterations.max(1);
    }

    /// Gives a Jacobi solver the diagonal of the operator's current values, after an update of
    /// them (until then it refuses to start or iterate, with `Error::StaleValues`).
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        self.cg.core.set_diagonal(diagonal)
    }

    /// Solves `A x = b` from the initial guess in `x`, leaving the last iterate there: [`start`],
    /// then [`iterate`] in batches until [`outcome`] says it has stopped. A breakdown
    /// ([`SolveError::Breakdown`](super::SolveError::Breakdown): `pᵀAp` or `rᵀz` not positive and
    /// finite, so the matrix or the preconditioner is not symmetric positive definite) leaves the
    /// last iterate before it.
    ///
    /// [`start`]: Pcg::start
    /// [`iterate`]: Pcg::iterate
    /// [`outcome`]: Pcg::outcome
    pub fn solve<B, X>(&mut self, b: &B, x: &mut X) -> Result<Outcome>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        let every = self.cg.core.check_every;
        solve_on(&mut self.cg, b, x, every)
    }

    /// Enqueues the start of a solve: `r = b - A x`, `z = M⁻¹ r`, `p = z`, the sums and the first
    /// tests. Checks `b` and `x` first: on error nothing is enqueued.
    pub fn start<B, X>(&mut self, b: &B, x: &X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
    {
        start_on(&mut self.cg, b, x)
    }

    /// Enqueues `iterations` iterations on the solve [`Pcg::start`] began, then copies the iterate
    /// to `x`. Allocates nothing, waits for nothing: may be captured into a CUDA graph and
    /// replayed. Iterations after the solve stopped change nothing.
    pub fn iterate<X: VectorMut<T> + ?Sized>(&mut self, x: &mut X, iterations: u32) -> Result<()> {
        iterate_on(&mut self.cg, x, iterations)
    }

    /// Where the solve stands, read from the device (waits for the stream): `None` while it runs,
    /// the outcome once it converged or reached the limit, and the breakdown if it broke down.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        self.cg.core.outcome(0)
    }

    /// Keeps the residual of each iteration of the solves to come, up to `capacity` entries (the
    /// start's first), for [`Pcg::residual_history`]: refused past
    /// [`MAX_HISTORY`](super::MAX_HISTORY) ([`Error::TooLarge`](crate::Error::TooLarge)), before
    /// anything is allocated, and while the stream captures a graph. It replaces the solver's device
    /// state: call it before capturing any of its work.
    pub fn with_history(mut self, capacity: usize) -> Result<Self> {
        self.cg.core.keep_history(capacity)?;
        Ok(self)
    }

    /// The relative residuals `|r_k| / |b|` of the last solve, from its start (`k = 0`), one an
    /// iteration, at most the capacity given to [`Pcg::with_history`] (empty without one). The
    /// recurrence's residuals, which CG's convergence test reads.
    /// Waits for the stream.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        self.cg.core.residual_history()
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.cg.core.options
    }
}

impl<T: Scalar, S: Space<T>> PcgIn<T, S> {
    /// The scalar slots of the solver's own, which a space's state must hold.
    pub const SLOTS: u32 = SLOTS;

    /// A solver of `n` unknowns in `space`, whose state holds [`Self::SLOTS`] scalars (the options
    /// checked by the caller).
    pub fn on(space: S, n: usize, options: SolverOptions) -> Result<Self> {
        Self::new(Core::on(space, n, options, SLOTS, CG_BREAKDOWNS)?)
    }

    /// The recurrence's vectors, in the core's space.
    pub fn new(core: Core<T, S>) -> Result<Self> {
        let space = &core.space;
        let z = if space.has_preconditioner() { Some(space.zeros()?) } else { None };
        Ok(Self { r: space.zeros()?, p: space.zeros()?, q: space.zeros()?, z, core })
    }
}

impl<T: Scalar, S: Space<T>> Recurrence<T, S> for PcgIn<T, S> {
    fn core(&mut self) -> &mut Core<T, S> {
        &mut self.core
    }

    /// The start's launches, after the core's `b` and `x` were set and its state reset:
    /// `r = b - A x`, `z = M⁻¹ r`, `p = z`, the sums and the first tests.
    fn start(&mut self) -> Result<()> {
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        c.space.scale(STARTING, constant(one), Some(&c.b), &mut self.r)?;
        c.space.apply(&c.x, &mut self.q)?;
        c.space.axpy(STARTING, constant(minus_one), &self.q, &mut self.r)?;
        let z = c.space.preconditioned(&self.r, self.z.as_mut())?;
        c.space.scale(STARTING, constant(one), Some(z), &mut self.p)?;
        c.space.dots(STARTING, &[(&self.r, z, RZ), (&self.r, &self.r, RR), (&c.b, &c.b, BB)])?;
        let max = u32::try_from(c.options.max_iterations).unwrap_or(u32::MAX);
        let mut program = c.constants().to_vec();
        program.extend([
            start(max, 0),
            c.record(RR, 0),
            finite(RR, RR_TAG),
            converged(RR, Ends::Solve),
            positive(RZ, RZ_TAG),
            limit(RR, Ends::Solve),
        ]);
        c.space.program(STARTING, &program)
    }

    /// One iteration's launches (see the module doc), in the oracle's order.
    fn iteration(&mut self) -> Result<()> {
        let c = &mut self.core;
        let one = T::from_f64(1.0);
        c.space.apply(&self.p, &mut self.q)?;
        c.space.dots(RUNNING, &[(&self.p, &self.q, PQ)])?;
        c.space
            .program(RUNNING, &[positive(PQ, PQ_TAG), div(RZ, PQ, ALPHA, PQ_TAG), finite(ALPHA, PQ_TAG)])?;
        let (p, q) = (&self.p, &self.q);
        c.space.cg_update(RUNNING, ALPHA, (p, q), &mut c.x, &mut self.r, self.z.as_mut(), (RZ_NEW, RR))?;
        let record = c.record(RR, 0);
        c.space.program(
            RUNNING,
            &[
                div(RZ_NEW, RZ, BETA, KRYLOV_NO_TAG),
                copy(RZ_NEW, RZ),
                count(),
                record,
                finite(RR, RR_TAG),
                converged(RR, Ends::Solve),
                positive(RZ, RZ_TAG),
                limit(RR, Ends::Solve),
            ],
        )?;
        // p = fma(β, fma(0, z, p), z) = fma(β, p, z), the oracle's update, while the solve runs; a
        // non-finite `z` makes `rᵀz` so, and the program above stops the solve before `p` changes.
        let z = self.z.as_ref().unwrap_or(&self.r);
        c.space.p_update(RUNNING, (coef(one, BETA), constant(T::ZERO)), z, z, &mut self.p)
    }

    /// Where the solve stands: `None` while it runs (the state read from the device).
    fn outcome(&mut self) -> Result<Option<Outcome>> {
        self.core.outcome(0)
    }
}
