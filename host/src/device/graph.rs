//! CUDA graphs of the [`Gpu`]'s stream: a sequence of products captured once and replayed, so that
//! the host's cost per product (checks, argument structs, one driver call per launch) is paid once.

use super::Gpu;
use crate::{Error, Result};
use cudarc::driver::sys::{self, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, result};

/// Work captured from a [`Gpu`]'s stream by [`Gpu::capture`], replayed by [`Graph::launch`] on the
/// same stream with the same buffers (their contents may change between replays; the buffers, and
/// the matrices and plans the work used, must outlive the graph).
pub struct Graph {
    graph: CudaGraph,
    /// The context its kernels and buffers are of: where [`Graph::launch_on`] may launch it.
    ctx: sys::CUcontext,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").finish_non_exhaustive()
    }
}

// SAFETY: a graph and its executable are driver handles that any thread of the process may use; the
// driver asks only that calls on one graph be serialised, which `&mut`/`&` borrows across threads do
// not allow without `Sync`, which `Graph` is not. The context handle is only compared.
unsafe impl Send for Graph {}

impl Graph {
    /// Enqueues one replay of the captured work on the stream it was captured from; returns at once.
    pub fn launch(&self) -> Result<()> {
        Ok(self.graph.launch()?)
    }

    /// Enqueues one replay on `gpu`'s stream, which need not be the stream it was captured from
    /// (a [`Gpu::sibling`]'s); refused for a `Gpu` of another context.
    pub(crate) fn launch_on(&self, gpu: &Gpu) -> Result<()> {
        if gpu.context().cu_ctx() != self.ctx {
            return Err(Error::ForeignBuffer("the graph"));
        }
        gpu.context().bind_to_thread()?;
        // SAFETY: the executable graph is live (owned by `self.graph`), and its kernels and buffers
        // are of `gpu`'s context (checked above), on whose stream it is launched.
        unsafe { result::graph::launch(self.graph.cu_graph_exec(), gpu.stream().cu_stream()) }?;
        Ok(())
    }
}

impl Gpu {
    /// Captures what `work` enqueues on [`Gpu::stream`] into a [`Graph`] instead of running it.
    ///
    /// What may be captured: products with a [`Plan`](crate::Plan) (and `Gpu::spmv` once a plan of
    /// the same strategy has been made for the matrix, which builds its data), the iterations of a
    /// CG solve ([`Cg::iterate`](crate::solve::Cg::iterate)), a [`TunedSpmv`](crate::tune::TunedSpmv)
    /// once it has converged, and any launch or device copy of the caller's on the stream. Not, and
    /// refused with [`Error::Unsupported`] while the stream captures: uploads, allocations and
    /// copies from the host (a replay would read the host memory again, long after the call), which
    /// includes making a plan whose strategy data does not exist yet; reading vectors back (the copy
    /// would only run at a replay) and `synchronize`. The capture is local to this thread; on any
    /// error, or a panic of `work`, it is ended and dropped, and the stream is usable again.
    pub fn capture(&self, work: impl FnOnce() -> Result<()>) -> Result<Graph> {
        self.stream().begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let open = OpenCapture { gpu: self };
        let captured = work();
        std::mem::forget(open);
        let ended = self.stream().end_capture(CUgraphInstantiate_flags(0));
        captured?;
        let graph = ended?.ok_or(Error::Unsupported("the capture produced no graph"))?;
        Ok(Graph { graph, ctx: self.context().cu_ctx() })
    }
}

/// Ends a capture that the work inside it left by panicking, so that the stream and the thread are
/// not left capturing (every later upload of the thread would be refused).
struct OpenCapture<'g> {
    gpu: &'g Gpu,
}

impl Drop for OpenCapture<'_> {
    fn drop(&mut self) {
        drop(self.gpu.stream().end_capture(CUgraphInstantiate_flags(0)));
    }
}
