//! Conjugate gradients on the GPU, plain or Jacobi-preconditioned, on any device matrix of the
//! crate through a [`Plan`] (CSR with any kernel, ELL, HYB, the local matrix approach, ...): the
//! recurrence of [`crate::reference::cg`], which is its oracle, with every scalar kept on the device
//! (`kernels-gpu/src/cg.rs`). An iteration is the plan's product and one cooperative launch of the
//! three vector passes; nothing
//! in it allocates, synchronises or reads the host, so iterations may be captured into a CUDA graph
//! and replayed ([`Cg::iterate`]). [`Cg::solve`] checks for convergence every
//! [`Cg::check_every`] iterations; since the kernels stop by themselves once the solve has stopped,
//! the iteration count it reports is exact.

use super::CHECK_EVERY;
use crate::device::{DeviceVector, VectorMut, VectorRef, addr};
use crate::enqueue::cg::{CgLaunches, DeviceCgState};
use crate::enqueue::{DeviceMatrix, Plan};
use crate::formats::convert::narrow;
use crate::iterative::{MAX_HISTORY, square_order};
use crate::iterative::{
    NOT_SPD, Outcome, Preconditioner, SolveError, SolverOptions, Stop, relative_residual, why,
};
use crate::reference::{DiagonalNeed, inverse_diagonal};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{
    CG_BREAKDOWN_PAP, CG_BREAKDOWN_RZ, CG_CONVERGED, CG_MAX_ITERATIONS, CG_NOT_STARTED, CG_PARTIALS,
    CgParams, CgState, DevicePtr as AbiPtr,
};

/// A CG solver for one matrix and plan, with the vectors and device state of its solves, allocated
/// once.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Cg, Preconditioner, SolverOptions};
/// use gpu_spmv::{Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(3);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let options = SolverOptions { rel_tol: 1e-10, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let mut cg = Cg::new(gpu.plan(&device_a, Kernel::Auto)?, options, None)?;
/// let b = gpu.upload_vector(&[1.0, 2.0, 3.0])?;
/// let mut x = gpu.zeros::<f64>(3)?;
/// let outcome = cg.solve(&b, &mut x)?;
/// println!("{} iterations, relative residual {:e}", outcome.iterations, outcome.relative_residual);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Cg<'a, T: Scalar, A: DeviceMatrix<T> + ?Sized> {
    plan: Plan<'a, T, A>,
    options: SolverOptions,
    check_every: u32,
    n: u32,
    r: DeviceVector<T>,
    p: DeviceVector<T>,
    q: DeviceVector<T>,
    /// `1 / diag(A)` for Jacobi, reached by the kernels through `launches`, with the
    /// [`DeviceMatrix`] values generation it was given at: stale once the matrix's differs.
    inv_diag: Option<(CudaSlice<T>, u64)>,
    // Reached by the kernels through `launches`; held so that it lives as long as the solver.
    _partials: CudaSlice<T>,
    state: CudaSlice<DeviceCgState<T>>,
    /// The residual history's buffer, reached by the kernels through `launches`.
    history: Option<CudaSlice<T>>,
    /// The launches' parameters, kept to make them again for a history.
    params: CgParams<T>,
    launches: CgLaunches<T>,
    /// Whether [`Cg::start`] ran on a matrix of order 0, whose launches have no blocks and leave
    /// the device state as it was: [`Cg::outcome`] then reports the empty solve converged at once,
    /// as the oracle does.
    started_empty: bool,
}

impl<'a, T: Scalar, A: DeviceMatrix<T> + ?Sized> Cg<'a, T, A> {
    /// A solver for the plan's matrix. `diagonal`, the diagonal of `A`, is needed for
    /// [`Preconditioner::Jacobi`] (the device matrices keep no host copy of their values; for
    /// host matrices, `reference::LinearOperator::diagonal` gives it) and ignored otherwise.
    /// Once the matrix's values are replaced ([`DeviceCsr::update_values`](crate::DeviceCsr::update_values)),
    /// a Jacobi solver refuses to start or iterate ([`Error::StaleValues`]) until
    /// [`Cg::set_diagonal`] gives it the new diagonal; a plain one goes on with the new values.
    ///
    /// Refused: options out of their ranges (as [`crate::reference::cg::cg`] refuses them), a
    /// matrix that is not square ([`SolveError::NotSquare`]), a missing or short
    /// diagonal ([`Error::DimensionMismatch`]), a diagonal entry that is not positive
    /// ([`SolveError::NonPositiveDiagonal`]).
    pub fn new(plan: Plan<'a, T, A>, options: SolverOptions, diagonal: Option<&[T]>) -> Result<Self> {
        options.check()?;
        let a = plan.matrix();
        let gpu = plan.gpu();
        square_order(a.nrows(), a.ncols())?;
        let n = narrow("the unknowns", a.nrows())?;
        let inv_diag = match options.preconditioner {
            Preconditioner::None => None,
            Preconditioner::Jacobi => {
                let diagonal = diagonal.unwrap_or_default();
                if diagonal.len() != a.nrows() {
                    let got = diagonal.len();
                    return Err(Error::DimensionMismatch { what: "the diagonal", expected: a.nrows(), got });
                }
                Some(gpu.upload(&inverse_diagonal(diagonal, DiagonalNeed::Positive)?)?)
            }
        };
        let (r, p, q) = (gpu.zeros(a.nrows())?, gpu.zeros(a.nrows())?, gpu.zeros(a.nrows())?);
        let partials = gpu.alloc_zeros::<T>(CG_PARTIALS as usize)?;
        let state = gpu.alloc_zeros::<DeviceCgState<T>>(1)?;
        let params = CgParams {
            b: AbiPtr::new(0),
            x: AbiPtr::new(0),
            r: addr(r.as_slice(), gpu),
            p: addr(p.as_slice(), gpu),
            q: addr(q.as_slice(), gpu),
            inv_diag: inv_diag.as_ref().map_or(AbiPtr::new(0), |d| addr(d, gpu)),
            partials: addr(&partials, gpu),
            state: AbiPtr::new(addr(&state, gpu).addr()),
            history: AbiPtr::new(0),
            history_capacity: 0,
            rel_tol: T::from_f64(options.rel_tol),
            max_iterations: narrow("the iteration limit", options.max_iterations)?,
            n,
        };
        // SAFETY: `r`, `p`, `q` (and `inv_diag` for Jacobi) hold `n` elements, `partials`
        // `CG_PARTIALS`, `state` one, all allocated above on `gpu`'s context and owned by the
        // solver with the launches; `start` zeroes the state before every `init`.
        let launches = unsafe { CgLaunches::new(gpu, params, inv_diag.is_some())? };
        let inv_diag = inv_diag.map(|d| (d, a.values_generation()));
        Ok(Self {
            plan,
            options,
            check_every: CHECK_EVERY,
            n,
            r,
            p,
            q,
            inv_diag,
            _partials: partials,
            state,
            history: None,
            params,
            launches,
            started_empty: false,
        })
    }

    /// Keeps `rᵀr` of the start and of each iteration of the solves to come, up to `capacity`
    /// entries, for [`Cg::residual_history`]: refused past [`MAX_HISTORY`](super::MAX_HISTORY)
    /// ([`Error::TooLarge`]), before anything is allocated, and while the stream captures a graph.
    /// It makes the solver's launches anew: call it before capturing any of its work.
    pub fn with_history(mut self, capacity: usize) -> Result<Self> {
        if capacity > MAX_HISTORY {
            return Err(Error::TooLarge {
                what: "the residual history",
                value: capacity,
                limit: MAX_HISTORY,
            });
        }
        let gpu = self.plan.gpu();
        let history = gpu.alloc_zeros::<T>(capacity.max(1))?;
        self.params.history = addr(&history, gpu);
        // At most 2^20 (checked above).
        self.params.history_capacity = u32::try_from(capacity).unwrap_or(0);
        // SAFETY: as in `Cg::new`, and `history` holds at least `capacity` elements of `gpu`'s
        // context, owned by the solver with the launches.
        self.launches = unsafe { CgLaunches::new(gpu, self.params, self.inv_diag.is_some())? };
        self.history = Some(history);
        Ok(self)
    }

    /// The relative residuals `|r_k| / |b|` of the last solve, from its start (`k = 0`), one an
    /// iteration, at most the capacity given to [`Cg::with_history`] (empty without one or before a
    /// start): the recurrence's residuals, which CG's convergence test reads. Waits for the stream.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        let gpu = self.plan.gpu();
        let DeviceCgState(state) = gpu.stream().clone_dtoh(&self.state)?[0];
        let capacity = self.params.history_capacity;
        let (Some(history), false) = (&self.history, state.status == CG_NOT_STARTED) else {
            return Ok(Vec::new());
        };
        let recorded = state.iterations.saturating_add(1).min(capacity) as usize;
        if recorded == 0 {
            return Ok(Vec::new());
        }
        let squares = gpu.stream().clone_dtoh(&history.slice(..recorded))?;
        let bb = state.bb.to_f64();
        Ok(squares.into_iter().map(|rr| relative_residual(rr.to_f64(), bb)).collect())
    }

    /// Iterations between two reads of the state in [`Cg::solve`] (at least 1).
    pub fn check_every(&self) -> u32 {
        self.check_every
    }

    /// Gives a Jacobi solver the diagonal of the matrix's current values, after
    /// [`DeviceCsr::update_values`](crate::DeviceCsr::update_values): copied in place, in stream
    /// order, so the solves enqueued after it use it. Refused as [`Cg::new`] refuses a diagonal, by a
    /// solver without the Jacobi preconditioner ([`Error::Unsupported`]), and while the stream
    /// captures a graph ([`Error::Unsupported`]: the copy is from host memory).
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        let gpu = self.plan.gpu();
        let generation = self.plan.matrix().values_generation();
        let Some((inv_diag, at)) = &mut self.inv_diag else {
            return Err(Error::Unsupported("a diagonal for a solver without the Jacobi preconditioner"));
        };
        if diagonal.len() != self.n as usize {
            let (expected, got) = (self.n as usize, diagonal.len());
            return Err(Error::DimensionMismatch { what: "the diagonal", expected, got });
        }
        gpu.not_capturing("a copy from the host while the stream captures a graph")?;
        let inverse = inverse_diagonal(diagonal, DiagonalNeed::Positive)?;
        if !inverse.is_empty() {
            gpu.stream().memcpy_htod(&inverse, inv_diag)?;
        }
        *at = generation;
        Ok(())
    }

    /// Sets the iterations between two reads of the state in [`Cg::solve`] (0 counts as 1).
    pub fn set_check_every(&mut self, iterations: u32) {
        self.check_every = iterations.max(1);
    }

    /// Solves `A x = b` from the initial guess in `x`, leaving the last iterate there: [`Cg::start`],
    /// then [`Cg::iterate`] in batches of [`Cg::check_every`] until [`Cg::outcome`] says it has
    /// stopped. On an error before the first iteration `x` is untouched; a breakdown
    /// ([`SolveError::Breakdown`]: `pᵀAp` or `rᵀz` not a positive finite number, the matrix is not
    /// SPD) leaves the last iterate before it.
    pub fn solve<B, X>(&mut self, b: &B, x: &mut X) -> Result<Outcome>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        self.start(b, x)?;
        loop {
            self.iterate(x, self.check_every)?;
            if let Some(outcome) = self.outcome()? {
                return Ok(outcome);
            }
        }
    }

    /// Enqueues the start of a solve: the state reset, `r = b - A x` with the plan's product, and
    /// the first search direction. Checks `b` and `x` first: on error nothing is enqueued.
    pub fn start<B, X>(&mut self, b: &B, x: &mut X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        let (gpu, n) = (self.plan.gpu(), self.n as usize);
        gpu.check_operand("b", b, n)?;
        gpu.check_operand("x", x, n)?;
        self.check_diagonal()?;
        if n == 0 {
            self.started_empty = true;
            return Ok(());
        }
        gpu.stream().memset_zeros(&mut self.state)?;
        let (b_addr, _b_guard) = b.read(gpu.stream());
        // SAFETY: `b` was checked to hold `n` elements of the solver's context.
        unsafe { self.launches.copy_b_to_r(gpu, AbiPtr::new(b_addr))? };
        self.plan.spmv(T::from_f64(-1.0), &*x, T::from_f64(1.0), &mut self.r)?;
        let (x_addr, _x_guard) = x.write(gpu.stream());
        // SAFETY: `b` and `x` were checked; `r` now holds `b - A x` and the state is zeroed, both
        // earlier on the stream.
        unsafe { self.launches.init(gpu, AbiPtr::new(b_addr), AbiPtr::new(x_addr)) }
    }

    /// Enqueues `iterations` iterations on the solve [`Cg::start`] began with this `x` (each: the
    /// product `q = A p`, then `pᵀq`, the update of `r`, and that of `x` and `p`). Allocates
    /// nothing, waits for nothing: may be captured into a CUDA graph on
    /// [`Gpu::stream`](crate::Gpu::stream) and replayed. Iterations after the solve has stopped change
    /// nothing. A Jacobi diagonal is checked against the matrix's values when the iterations are
    /// enqueued: a graph replays them as captured, so capture the update of the values and of the
    /// diagonal with them, or capture anew.
    pub fn iterate<X: VectorMut<T> + ?Sized>(&mut self, x: &mut X, iterations: u32) -> Result<()> {
        let gpu = self.plan.gpu();
        self.plan.gpu().check_operand("x", x, self.n as usize)?;
        self.check_diagonal()?;
        let (x_addr, _x_guard) = x.write(gpu.stream());
        for _ in 0..iterations {
            self.plan.spmv(T::from_f64(1.0), &self.p, T::ZERO, &mut self.q)?;
            // SAFETY: `x` was checked to hold `n` elements of the solver's context; the kernels do
            // nothing unless the state says a solve runs, so an iteration before `start` (the state
            // zeroed at allocation, not started) or after the solve stopped writes nothing.
            unsafe { self.launches.after_product(gpu, AbiPtr::new(x_addr))? };
        }
        Ok(())
    }

    /// Where the solve stands, read from the device (this waits for the stream): `None` while it
    /// runs, the outcome once it has converged or reached the iteration limit, and
    /// [`SolveError::Breakdown`] if it broke down.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        if self.n == 0 && self.started_empty {
            return Ok(Some(Outcome { iterations: 0, relative_residual: 0.0, stop: Stop::Converged }));
        }
        let DeviceCgState(state) = self.plan.gpu().stream().clone_dtoh(&self.state)?[0];
        outcome_of(&state)
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.options
    }

    /// The plan of the products.
    pub fn plan(&self) -> &Plan<'a, T, A> {
        &self.plan
    }

    /// Refuses a Jacobi diagonal given before the matrix's last update of its values.
    fn check_diagonal(&self) -> Result<()> {
        match self.inv_diag {
            Some((_, at)) if at != self.plan.matrix().values_generation() => Err(Error::StaleValues {
                what: "the solver's Jacobi diagonal",
                refresh: "give the new one with Cg::set_diagonal",
            }),
            _ => Ok(()),
        }
    }
}

/// What a solve's device state says: `None` while it runs, the outcome once it has converged or
/// reached the iteration limit, [`SolveError::Breakdown`] if it broke down, and
/// [`Error::Unsupported`] before its start.
fn outcome_of<T: Scalar>(state: &CgState<T>) -> Result<Option<Outcome>> {
    let iterations = state.iterations as usize;
    let stop = match state.status {
        CG_CONVERGED => Stop::Converged,
        CG_MAX_ITERATIONS => Stop::MaxIterations,
        CG_BREAKDOWN_PAP => {
            let value = state.pq.to_f64();
            return Err(
                SolveError::Breakdown { iteration: iterations, what: "pᵀAp", value, why: NOT_SPD }.into()
            );
        }
        CG_BREAKDOWN_RZ if !state.rr.to_f64().is_finite() => {
            let value = state.rr.to_f64();
            return Err(SolveError::Breakdown {
                iteration: iterations,
                what: "rᵀr",
                value,
                why: why::NOT_FINITE,
            }
            .into());
        }
        CG_BREAKDOWN_RZ => {
            let value = state.rz.to_f64();
            return Err(
                SolveError::Breakdown { iteration: iterations, what: "rᵀz", value, why: NOT_SPD }.into()
            );
        }
        CG_NOT_STARTED => return Err(Error::Unsupported("the solve was not started: call Cg::start")),
        _ => return Ok(None),
    };
    let (rr, bb) = (state.rr.to_f64(), state.bb.to_f64());
    Ok(Some(Outcome { iterations, relative_residual: relative_residual(rr, bb), stop }))
}
