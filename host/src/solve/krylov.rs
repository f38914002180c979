//! What preconditioned CG, BiCGSTAB and GMRES share: the space of a solve (`space.rs`: where its
//! vectors live, with the operator, the preconditioner and the device state), its right-hand side
//! and iterate, the checks, the loop of batches between convergence checks, and the reading of the
//! outcome. The solvers differ only in the launches of their start and their iteration (`pcg.rs`,
//! `pipelined_cg.rs`, `bicgstab.rs`, `gmres.rs`), each written over any [`Space`] ([`Recurrence`]).

use super::operator::{Jacobi, Operator, Precondition};
use super::program::{BB, ONE, TOL, ZERO, mul, record, set};
use super::space::{OneGpu, Space};
use super::{Outcome, Preconditioner, SolveError, SolverOptions, Stop};
use crate::device::{DeviceVector, Gpu, VectorMut, VectorRef};
use crate::enqueue::krylov::{KrylovDevice, copy_in, copy_out};
use crate::iterative::{MAX_HISTORY, square_order};
use crate::iterative::{relative_residual, why};
use crate::reference::DiagonalNeed;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{
    KRYLOV_BREAKDOWN, KRYLOV_CONVERGED, KRYLOV_MAX_ITERATIONS, KRYLOV_NOT_STARTED, ScalarOp, krylov_gate,
};

/// A solver's recurrence as its batches drive it: the core it runs in, the launches of its start
/// (after the core's `begin`), those of one iteration (a cycle for GMRES), and where the solve
/// stands. One GPU's facades ([`solve_on`], [`start_on`], [`iterate_on`]) and the distributed
/// tier's drive every solver through it.
pub(crate) trait Recurrence<T: Scalar, S: Space<T>> {
    fn core(&mut self) -> &mut Core<T, S>;
    /// Enqueues the start's launches, after the core's `b` and `x` were set and its state reset.
    fn start(&mut self) -> Result<()>;
    /// Enqueues one iteration's launches.
    fn iteration(&mut self) -> Result<()>;
    /// Where the solve stands, read from the device: `None` while it runs.
    fn outcome(&mut self) -> Result<Option<Outcome>>;
}

/// A one-GPU facade's `start`: `b` and `x` checked and copied in (nothing enqueued if a check
/// fails), then the recurrence's start.
pub(crate) fn start_on<'a, T, A, R, B, X>(r: &mut R, b: &B, x: &X) -> Result<()>
where
    T: Scalar,
    A: Operator<T>,
    R: Recurrence<T, OneGpu<'a, T, A>>,
    B: VectorRef<T> + ?Sized,
    X: VectorRef<T> + ?Sized,
{
    r.core().begin(b, x)?;
    r.start()
}

/// A one-GPU facade's `iterate`: `x` and the Jacobi diagonal checked, `iterations` iterations
/// enqueued, the iterate copied out to `x`.
pub(crate) fn iterate_on<'a, T, A, R, X>(r: &mut R, x: &mut X, iterations: u32) -> Result<()>
where
    T: Scalar,
    A: Operator<T>,
    R: Recurrence<T, OneGpu<'a, T, A>>,
    X: VectorMut<T> + ?Sized,
{
    r.core().check_x(x)?;
    r.core().check_fresh()?;
    for _ in 0..iterations {
        r.iteration()?;
    }
    r.core().finish_batch(x)
}

/// A one-GPU facade's `solve`: the start, then batches of `every` iterations until the outcome
/// says the solve stopped.
pub(crate) fn solve_on<'a, T, A, R, B, X>(r: &mut R, b: &B, x: &mut X, every: u32) -> Result<Outcome>
where
    T: Scalar,
    A: Operator<T>,
    R: Recurrence<T, OneGpu<'a, T, A>>,
    B: VectorRef<T> + ?Sized,
    X: VectorMut<T> + ?Sized,
{
    start_on(r, b, x)?;
    loop {
        iterate_on(r, x, every)?;
        if let Some(outcome) = r.outcome()? {
            return Ok(outcome);
        }
    }
}

/// The breakdowns a solver names: the scalar (`what`) and the cause (`why`) of each tag, where the
/// value is zero or too small; a value that is not finite gives `why::NOT_FINITE`.
pub(crate) type Breakdowns = &'static [(&'static str, &'static str)];

/// The preconditioner of a solve.
pub(crate) enum Precond<'a, T: Scalar> {
    None,
    /// Built from [`Preconditioner::Jacobi`]: refreshed by the solver's `set_diagonal`.
    Jacobi(Jacobi<T>),
    Custom(Box<dyn Precondition<T> + 'a>),
}

impl<T: Scalar> std::fmt::Debug for Precond<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precond::None => "None",
            Precond::Jacobi(_) => "Jacobi",
            Precond::Custom(_) => "Custom",
        })
    }
}

/// The state of a solve, shared by the solvers: the space its vectors live in (with the operator,
/// the preconditioner and the device state), the options, and the solve's own `b` and iterate.
#[derive(Debug)]
pub(crate) struct Core<T: Scalar, S: Space<T>> {
    pub space: S,
    pub options: SolverOptions,
    pub check_every: u32,
    /// The solve's own copies of `b` and of the iterate, which `iterate` copies out.
    pub b: S::Vector,
    pub x: S::Vector,
    /// The solve's length.
    n: usize,
    breakdowns: Breakdowns,
    /// The residual history's first slot (past the solver's own) and its capacity, 0 for none.
    history: (u32, u32),
}

impl<'a, T: Scalar, A: Operator<T>> Core<T, OneGpu<'a, T, A>> {
    /// Checks the options and the operator, builds the preconditioner (a Jacobi diagonal checked
    /// against `need`), and allocates the state with `scalars` slots and room for a basis of
    /// `columns`.
    pub fn new(
        op: A,
        options: SolverOptions,
        precond: Option<PrecondSource<'a, '_, T>>,
        (scalars, columns): (u32, u32),
        breakdowns: Breakdowns,
        need: DiagonalNeed,
    ) -> Result<Self> {
        let n = Self::check(&op, &options)?;
        let precond = match (options.preconditioner, precond) {
            (Preconditioner::None, None) => Precond::None,
            (Preconditioner::None, Some(PrecondSource::Custom(p))) => match p.order() {
                Some(got) if got != n => {
                    return Err(Error::DimensionMismatch { what: "the preconditioner", expected: n, got });
                }
                _ => Precond::Custom(p),
            },
            (Preconditioner::Jacobi, Some(PrecondSource::Diagonal(d))) => {
                if d.len() != n {
                    return Err(Error::DimensionMismatch { what: "the diagonal", expected: n, got: d.len() });
                }
                let generation = op.values_generation();
                Precond::Jacobi(Jacobi::with_need(op.gpu(), d, need, generation)?)
            }
            (Preconditioner::Jacobi, None) => {
                return Err(Error::DimensionMismatch { what: "the diagonal", expected: n, got: 0 });
            }
            (Preconditioner::None, Some(PrecondSource::Diagonal(_))) => Precond::None,
            (Preconditioner::Jacobi, Some(PrecondSource::Custom(_))) => {
                return Err(Error::Unsupported(
                    "a caller's preconditioner with Preconditioner::Jacobi: pick one",
                ));
            }
        };
        let device = KrylovDevice::new(op.gpu(), n, scalars, columns)?;
        let space = OneGpu { op, precond, device, n, need };
        Self::on(space, n, options, scalars, breakdowns)
    }

    /// The refusals every solver makes first, in its oracle's order: options out of their ranges,
    /// an operator that is not square. Returns the order.
    pub fn check(op: &A, options: &SolverOptions) -> Result<usize> {
        options.check()?;
        square_order(op.nrows(), op.ncols())
    }

    /// The start every solver shares, before its own: the caller's checked `b` and `x` copied in,
    /// and the state reset. Nothing is enqueued when a check fails.
    pub fn begin<B, X>(&mut self, b: &B, x: &X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
    {
        self.check_fresh()?;
        let gpu = self.space.op.gpu();
        gpu.check_operand("b", b, self.n())?;
        self.check_x(x)?;
        copy_in(gpu, "b", b, &mut self.b)?;
        copy_in(gpu, "x", x, &mut self.x)?;
        self.space.reset()
    }

    /// The iterate out to the caller's `x`, after a batch.
    pub fn finish_batch<X: VectorMut<T> + ?Sized>(&self, x: &mut X) -> Result<()> {
        copy_out(self.space.op.gpu(), "x", &self.x, x)
    }

    /// Refuses a batch whose `x` is not the solve's (length and context), before enqueueing it.
    pub fn check_x<X: VectorRef<T> + ?Sized>(&self, x: &X) -> Result<()> {
        self.space.op.gpu().check_operand("x", x, self.n())
    }

    /// Refuses to run with a Jacobi diagonal older than the operator's values.
    pub fn check_fresh(&self) -> Result<()> {
        match &self.space.precond {
            Precond::Jacobi(j) => {
                j.check_fresh(self.space.op.values_generation(), "give the new one with set_diagonal")
            }
            _ => Ok(()),
        }
    }

    /// The diagonal of the operator's current values for the built Jacobi preconditioner.
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        let space = &mut self.space;
        let generation = space.op.values_generation();
        match &mut space.precond {
            Precond::Jacobi(j) => j.set(space.op.gpu(), diagonal, space.need, generation),
            _ => Err(Error::Unsupported("a diagonal for a solver without the Jacobi preconditioner")),
        }
    }
}

impl<T: Scalar, S: Space<T>> Core<T, S> {
    /// The state of a solve of `n` unknowns in `space`, whose scalars hold the solver's `scalars`
    /// slots: the solve's `b` and iterate allocated there.
    pub fn on(
        space: S,
        n: usize,
        options: SolverOptions,
        scalars: u32,
        breakdowns: Breakdowns,
    ) -> Result<Self> {
        let (b, x) = (space.zeros()?, space.zeros()?);
        let history = (scalars, 0);
        Ok(Self { space, options, check_every: super::CHECK_EVERY, b, x, n, breakdowns, history })
    }

    /// Makes room for a residual history of `capacity` entries (the start's residual, then one an
    /// iteration), replacing the device state: refused past [`MAX_HISTORY`] entries
    /// ([`Error::TooLarge`]), before anything is allocated, and while the stream captures a graph.
    /// Graphs captured from this solver before it refer to the old state and must not be replayed.
    pub fn keep_history(&mut self, capacity: usize) -> Result<()> {
        let base = self.history.0;
        // The slots past the solver's own, as a `u32` count: past MAX_HISTORY refused first.
        let added = u32::try_from(capacity).ok().and_then(|c| base.checked_add(c).map(|s| (c, s)));
        let (capacity, scalars) = match added {
            Some(added) if capacity <= MAX_HISTORY => added,
            _ => {
                let limit = MAX_HISTORY;
                return Err(Error::TooLarge { what: "the residual history", value: capacity, limit });
            }
        };
        self.space.keep_scalars(scalars)?;
        self.history = (base, capacity);
        Ok(())
    }

    /// The op that records `slot` in the residual history at this iteration (`offset` 1: at the
    /// next one, for a convergence test that counts the iteration it ends); nothing is recorded
    /// without a history.
    pub fn record(&self, slot: u32, offset: u32) -> ScalarOp<T> {
        record(slot, offset, self.history)
    }

    /// The relative residuals `|r_k| / |b|` the last solve recorded, from its start (`k = 0`), at
    /// most the capacity given to [`Core::keep_history`]; empty without one or before a start.
    /// Waits for the stream.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        let state = self.space.snapshot()?.state;
        let (base, capacity) = self.history;
        if capacity == 0 || state.status == KRYLOV_NOT_STARTED {
            return Ok(Vec::new());
        }
        let recorded = (u64::from(state.done) + u64::from(state.iterations) + 1).min(u64::from(capacity));
        // At most `capacity`, a u32.
        #[allow(clippy::cast_possible_truncation)]
        let squares = self.space.scalars(base, recorded as u32)?;
        let bb = self.space.scalar(BB)?.to_f64();
        Ok(squares.into_iter().map(|rr| relative_residual(rr.to_f64(), bb)).collect())
    }

    pub fn n(&self) -> usize {
        self.n
    }

    /// The ops that set the constant slots and `TOL`, once `BB` is summed, as the CPU oracles
    /// compute it: `T(rel_tol) * T(rel_tol) * bb`.
    pub fn constants(&self) -> [ScalarOp<T>; 5] {
        let rel_tol = T::from_f64(self.options.rel_tol);
        [
            set(ONE, T::from_f64(1.0)),
            set(ZERO, T::ZERO),
            set(TOL, rel_tol),
            mul(TOL, TOL, TOL),
            mul(TOL, BB, TOL),
        ]
    }

    /// Where the solve stands (waits for the stream): `None` while it runs. `done` iterations
    /// before the state's last start count in the outcome too.
    pub fn outcome(&self, done: usize) -> Result<Option<Outcome>> {
        let snap = self.space.snapshot()?;
        let iterations = done + snap.state.iterations as usize;
        let stop = match snap.state.status {
            KRYLOV_CONVERGED => Stop::Converged,
            KRYLOV_MAX_ITERATIONS => Stop::MaxIterations,
            KRYLOV_BREAKDOWN => {
                // The tag comes back from the device: one the solver did not give is a fault of
                // the kernels, reported, not a panic.
                let Some(&(what, zero)) = self.breakdowns.get(snap.state.breakdown as usize) else {
                    return Err(Error::InvalidKernel(format!(
                        "a breakdown tag the solver does not know: {}",
                        snap.state.breakdown
                    )));
                };
                let value = snap.breakdown_value.to_f64();
                let why = if value.is_finite() { zero } else { why::NOT_FINITE };
                return Err(SolveError::Breakdown { iteration: iterations, what, value, why }.into());
            }
            KRYLOV_NOT_STARTED => return Err(Error::Unsupported("the solve was not started: call start")),
            _ => return Ok(None),
        };
        let bb = self.space.scalar(BB)?.to_f64();
        let relative_residual = relative_residual(snap.residual.to_f64(), bb);
        Ok(Some(Outcome { iterations, relative_residual, stop }))
    }
}

/// Enqueues `z = M⁻¹ r`; nothing without a preconditioner (the solver then uses `r` itself).
pub(crate) fn precondition<T: Scalar>(
    p: &mut Precond<'_, T>,
    gpu: &Gpu,
    r: &DeviceVector<T>,
    z: &mut DeviceVector<T>,
) -> Result<()> {
    match p {
        Precond::None => Ok(()),
        Precond::Jacobi(j) => j.apply(gpu, r, z),
        Precond::Custom(p) => p.apply(gpu, r, z),
    }
}

/// Where a solver's preconditioner comes from: the diagonal for [`Preconditioner::Jacobi`], or a
/// caller's own.
pub(crate) enum PrecondSource<'a, 'd, T: Scalar> {
    Diagonal(&'d [T]),
    Custom(Box<dyn Precondition<T> + 'a>),
}

/// The gates of the solvers' launches.
pub(crate) const RUNNING: u32 = krylov_gate(&[kernels_gpu::abi::KRYLOV_RUNNING]);
pub(crate) const STARTING: u32 = krylov_gate(&[KRYLOV_NOT_STARTED]);
pub(crate) const UPDATING: u32 =
    krylov_gate(&[kernels_gpu::abi::KRYLOV_RUNNING, kernels_gpu::abi::KRYLOV_CYCLE_END]);
