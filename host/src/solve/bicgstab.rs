//! BiCGSTAB (van der Vorst 1992; Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed.,
//! algorithm 7.7), right-preconditioned, for nonsymmetric systems: the recurrence of
//! [`crate::reference::bicgstab`], its oracle, step for step, with every scalar on the device.
//!
//! An iteration is two products, two preconditioner applications, four passes of dot products
//! (`r̂ᵀv`; `sᵀs`; `tᵀs` with `tᵀt`; `r̂ᵀr` with `rᵀr`), five vector updates and four short scalar
//! programs. The residual `s` after the half step lives in `r`'s buffer, and without a
//! preconditioner `p̂` and `ŝ` are `p` and `s` themselves, so the solve holds `r`, `r̂`, `p`, `v`, `t`
//! (and `p̂`, `ŝ` with one) besides its `b` and `x`.

use super::krylov::{
    Breakdowns, Core, PrecondSource, RUNNING, Recurrence, STARTING, iterate_on, solve_on, start_on,
};
use super::operator::{Operator, Precondition};
use super::program::{
    BB, Ends, FIRST_FREE, converged, copy, count, div, finite, limit, mul, nonzero, set, start,
};
use super::space::{OneGpu, Space};
use super::{Outcome, SolverOptions, Stop};
use crate::Result;
use crate::device::{VectorMut, VectorRef};
use crate::enqueue::krylov::{coef, constant};
use crate::iterative::why;
use crate::reference::DiagonalNeed;
use crate::scalar::Scalar;
use kernels_gpu::abi::KRYLOV_NO_TAG;

const RHO: u32 = FIRST_FREE;
const RHO_PREV: u32 = FIRST_FREE + 1;
const ALPHA: u32 = FIRST_FREE + 2;
const OMEGA: u32 = FIRST_FREE + 3;
const BETA: u32 = FIRST_FREE + 4;
const RATIO_RHO: u32 = FIRST_FREE + 5;
const RATIO_ALPHA: u32 = FIRST_FREE + 6;
const RV: u32 = FIRST_FREE + 7;
const SS: u32 = FIRST_FREE + 8;
const TS: u32 = FIRST_FREE + 9;
const TT: u32 = FIRST_FREE + 10;
const RR: u32 = FIRST_FREE + 11;
const SLOTS: u32 = FIRST_FREE + 12;

/// The breakdown tags of BiCGSTAB, indexes of [`BREAKDOWNS`].
const RR_TAG: u32 = 0;
const RHO_TAG: u32 = 1;
const RV_TAG: u32 = 2;
const TT_TAG: u32 = 3;
const OMEGA_TAG: u32 = 4;

/// What each breakdown stops on, and why (the CPU oracle names them the same).
pub(crate) const BREAKDOWNS: Breakdowns = &[
    ("rᵀr", why::NOT_FINITE),
    ("r̂ᵀr", why::SHADOW_ORTHOGONAL),
    ("r̂ᵀv", why::SHADOW_ORTHOGONAL_TO_V),
    ("tᵀt", why::SINGULAR),
    ("ω", why::NO_PROGRESS),
];

/// The scratch vectors of a preconditioned solve.
#[derive(Debug)]
struct Preconditioned<V> {
    p_hat: V,
    s_hat: V,
}

/// A BiCGSTAB solver for one operator, with the vectors and device state of its solves, allocated
/// once.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Bicgstab, Preconditioner, SolverOptions};
/// use gpu_spmv::{Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(3);
/// # let diagonal = vec![1.0; 3];
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::Jacobi };
/// let mut solver = Bicgstab::new(gpu.plan(&device_a, Kernel::Auto)?, options, Some(&diagonal))?;
/// let b = gpu.upload_vector(&[1.0, 2.0, 3.0])?;
/// let mut x = gpu.zeros::<f64>(3)?;
/// let outcome = solver.solve(&b, &mut x)?;
/// println!("{} iterations, relative residual {:e}", outcome.iterations, outcome.relative_residual);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Bicgstab<'a, T: Scalar, A: Operator<T>> {
    it: BicgstabIn<T, OneGpu<'a, T, A>>,
}

/// BiCGSTAB in any [`Space`]: the recurrence's vectors and state, and its launches, the one source
/// of [`Bicgstab`] (one GPU) and of the distributed tier's solver (several).
#[derive(Debug)]
pub(crate) struct BicgstabIn<T: Scalar, S: Space<T>> {
    pub core: Core<T, S>,
    r: S::Vector,
    r_hat: S::Vector,
    p: S::Vector,
    v: S::Vector,
    t: S::Vector,
    preconditioned: Option<Preconditioned<S::Vector>>,
    /// Iterations done before the recurrence's last restart (see [`Bicgstab::outcome`]).
    done: usize,
}

impl<'a, T: Scalar, A: Operator<T>> Bicgstab<'a, T, A> {
    /// A solver for the operator. `diagonal`, the diagonal of `A`, is needed for
    /// [`Preconditioner::Jacobi`](super::Preconditioner::Jacobi) and ignored otherwise.
    ///
    /// Refused: options out of their ranges, an operator that is not square
    /// ([`SolveError::NotSquare`](super::SolveError::NotSquare)), a missing or short diagonal
    /// ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch)), a zero or non-finite diagonal
    /// entry ([`SolveError::SingularDiagonal`](super::SolveError::SingularDiagonal)).
    pub fn new(op: A, options: SolverOptions, diagonal: Option<&[T]>) -> Result<Self> {
        Self::build(op, options, diagonal.map(PrecondSource::Diagonal))
    }

    /// A solver preconditioned by the caller's `preconditioner`; `options.preconditioner` must be
    /// `None` ([`Error::Unsupported`](crate::Error::Unsupported) otherwise), and a preconditioner
    /// that tells its order ([`Precondition::order`]) must have the operator's
    /// ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch) otherwise).
    pub fn with_preconditioner(
        op: A,
        options: SolverOptions,
        preconditioner: Box<dyn Precondition<T> + 'a>,
    ) -> Result<Self> {
        Self::build(op, options, Some(PrecondSource::Custom(preconditioner)))
    }

    fn build(op: A, options: SolverOptions, source: Option<PrecondSource<'a, '_, T>>) -> Result<Self> {
        let core = Core::new(op, options, source, (SLOTS, 0), BREAKDOWNS, DiagonalNeed::NonZero)?;
        Ok(Self { it: BicgstabIn::new(core)? })
    }

    /// Iterations between two reads of the state in [`Bicgstab::solve`] (at least 1).
    pub fn set_check_every(&mut self, iterations: u32) {
        self.it.core.check_every = iterations.max(1);
    }

    /// Gives a Jacobi solver the diagonal of the operator's current values, after an update of
    /// them (until then it refuses to start or iterate, with `Error::StaleValues`).
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        self.it.core.set_diagonal(diagonal)
    }

    /// Solves `A x = b` from the initial guess in `x`, leaving the last iterate there: [`start`],
    /// then [`iterate`] in batches until [`outcome`] says it has stopped. A breakdown
    /// ([`SolveError::Breakdown`](super::SolveError::Breakdown)) leaves the last iterate before it.
    ///
    /// [`start`]: Bicgstab::start
    /// [`iterate`]: Bicgstab::iterate
    /// [`outcome`]: Bicgstab::outcome
    pub fn solve<B, X>(&mut self, b: &B, x: &mut X) -> Result<Outcome>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        let every = self.it.core.check_every;
        solve_on(&mut self.it, b, x, every)
    }

    /// Enqueues the start of a solve: `r = b - A x`, `r̂ = r`, the sums and the first tests. Checks
    /// `b` and `x` first: on error nothing is enqueued.
    pub fn start<B, X>(&mut self, b: &B, x: &X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
    {
        start_on(&mut self.it, b, x)
    }

    /// Enqueues `iterations` iterations on the solve [`Bicgstab::start`] began, then copies the
    /// iterate to `x`. Allocates nothing, waits for nothing: may be captured into a CUDA graph and
    /// replayed. Iterations after the solve stopped change nothing.
    pub fn iterate<X: VectorMut<T> + ?Sized>(&mut self, x: &mut X, iterations: u32) -> Result<()> {
        iterate_on(&mut self.it, x, iterations)
    }

    /// Where the solve stands, read from the device (waits for the stream): `None` while it runs,
    /// the outcome once it converged or reached the limit, and the breakdown if it broke down.
    ///
    /// Only a true residual is believed converged (`crate::reference::bicgstab`, module doc): when
    /// the recurrence says it converged, this enqueues a restart from the iterate, `r = b - A x`
    /// and `r̂ = r` with the iterations left, and reads it. If that residual meets the tolerance the
    /// outcome is converged, with its norm; otherwise the solve runs on (`None`), and the
    /// iterations of a batch captured before go on from the restart.
    pub fn outcome(&mut self) -> Result<Option<Outcome>> {
        self.it.outcome()
    }

    /// Keeps the residual of each iteration of the solves to come, up to `capacity` entries (the
    /// start's first), for [`Bicgstab::residual_history`]: refused past
    /// [`MAX_HISTORY`](super::MAX_HISTORY) ([`Error::TooLarge`](crate::Error::TooLarge)), before
    /// anything is allocated, and while the stream captures a graph. It replaces the solver's device
    /// state: call it before capturing any of its work.
    pub fn with_history(mut self, capacity: usize) -> Result<Self> {
        self.it.core.keep_history(capacity)?;
        Ok(self)
    }

    /// The relative residuals `|r_k| / |b|` of the last solve, from its start (`k = 0`), one an
    /// iteration, at most the capacity given to [`Bicgstab::with_history`] (empty without one). The
    /// recurrence's residuals (the half step's where it converged), and at a restart from the
    /// iterate the true residual it computed.
    /// Waits for the stream.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        self.it.core.residual_history()
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.it.core.options
    }
}

impl<T: Scalar, S: Space<T>> BicgstabIn<T, S> {
    /// The scalar slots of the solver's own, which a space's state must hold.
    pub const SLOTS: u32 = SLOTS;

    /// A solver of `n` unknowns in `space`, whose state holds [`Self::SLOTS`] scalars (the options
    /// checked by the caller).
    pub fn on(space: S, n: usize, options: SolverOptions) -> Result<Self> {
        Self::new(Core::on(space, n, options, SLOTS, BREAKDOWNS)?)
    }

    /// The recurrence's vectors, in the core's space.
    pub fn new(core: Core<T, S>) -> Result<Self> {
        let space = &core.space;
        let preconditioned = if space.has_preconditioner() {
            Some(Preconditioned { p_hat: space.zeros()?, s_hat: space.zeros()? })
        } else {
            None
        };
        Ok(Self {
            r: space.zeros()?,
            r_hat: space.zeros()?,
            p: space.zeros()?,
            v: space.zeros()?,
            t: space.zeros()?,
            preconditioned,
            core,
            done: 0,
        })
    }

    /// Enqueues a start of the recurrence from the solve's iterate, on a state reset to not
    /// started, with the iterations left after `done`.
    fn recur(&mut self) -> Result<()> {
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        c.space.scale(STARTING, constant(one), Some(&c.b), &mut self.r)?;
        c.space.apply(&c.x, &mut self.t)?;
        c.space.axpy(STARTING, constant(minus_one), &self.t, &mut self.r)?;
        c.space.scale(STARTING, constant(one), Some(&self.r), &mut self.r_hat)?;
        c.space.zero(&mut self.p)?;
        c.space.zero(&mut self.v)?;
        c.space.dots(STARTING, &[(&self.r_hat, &self.r, RHO), (&self.r, &self.r, RR), (&c.b, &c.b, BB)])?;
        let left = c.options.max_iterations - self.done;
        let max = u32::try_from(left).unwrap_or(u32::MAX);
        let done = u32::try_from(self.done).unwrap_or(u32::MAX);
        let mut program = c.constants().to_vec();
        program.extend([
            set(ALPHA, one),
            set(OMEGA, one),
            set(RHO_PREV, one),
            start(max, done),
            c.record(RR, 0),
            finite(RR, RR_TAG),
            converged(RR, Ends::Solve),
            nonzero(RHO, RHO_TAG),
            limit(RR, Ends::Solve),
        ]);
        c.space.program(STARTING, &program)
    }
}

impl<T: Scalar, S: Space<T>> Recurrence<T, S> for BicgstabIn<T, S> {
    fn core(&mut self) -> &mut Core<T, S> {
        &mut self.core
    }

    /// The start's launches, after the core's `b` and `x` were set and its state reset.
    fn start(&mut self) -> Result<()> {
        self.done = 0;
        self.recur()
    }

    /// One iteration's launches (see the module doc).
    fn iteration(&mut self) -> Result<()> {
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        c.space.program(
            RUNNING,
            &[
                div(RHO, RHO_PREV, RATIO_RHO, KRYLOV_NO_TAG),
                div(ALPHA, OMEGA, RATIO_ALPHA, KRYLOV_NO_TAG),
                mul(RATIO_RHO, RATIO_ALPHA, BETA),
            ],
        )?;
        c.space.p_update(
            RUNNING,
            (coef(one, BETA), coef(minus_one, OMEGA)),
            &self.v,
            &self.r,
            &mut self.p,
        )?;
        let p_hat =
            c.space.preconditioned(&self.p, self.preconditioned.as_mut().map(|pre| &mut pre.p_hat))?;
        c.space.apply(p_hat, &mut self.v)?;
        c.space.dots(RUNNING, &[(&self.r_hat, &self.v, RV)])?;
        c.space.program(RUNNING, &[div(RHO, RV, ALPHA, RV_TAG)])?;
        c.space.axpy(RUNNING, coef(minus_one, ALPHA), &self.v, &mut self.r)?;
        c.space.axpy(RUNNING, coef(one, ALPHA), p_hat, &mut c.x)?;
        c.space.dots(RUNNING, &[(&self.r, &self.r, SS)])?;
        let record = c.record(SS, 1);
        c.space.program(RUNNING, &[record, converged(SS, Ends::SolveCounting)])?;
        let s_hat =
            c.space.preconditioned(&self.r, self.preconditioned.as_mut().map(|pre| &mut pre.s_hat))?;
        c.space.apply(s_hat, &mut self.t)?;
        c.space.dots(RUNNING, &[(&self.t, &self.r, TS), (&self.t, &self.t, TT)])?;
        c.space.program(
            RUNNING,
            &[div(TS, TT, OMEGA, TT_TAG), nonzero(OMEGA, OMEGA_TAG), copy(RHO, RHO_PREV)],
        )?;
        c.space.axpy(RUNNING, coef(one, OMEGA), s_hat, &mut c.x)?;
        c.space.axpy(RUNNING, coef(minus_one, OMEGA), &self.t, &mut self.r)?;
        c.space.dots(RUNNING, &[(&self.r_hat, &self.r, RHO), (&self.r, &self.r, RR)])?;
        let record = c.record(RR, 0);
        c.space.program(
            RUNNING,
            &[count(), record, converged(RR, Ends::Solve), nonzero(RHO, RHO_TAG), limit(RR, Ends::Solve)],
        )
    }

    /// Where the solve stands ([`Bicgstab::outcome`]): a converged recurrence is restarted from the
    /// iterate, and believed only once that true residual meets the tolerance.
    fn outcome(&mut self) -> Result<Option<Outcome>> {
        loop {
            match self.core.outcome(self.done)? {
                Some(out) if out.stop == Stop::Converged && out.iterations > self.done => {
                    self.done = out.iterations;
                    self.core.space.reset()?;
                    self.recur()?;
                }
                other => return Ok(other),
            }
        }
    }
}
