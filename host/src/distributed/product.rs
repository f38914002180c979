//! [`DistributedPlan`]: `y = alpha * A * x + beta * y` for a [`DistributedCsr`], prepared once.
//!
//! One product, for each GPU of the process (the overlap of PETSc's MPIAIJ `MatMult`, which starts
//! the scatter of the ghosts, multiplies the diagonal block, then adds the off-diagonal one):
//!
//! 1. on the `Gpu`'s stream, pack the entries of `x` the other ranks need (`dist_gather_*`) and
//!    record `packed`; the communicator's stream waits for it;
//! 2. in one NCCL group over every GPU of the process, send each peer its run of the send buffer and
//!    receive each owner's run of the ghost vector, on the communicator's stream; record `arrived`;
//! 3. on the `Gpu`'s stream, meanwhile, the local block's product `y = alpha L x + beta y`;
//! 4. the `Gpu`'s stream waits for `arrived`, then computes the remote block's `t = alpha R x_ghost`
//!    over the rows that have remote entries and adds it into theirs (`dist_scatter_add_*`).
//!
//! The two streams stay in step from one product to the next without the host: the next pack (on
//! the `Gpu`'s stream) comes after this product's wait for `arrived`, so it cannot overwrite a send
//! buffer still being sent, and the next receive (on the communicator's stream, after the next
//! `packed`) comes after this product's remote block has read the ghost vector. Nothing is allocated
//! and nothing waits on the host. NCCL needs the send and receive calls of all communicators one
//! thread drives inside one group (NCCL *User Guide*, "Group calls"), which is why step 2 walks all
//! the process's GPUs at once.

use super::matrix::DistributedCsr;
use crate::device::{DeviceCsr, DeviceVector, Ranks};
use crate::enqueue::{Kernel, Plan};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaEvent, CudaSlice};
use cudarc::nccl::{group_end, group_start};

/// The plan of one block of a part.
pub type BlockPlan<'a, T> = Plan<'a, T, DeviceCsr<T>>;

/// What one GPU holds for the products of a plan: a plan per block, the send buffer and ghost
/// vector, and the two events that order its streams.
#[derive(Debug)]
struct MemberPlan<'a, T: Scalar> {
    local: BlockPlan<'a, T>,
    remote: BlockPlan<'a, T>,
    send: CudaSlice<T>,
    ghost: CudaSlice<T>,
    /// The remote block's product, one element per row with remote entries.
    remote_y: CudaSlice<T>,
    packed: CudaEvent,
    arrived: CudaEvent,
}

/// Products with one [`DistributedCsr`] on the GPUs of one [`Ranks`], each block with a plan of its
/// own (so [`Kernel::Auto`] chooses for the local and the remote block separately: the remote block
/// of a stencil is a few entries in a few rows, nothing like the local one).
#[derive(Debug)]
pub struct DistributedPlan<'a, T: Scalar> {
    ranks: &'a Ranks,
    matrix: &'a DistributedCsr<T>,
    members: Vec<MemberPlan<'a, T>>,
}

impl<T: Scalar> DistributedCsr<T> {
    /// Prepares products on `ranks` (the ranks the matrix was uploaded for), each block by
    /// `kernel`: a [`Plan`] per block, the send buffer and ghost vector, the events.
    pub fn plan<'a>(&'a self, ranks: &'a Ranks, kernel: Kernel) -> Result<DistributedPlan<'a, T>> {
        self.check_ranks(ranks)?;
        let mut members = Vec::with_capacity(self.parts.len());
        for (member, part) in ranks.members().iter().zip(&self.parts) {
            let gpu = member.gpu();
            let ghosts = part.receives.last().map_or(0, |(_, run)| run.end);
            members.push(MemberPlan {
                local: gpu.plan(&part.local, kernel)?,
                remote: gpu.plan(&part.remote, kernel)?,
                send: gpu.alloc_zeros(part.pack.len as usize)?,
                ghost: gpu.alloc_zeros(ghosts)?,
                remote_y: gpu.alloc_zeros(part.unpack.0.len as usize)?,
                packed: gpu.context().new_event(None)?,
                arrived: gpu.context().new_event(None)?,
            });
        }
        Ok(DistributedPlan { ranks, matrix: self, members })
    }
}

impl<T: Scalar> DistributedPlan<'_, T> {
    /// `y = alpha * A * x + beta * y` over the process's GPUs: `x[i]` and `y[i]` are the `i`-th
    /// member's parts (lengths [`DistributedCsr::cols`] and [`DistributedCsr::rows`]). As a product
    /// on one GPU: `y` not read when `beta == 0`, every check made before anything is enqueued, so an
    /// error leaves every `y` as it was; no allocation, no host synchronisation. Every process must
    /// call it (the exchange waits for its peers).
    pub fn spmv(
        &mut self,
        alpha: T,
        x: &[DeviceVector<T>],
        beta: T,
        y: &mut [DeviceVector<T>],
    ) -> Result<()> {
        self.check(x, y)?;
        self.send_ghosts(x)?;
        self.blocks(alpha, x, beta, y, true)
    }

    /// The arithmetic of a product alone: both blocks' products with the ghost vector as it is,
    /// without the exchange, to measure it. Checks as [`DistributedPlan::spmv`] does.
    pub fn without_exchange(
        &mut self,
        alpha: T,
        x: &[DeviceVector<T>],
        beta: T,
        y: &mut [DeviceVector<T>],
    ) -> Result<()> {
        self.check(x, y)?;
        self.blocks(alpha, x, beta, y, false)
    }

    /// Steps 3 and 4 of a product, waiting for `arrived` before the remote block when `wait`.
    fn blocks(
        &mut self,
        alpha: T,
        x: &[DeviceVector<T>],
        beta: T,
        y: &mut [DeviceVector<T>],
        wait: bool,
    ) -> Result<()> {
        for (((m, part), x), y) in self.members.iter_mut().zip(&self.matrix.parts).zip(x).zip(y.iter_mut()) {
            let gpu = m.local.gpu();
            m.local.spmv(alpha, x, beta, y)?;
            if wait {
                gpu.stream().wait(&m.arrived)?;
            }
            if m.remote.matrix().nnz() > 0 {
                m.remote.spmv(alpha, &m.ghost, T::ZERO, &mut m.remote_y)?;
                gpu.scatter_add(&part.unpack, &m.remote_y, y)?;
            }
        }
        Ok(())
    }

    /// The pack and exchange of `x`'s ghost entries alone, as a product makes them, each GPU's
    /// stream then waiting for its ghosts: the communication of a product without its arithmetic,
    /// to measure it. Checks `x` as [`DistributedPlan::spmv`] does.
    pub fn exchange(&mut self, x: &[DeviceVector<T>]) -> Result<()> {
        self.check_parts("x", x, |i| self.matrix.cols(i).len())?;
        self.send_ghosts(x)?;
        for m in &self.members {
            m.local.gpu().stream().wait(&m.arrived)?;
        }
        Ok(())
    }

    /// Steps 1 and 2 of a product (see the module doc): the pack, then the sends and receives on the
    /// communicators' streams, `arrived` recorded after them.
    fn send_ghosts(&mut self, x: &[DeviceVector<T>]) -> Result<()> {
        for ((m, part), x) in self.members.iter_mut().zip(&self.matrix.parts).zip(x) {
            let gpu = m.local.gpu();
            gpu.gather(&part.pack, x, &mut m.send)?;
            m.packed.record(gpu.stream())?;
        }
        for (member, m) in self.ranks.members().iter().zip(&self.members) {
            member.comm_stream().wait(&m.packed)?;
        }
        self.exchange_runs()?;
        for (member, m) in self.ranks.members().iter().zip(&self.members) {
            m.arrived.record(&member.comm_stream())?;
        }
        Ok(())
    }

    /// The sends and receives of every member, in one NCCL group.
    fn exchange_runs(&mut self) -> Result<()> {
        group_start().map_err(Error::nccl("ncclGroupStart"))?;
        let mut result = Ok(());
        'members: for ((member, m), part) in
            self.ranks.members().iter().zip(&mut self.members).zip(&self.matrix.parts)
        {
            let comm = member.comm();
            for (peer, run) in &part.sends {
                if let Err(e) = comm.send(&m.send.slice(run.clone()), *peer) {
                    result = Err(Error::nccl("ncclSend")(e));
                    break 'members;
                }
            }
            for (owner, run) in &part.receives {
                if let Err(e) = comm.recv(&mut m.ghost.slice_mut(run.clone()), *owner) {
                    result = Err(Error::nccl("ncclRecv")(e));
                    break 'members;
                }
            }
        }
        // The group is closed whatever happened inside it, so that NCCL is usable after an error.
        let end = group_end().map_err(Error::nccl("ncclGroupEnd"));
        result.and(end.map(drop))
    }

    /// Every member's `x` and `y` of its GPU and of its part's lengths.
    pub(super) fn check(&self, x: &[DeviceVector<T>], y: &[DeviceVector<T>]) -> Result<()> {
        self.check_parts("x", x, |i| self.matrix.cols(i).len())?;
        self.check_parts("y", y, |i| self.matrix.rows(i).len())
    }

    /// One vector per member, each on the member's GPU with the length `len(i)`.
    fn check_parts(
        &self,
        what: &'static str,
        v: &[DeviceVector<T>],
        len: impl Fn(usize) -> usize,
    ) -> Result<()> {
        let members = self.ranks.members();
        if v.len() != members.len() {
            let what = if what == "x" { "x (parts)" } else { "y (parts)" };
            return Err(Error::DimensionMismatch { what, expected: members.len(), got: v.len() });
        }
        for (i, (member, v)) in members.iter().zip(v).enumerate() {
            member.gpu().check_operand(what, v, len(i))?;
        }
        Ok(())
    }

    /// The matrix.
    pub fn matrix(&self) -> &DistributedCsr<T> {
        self.matrix
    }

    /// The GPUs the products run on.
    pub fn ranks(&self) -> &Ranks {
        self.ranks
    }

    /// The plans of the `i`-th member's local and remote blocks (their resolved kernels).
    pub fn block_plans(&self, i: usize) -> (&BlockPlan<'_, T>, &BlockPlan<'_, T>) {
        (&self.members[i].local, &self.members[i].remote)
    }
}
