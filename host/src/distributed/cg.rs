//! [`DistributedCg`]: conjugate gradients over the GPUs of a [`DistributedPlan`], the recurrence of
//! the single-GPU solver (`crate::solve`, kernels in `kernels-gpu/src/cg.rs`) on each GPU's rows.
//!
//! The vectors `r`, `p`, `q` (and `x`, `b`) are distributed like `y`; for a square matrix that is
//! also how `x` is distributed, so `p` is the product's `x` with no copy. Each of the three sums of an
//! iteration (and the three of the start) is summed over the GPU's rows by the `*_local` kernels,
//! all-reduced over the GPUs with NCCL on the communicator's stream (a few elements: the latency
//! of one all-reduce, ~10-20 µs over NVLink, not its bandwidth), and applied by `cg_finish_*`, so
//! that every GPU holds the same scalars and stops at the same iteration. As on one GPU, nothing
//! allocates or waits for the host between two convergence checks.

use super::product::DistributedPlan;
use crate::device::{DeviceVector, addr};
use crate::enqueue::cg::{CgFinish, CgPasses, DeviceCgState};
use crate::formats::convert::narrow;
use crate::iterative::square_order;
use crate::reference::{DiagonalNeed, inverse_diagonal};
use crate::scalar::Scalar;
use crate::solve::{CHECK_EVERY, Outcome, Preconditioner, SolverOptions, outcome_of};
use crate::{Error, Result};
use cudarc::driver::{CudaEvent, CudaSlice};
use cudarc::nccl::{ReduceOp, group_end, group_start};
use kernels_gpu::abi::{CG_INIT_SUMS, CG_MAX_SUMS, CG_PARTIALS, CG_PQ_SUMS, CgParams, DevicePtr as AbiPtr};

/// One GPU's device state of a solve: the scratch, the state, the sums before and after the
/// all-reduce, the prepared launches, and the events that order its two streams.
#[derive(Debug)]
struct MemberCg<T> {
    // Reached by the kernels through `launches`; held so that they live as long as the solver.
    _inv_diag: Option<CudaSlice<T>>,
    _partials: CudaSlice<T>,
    state: CudaSlice<DeviceCgState<T>>,
    sums: CudaSlice<T>,
    reduced: CudaSlice<T>,
    launches: CgPasses<T>,
    finish: CgFinish<T>,
    summed: CudaEvent,
    all_reduced: CudaEvent,
}

/// A CG solver over the GPUs of one distributed plan (see the module doc). Every process of the
/// ranks must make the same calls.
#[derive(Debug)]
pub struct DistributedCg<'a, T: Scalar> {
    plan: DistributedPlan<'a, T>,
    options: SolverOptions,
    check_every: u32,
    r: Vec<DeviceVector<T>>,
    p: Vec<DeviceVector<T>>,
    q: Vec<DeviceVector<T>>,
    members: Vec<MemberCg<T>>,
}

impl<'a, T: Scalar> DistributedCg<'a, T> {
    /// A solver for the plan's matrix. `diagonal`, the diagonal of the whole `A`, is needed for
    /// [`Preconditioner::Jacobi`]. Refused as [`crate::solve::Cg::new`] refuses.
    pub fn new(plan: DistributedPlan<'a, T>, options: SolverOptions, diagonal: Option<&[T]>) -> Result<Self> {
        options.check()?;
        let matrix = plan.matrix();
        square_order(matrix.nrows(), matrix.ncols())?;
        let inverse = match options.preconditioner {
            Preconditioner::None => None,
            Preconditioner::Jacobi => {
                let diagonal = diagonal.unwrap_or_default();
                if diagonal.len() != matrix.nrows() {
                    let got = diagonal.len();
                    return Err(Error::DimensionMismatch {
                        what: "the diagonal",
                        expected: matrix.nrows(),
                        got,
                    });
                }
                Some(inverse_diagonal(diagonal, DiagonalNeed::Positive)?)
            }
        };
        let max_iterations = narrow("the iteration limit", options.max_iterations)?;
        let (mut r, mut p, mut q, mut members) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, member) in plan.ranks().members().iter().enumerate() {
            let gpu = member.gpu();
            let rows = matrix.rows(i);
            let n = narrow("a GPU's unknowns", rows.len())?;
            let inv_diag = inverse.as_ref().map(|d| gpu.upload(&d[rows.clone()])).transpose()?;
            let (ri, pi, qi) = (gpu.zeros(rows.len())?, gpu.zeros(rows.len())?, gpu.zeros(rows.len())?);
            let partials = gpu.alloc_zeros::<T>(CG_PARTIALS as usize)?;
            let state = gpu.alloc_zeros::<DeviceCgState<T>>(1)?;
            let sums = gpu.alloc_zeros::<T>(CG_MAX_SUMS as usize)?;
            let reduced = gpu.alloc_zeros::<T>(CG_MAX_SUMS as usize)?;
            let params = CgParams {
                b: AbiPtr::new(0),
                x: AbiPtr::new(0),
                r: addr(ri.as_slice(), gpu),
                p: addr(pi.as_slice(), gpu),
                q: addr(qi.as_slice(), gpu),
                inv_diag: inv_diag.as_ref().map_or(AbiPtr::new(0), |d| addr(d, gpu)),
                partials: addr(&partials, gpu),
                state: AbiPtr::new(addr(&state, gpu).addr()),
                sums: addr(&sums, gpu),
                history: AbiPtr::new(0),
                history_capacity: 0,
                rel_tol: T::from_f64(options.rel_tol),
                max_iterations,
                n,
            };
            // SAFETY: `r`, `p`, `q` (and `inv_diag` for Jacobi) hold `n` elements, `partials`
            // `CG_PARTIALS`, `state` one, `sums` and `reduced` `CG_MAX_SUMS`, all allocated above on
            // `gpu`'s context and owned by the solver with the launches; `start` zeroes the state
            // before every `init`, and every finish launch follows the all-reduce into `reduced`.
            let (launches, finish) =
                unsafe { CgPasses::new(gpu, params, addr(&reduced, gpu), inv_diag.is_some())? };
            members.push(MemberCg {
                _inv_diag: inv_diag,
                _partials: partials,
                state,
                sums,
                reduced,
                launches,
                finish,
                summed: gpu.context().new_event(None)?,
                all_reduced: gpu.context().new_event(None)?,
            });
            r.push(ri);
            p.push(pi);
            q.push(qi);
        }
        Ok(Self { plan, options, check_every: CHECK_EVERY, r, p, q, members })
    }

    /// Iterations between two reads of the state in [`DistributedCg::solve`] (0 counts as 1).
    pub fn set_check_every(&mut self, iterations: u32) {
        self.check_every = iterations.max(1);
    }

    /// Solves `A x = b` from the initial guess in `x` (each the process's parts, as the plan's
    /// product takes them): [`DistributedCg::start`], then [`DistributedCg::iterate`] in batches
    /// until [`DistributedCg::outcome`] says it has stopped.
    pub fn solve(&mut self, b: &[DeviceVector<T>], x: &mut [DeviceVector<T>]) -> Result<Outcome> {
        self.start(b, x)?;
        loop {
            self.iterate(x, self.check_every)?;
            if let Some(outcome) = self.outcome()? {
                return Ok(outcome);
            }
        }
    }

    /// Enqueues the start of a solve: `r = b - A x` with the distributed product, the first search
    /// direction and the state. Checks `b` and `x` first: on error nothing is enqueued.
    pub fn start(&mut self, b: &[DeviceVector<T>], x: &mut [DeviceVector<T>]) -> Result<()> {
        self.plan.check(b, &self.r)?;
        self.plan.check(x, &self.r)?;
        for ((member, m), (b, r)) in
            self.plan.ranks().members().iter().zip(&mut self.members).zip(b.iter().zip(&mut self.r))
        {
            let gpu = member.gpu();
            gpu.stream().memset_zeros(&mut m.state)?;
            gpu.stream().memcpy_dtod(b.as_slice(), r.as_mut_slice())?;
        }
        self.plan.spmv(T::from_f64(-1.0), x, T::from_f64(1.0), &mut self.r)?;
        for ((member, m), (b, x)) in
            self.plan.ranks().members().iter().zip(&self.members).zip(b.iter().zip(x.iter()))
        {
            let gpu = member.gpu();
            // SAFETY: `b` and `x` were checked to hold this GPU's `n` elements of its context; `r`
            // holds `b - A x` and the state is zeroed, both earlier on the stream.
            unsafe { m.launches.init(gpu, addr(b.as_slice(), gpu), addr(x.as_slice(), gpu))? };
        }
        self.all_reduce(CG_INIT_SUMS)?;
        for (member, m) in self.plan.ranks().members().iter().zip(&self.members) {
            // SAFETY: the sums of `init` were all-reduced into `reduced` just before, on the stream.
            unsafe { m.finish.init(member.gpu())? };
        }
        Ok(())
    }

    /// Enqueues `iterations` iterations of the solve [`DistributedCg::start`] began with this `x`:
    /// each the product `q = A p` over the GPUs, then `pᵀq`, the update of `r`, that of `x` and `p`,
    /// with an all-reduce after each sum. Allocates nothing, waits for nothing.
    pub fn iterate(&mut self, x: &mut [DeviceVector<T>], iterations: u32) -> Result<()> {
        self.plan.check(x, &self.r)?;
        let update_sums = self.members.first().map_or(1, |m| m.finish.update_sums);
        for _ in 0..iterations {
            self.plan.spmv(T::from_f64(1.0), &self.p, T::ZERO, &mut self.q)?;
            self.each(x, |m, gpu, x| {
                // SAFETY: `x` was checked, and `start` ran `init` with it (this method's contract).
                unsafe { m.launches.pq(gpu, x) }
            })?;
            self.all_reduce(CG_PQ_SUMS)?;
            self.each(x, |m, gpu, x| {
                // SAFETY: as above; `pq`'s sums are reduced, and `update` follows its finish.
                unsafe {
                    m.finish.pq(gpu)?;
                    m.launches.update(gpu, x)
                }
            })?;
            self.all_reduce(update_sums)?;
            self.each(x, |m, gpu, x| {
                // SAFETY: as above, for `update` and `step`.
                unsafe {
                    m.finish.update(gpu)?;
                    m.launches.step(gpu, x)
                }
            })?;
        }
        Ok(())
    }

    /// `launch` on every GPU with its state and its part of `x`.
    fn each(
        &self,
        x: &[DeviceVector<T>],
        launch: impl Fn(&MemberCg<T>, &crate::device::Gpu, AbiPtr<T>) -> Result<()>,
    ) -> Result<()> {
        for ((member, m), x) in self.plan.ranks().members().iter().zip(&self.members).zip(x) {
            let gpu = member.gpu();
            launch(m, gpu, addr(x.as_slice(), gpu))?;
        }
        Ok(())
    }

    /// The first `count` sums of every GPU, all-reduced into its `reduced`, in order with both
    /// streams: the communicator's stream waits for the kernel that left them, the `Gpu`'s stream for
    /// the all-reduce.
    fn all_reduce(&mut self, count: u32) -> Result<()> {
        let members = self.plan.ranks().members();
        for (member, m) in members.iter().zip(&self.members) {
            m.summed.record(member.gpu().stream())?;
            member.comm_stream().wait(&m.summed)?;
        }
        group_start().map_err(Error::nccl("ncclGroupStart"))?;
        let mut result = Ok(());
        for (member, m) in members.iter().zip(&mut self.members) {
            let sent = m.sums.slice(0..count as usize);
            let mut received = m.reduced.slice_mut(0..count as usize);
            if let Err(e) = member.comm().all_reduce(&sent, &mut received, &ReduceOp::Sum) {
                result = Err(Error::nccl("ncclAllReduce")(e));
                break;
            }
        }
        // The group is closed whatever happened inside it, so that NCCL is usable after an error.
        let end = group_end().map_err(Error::nccl("ncclGroupEnd"));
        result.and(end.map(drop))?;
        for (member, m) in members.iter().zip(&self.members) {
            m.all_reduced.record(&member.comm_stream())?;
            member.gpu().stream().wait(&m.all_reduced)?;
        }
        Ok(())
    }

    /// Where the solve stands, read from the first GPU of the process (this waits for its stream;
    /// every GPU holds the same state): `None` while it runs, the outcome once it has stopped, and
    /// [`SolveError::Breakdown`](crate::solve::SolveError::Breakdown) if it broke down.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        let (Some(member), Some(m)) = (self.plan.ranks().members().first(), self.members.first()) else {
            return Err(Error::Unsupported("the solver has no GPU in this process"));
        };
        let DeviceCgState(state) = member.gpu().stream().clone_dtoh(&m.state)?[0];
        outcome_of(&state, "the solve was not started: call start")
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.options
    }
}
