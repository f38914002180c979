//! [`DistributedGraph`]: one distributed product captured into one CUDA graph over every GPU of the
//! process, replayed by one launch, alone or as part of a caller's larger graph.
//!
//! A product enqueues about ten driver calls a GPU (the exchange's launches or NCCL calls, the
//! events between the streams, three launches); captured, they are made once, and a replay is one
//! graph launch plus an event each way per GPU. The capture starts on the first member's stream and
//! pulls in the others by events: every other `Gpu` stream waits on a fork recorded on the first,
//! the product's own events pull in the exchange streams and join them back, and the first stream
//! waits on a join recorded on each other `Gpu` stream (CUDA's stream capture across streams and
//! devices, *CUDA Programming Guide*, "Cross-stream Dependencies and Events"; NCCL's sends and
//! receives may be captured, NCCL *User Guide*, "Using NCCL with CUDA Graphs"). Measured on four
//! H200s (`docs/PERF.md`, section 24), a replay is not faster than the calls it replaces except on
//! some matrices: a graph over several GPUs costs something of its own.

use super::product::DistributedPlan;
use crate::Result;
use crate::device::{DeviceVector, Graph};
use crate::scalar::Scalar;
use cudarc::driver::{CudaEvent, CudaStream};
use std::marker::PhantomData;
use std::sync::Arc;

/// A distributed product `y = alpha * A * x + beta * y` captured by [`DistributedPlan::capture`],
/// replayed by [`DistributedGraph::launch`] with the same plan and the same `x` and `y` buffers.
/// Their contents may change between replays (work enqueued on the members' streams is ordered
/// with the replays); the graph borrows the plan, so that the ghost vectors and buffers the replays
/// use outlive it, and, as for [`Graph`], `x` and `y` must outlive it too.
#[derive(Debug)]
pub struct DistributedGraph<'p> {
    graph: Graph,
    /// Each member's `Gpu` stream, the first one the graph's, with the event that marks the work
    /// enqueued on it before a replay.
    members: Vec<(Arc<CudaStream>, CudaEvent)>,
    /// Recorded on the first member's stream after a replay: the others wait for it.
    done: CudaEvent,
    plan: PhantomData<&'p mut ()>,
}

impl<T: Scalar> DistributedPlan<'_, T> {
    /// Captures one product with these operands into a [`DistributedGraph`], checked as
    /// [`DistributedPlan::spmv`] checks them; nothing runs until [`DistributedGraph::launch`].
    /// Refused as [`crate::Gpu::capture`] refuses (nothing that allocates or waits on the host may be
    /// captured: the plan and its route's data are made before).
    pub fn capture(
        &mut self,
        alpha: T,
        x: &[DeviceVector<T>],
        beta: T,
        y: &mut [DeviceVector<T>],
    ) -> Result<DistributedGraph<'_>> {
        self.check(x, y)?;
        let members = self.ranks().members();
        let first = members[0].gpu();
        let fork = first.context().new_event(None)?;
        let joins =
            members[1..].iter().map(|m| m.gpu().context().new_event(None)).collect::<Result<Vec<_>, _>>()?;
        let graph = first.capture(|| {
            fork.record(first.stream())?;
            for m in &members[1..] {
                m.gpu().stream().wait(&fork)?;
            }
            // Joined back even when the product failed, so that the capture ends on every stream.
            let product = self.spmv(alpha, x, beta, y);
            for (m, join) in members[1..].iter().zip(&joins) {
                join.record(m.gpu().stream())?;
                first.stream().wait(join)?;
            }
            product
        })?;
        let mut streams = Vec::with_capacity(members.len());
        for m in members {
            streams.push((m.gpu().stream().clone(), m.gpu().context().new_event(None)?));
        }
        Ok(DistributedGraph {
            graph,
            members: streams,
            done: first.context().new_event(None)?,
            plan: PhantomData,
        })
    }
}

impl DistributedGraph<'_> {
    /// Enqueues one replay, in order with the work already on every member's `Gpu` stream and
    /// before the work enqueued there after it; returns at once.
    pub fn launch(&self) -> Result<()> {
        let (first, _) = &self.members[0];
        for (stream, ready) in &self.members[1..] {
            ready.record(stream)?;
            first.wait(ready)?;
        }
        self.graph.launch()?;
        self.done.record(first)?;
        for (stream, _) in &self.members[1..] {
            stream.wait(&self.done)?;
        }
        Ok(())
    }
}
