//! Pipelined preconditioned CG (Ghysels & Vanroose, "Hiding global synchronization latency in the
//! preconditioned Conjugate Gradient algorithm", Parallel Computing 40, 2014, Algorithm 4) on any
//! [`Operator`] with any [`Precondition`]: the recurrence of
//! [`crate::reference::cg::pipelined_cg`], written as the sequence of its launches over the Krylov
//! core, every scalar on the device.
//!
//! CG's iteration waits twice for a reduction over all unknowns (`pᵀAp` before `α`, `rᵀz` before
//! `β`); this one waits once: its three dot products (`γ = rᵀu`, `δ = wᵀu`, `rᵀr`) are one pass, and
//! the product and the preconditioner of the iteration (`m = M⁻¹ w`, `n = A m`) do not depend on
//! them, so on several GPUs the all-reduce can run beside them. The price is four more vector
//! recurrences (`w = A u`, `z`, `q`, `s`): an iteration is one product, one preconditioner
//! application, one pass of three dot products, eight vector updates and two scalar programs. On one
//! GPU, where a reduction is a launch like any other, [`Pcg`](super::Pcg) makes fewer passes; this
//! solver is the single-GPU half of the distributed one it prepares (issue 26).
//!
//! The first iteration's `β = 0` and `δ - β γ / α` are the later iterations' formulas with the
//! previous `γ` and `α` set to infinity at the start, so that every iteration runs the same
//! launches and a captured batch serves from the first.
//!
//! In single precision the four extra recurrences carry their rounding errors forward without the
//! damping CG's have (Cools, Yetkin, Agullo, Giraud & Vanroose, SIAM J. Matrix Anal. Appl. 39(1),
//! 2018), and on the solver study's Poisson problems (condition numbers of 10⁴ and more) the iterate
//! diverges and the solve ends in a `pᵀAp` breakdown before it converges: on every f32 problem of the
//! study, and in the CPU oracle too (a 100 × 100 grid with Jacobi breaks down at iteration 131 where
//! [`Pcg`](super::Pcg) converges to 1e-4 at 134). Replacing the recurrences by their definitions
//! every 10 to 100 iterations did not prevent it in a CPU experiment (`docs/PERF.md`, section 23).
//! In f32, use [`Pcg`](super::Pcg).

use super::krylov::{Core, PrecondSource, RUNNING, Recurrence, STARTING, iterate_on, solve_on, start_on};
use super::operator::{Operator, Precondition};
use super::pcg::{CG_BREAKDOWNS, PQ_TAG, RR_TAG, RZ_TAG};
use super::program::{
    BB, Ends, FIRST_FREE, add_range, converged, copy, count, div, finite, limit, mul, positive, set, start,
};
use super::space::{OneGpu, Space};
use super::{Outcome, SolverOptions};
use crate::Result;
use crate::device::{VectorMut, VectorRef};
use crate::enqueue::krylov::{coef, constant};
use crate::reference::DiagonalNeed;
use crate::scalar::Scalar;
use kernels_gpu::abi::KRYLOV_NO_TAG;

const GAMMA: u32 = FIRST_FREE;
const DELTA: u32 = FIRST_FREE + 1;
const RR: u32 = FIRST_FREE + 2;
const GAMMA_PREV: u32 = FIRST_FREE + 3;
const ALPHA_PREV: u32 = FIRST_FREE + 4;
const BETA: u32 = FIRST_FREE + 5;
const ALPHA: u32 = FIRST_FREE + 6;
const DENOMINATOR: u32 = FIRST_FREE + 7;
const TERM: u32 = FIRST_FREE + 8;
const MINUS_ONE: u32 = FIRST_FREE + 9;
const SLOTS: u32 = FIRST_FREE + 10;

/// A pipelined preconditioned CG solver for one operator, with the vectors and device state of its
/// solves, allocated once. Made and run as [`Pcg`](super::Pcg) is.
#[derive(Debug)]
pub struct PipelinedCg<'a, T: Scalar, A: Operator<T>> {
    cg: PipelinedCgIn<T, OneGpu<'a, T, A>>,
}

/// Pipelined CG in any [`Space`]: the recurrence's vectors and state, and its launches, the one
/// source of [`PipelinedCg`] (one GPU) and of the distributed tier's solver (several), where its one
/// reduction an iteration is the point.
#[derive(Debug)]
pub(crate) struct PipelinedCgIn<T: Scalar, S: Space<T>> {
    pub core: Core<T, S>,
    r: S::Vector,
    /// `M⁻¹ r`.
    u: S::Vector,
    /// `A u`.
    w: S::Vector,
    /// `M⁻¹ w`.
    m: S::Vector,
    /// `A m`.
    n: S::Vector,
    z: S::Vector,
    q: S::Vector,
    s: S::Vector,
    p: S::Vector,
}

impl<'a, T: Scalar, A: Operator<T>> PipelinedCg<'a, T, A> {
    /// A solver for the operator; refused as [`Pcg::new`](super::Pcg::new) refuses.
    pub fn new(op: A, options: SolverOptions, diagonal: Option<&[T]>) -> Result<Self> {
        Self::build(op, options, diagonal.map(PrecondSource::Diagonal))
    }

    /// A solver preconditioned by the caller's symmetric positive definite `preconditioner`; as
    /// [`Pcg::with_preconditioner`](super::Pcg::with_preconditioner).
    pub fn with_preconditioner(
        op: A,
        options: SolverOptions,
        preconditioner: Box<dyn Precondition<T> + 'a>,
    ) -> Result<Self> {
        Self::build(op, options, Some(PrecondSource::Custom(preconditioner)))
    }

    fn build(op: A, options: SolverOptions, source: Option<PrecondSource<'a, '_, T>>) -> Result<Self> {
        let core = Core::new(op, options, source, (SLOTS, 0), CG_BREAKDOWNS, DiagonalNeed::Positive)?;
        Ok(Self { cg: PipelinedCgIn::new(core)? })
    }

    /// Iterations between two reads of the state in [`PipelinedCg::solve`] (at least 1).
    pub fn set_check_every(&mut self, iterations: u32) {
        self.cg.core.check_every = iterations.max(1);
    }

    /// As [`Pcg::set_diagonal`](super::Pcg::set_diagonal).
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        self.cg.core.set_diagonal(diagonal)
    }

    /// Solves `A x = b` from the initial guess in `x`, leaving the last iterate there: as
    /// [`Pcg::solve`](super::Pcg::solve), breakdowns named alike.
    pub fn solve<B, X>(&mut self, b: &B, x: &mut X) -> Result<Outcome>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        let every = self.cg.core.check_every;
        solve_on(&mut self.cg, b, x, every)
    }

    /// Enqueues the start of a solve: `r = b - A x`, `u = M⁻¹ r`, `w = A u`, the recurrences' other
    /// vectors zeroed, the first reduction and its tests. Checks `b` and `x` first: on error nothing
    /// is enqueued.
    pub fn start<B, X>(&mut self, b: &B, x: &X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
    {
        start_on(&mut self.cg, b, x)
    }

    /// Enqueues `iterations` iterations on the solve [`PipelinedCg::start`] began, then copies the
    /// iterate to `x`. Allocates nothing, waits for nothing: may be captured into a CUDA graph and
    /// replayed. Iterations after the solve stopped change nothing.
    pub fn iterate<X: VectorMut<T> + ?Sized>(&mut self, x: &mut X, iterations: u32) -> Result<()> {
        iterate_on(&mut self.cg, x, iterations)
    }

    /// Where the solve stands, read from the device (waits for the stream): `None` while it runs,
    /// the outcome once it converged or reached the limit, and the breakdown if it broke down.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        self.cg.core.outcome(0)
    }

    /// As [`Pcg::with_history`](super::Pcg::with_history).
    pub fn with_history(mut self, capacity: usize) -> Result<Self> {
        self.cg.core.keep_history(capacity)?;
        Ok(self)
    }

    /// As [`Pcg::residual_history`](super::Pcg::residual_history): the recurrence's residuals.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        self.cg.core.residual_history()
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.cg.core.options
    }
}

impl<T: Scalar, S: Space<T>> PipelinedCgIn<T, S> {
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
        Ok(Self {
            r: space.zeros()?,
            u: space.zeros()?,
            w: space.zeros()?,
            m: space.zeros()?,
            n: space.zeros()?,
            z: space.zeros()?,
            q: space.zeros()?,
            s: space.zeros()?,
            p: space.zeros()?,
            core,
        })
    }
}

impl<T: Scalar, S: Space<T>> Recurrence<T, S> for PipelinedCgIn<T, S> {
    fn core(&mut self) -> &mut Core<T, S> {
        &mut self.core
    }

    /// The start's launches, after the core's `b` and `x` were set and its state reset:
    /// `r = b - A x`, `u = M⁻¹ r`, `w = A u`, the recurrences' other vectors zeroed, the first
    /// reduction and its tests.
    fn start(&mut self) -> Result<()> {
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        c.space.scale(STARTING, constant(one), Some(&c.b), &mut self.r)?;
        c.space.apply(&c.x, &mut self.w)?;
        c.space.axpy(STARTING, constant(minus_one), &self.w, &mut self.r)?;
        c.space.precondition_or_copy(STARTING, &self.r, &mut self.u)?;
        c.space.apply(&self.u, &mut self.w)?;
        for v in [&mut self.z, &mut self.q, &mut self.s, &mut self.p] {
            c.space.zero(v)?;
        }
        let (r, u, w) = (&self.r, &self.u, &self.w);
        c.space.dots(STARTING, &[(r, u, GAMMA), (w, u, DELTA), (r, r, RR)])?;
        c.space.dots(STARTING, &[(&c.b, &c.b, BB)])?;
        let max = u32::try_from(c.options.max_iterations).unwrap_or(u32::MAX);
        let infinity = T::from_f64(f64::INFINITY);
        let mut program = c.constants().to_vec();
        program.extend([
            set(GAMMA_PREV, infinity),
            set(ALPHA_PREV, infinity),
            set(MINUS_ONE, minus_one),
            start(max, 0),
            c.record(RR, 0),
            finite(RR, RR_TAG),
            converged(RR, Ends::Solve),
            positive(GAMMA, RZ_TAG),
            limit(RR, Ends::Solve),
        ]);
        c.space.program(STARTING, &program)
    }

    /// One iteration's launches, in the oracle's order: `m`, `n`, the scalars, the eight updates,
    /// then the next reduction and its tests.
    fn iteration(&mut self) -> Result<()> {
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        c.space.precondition_or_copy(RUNNING, &self.w, &mut self.m)?;
        c.space.apply(&self.m, &mut self.n)?;
        // β = γ / γ_prev, then δ - β γ / α_prev as δ + (-1)(β γ / α_prev), and α = γ / that.
        c.space.program(
            RUNNING,
            &[
                div(GAMMA, GAMMA_PREV, BETA, KRYLOV_NO_TAG),
                mul(BETA, GAMMA, TERM),
                div(TERM, ALPHA_PREV, TERM, KRYLOV_NO_TAG),
                mul(TERM, MINUS_ONE, TERM),
                copy(DELTA, DENOMINATOR),
                add_range(TERM, DENOMINATOR, 1),
                positive(DENOMINATOR, PQ_TAG),
                div(GAMMA, DENOMINATOR, ALPHA, PQ_TAG),
                finite(ALPHA, PQ_TAG),
                copy(GAMMA, GAMMA_PREV),
                copy(ALPHA, ALPHA_PREV),
            ],
        )?;
        // `v = fma(β, fma(0, a, v), a) = β v + a` for z, q, s, p (as in `Pcg`, exact while `a` is
        // finite; a non-finite one stops the solve at the tests below before it is used).
        let beta = (coef(one, BETA), constant(T::ZERO));
        let d = &mut c.space;
        d.p_update(RUNNING, beta, &self.n, &self.n, &mut self.z)?;
        d.p_update(RUNNING, beta, &self.m, &self.m, &mut self.q)?;
        d.p_update(RUNNING, beta, &self.w, &self.w, &mut self.s)?;
        d.p_update(RUNNING, beta, &self.u, &self.u, &mut self.p)?;
        d.axpy(RUNNING, coef(one, ALPHA), &self.p, &mut c.x)?;
        d.axpy(RUNNING, coef(minus_one, ALPHA), &self.s, &mut self.r)?;
        d.axpy(RUNNING, coef(minus_one, ALPHA), &self.q, &mut self.u)?;
        d.axpy(RUNNING, coef(minus_one, ALPHA), &self.z, &mut self.w)?;
        let (r, u, w) = (&self.r, &self.u, &self.w);
        d.dots(RUNNING, &[(r, u, GAMMA), (w, u, DELTA), (r, r, RR)])?;
        let record = c.record(RR, 0);
        c.space.program(
            RUNNING,
            &[
                count(),
                record,
                finite(RR, RR_TAG),
                converged(RR, Ends::Solve),
                positive(GAMMA, RZ_TAG),
                limit(RR, Ends::Solve),
            ],
        )
    }

    /// Where the solve stands: `None` while it runs (the state read from the device).
    fn outcome(&mut self) -> Result<Option<Outcome>> {
        self.core.outcome(0)
    }
}
