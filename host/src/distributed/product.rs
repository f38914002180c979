//! [`DistributedPlan`]: `y = alpha * A * x + beta * y` for a [`DistributedCsr`], prepared once.
//!
//! One product, for each GPU of the process (the overlap of PETSc's MPIAIJ `MatMult`, which starts
//! the scatter of the ghosts, multiplies the diagonal block, then adds the off-diagonal one):
//!
//! 1. start the exchange of `x`'s ghost entries on the member's exchange stream (its NCCL
//!    communicator's), by one of two routes ([`Exchange`]), and record `arrived` after it;
//! 2. on the `Gpu`'s stream, meanwhile, the local block's product `y = alpha L x + beta y`;
//! 3. the `Gpu`'s stream waits for `arrived`, then computes the remote block's `t = alpha R x_ghost`
//!    over the rows that have remote entries and adds it into theirs (`dist_scatter_add_*`).
//!
//! The NCCL route packs the entries of `x` the other ranks need (`dist_gather_*`) on the `Gpu`'s
//! stream and records `packed`; the exchange stream waits for it, then one NCCL group over every
//! GPU of the process sends each peer its run of the send buffer and receives each owner's run of
//! the ghost vector. The streams stay in step from one product to the next without the host: the
//! next pack (on the `Gpu`'s stream) comes after this product's wait for `arrived`, so it cannot
//! overwrite a send buffer still being sent, and the next receive (after the next `packed`) comes
//! after this product's remote block has read the ghost vector. NCCL needs the send and receive
//! calls of all communicators one thread drives inside one group (NCCL *User Guide*, "Group
//! calls"), which is why the exchange walks all the process's GPUs at once.
//!
//! The peer route, for ranks all in this process: every GPU records `ready` on its stream (its `x`
//! is written); each exchange stream waits for its own GPU's `ready` (this product's remote block
//! comes after the last one's) and its owners', then gathers its ghosts straight from the owners'
//! `x` (one `dist_gather_*` launch an owner, reading the other GPU's memory over NVLink by peer
//! access), where NCCL would pack, copy and signal. After the product each owner's stream waits for
//! the `arrived` of the GPUs that read from it, so that nothing it enqueues next overwrites an `x`
//! still being read. The next pull comes after this product's remote block, by `ready`.
//!
//! Nothing is allocated and nothing waits on the host, on either route.

use super::matrix::{DevicePart, DistributedCsr};
use crate::device::{DeviceCsr, DeviceGather, DeviceVector, PeerAccess, Ranks};
use crate::enqueue::{Kernel, Plan};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaEvent, CudaSlice};
use cudarc::nccl::{group_end, group_start};
use std::ops::Range;
use std::time::{Duration, Instant};

/// The plan of one block of a part.
pub type BlockPlan<'a, T> = Plan<'a, T, DeviceCsr<T>>;

/// [`Exchange::Auto`]'s measurement: samples of products by each route, the fastest sample kept
/// (after one warm-up sample), so that one late sample cannot decide.
const AUTO_SAMPLES: usize = 3;
/// Products in one sample of [`Exchange::Auto`]'s measurement: enough that the host's clock
/// resolves a sample of products of tens of microseconds.
const AUTO_PRODUCTS: usize = 5;

/// How a product's ghost entries of `x` travel to the GPUs that need them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exchange {
    /// Where [`Exchange::Peer`] can run (every rank in this process, every GPU able to read the
    /// memory of those it receives from), the faster of the two routes, timed when the plan is
    /// made; else [`Exchange::Nccl`].
    #[default]
    Auto,
    /// Pack the entries the peers need, then NCCL's sends and receives: any ranks, one process or
    /// several.
    Nccl,
    /// Each GPU gathers its ghost entries from their owners' `x` in place, by CUDA's peer access:
    /// no pack, no send buffer, no NCCL call, one launch an owner. Refused ([`Error::Unsupported`])
    /// where ranks live in other processes or two GPUs that exchange have no peer access.
    Peer,
}

/// The exchange of one GPU, by its route.
#[derive(Debug)]
enum Route<T> {
    Nccl {
        send: CudaSlice<T>,
        /// Recorded on the `Gpu`'s stream after the pack; the exchange stream waits for it.
        packed: CudaEvent,
    },
    Peer {
        pulls: Vec<Pull>,
        /// Recorded on the `Gpu`'s stream when a product starts: its `x` is written.
        ready: CudaEvent,
    },
}

/// One owner's run of a GPU's ghost vector, gathered in place from that owner's `x`.
#[derive(Debug)]
struct Pull {
    /// The owner's index among the process's members.
    owner: usize,
    access: PeerAccess,
    /// The owner's send list for this GPU (indices into the owner's `x`), on this GPU.
    map: DeviceGather,
    ghosts: Range<usize>,
}

/// What one GPU holds for the products of a plan: a plan per block, its exchange, the ghost vector,
/// and the event that says the ghosts arrived.
#[derive(Debug)]
struct MemberPlan<'a, T: Scalar> {
    local: BlockPlan<'a, T>,
    remote: BlockPlan<'a, T>,
    route: Route<T>,
    ghost: CudaSlice<T>,
    /// The remote block's product, one element per row with remote entries.
    remote_y: CudaSlice<T>,
    /// Recorded on the exchange stream after the ghosts arrived.
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
    exchange: Exchange,
}

impl<T: Scalar> DistributedCsr<T> {
    /// Prepares products on `ranks` (the ranks the matrix was uploaded for), each block by
    /// `kernel`, the ghosts by [`Exchange::Auto`]: see [`DistributedCsr::plan_with`].
    pub fn plan<'a>(&'a self, ranks: &'a Ranks, kernel: Kernel) -> Result<DistributedPlan<'a, T>> {
        self.plan_with(ranks, kernel, Exchange::Auto)
    }

    /// Prepares products on `ranks` (the ranks the matrix was uploaded for), each block by
    /// `kernel` and the ghosts by `exchange`: a [`Plan`] per block, the ghost vector, the events,
    /// and the route's own data (the NCCL route's send buffer; the peer route's index lists, copied
    /// from each owner to its reader, and peer access enabled between them). [`Exchange::Auto`]
    /// measures where both routes can run: it times three samples of five products by each (on
    /// vectors of its own, after a warm-up sample; the host waits for the GPUs) and keeps the faster
    /// (the peer access it enabled stays on, as peer access does for the contexts' lifetime), since neither wins everywhere (`docs/PERF.md`, section 24: the peer route
    /// wins where the ghosts are few, NCCL's packed copy where they are many and scattered). Refused:
    /// other ranks than the matrix's ([`Error::ForeignBuffer`]), [`Exchange::Peer`] where it cannot
    /// run ([`Error::Unsupported`]).
    pub fn plan_with<'a>(
        &'a self,
        ranks: &'a Ranks,
        kernel: Kernel,
        exchange: Exchange,
    ) -> Result<DistributedPlan<'a, T>> {
        self.check_ranks(ranks)?;
        match exchange {
            Exchange::Nccl => self.build(ranks, kernel, None),
            Exchange::Peer => {
                let pulls = self.peer_pulls(ranks)?.ok_or(Error::Unsupported(
                    "the peer exchange needs every rank in this process and peer access between the \
                     GPUs that exchange",
                ))?;
                self.build(ranks, kernel, Some(pulls))
            }
            // Where peer access cannot be had (a driver that refuses it, past its peer count), Auto
            // takes NCCL's route; only an explicit `Exchange::Peer` reports why.
            Exchange::Auto => match self.peer_pulls(ranks).ok().flatten() {
                None => self.build(ranks, kernel, None),
                Some(pulls) => {
                    let mut peer = self.build(ranks, kernel, Some(pulls))?;
                    let mut nccl = self.build(ranks, kernel, None)?;
                    Ok(if peer.timed()? <= nccl.timed()? { peer } else { nccl })
                }
            },
        }
    }

    /// A plan whose ghosts take the peer route by `pulls` (each member's), or NCCL's without.
    fn build<'a>(
        &'a self,
        ranks: &'a Ranks,
        kernel: Kernel,
        pulls: Option<Vec<Vec<Pull>>>,
    ) -> Result<DistributedPlan<'a, T>> {
        let exchange = if pulls.is_some() { Exchange::Peer } else { Exchange::Nccl };
        let mut pulls = pulls.map(Vec::into_iter);
        let mut members = Vec::with_capacity(self.parts.len());
        for (member, part) in ranks.members().iter().zip(&self.parts) {
            let gpu = member.gpu();
            let route = match pulls.as_mut().and_then(Iterator::next) {
                Some(pulls) => Route::Peer { pulls, ready: gpu.context().new_event(None)? },
                None => Route::Nccl {
                    send: gpu.alloc_zeros(part.pack.len as usize)?,
                    packed: gpu.context().new_event(None)?,
                },
            };
            members.push(MemberPlan {
                local: gpu.plan(&part.local, kernel)?,
                remote: gpu.plan(&part.remote, kernel)?,
                route,
                ghost: gpu.alloc_zeros(self.ghosts(members.len()))?,
                remote_y: gpu.alloc_zeros(part.unpack.0.len as usize)?,
                arrived: gpu.context().new_event(None)?,
            });
        }
        Ok(DistributedPlan { ranks, matrix: self, members, exchange })
    }

    /// Every member's pulls, one an owner it receives from, when the peer route can run: every rank
    /// in this process, peer access enabled from each GPU to its owners'. `None` where it cannot.
    fn peer_pulls(&self, ranks: &Ranks) -> Result<Option<Vec<Vec<Pull>>>> {
        let members = ranks.members();
        if members.len() != ranks.size() {
            return Ok(None);
        }
        let mut all = Vec::with_capacity(members.len());
        for (member, part) in members.iter().zip(&self.parts) {
            let mut pulls = Vec::with_capacity(part.receives.len());
            for (owner_rank, ghosts) in &part.receives {
                let Some(owner) = members.iter().position(|m| i32::try_from(m.rank()) == Ok(*owner_rank))
                else {
                    return Ok(None);
                };
                let Some(access) = PeerAccess::enable(member.gpu(), members[owner].gpu())? else {
                    return Ok(None);
                };
                let map = send_list(&self.parts[owner], part, member.gpu(), ghosts)?;
                pulls.push(Pull { owner, access, map, ghosts: ghosts.clone() });
            }
            all.push(pulls);
        }
        Ok(Some(all))
    }
}

/// `owner`'s send list for `reader` (indices into the owner's `x`), copied onto `reader`'s GPU
/// (`cuMemcpyPeerAsync`, which needs no peer access), as the index list of a gather into the run
/// `ghosts` of the reader's ghost vector.
fn send_list<T>(
    owner: &DevicePart<T>,
    reader: &DevicePart<T>,
    gpu: &crate::Gpu,
    ghosts: &Range<usize>,
) -> Result<DeviceGather> {
    let run = owner
        .sends
        .iter()
        .find(|(peer, _)| usize::try_from(*peer) == Ok(reader.rank))
        .map_or(0..0, |(_, run)| run.clone());
    if run.len() != ghosts.len() {
        return Err(Error::DimensionMismatch {
            what: "a ghost run against its owner's send list",
            expected: ghosts.len(),
            got: run.len(),
        });
    }
    // A run of the owner's send list, whose length is a `u32`.
    let len = u32::try_from(run.len()).map_err(|_| Error::TooLarge {
        what: "a ghost run",
        value: run.len(),
        limit: u32::MAX as usize,
    })?;
    let indices = gpu.stream().clone_dtod(&owner.pack.indices.slice(run))?;
    Ok(DeviceGather { indices, len, source_len: owner.pack.source_len })
}

impl<'a, T: Scalar> DistributedPlan<'a, T> {
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
        // The owners are released even when a block's launch failed, so that no owner's later
        // write to its `x` goes unordered after pulls already enqueued.
        let blocks = self.blocks(alpha, x, beta, y, true);
        self.release_owners()?;
        blocks
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

    /// Steps 2 and 3 of a product, waiting for `arrived` before the remote block when `wait`.
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

    /// The exchange of `x`'s ghost entries alone, as a product makes it, each GPU's stream then
    /// waiting for its ghosts: the communication of a product without its arithmetic, to measure
    /// it. Checks `x` as [`DistributedPlan::spmv`] does.
    pub fn exchange(&mut self, x: &[DeviceVector<T>]) -> Result<()> {
        self.check_parts("x", x, |i| self.matrix.cols(i).len())?;
        self.send_ghosts(x)?;
        for m in &self.members {
            m.local.gpu().stream().wait(&m.arrived)?;
        }
        self.release_owners()
    }

    /// The route the ghosts take ([`Exchange::Nccl`] or [`Exchange::Peer`], `Auto` resolved).
    pub fn exchange_route(&self) -> Exchange {
        self.exchange
    }

    /// [`Exchange::Auto`]'s measure of this plan: the fastest of [`AUTO_SAMPLES`] samples of
    /// [`AUTO_PRODUCTS`] products `y = A x` on vectors of its own (zeros: the values do not change
    /// the time), every GPU synchronised around each sample, after one warm-up sample.
    fn timed(&mut self) -> Result<Duration> {
        let members = self.ranks.members();
        let x = (0..members.len())
            .map(|i| members[i].gpu().zeros(self.matrix.cols(i).len()))
            .collect::<Result<Vec<_>>>()?;
        let mut y = (0..members.len())
            .map(|i| members[i].gpu().zeros(self.matrix.rows(i).len()))
            .collect::<Result<Vec<_>>>()?;
        let synchronize = || members.iter().try_for_each(|m| m.gpu().synchronize());
        let mut best = Duration::MAX;
        for sample in 0..=AUTO_SAMPLES {
            synchronize()?;
            let start = Instant::now();
            for _ in 0..AUTO_PRODUCTS {
                self.spmv(T::from_f64(1.0), &x, T::ZERO, &mut y)?;
            }
            synchronize()?;
            if sample > 0 {
                best = best.min(start.elapsed());
            }
        }
        Ok(best)
    }

    /// Step 1 of a product (see the module doc): the exchange by the plan's route, `arrived`
    /// recorded on each exchange stream after it.
    fn send_ghosts(&mut self, x: &[DeviceVector<T>]) -> Result<()> {
        match self.exchange {
            Exchange::Peer => self.pull_ghosts(x),
            Exchange::Nccl | Exchange::Auto => self.nccl_ghosts(x),
        }
    }

    /// The NCCL route: the pack, then the sends and receives on the communicators' streams.
    fn nccl_ghosts(&mut self, x: &[DeviceVector<T>]) -> Result<()> {
        for ((m, part), x) in self.members.iter_mut().zip(&self.matrix.parts).zip(x) {
            let Route::Nccl { send, packed } = &mut m.route else { continue };
            let gpu = m.local.gpu();
            gpu.gather(&part.pack, x, send)?;
            packed.record(gpu.stream())?;
        }
        for (member, m) in self.ranks.members().iter().zip(&self.members) {
            if let Route::Nccl { packed, .. } = &m.route {
                member.comm_stream().wait(packed)?;
            }
        }
        self.exchange_runs()?;
        for (member, m) in self.ranks.members().iter().zip(&self.members) {
            m.arrived.record(&member.comm_stream())?;
        }
        Ok(())
    }

    /// The peer route: `ready` on every GPU's stream, then each exchange stream waits for its own
    /// GPU's and its owners' and gathers each owner's run of its ghost vector from that owner's `x`.
    fn pull_ghosts(&mut self, x: &[DeviceVector<T>]) -> Result<()> {
        for m in &self.members {
            if let Route::Peer { ready, .. } = &m.route {
                ready.record(m.local.gpu().stream())?;
            }
        }
        let ready = |i: usize| match &self.members[i].route {
            Route::Peer { ready, .. } => Some(ready),
            Route::Nccl { .. } => None,
        };
        for (i, (member, m)) in self.ranks.members().iter().zip(&self.members).enumerate() {
            let Route::Peer { pulls, .. } = &m.route else { continue };
            let stream = member.comm_stream();
            for event in std::iter::once(i).chain(pulls.iter().map(|p| p.owner)).filter_map(ready) {
                stream.wait(event)?;
            }
        }
        let members = self.ranks.members();
        for (member, m) in members.iter().zip(&mut self.members) {
            let Route::Peer { pulls, .. } = &m.route else { continue };
            let (gpu, stream) = (member.gpu(), member.comm_stream());
            for p in pulls {
                let owner = (members[p.owner].gpu(), &x[p.owner]);
                gpu.pull(&stream, &p.access, &p.map, owner, &mut m.ghost.slice_mut(p.ghosts.clone()))?;
            }
            m.arrived.record(&stream)?;
        }
        Ok(())
    }

    /// After a product on the peer route: each owner's stream waits until every GPU that reads its
    /// `x` has read it, so that nothing enqueued after the product overwrites it under the reads.
    fn release_owners(&self) -> Result<()> {
        for m in &self.members {
            let Route::Peer { pulls, .. } = &m.route else { continue };
            for p in pulls {
                self.members[p.owner].local.gpu().stream().wait(&m.arrived)?;
            }
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
            let Route::Nccl { send, .. } = &m.route else { continue };
            let comm = member.comm();
            for (peer, run) in &part.sends {
                if let Err(e) = comm.send(&send.slice(run.clone()), *peer) {
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
    pub fn ranks(&self) -> &'a Ranks {
        self.ranks
    }

    /// The plans of the `i`-th member's local and remote blocks (their resolved kernels).
    pub fn block_plans(&self, i: usize) -> (&BlockPlan<'_, T>, &BlockPlan<'_, T>) {
        (&self.members[i].local, &self.members[i].remote)
    }
}
