//! [`Gpu`]: the CUDA context and stream products run on, and the kernels' module.

use super::kernels::{Kernels, StreamKernels};
use super::memory::Staging;
use crate::scalar::{Precision, Scalar};
use crate::{Error, Result};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaStream, result, sys};
use cudarc::nvrtc::Ptx;
use kernels_gpu::abi::Entry;
use std::sync::Arc;

/// The kernels, built by `cargo xtask ptx` (virtual architecture sm_70; the driver compiles it for
/// the GPU at hand when the module loads).
pub(crate) const PTX: &str = include_str!("../../ptx/kernels.ptx");

/// The streaming engine, built by `cargo xtask ptx` for sm_90 (Hopper's bulk copies), and the
/// entries of [`abi::SM90_ENTRIES`](kernels_gpu::abi::SM90_ENTRIES) built a second time: loaded
/// beside [`PTX`] on GPUs of compute capability 9.0 and later, which take those entries from it.
pub(crate) const PTX_SM90: &str = include_str!("../../ptx/kernels_sm90.ptx");

/// The compute capability (major) from which the GPU runs [`PTX_SM90`].
const SM90_MAJOR: i32 = 9;

/// A GPU ready to run products: a CUDA context, the stream every product and copy of this `Gpu` is
/// enqueued on, and the kernels, loaded once.
///
/// [`Gpu::new`] creates its own context and stream; [`Gpu::from_stream`] runs on a caller's, so that
/// products are ordered with the caller's own work on that stream. Cheap to share by reference;
/// `Send` and `Sync` (cudarc's context and stream are), though products enqueued from several threads
/// at once on one stream land in an unspecified order.
///
/// Its methods, by what they are for (each is written beside the code it calls, in the tier that
/// owns it: `docs/ARCHITECTURE.md`):
/// - the GPU: [`Gpu::new`], [`Gpu::with_ordinal`], [`Gpu::from_stream`], [`Gpu::name`],
///   [`Gpu::sm_count`], [`Gpu::l2_bytes`], [`Gpu::has_stream_engine`], [`Gpu::context`],
///   [`Gpu::stream`], [`Gpu::synchronize`];
/// - matrices on the device: [`Gpu::upload_csr`], [`Gpu::upload_csr_ref`],
///   [`Gpu::upload_csr_parts`], [`Gpu::upload_csr_u32`], [`Gpu::upload_csr_rcm`], and a format's
///   own, [`Gpu::upload_ell`], [`Gpu::upload_sell`], [`Gpu::upload_coo`], [`Gpu::upload_hyb`],
///   [`Gpu::upload_brc`], [`Gpu::upload_dense_blocks`], [`Gpu::upload_compressed`],
///   [`Gpu::upload_lma`]; chosen by measuring, [`Gpu::upload_for_products`] and
///   [`Gpu::upload_brc_tuned`]; made on the device,
///   [`DeviceCsr::try_from_device`](crate::DeviceCsr::try_from_device) and
///   [`CooAssembly`](crate::CooAssembly);
/// - vectors and dense matrices: [`Gpu::upload_vector`], [`Gpu::zeros`], [`Gpu::upload_dense`],
///   [`Gpu::dense_zeros`];
/// - products: [`Gpu::spmv`], [`Gpu::spmv_with`], [`Gpu::plan`], [`Gpu::plan_for`],
///   [`Gpu::auto_kernel`], [`Gpu::target`], [`Gpu::spmm`], [`Gpu::plan_spmm`];
/// - CUDA graphs: [`Gpu::capture`].
#[derive(Debug)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: Kernels,
    /// The streaming engine, on GPUs that run the sm_90 module.
    stream_kernels: Option<StreamKernels>,
    /// The pinned buffers of large uploads, made by the first.
    pub(super) staging: Staging,
    sm_count: u32,
    /// The L2 cache, bytes: whether a matrix fits in it decides Auto's choice for hot products.
    l2_bytes: u64,
    name: String,
}

/// The name of `entry`'s function for element type `T`.
fn name_of<T: Scalar>(entry: Entry) -> &'static str {
    match T::PRECISION {
        Precision::Single => entry.f32,
        Precision::Double => entry.f64,
    }
}

impl Gpu {
    /// The first GPU, with a context and a stream of its own.
    pub fn new() -> Result<Self> {
        Self::with_ordinal(0)
    }

    /// GPU number `ordinal`, with a context and a stream of its own. Fails with [`Error::NoDevice`]
    /// when the CUDA driver library cannot be loaded or reports too few devices, so callers can fall
    /// back to the CPU.
    pub fn with_ordinal(ordinal: usize) -> Result<Self> {
        // SAFETY: only tries to open the driver library by its usual names; nothing is called in it.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDevice(
                "the CUDA driver library (libcuda.so) was not found: install the NVIDIA driver \
                 (580 or newer, for CUDA 13), or add the folder that holds libcuda.so to LD_LIBRARY_PATH"
                    .into(),
            ));
        }
        let count = CudaContext::device_count().map_err(|e| {
            Error::NoDevice(format!(
                "the CUDA driver did not start ({e}): `nvidia-smi` should list the GPU, and the driver \
                 must support CUDA 13 (580 or newer)"
            ))
        })?;
        if ordinal >= usize::try_from(count).unwrap_or(0) {
            return Err(Error::NoDevice(format!(
                "GPU {ordinal} asked for, the driver reports {count}: check `nvidia-smi` and \
                 CUDA_VISIBLE_DEVICES"
            )));
        }
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: this context is ours, and every operation of this library runs on the one stream
        // below, so cudarc's events that order buffer use across streams are not needed (and would
        // cost an event record per operand of every product).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        Self::on(stream)
    }

    /// A `Gpu` on a caller's stream (and so its context): products and copies are enqueued on
    /// `stream`, in order with whatever else the caller enqueues there, and nothing here ever waits
    /// for work it did not enqueue, except [`Gpu::synchronize`] and reading a vector back.
    ///
    /// The context's settings stay the caller's: with cudarc's event tracking on (its default), every
    /// operand of a product records and waits on cudarc's events, which orders buffers shared with
    /// other streams but costs host time per product; a caller that orders its streams itself can
    /// turn it off (`CudaContext::disable_event_tracking`), as [`Gpu::new`] does for its own context.
    /// Several `Gpu`s may share a context; each loads the kernels once.
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Self> {
        Self::on(stream)
    }

    fn on(stream: Arc<CudaStream>) -> Result<Self> {
        let ctx = stream.context().clone();
        let module = ctx.load_module(Ptx::from_src(PTX))?;
        let sm_count = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let l2_bytes = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
        let major = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let sm90 = if major >= SM90_MAJOR { Some(ctx.load_module(Ptx::from_src(PTX_SM90))?) } else { None };
        let stream_kernels = sm90.as_ref().map(StreamKernels::load).transpose()?;
        Ok(Self {
            kernels: Kernels::load(&module, sm90.as_ref())?,
            stream_kernels,
            staging: Staging::default(),
            sm_count: u32::try_from(sm_count).unwrap_or(1).max(1),
            l2_bytes: u64::try_from(l2_bytes).unwrap_or(0),
            name: ctx.name()?,
            ctx,
            stream,
        })
    }

    /// A `Gpu` of the same context and kernels on a stream of its own, with nothing staged: where a
    /// plan captures the graphs it replays (`enqueue/replay.rs`), so that no other thread's work on
    /// this `Gpu`'s stream can land in a capture.
    pub(crate) fn sibling(&self) -> Result<Sibling> {
        self.ctx.bind_to_thread()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)?;
        // SAFETY: `raw` is a live stream of this context, made just above, which the `Sibling`
        // owns; the wrapper never destroys it.
        let stream = unsafe { self.ctx.wrap_borrowed_stream(raw) };
        let gpu = Self {
            stream,
            kernels: self.kernels.clone(),
            stream_kernels: self.stream_kernels.clone(),
            staging: Staging::default(),
            sm_count: self.sm_count,
            l2_bytes: self.l2_bytes,
            name: self.name.clone(),
            ctx: self.ctx.clone(),
        };
        Ok(Sibling { gpu, raw })
    }

    /// The device's name, as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Streaming multiprocessors on the device (at least 1).
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// The device's L2 cache, bytes (0 where the driver reports none).
    pub fn l2_bytes(&self) -> u64 {
        self.l2_bytes
    }

    /// The CUDA context (for interoperation: timing events, another library on [`Gpu::stream`]).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// An event of this `Gpu`'s context that records time (the planner's, the tuner's and a hot
    /// plan's timings; the driver's default flags, so that reading a completed one waits for
    /// nothing).
    pub(crate) fn timing_event(&self) -> Result<CudaEvent> {
        Ok(self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// The stream every product and copy of this `Gpu` is enqueued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits until all work enqueued on [`Gpu::stream`] so far has finished. Refused while the
    /// stream captures a graph ([`Error::Unsupported`]): there is nothing to wait for yet.
    pub fn synchronize(&self) -> Result<()> {
        self.not_capturing("synchronize while the stream captures a graph")?;
        Ok(self.stream.synchronize()?)
    }

    /// Whether `ctx` is this `Gpu`'s context: buffers of another cannot be used here.
    pub(crate) fn owns(&self, ctx: &Arc<CudaContext>) -> bool {
        Arc::ptr_eq(ctx, &self.ctx)
    }

    /// The entry `entry` for element type `T`: of the sm_70 module, or of the sm_90 module for those
    /// of [`abi::SM90_ENTRIES`](kernels_gpu::abi::SM90_ENTRIES) on a GPU that loads it.
    pub(crate) fn kernel<T: Scalar>(&self, entry: Entry) -> Result<&CudaFunction> {
        self.kernels.get(name_of::<T>(entry))
    }

    /// An entry of the sm_70 module with one name for both element types
    /// ([`abi::UNTYPED_ENTRIES`](kernels_gpu::abi::UNTYPED_ENTRIES)).
    pub(crate) fn untyped_kernel(&self, name: &'static str) -> Result<&CudaFunction> {
        self.kernels.get(name)
    }

    /// Whether `entry` in element type `T` is launched with programmatic stream serialization: its
    /// function is the sm_90 build of one of [`abi::SM90_ENTRIES`](kernels_gpu::abi::SM90_ENTRIES),
    /// which waits for the grids ahead of it before anything else.
    pub(crate) fn launches_programmatically<T: Scalar>(&self, entry: Entry) -> bool {
        self.kernels.waits_for_prerequisites(name_of::<T>(entry))
    }

    /// Whether [`Kernel::CsrStream`](crate::Kernel::CsrStream), the streaming engine, runs on this
    /// GPU: compute capability 9.0 (Hopper) or later, where the driver loads the sm_90 module.
    pub fn has_stream_engine(&self) -> bool {
        self.stream_kernels.is_some()
    }

    /// The streaming engine's kernel of element type `T`, or `None` on a GPU older than sm_90.
    pub(crate) fn stream_kernel<T: Scalar>(&self) -> Option<&super::kernels::StreamKernel> {
        self.stream_kernels.as_ref().map(StreamKernels::of::<T>)
    }
}

/// A [`Gpu`] on a stream it owns, made by [`Gpu::sibling`]. The stream is made by the driver, not by
/// `CudaContext::new_stream`, which would count it as the context's and, in a caller's context with
/// cudarc's event tracking on, synchronise the context and turn on the per-buffer events of
/// multi-stream mode for every later operation; it is destroyed when the sibling is dropped (after
/// work still queued on it, which the driver lets finish).
pub(crate) struct Sibling {
    gpu: Gpu,
    raw: sys::CUstream,
}

// SAFETY: a `Gpu` is `Send` and `Sync`; `raw` is a driver stream handle, usable from any thread, that
// only `Drop` uses.
unsafe impl Send for Sibling {}
// SAFETY: as for `Send`: shared references reach only the `Gpu`.
unsafe impl Sync for Sibling {}

impl std::ops::Deref for Sibling {
    type Target = Gpu;

    fn deref(&self) -> &Gpu {
        &self.gpu
    }
}

impl Drop for Sibling {
    fn drop(&mut self) {
        let ctx = &self.gpu.ctx;
        ctx.record_err(ctx.bind_to_thread());
        // SAFETY: `raw` was made by `Gpu::sibling` and is destroyed once, here. The wrappers of it
        // that remain (this `Gpu`'s, and those of graphs captured on it) never destroy it or enqueue
        // on it again: a sibling is dropped with the graphs it captured, which are launched on
        // other streams.
        ctx.record_err(unsafe { result::stream::destroy(self.raw) });
    }
}
