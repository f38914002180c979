//! The crate's only kernel launches: [`Prepared`], one PTX entry with its grid and parameter struct
//! built when a product is planned, launched with the product's operands; `y = beta * y` for vectors
//! and dense matrices; and [`launch`] itself, for the one-time launches of a construction (the
//! transpose's).

use crate::device::Gpu;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaFunction, CudaStream, result, sys};
use kernels_gpu::abi::{
    self as abi, Accumulate, Axpby, DenseScaleParams, DevicePtr as AbiPtr, Entry, GATHER_BLOCK_SIZE,
    GatherParams, L2_PREFETCH_BLOCK_SIZE, L2PrefetchParams, SCALE_BLOCK_SIZE, ScaleParams, ScatterAddParams,
};
use kernels_gpu::index::grid_blocks;
use std::ffi::c_void;

/// A kernel parameter struct whose dense operands a product fills in: [`Axpby`] for the kernels that
/// write `y = alpha * A * x + beta * y`, [`Accumulate`] for those that add `alpha * A * x` to a `y`
/// already scaled.
pub trait WithOperands: Copy {
    type Operands;
    fn with(self, op: Self::Operands) -> Self;
}

/// Implements [`WithOperands`] for kernel parameter structs `$params<T>` whose operands are their
/// `op` field of type `$operands<T>`: each format declares its own, beside its launches.
macro_rules! with_operands {
    ($($params:ident: $operands:ident),+) => {$(
        impl<T: Copy> $crate::enqueue::launch::WithOperands for $params<T> {
            type Operands = $operands<T>;
            fn with(self, op: $operands<T>) -> Self {
                Self { op, ..self }
            }
        }
    )+};
}
pub(crate) use with_operands;

/// The operands of a [`Prepared`] launch before a product sets them.
pub(crate) fn unset_axpby<T: Scalar>() -> Axpby<T> {
    Axpby { x: AbiPtr::new(0), y: AbiPtr::new(0), alpha: T::ZERO, beta: T::ZERO }
}

/// As [`unset_axpby`], for the accumulating kernels.
pub(crate) fn unset_accumulate<T: Scalar>() -> Accumulate<T> {
    Accumulate { x: AbiPtr::new(0), y: AbiPtr::new(0), alpha: T::ZERO }
}

/// One launch of a product, prepared once: the entry, the grid, the dynamic shared memory, the
/// parameter struct with everything but the operands, which [`Prepared::enqueue`] sets, and how it
/// is launched ([`Mode`]).
#[derive(Debug, Clone)]
pub struct Prepared<P> {
    f: CudaFunction,
    grid: u32,
    block: u32,
    shared_bytes: u32,
    params: P,
    mode: Mode,
}

/// How a [`Prepared`] launch is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    /// Every block resident at once, or the driver refuses the launch.
    Cooperative,
    /// With programmatic stream serialization: the grid may be launched before the kernel ahead of
    /// it on the stream (or in a graph) has finished, for an entry that waits for that kernel
    /// (`griddepcontrol.wait`) before any access. No kernel of ours triggers early, so the grid's
    /// blocks are placed as the blocks ahead retire: what is saved is the launch's latency, not an
    /// overlap of the two kernels' work, which cost the products more (docs/PERF.md, section 47).
    Programmatic,
}

impl<P: WithOperands> Prepared<P> {
    /// # Safety
    /// `f` is the PTX entry whose parameter struct is `P`; launched as `grid` blocks of `block`
    /// threads with `shared_bytes` of dynamic shared memory (at most the 48 KiB every GPU grants
    /// without opt-in, or what the entry was opted into), with `params` and the operands of any product whose `x` has the matrix's
    /// column count and `y` its row count in the context of the matrix's buffers, it makes only
    /// accesses within those buffers and the ones `params` points to, and the latter live as long as
    /// the matrix `params` was built from.
    pub(crate) unsafe fn new(f: &CudaFunction, grid: u32, block: u32, shared_bytes: u32, params: P) -> Self {
        Self { f: f.clone(), grid, block, shared_bytes, params, mode: Mode::Plain }
    }

    /// As [`Prepared::new`] for `entry` in element type `T`, launched with programmatic stream
    /// serialization where `gpu` takes it from the sm_90 module, whose build of it waits for the
    /// grids ahead of it first ([`Gpu::launches_programmatically`]).
    ///
    /// # Safety
    /// As [`Prepared::new`], for the function of `entry`.
    pub(crate) unsafe fn of_entry<T: Scalar>(
        gpu: &Gpu,
        entry: Entry,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        params: P,
    ) -> Result<Self> {
        let f = gpu.kernel::<T>(entry)?.clone();
        let mode = if gpu.launches_programmatically::<T>(entry) { Mode::Programmatic } else { Mode::Plain };
        Ok(Self { f, grid, block, shared_bytes, params, mode })
    }

    /// As [`Prepared::new`], for a kernel whose blocks wait for each other (a grid-wide barrier):
    /// launched cooperatively, so that the driver either makes every block resident at once or
    /// refuses the launch.
    ///
    /// # Safety
    /// As [`Prepared::new`].
    pub(crate) unsafe fn cooperative(
        f: &CudaFunction,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        params: P,
    ) -> Self {
        Self { f: f.clone(), grid, block, shared_bytes, params, mode: Mode::Cooperative }
    }

    /// Enqueues the launch on `gpu`'s stream with the operands `op`.
    ///
    /// # Safety
    /// `op` meets the contract the caller of [`Prepared::new`] stated for the operands (for a
    /// product: those of a [`Product`](super::product::Product) checked against the matrix `self`
    /// was prepared for), and every buffer `self` points to is alive.
    pub(crate) unsafe fn enqueue(&self, gpu: &Gpu, op: P::Operands) -> Result<()> {
        let params = self.params.with(op);
        let (f, shape) = (&self.f, (self.grid, self.block, self.shared_bytes));
        // SAFETY: `Prepared::new`'s contract, with the operands the caller vouches for.
        unsafe { launch_as(gpu.stream(), f, shape, &params, self.mode) }
    }
}

/// Launches `f` with `params` as its single by-value parameter. Nothing is launched for a grid of 0.
///
/// # Safety
/// `f` is the PTX entry whose parameter struct is `P`, and `params` satisfies that kernel's contract
/// (every address valid for the accesses the kernel makes, given the sizes in `params`, with this
/// grid, block and dynamic shared memory).
pub(crate) unsafe fn launch<P>(
    gpu: &Gpu,
    f: &CudaFunction,
    grid: u32,
    block: u32,
    shared_bytes: u32,
    params: &P,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { launch_as(gpu.stream(), f, (grid, block, shared_bytes), params, Mode::Plain) }
}

/// [`launch`] on `stream` (of the context `f` was loaded in) with the shape
/// `(grid, block, shared_bytes)`, in `mode`. A driver that refuses the programmatic attribute fails
/// the launch: every driver of the CUDA 13 the library asks for takes it (CUDA 12.3 and later),
/// and the attribute is set only for functions of the sm_90 module, so only on Hopper and later.
///
/// # Safety
/// As [`launch`]; in [`Mode::Programmatic`], `f` waits for the grids ahead of it
/// (`griddepcontrol.wait`) before any access to memory ([`Gpu::launches_programmatically`], and
/// the PTX test `the_sm90_builds_wait_for_the_grids_ahead_first`).
unsafe fn launch_as<P>(
    stream: &CudaStream,
    f: &CudaFunction,
    (grid, block, shared_bytes): (u32, u32, u32),
    params: &P,
    mode: Mode,
) -> Result<()> {
    if grid == 0 {
        return Ok(());
    }
    let mut args = [std::ptr::from_ref(params).cast_mut().cast::<c_void>()];
    let (cu_f, stream) = (f.cu_function(), stream.cu_stream());
    // SAFETY: `args` points at one parameter of the layout the entry declares (the caller's
    // contract); the driver copies it before the launch call returns, so the borrow suffices, as it
    // does for `config` and the `attribute` it points to, which live until the end of their arm.
    // A programmatic launch is the caller's to vouch for (`f` waits first).
    let launched = unsafe {
        match mode {
            Mode::Plain => {
                result::launch_kernel(cu_f, (grid, 1, 1), (block, 1, 1), shared_bytes, stream, &mut args)
            }
            Mode::Cooperative => result::launch_cooperative_kernel(
                cu_f,
                (grid, 1, 1),
                (block, 1, 1),
                shared_bytes,
                stream,
                &mut args,
            ),
            Mode::Programmatic => {
                let mut attribute = sys::CUlaunchAttribute {
                    id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                    pad: [0; 4],
                    value: sys::CUlaunchAttributeValue { programmaticStreamSerializationAllowed: 1 },
                };
                let config = sys::CUlaunchConfig {
                    gridDimX: grid,
                    gridDimY: 1,
                    gridDimZ: 1,
                    blockDimX: block,
                    blockDimY: 1,
                    blockDimZ: 1,
                    sharedMemBytes: shared_bytes,
                    hStream: stream,
                    attrs: &mut attribute,
                    numAttrs: 1,
                };
                sys::cuLaunchKernelEx(&config, cu_f, args.as_mut_ptr(), std::ptr::null_mut()).result()
            }
        }
    };
    match launched {
        // The driver refuses a block whose threads' registers exceed the SM's before anything runs:
        // a kernel parameter the caller can change, so say which.
        Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
            let most = f.max_threads_per_block().map_or_else(|_| "fewer".to_owned(), |m| m.to_string());
            Err(Error::InvalidKernel(format!(
                "block size {block}: this kernel runs at most {most} threads per block on this GPU"
            )))
        }
        other => Ok(other?),
    }
}

/// `l2_prefetch`: asks the L2 for every line of each of `params`' spans (no launch when they are
/// all empty: a grid of no blocks). A kernel launched after it on the stream finds those lines in
/// the L2 or on their way.
///
/// # Safety
/// Each span's bytes lie inside one allocation of `gpu`'s context.
pub(crate) unsafe fn prefetch_l2(gpu: &Gpu, params: &L2PrefetchParams) -> Result<()> {
    let grid = grid_blocks(params.lines(), L2_PREFETCH_BLOCK_SIZE);
    // SAFETY: the spans lie in allocations of the context (the caller), the kernel's contract; a
    // prefetch writes nothing.
    unsafe { launch(gpu, gpu.untyped_kernel(abi::L2_PREFETCH)?, grid, L2_PREFETCH_BLOCK_SIZE, 0, params) }
}

/// `spmv_scale_*`: `y = beta * y` over `len` elements at `y` (0 when `beta == 0`, `y` unread).
///
/// # Safety
/// `y` is an address of `gpu`'s context holding `len` elements.
pub(crate) unsafe fn scale<T: Scalar>(gpu: &Gpu, y: AbiPtr<T>, beta: T, len: u32) -> Result<()> {
    let params = ScaleParams { y, beta, len };
    let grid = grid_blocks(u64::from(len), SCALE_BLOCK_SIZE);
    // SAFETY: guaranteed by the caller; the kernel grid-strides over `len`.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::SCALE)?, grid, SCALE_BLOCK_SIZE, 0, &params) }
}

/// `spmm_scale_*`: `Y = beta * Y` over `outer` runs of `inner` elements `ld` apart at `y` (0 when
/// `beta == 0`, `Y` unread).
///
/// # Safety
/// `y` is an address of `gpu`'s context holding `outer` runs of `inner <= ld` elements, `ld` apart.
pub(crate) unsafe fn scale_dense<T: Scalar>(
    gpu: &Gpu,
    y: AbiPtr<T>,
    beta: T,
    (inner, outer, ld): (u32, u32, u32),
) -> Result<()> {
    let params = DenseScaleParams { y, beta, inner, outer, ld };
    let grid = grid_blocks(u64::from(inner) * u64::from(outer), SCALE_BLOCK_SIZE);
    // SAFETY: guaranteed by the caller; the kernel grid-strides over `inner * outer` elements.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::SPMM_SCALE)?, grid, SCALE_BLOCK_SIZE, 0, &params) }
}

/// `dist_gather_*` on `stream`: `out[i] = x[indices[i]]` for `i < len`.
///
/// # Safety
/// `stream` is of `gpu`'s context; `indices` and `out` hold `len` elements in that context, and `x`
/// more than the largest index, in that context or in one whose memory it may read (peer access);
/// `out` overlaps neither.
pub(crate) unsafe fn gather<T: Scalar>(
    gpu: &Gpu,
    stream: &CudaStream,
    out: AbiPtr<T>,
    x: AbiPtr<T>,
    indices: AbiPtr<u32>,
    len: u32,
) -> Result<()> {
    let params = GatherParams { x, indices, out, len };
    let shape = (grid_blocks(u64::from(len), GATHER_BLOCK_SIZE), GATHER_BLOCK_SIZE, 0);
    // SAFETY: guaranteed by the caller; the kernel grid-strides over `len`.
    unsafe { launch_as(stream, gpu.kernel::<T>(abi::DIST_GATHER)?, shape, &params, Mode::Plain) }
}

/// `dist_scatter_add_*`: `y[indices[i]] += v[i]` for `i < len`.
///
/// # Safety
/// `indices` and `v` hold `len` elements, the indices strictly increasing and below `y`'s length,
/// all in `gpu`'s context; `y` overlaps neither.
pub(crate) unsafe fn scatter_add<T: Scalar>(
    gpu: &Gpu,
    y: AbiPtr<T>,
    v: AbiPtr<T>,
    indices: AbiPtr<u32>,
    len: u32,
) -> Result<()> {
    let params = ScatterAddParams { v, indices, y, len };
    let grid = grid_blocks(u64::from(len), GATHER_BLOCK_SIZE);
    // SAFETY: guaranteed by the caller; the kernel grid-strides over `len`.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::DIST_SCATTER_ADD)?, grid, GATHER_BLOCK_SIZE, 0, &params) }
}

/// Enqueues a copy of `len` elements from `src` to `dst`.
///
/// # Safety
/// `src` and `dst` hold `len` elements each in `gpu`'s context, and do not overlap.
pub(crate) unsafe fn copy<T>(gpu: &Gpu, dst: AbiPtr<T>, src: AbiPtr<T>, len: u32) -> Result<()> {
    let bytes = len as usize * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract; both are device buffers of `gpu`'s context, and the copy is
    // ordered on its stream.
    Ok(unsafe { result::memcpy_dtod_async(dst.addr(), src.addr(), bytes, gpu.stream().cu_stream()) }?)
}

/// Enqueues a copy of `src` from the host to `dst`.
///
/// # Safety
/// `dst` holds `src.len()` elements in `gpu`'s context.
pub(crate) unsafe fn copy_from_host<T>(gpu: &Gpu, dst: AbiPtr<T>, src: &[T]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    // SAFETY: the caller's contract for `dst`. `src` is a borrow of host memory the driver reads
    // before the call returns (pageable memory is staged), or, where the caller's slice is pinned,
    // in stream order, as cudarc's own `memcpy_htod` of a slice relies on.
    Ok(unsafe { result::memcpy_htod_async(dst.addr(), src, gpu.stream().cu_stream()) }?)
}

/// `probe_stream_read` with `params`, `grid` blocks of `block` threads.
///
/// # Safety
/// `params.data` holds at least `4 * params.len4` floats and `params.sink` at least one, 16-byte
/// aligned, in `gpu`'s context.
pub(crate) unsafe fn probe_stream_read(
    gpu: &Gpu,
    params: &kernels_gpu::abi::StreamReadParams,
    grid: u32,
    block: u32,
) -> Result<()> {
    // SAFETY: guaranteed by the caller.
    unsafe { launch(gpu, gpu.untyped_kernel(abi::PROBE_STREAM_READ)?, grid, block, 0, params) }
}

/// `probe_row_runs` with `params`, `grid` blocks of `block` threads.
///
/// # Safety
/// `params.data` holds at least `2 * params.pairs` floats, `params.run > 0` divides `params.pairs`,
/// `params.sink` holds at least one float, all in `gpu`'s context.
pub(crate) unsafe fn probe_row_runs(
    gpu: &Gpu,
    params: &kernels_gpu::abi::RowRunsParams,
    grid: u32,
    block: u32,
) -> Result<()> {
    // SAFETY: guaranteed by the caller.
    unsafe { launch(gpu, gpu.untyped_kernel(abi::PROBE_ROW_RUNS)?, grid, block, 0, params) }
}
