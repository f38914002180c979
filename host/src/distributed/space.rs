//! The solver tier's [`Space`] over the GPUs of a [`DistributedPlan`] ([`Parts`]), and the solvers
//! written over it: [`DistributedPcg`], [`DistributedPipelinedCg`], [`DistributedBicgstab`] and
//! [`DistributedGmres`] run the launches of `solve::Pcg`, `solve::PipelinedCg`, `solve::Bicgstab`
//! and `solve::Gmres`, from the same source, on every GPU's rows.
//!
//! A vector is a part per GPU, distributed like the product's `y` (for a square matrix, also like
//! its `x`). The vector ops and the scalar programs run on every GPU's own device state; a pass of
//! dot products sums each GPU's rows into slots of its own past the solver's (the stage), all-reduces
//! the stage over the GPUs with one NCCL call on the communicators' streams (a few elements: one
//! all-reduce's latency), then copies the whole sums into the solver's slots at the start of the
//! next scalar program (the one every solver runs after a pass, so the copies cost no launch of
//! their own), so every GPU's scalars are equal and every GPU's state takes the same path (each all-reduce
//! gives every rank the same bits). The stage, not the solver's slots, is what the all-reduce
//! sums in place, and the copies run gated: a gated-off pass writes no sums, and its all-reduce
//! then changes only the stage. A GMRES basis is columns of parts, each GPU's parts of them listed
//! in one table there, which the one-GPU basis kernels read as a basis of shorter vectors; each
//! Gram-Schmidt pass is staged as a pass of dot products is (all its columns' sums in one
//! all-reduce, copied as one range), but the combination after it reads the sums, so their copies
//! are a program of their own: two scalar launches an Arnoldi step more than on one GPU. The
//! operator is the plan's product, whose exchange of ghost entries is its own; the preconditioner
//! is Jacobi on each GPU's rows, or none.

use super::product::DistributedPlan;
use crate::device::{DeviceVector, Gpu};
use crate::enqueue::krylov::{Columns, DeviceBasis, KrylovDevice, Snapshot, diag_scale};
use crate::iterative::square_order;
use crate::reference::{DiagonalNeed, inverse_diagonal};
use crate::scalar::Scalar;
use crate::solve::{
    BicgstabIn, Core, GmresIn, Outcome, PcgIn, PipelinedCgIn, Preconditioner, Recurrence, SolverOptions,
    Space, copy_range, copy_scalar, gmres_steps,
};
use crate::{Error, Result};
use cudarc::driver::{CudaEvent, CudaSlice};
use cudarc::nccl::{ReduceOp, group_end, group_start};
use kernels_gpu::abi::{Coef, KRYLOV_MAX_DOTS, KRYLOV_MAX_OPS, ScalarOp};
use std::cell::Cell;

/// One GPU's device state of a solve, and the events that order its two streams around an
/// all-reduce.
#[derive(Debug)]
struct MemberState<T> {
    device: KrylovDevice<T>,
    /// `1 / diagonal` of the GPU's rows, for Jacobi.
    inv_diag: Option<CudaSlice<T>>,
    summed: CudaEvent,
    all_reduced: CudaEvent,
}

/// The GPUs of one [`DistributedPlan`] as a solver's [`Space`] (see the module doc). Every process
/// of the ranks must make the same calls.
#[derive(Debug)]
pub(crate) struct Parts<'a, T: Scalar> {
    plan: DistributedPlan<'a, T>,
    members: Vec<MemberState<T>>,
    /// The first of the slots, past the solver's own, where a pass leaves a GPU's sums for the
    /// all-reduce ([`stage_slots`] of them).
    stage: u32,
    /// The copies of the last pass's all-reduced sums into the solver's slots, not yet enqueued:
    /// they join the next scalar program of their gate, which every solver runs right after a
    /// pass, saving a launch a pass on every GPU; anything else that reads the scalars or stages
    /// new sums enqueues them first ([`Parts::flush`]).
    pending: Cell<Option<Copies<T>>>,
}

/// The slots of a solver's own, then the stage: [`KRYLOV_MAX_DOTS`], or a basis' `columns` where more.
fn stage_slots(scalars: u32, columns: u32) -> Result<u32> {
    scalars.checked_add(columns.max(KRYLOV_MAX_DOTS)).ok_or(Error::InvalidKernel("scalar slots".into()))
}

/// The copies of a pass's sums from the stage into their slots, and the pass's gate.
#[derive(Debug, Clone, Copy)]
struct Copies<T> {
    gate: u32,
    ops: [ScalarOp<T>; KRYLOV_MAX_DOTS as usize],
    count: usize,
}

impl<'a, T: Scalar> Parts<'a, T> {
    /// The refusals every distributed solver makes first, in its oracle's order: options out of
    /// their ranges, a matrix that is not square. Returns the order.
    fn refusals(plan: &DistributedPlan<'a, T>, options: &SolverOptions) -> Result<usize> {
        options.check()?;
        square_order(plan.matrix().nrows(), plan.matrix().ncols())
    }

    /// The space of a solver with `scalars` slots of its own and a basis of up to `columns` columns
    /// (0 for none) on the plan's GPUs, with the Jacobi preconditioner of `diagonal` (the whole
    /// `A`'s, checked as the solver `need`s it: positive for the CGs, non-zero for BiCGSTAB and
    /// GMRES) where the options ask for it. Refused as the one-GPU solver refuses. Returns the
    /// solve's length too.
    fn new(
        plan: DistributedPlan<'a, T>,
        options: &SolverOptions,
        (diagonal, need): (Option<&[T]>, DiagonalNeed),
        (scalars, columns): (u32, u32),
    ) -> Result<(Self, usize)> {
        let n = Self::refusals(&plan, options)?;
        let inverse = match options.preconditioner {
            Preconditioner::None => None,
            Preconditioner::Jacobi => {
                let diagonal = diagonal.unwrap_or_default();
                if diagonal.len() != n {
                    let got = diagonal.len();
                    return Err(Error::DimensionMismatch { what: "the diagonal", expected: n, got });
                }
                Some(inverse_diagonal(diagonal, need)?)
            }
        };
        let slots = stage_slots(scalars, columns)?;
        let matrix = plan.matrix();
        let mut members = Vec::new();
        for (i, member) in plan.ranks().members().iter().enumerate() {
            let gpu = member.gpu();
            let rows = matrix.rows(i);
            members.push(MemberState {
                device: KrylovDevice::new(gpu, rows.len(), slots, columns)?,
                inv_diag: inverse.as_ref().map(|d| gpu.upload(&d[rows])).transpose()?,
                summed: gpu.context().new_event(None)?,
                all_reduced: gpu.context().new_event(None)?,
            });
        }
        Ok((Self { plan, members, stage: scalars, pending: Cell::new(None) }, n))
    }

    /// Each member's GPU with its state and its parts of the vectors.
    fn each(&self, mut f: impl FnMut(usize, &Gpu, &MemberState<T>) -> Result<()>) -> Result<()> {
        for (i, (member, m)) in self.plan.ranks().members().iter().zip(&self.members).enumerate() {
            f(i, member.gpu(), m)?;
        }
        Ok(())
    }

    /// The stage's first `count` slots of every GPU, all-reduced in place, in order with both
    /// streams: the communicator's stream waits for the pass that left them, the `Gpu`'s stream for
    /// the all-reduce, so the host waits for neither.
    fn all_reduce(&mut self, count: u32) -> Result<()> {
        let members = self.plan.ranks().members();
        for (member, m) in members.iter().zip(&self.members) {
            m.summed.record(member.gpu().stream())?;
            member.comm_stream().wait(&m.summed)?;
        }
        group_start().map_err(Error::nccl("ncclGroupStart"))?;
        let mut result = Ok(());
        for (member, m) in members.iter().zip(&mut self.members) {
            let reduced = m.device.slots_mut(self.stage, count).and_then(|mut stage| {
                member
                    .comm()
                    .all_reduce_in_place(&mut stage, &ReduceOp::Sum)
                    .map_err(Error::nccl("ncclAllReduce"))
            });
            if let Err(e) = reduced {
                result = Err(e);
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

    /// Leaves `copies`, of the sums just all-reduced from the stage into the solver's slots, to the
    /// next scalar program.
    fn defer(&self, gate: u32, copies: impl IntoIterator<Item = ScalarOp<T>>) {
        let stage = self.stage;
        let mut ops = [copy_scalar(stage, stage); KRYLOV_MAX_DOTS as usize];
        let mut count = 0;
        for (op, copy) in ops.iter_mut().zip(copies) {
            *op = copy;
            count += 1;
        }
        self.pending.set(Some(Copies { gate, ops, count }));
    }

    /// Enqueues the pending copies, if any, as a program of their own.
    fn flush(&self) -> Result<()> {
        match self.pending.take() {
            Some(c) => self.each(|_, gpu, m| m.device.program(gpu, c.gate, &c.ops[..c.count])),
            None => Ok(()),
        }
    }

    /// The first GPU's state, which every GPU's equals.
    fn first(&self) -> Result<(&Gpu, &KrylovDevice<T>)> {
        match (self.plan.ranks().members().first(), self.members.first()) {
            (Some(member), Some(m)) => Ok((member.gpu(), &m.device)),
            _ => Err(Error::Unsupported("the solver has no GPU in this process")),
        }
    }

    /// Refuses parts that are not the solve's (one per GPU, each of its rows and context).
    fn check(&self, what: &[DeviceVector<T>], like: &[DeviceVector<T>]) -> Result<()> {
        self.plan.check(what, like)
    }

    /// Refuses vectors that are not a part per GPU of the solve ([`check_part_counts`]).
    fn check_counts(&self, vectors: &[&[DeviceVector<T>]]) -> Result<()> {
        check_part_counts(self.members.len(), vectors)
    }
}

/// Refuses vectors that are not `expected` parts each, before anything is enqueued: the loops over
/// the GPUs zip the members with the parts, which would skip the GPUs past a short list in silence.
/// (Each part's length and context is each launch's own check.)
fn check_part_counts<T>(expected: usize, vectors: &[&[DeviceVector<T>]]) -> Result<()> {
    match vectors.iter().find(|v| v.len() != expected) {
        Some(v) => Err(Error::DimensionMismatch { what: "a solver vector (parts)", expected, got: v.len() }),
        None => Ok(()),
    }
}

impl<T: Scalar> Space<T> for Parts<'_, T> {
    type Vector = Vec<DeviceVector<T>>;

    fn zeros(&self) -> Result<Self::Vector> {
        let matrix = self.plan.matrix();
        let members = self.plan.ranks().members();
        members.iter().enumerate().map(|(i, member)| member.gpu().zeros(matrix.rows(i).len())).collect()
    }

    fn zero(&self, v: &mut Self::Vector) -> Result<()> {
        self.check_counts(&[v])?;
        for (member, v) in self.plan.ranks().members().iter().zip(v) {
            member.gpu().stream().memset_zeros(v.as_mut_slice())?;
        }
        Ok(())
    }

    fn apply(&mut self, x: &Self::Vector, y: &mut Self::Vector) -> Result<()> {
        self.plan.spmv(T::from_f64(1.0), x, T::ZERO, y)
    }

    fn has_preconditioner(&self) -> bool {
        self.members.first().is_some_and(|m| m.inv_diag.is_some())
    }

    fn precondition(&mut self, r: &Self::Vector, z: &mut Self::Vector) -> Result<()> {
        self.check_counts(&[r, z])?;
        let members = self.plan.ranks().members();
        for (((member, m), r), z) in members.iter().zip(&self.members).zip(r).zip(z.iter_mut()) {
            if let Some(d) = &m.inv_diag {
                diag_scale(member.gpu(), d, r, z)?;
            }
        }
        Ok(())
    }

    fn scale(&self, gate: u32, a: Coef<T>, x: Option<&Self::Vector>, out: &mut Self::Vector) -> Result<()> {
        self.check_counts(&[out, x.map_or(&out[..], |x| x)])?;
        self.flush()?;
        let members = self.plan.ranks().members();
        for (i, ((member, m), out)) in members.iter().zip(&self.members).zip(out.iter_mut()).enumerate() {
            m.device.scale(member.gpu(), gate, a, x.map(|x| &x[i]), out)?;
        }
        Ok(())
    }

    fn axpy(&self, gate: u32, a: Coef<T>, x: &Self::Vector, y: &mut Self::Vector) -> Result<()> {
        self.check_counts(&[x, y])?;
        self.flush()?;
        let members = self.plan.ranks().members();
        for (((member, m), x), y) in members.iter().zip(&self.members).zip(x).zip(y.iter_mut()) {
            m.device.axpy(member.gpu(), gate, a, x, y)?;
        }
        Ok(())
    }

    fn p_update(
        &self,
        gate: u32,
        ab: (Coef<T>, Coef<T>),
        v: &Self::Vector,
        r: &Self::Vector,
        p: &mut Self::Vector,
    ) -> Result<()> {
        self.check_counts(&[v, r, p])?;
        self.flush()?;
        let members = self.plan.ranks().members();
        for ((((member, m), v), r), p) in members.iter().zip(&self.members).zip(v).zip(r).zip(p.iter_mut()) {
            m.device.p_update(member.gpu(), gate, ab, v, r, p)?;
        }
        Ok(())
    }

    fn dots(&mut self, gate: u32, pairs: &[(&Self::Vector, &Self::Vector, u32)]) -> Result<()> {
        if pairs.is_empty() || pairs.len() > KRYLOV_MAX_DOTS as usize {
            return Err(Error::InvalidKernel(format!("{} dot products in one pass", pairs.len())));
        }
        for &(x, y, _) in pairs {
            self.check_counts(&[x, y])?;
        }
        self.flush()?;
        let stage = self.stage;
        self.each(|i, gpu, m| {
            let staged: Vec<_> = (0..).zip(pairs).map(|(k, &(x, y, _))| (&x[i], &y[i], stage + k)).collect();
            m.device.dots(gpu, gate, &staged)
        })?;
        #[allow(clippy::cast_possible_truncation)] // at most KRYLOV_MAX_DOTS, checked above
        self.all_reduce(pairs.len() as u32)?;
        self.defer(gate, (stage..).zip(pairs).map(|(k, &(_, _, slot))| copy_scalar(k, slot)));
        Ok(())
    }

    fn program(&self, gate: u32, ops: &[ScalarOp<T>]) -> Result<()> {
        match self.pending.get() {
            Some(c) if c.gate == gate && c.count + ops.len() <= KRYLOV_MAX_OPS => {
                self.pending.set(None);
                let mut joined = [c.ops[0]; KRYLOV_MAX_OPS];
                joined[..c.count].copy_from_slice(&c.ops[..c.count]);
                joined[c.count..c.count + ops.len()].copy_from_slice(ops);
                self.each(|_, gpu, m| m.device.program(gpu, gate, &joined[..c.count + ops.len()]))
            }
            _ => {
                self.flush()?;
                self.each(|_, gpu, m| m.device.program(gpu, gate, ops))
            }
        }
    }

    type Basis = DeviceBasis<T, Vec<DeviceVector<T>>>;

    fn basis(&self, columns: u32) -> Result<Self::Basis> {
        let gpus: Vec<&Gpu> = self.plan.ranks().members().iter().map(|member| member.gpu()).collect();
        DeviceBasis::new(&gpus, columns, || self.zeros())
    }

    fn column(basis: &Self::Basis, j: usize) -> &Self::Vector {
        basis.column(j)
    }

    fn scale_to_column(
        &self,
        gate: u32,
        a: Coef<T>,
        x: &Self::Vector,
        basis: &mut Self::Basis,
        j: usize,
    ) -> Result<()> {
        self.check_counts(&[x])?;
        self.flush()?;
        self.each(|i, gpu, m| m.device.scale_to_column(gpu, gate, a, &x[i], basis, (j, i)))
    }

    fn basis_dots(
        &mut self,
        gate: u32,
        basis: &Self::Basis,
        k: u32,
        first: u32,
        w: &Self::Vector,
    ) -> Result<()> {
        // As `dots`: each GPU's sums in the stage, one all-reduce, their copies deferred (one op).
        self.check_counts(&[w])?;
        self.flush()?;
        let stage = self.stage;
        self.each(|i, gpu, m| {
            m.device.basis_dots(gpu, gate, basis.part(i)?, Columns::First(k), stage, &w[i])
        })?;
        self.all_reduce(k)?;
        self.defer(gate, [copy_range(stage, first, k)]);
        Ok(())
    }

    fn basis_combine(
        &self,
        gate: u32,
        basis: &Self::Basis,
        columns: Columns,
        first: u32,
        (scale, accumulate): (T, bool),
        w: &mut Self::Vector,
    ) -> Result<()> {
        self.check_counts(&[w])?;
        self.flush()?;
        let members = self.plan.ranks().members();
        for (i, ((member, m), w)) in members.iter().zip(&self.members).zip(w.iter_mut()).enumerate() {
            let part = basis.part(i)?;
            m.device.basis_combine(member.gpu(), gate, part, columns, first, scale, accumulate, w)?;
        }
        Ok(())
    }

    fn cg_update(
        &mut self,
        gate: u32,
        alpha: u32,
        (p, q): (&Self::Vector, &Self::Vector),
        x: &mut Self::Vector,
        r: &mut Self::Vector,
        mut z: Option<&mut Self::Vector>,
        out: (u32, u32),
    ) -> Result<()> {
        // Each GPU's pass leaves its sums in the stage, all-reduced and copied out as `dots`'s.
        self.check_counts(&[p, q, x, r])?;
        if let Some(z) = z.as_deref() {
            self.check_counts(&[z])?;
        }
        self.flush()?;
        let stage = self.stage;
        let members = self.plan.ranks().members();
        for (i, ((member, m), (x, r))) in
            members.iter().zip(&self.members).zip(x.iter_mut().zip(r.iter_mut())).enumerate()
        {
            let jacobi = match (&m.inv_diag, z.as_deref_mut()) {
                (Some(d), Some(z)) => Some((d, &mut z[i])),
                (None, None) => None,
                _ => return Err(Error::InvalidKernel("CG's z without its Jacobi diagonal".into())),
            };
            m.device.cg_update(
                member.gpu(),
                gate,
                alpha,
                (&p[i], &q[i]),
                x,
                r,
                jacobi,
                (stage, stage + 1),
            )?;
        }
        self.all_reduce(2)?;
        self.defer(gate, [copy_scalar(stage, out.0), copy_scalar(stage + 1, out.1)]);
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        self.flush()?;
        let members = self.plan.ranks().members();
        for (member, m) in members.iter().zip(&mut self.members) {
            m.device.reset(member.gpu())?;
        }
        Ok(())
    }

    fn keep_scalars(&mut self, scalars: u32) -> Result<()> {
        self.flush()?;
        let matrix = self.plan.matrix();
        let members = self.plan.ranks().members();
        for (i, (member, m)) in members.iter().zip(&mut self.members).enumerate() {
            let columns = m.device.columns();
            let slots = stage_slots(scalars, columns)?;
            m.device = KrylovDevice::new(member.gpu(), matrix.rows(i).len(), slots, columns)?;
        }
        self.stage = scalars;
        Ok(())
    }

    fn snapshot(&self) -> Result<Snapshot<T>> {
        self.flush()?;
        let (gpu, device) = self.first()?;
        device.snapshot(gpu)
    }

    fn scalar(&self, slot: u32) -> Result<T> {
        self.flush()?;
        let (gpu, device) = self.first()?;
        device.scalar(gpu, slot)
    }

    fn scalars(&self, first: u32, len: u32) -> Result<Vec<T>> {
        self.flush()?;
        let (gpu, device) = self.first()?;
        device.scalars(gpu, first, len)
    }
}

/// The start every distributed solver shares before its own launches: the caller's checked parts of
/// `b` and `x` copied into the solve's, and every GPU's state reset. Nothing is enqueued when a check
/// fails.
fn begin<T: Scalar>(
    core: &mut Core<T, Parts<'_, T>>,
    b: &[DeviceVector<T>],
    x: &[DeviceVector<T>],
) -> Result<()> {
    core.space.check(b, &core.b)?;
    core.space.check(x, &core.x)?;
    let members = core.space.plan.ranks().members();
    for (((member, b), x), (own_b, own_x)) in
        members.iter().zip(b).zip(x).zip(core.b.iter_mut().zip(&mut core.x))
    {
        let stream = member.gpu().stream();
        stream.memcpy_dtod(b.as_slice(), own_b.as_mut_slice())?;
        stream.memcpy_dtod(x.as_slice(), own_x.as_mut_slice())?;
    }
    core.space.reset()
}

/// The iterate out to the caller's parts of `x`, after a batch.
fn finish_batch<T: Scalar>(core: &Core<T, Parts<'_, T>>, x: &mut [DeviceVector<T>]) -> Result<()> {
    for ((member, own), x) in core.space.plan.ranks().members().iter().zip(&core.x).zip(x) {
        member.gpu().stream().memcpy_dtod(own.as_slice(), x.as_mut_slice())?;
    }
    Ok(())
}

/// The public face of a solver written over [`Space`], on [`Parts`]: the same methods for each,
/// its diagonal checked as `$need`. `@face` alone leaves out `new`, for a solver whose constructor
/// takes more (GMRES's restart).
macro_rules! distributed_solver {
    ($(#[$doc:meta])* $name:ident, $inner:ident, $need:expr) => {
        distributed_solver!(@face $(#[$doc])* $name, $inner);

        impl<'a, T: Scalar> $name<'a, T> {
            /// A solver for the plan's square matrix. `diagonal`, the diagonal of the whole `A`, is
            /// needed for [`Preconditioner::Jacobi`] and ignored otherwise. Refused as the one-GPU
            /// solver refuses.
            pub fn new(plan: DistributedPlan<'a, T>, options: SolverOptions, diagonal: Option<&[T]>) -> Result<Self> {
                let room = ($inner::<T, Parts<'a, T>>::SLOTS, 0);
                let (space, n) = Parts::new(plan, &options, (diagonal, $need), room)?;
                Ok(Self { it: $inner::on(space, n, options)? })
            }
        }
    };
    (@face $(#[$doc:meta])* $name:ident, $inner:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'a, T: Scalar> {
            it: $inner<T, Parts<'a, T>>,
        }

        impl<'a, T: Scalar> $name<'a, T> {
            /// Iterations (GMRES: cycles) between two reads of the state in `solve` (at least 1).
            pub fn set_check_every(&mut self, iterations: u32) {
                self.it.core.check_every = iterations.max(1);
            }

            /// Solves `A x = b` from the initial guess in `x` (each the process's parts, as the
            /// plan's product takes them), leaving the last iterate there: `start`, then `iterate`
            /// in batches until `outcome` says it has stopped.
            pub fn solve(&mut self, b: &[DeviceVector<T>], x: &mut [DeviceVector<T>]) -> Result<Outcome> {
                self.start(b, x)?;
                loop {
                    self.iterate(x, self.it.core.check_every)?;
                    if let Some(outcome) = self.outcome()? {
                        return Ok(outcome);
                    }
                }
            }

            /// Enqueues the start of a solve on every GPU. Checks `b` and `x` first: on error
            /// nothing is enqueued.
            pub fn start(&mut self, b: &[DeviceVector<T>], x: &[DeviceVector<T>]) -> Result<()> {
                begin(&mut self.it.core, b, x)?;
                self.it.start()
            }

            /// Enqueues `iterations` iterations (GMRES: cycles) on the solve `start` began, then
            /// copies the iterate to `x`. Allocates nothing, waits for nothing; iterations after the
            /// solve stopped change nothing.
            pub fn iterate(&mut self, x: &mut [DeviceVector<T>], iterations: u32) -> Result<()> {
                self.it.core.space.check(x, &self.it.core.x)?;
                for _ in 0..iterations {
                    self.it.iteration()?;
                }
                finish_batch(&self.it.core, x)
            }

            /// Where the solve stands, read from the process's first GPU (waits for its stream;
            /// every GPU holds the same state): `None` while it runs. As the one-GPU solver's
            /// `outcome` (BiCGSTAB's restarts from a converged recurrence's iterate).
            pub fn outcome(&mut self) -> Result<Option<Outcome>> {
                self.it.outcome()
            }

            /// Keeps the residual of each iteration, as the one-GPU solver's `with_history`.
            pub fn with_history(mut self, capacity: usize) -> Result<Self> {
                self.it.core.keep_history(capacity)?;
                Ok(self)
            }

            /// The relative residuals of the last solve, as the one-GPU solver's.
            pub fn residual_history(&self) -> Result<Vec<f64>> {
                self.it.core.residual_history()
            }

            /// The options the solver was made with.
            pub fn options(&self) -> &SolverOptions {
                &self.it.core.options
            }
        }
    };
}

distributed_solver!(
    /// Preconditioned CG over the GPUs of one distributed plan: `solve::Pcg`'s launches on every
    /// GPU's rows, two all-reduces an iteration (see the module doc).
    DistributedPcg,
    PcgIn,
    DiagonalNeed::Positive
);

distributed_solver!(
    /// Pipelined CG over the GPUs of one distributed plan: `solve::PipelinedCg`'s launches on every
    /// GPU's rows, one all-reduce an iteration (see the module doc).
    DistributedPipelinedCg,
    PipelinedCgIn,
    DiagonalNeed::Positive
);

distributed_solver!(
    /// BiCGSTAB over the GPUs of one distributed plan: `solve::Bicgstab`'s launches on every GPU's
    /// rows, four all-reduces an iteration, and its restart from the iterate when the recurrence
    /// converges (see the module doc). Jacobi's diagonal must be non-zero.
    DistributedBicgstab,
    BicgstabIn,
    DiagonalNeed::NonZero
);

distributed_solver!(
    @face
    /// Restarted GMRES(m) over the GPUs of one distributed plan: `solve::Gmres`'s launches on every
    /// GPU's rows, three all-reduces an Arnoldi step (the two Gram-Schmidt passes, each all of its
    /// columns' sums in one, and `‖w‖²`) and one a restart (see the module doc). Jacobi's diagonal
    /// must be non-zero.
    DistributedGmres,
    GmresIn
);

impl<'a, T: Scalar> DistributedGmres<'a, T> {
    /// A solver for the plan's square matrix restarting every `restart` steps. `diagonal`, the
    /// diagonal of the whole `A`, is needed for [`Preconditioner::Jacobi`] and ignored otherwise.
    /// Refused as `solve::Gmres::new` refuses, in its order: the options and the shape, the restart,
    /// then the diagonal.
    pub fn new(
        plan: DistributedPlan<'a, T>,
        options: SolverOptions,
        restart: usize,
        diagonal: Option<&[T]>,
    ) -> Result<Self> {
        Parts::refusals(&plan, &options)?;
        let m = gmres_steps(restart)?;
        let room = GmresIn::<T, Parts<'a, T>>::room(m);
        let (space, n) = Parts::new(plan, &options, (diagonal, DiagonalNeed::NonZero), room)?;
        Ok(Self { it: GmresIn::on(space, n, options, m)? })
    }

    /// The restart length `m`.
    pub fn restart(&self) -> usize {
        self.it.restart()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_of_another_count_of_parts_are_refused() {
        // Empty lists of parts need no GPU: enough to see the count checked, not cut short.
        let none: &[DeviceVector<f64>] = &[];
        check_part_counts::<f64>(0, &[]).unwrap();
        check_part_counts(0, &[none, none]).unwrap();
        let e = check_part_counts(2, &[none]).unwrap_err();
        assert!(
            matches!(e, Error::DimensionMismatch { what: "a solver vector (parts)", expected: 2, got: 0 }),
            "{e}"
        );
    }
}
