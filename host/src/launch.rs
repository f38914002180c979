//! The launch layer: one typed function per PTX entry, and the crate's only kernel launches.
//!
//! Each function takes a [`Product`], whose constructor has checked everything the kernels rely on:
//! the matrix arrays are a valid CSR matrix (by construction of `DeviceCsr`), `x` has `ncols` and `y`
//! `nrows` elements, and all buffers live in the launching context.

use crate::device::{DeviceCsr, DeviceVector, Gpu};
use crate::operator::check_operands;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaFunction, result, sys};
use kernels_gpu::abi::CsrBalancedParams;
use kernels_gpu::abi::DevicePtr as AbiPtr;
use kernels_gpu::abi::{Axpby, CSR_VECTOR_COOPS, CsrParams, ScaleParams, StreamReadParams};
use kernels_gpu::abi::{CSR_ALIGNED_GROUPS, CSR_PARAM_COOPS, CsrParamParams, MAX_GRID_X, WARP_SIZE};
use kernels_gpu::index::{coop_threads, grid_blocks};
use std::ffi::c_void;

pub(crate) mod formats;

/// The operands of one product, checked against each other.
#[derive(Debug)]
pub(crate) struct Product<'a, T> {
    pub a: &'a DeviceCsr<T>,
    pub op: Axpby<T>,
}

impl<'a, T: Scalar> Product<'a, T> {
    pub fn new(
        gpu: &Gpu,
        alpha: T,
        a: &'a DeviceCsr<T>,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> Result<Self> {
        check_operands(gpu, a.belongs_to(gpu), (a.nrows(), a.ncols()), x, y)?;
        Ok(Self { a, op: Axpby { x: x.addr(gpu), y: y.addr(gpu), alpha, beta } })
    }
}

/// Launches `f` with `params` as its single by-value parameter.
///
/// # Safety
/// `f` is the PTX entry whose parameter struct is `P`, and `params` satisfies that kernel's contract
/// (every address valid for the accesses the kernel makes, given the sizes in `params`).
unsafe fn launch<P>(gpu: &Gpu, f: &CudaFunction, grid: u32, block: u32, params: &P) -> Result<()> {
    // SAFETY: the caller's contract; the kernel uses no dynamic shared memory.
    unsafe { launch_shared(gpu, f, grid, block, 0, params) }
}

/// [`launch`] with `shared_bytes` of dynamic shared memory per block.
///
/// # Safety
/// As for [`launch`]; `shared_bytes` is what the kernel's contract asks for, at most the device's
/// limit without opt-in (48 KiB).
unsafe fn launch_shared<P>(
    gpu: &Gpu,
    f: &CudaFunction,
    grid: u32,
    block: u32,
    shared_bytes: u32,
    params: &P,
) -> Result<()> {
    if grid == 0 {
        return Ok(());
    }
    let mut args = [params as *const P as *mut c_void];
    // SAFETY: `args` points at one parameter of the layout the entry declares (the caller's
    // contract); the driver copies it before `launch_kernel` returns, so the borrow suffices.
    let launched = unsafe {
        result::launch_kernel(
            f.cu_function(),
            (grid, 1, 1),
            (block, 1, 1),
            shared_bytes,
            gpu.stream().cu_stream(),
            &mut args,
        )
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

/// `spmv_csr_scalar_*`: a thread per row.
pub(crate) fn csr_scalar<T: Scalar>(gpu: &Gpu, p: &Product<'_, T>, block: u32) -> Result<()> {
    let params = CsrParams { a: p.a.args(), op: p.op };
    let grid = grid_blocks(u64::from(params.a.rows), block);
    // SAFETY: `Product` checked the operands; the kernel grid-strides over `rows`.
    unsafe { launch(gpu, &gpu.kernels::<T>().csr_scalar, grid, block, &params) }
}

/// `spmv_csr_vector_c<coop>_*`: `coop` threads per row. `coop` is one of [`CSR_VECTOR_COOPS`] and
/// `block` a multiple of the warp size (checked by `Kernel::resolve`).
pub(crate) fn csr_vector<T: Scalar>(gpu: &Gpu, p: &Product<'_, T>, coop: u32, block: u32) -> Result<()> {
    let index = CSR_VECTOR_COOPS
        .iter()
        .position(|&c| c == coop)
        .ok_or_else(|| Error::InvalidKernel(format!("no cooperative kernel for {coop} threads per row")))?;
    let params = CsrParams { a: p.a.args(), op: p.op };
    let grid = grid_blocks(coop_threads(params.a.rows, coop), block);
    // SAFETY: as for `csr_scalar`; whole warps per block keep the shuffles' member mask full.
    unsafe { launch(gpu, &gpu.kernels::<T>().csr_vector[index], grid, block, &params) }
}

/// `spmv_csr_aligned_g<group>_{nc,plain}_*`: `group` threads per row with aligned loads, x through the
/// read-only cache when `cached_x`. `group` is one of [`CSR_ALIGNED_GROUPS`] and `block` a multiple
/// of the warp size (checked by `Kernel::resolve`).
pub(crate) fn csr_aligned<T: Scalar>(
    gpu: &Gpu,
    p: &Product<'_, T>,
    group: u32,
    cached_x: bool,
    block: u32,
) -> Result<()> {
    let index = CSR_ALIGNED_GROUPS
        .iter()
        .position(|&g| g == group)
        .ok_or_else(|| Error::InvalidKernel(format!("no aligned kernel for {group} threads per row")))?;
    let table = gpu.kernels::<T>();
    let f = if cached_x { &table.csr_aligned_nc[index] } else { &table.csr_aligned_plain[index] };
    let params = CsrParams { a: p.a.args(), op: p.op };
    let grid = grid_blocks(coop_threads(params.a.rows, group), block);
    // SAFETY: as for `csr_vector`, whose thread mapping and contract the aligned kernel shares.
    unsafe { launch(gpu, f, grid, block, &params) }
}

/// The grid of the parametrised kernel: `.0` blocks walk the tiles of `repeat * block / coop` rows
/// (with a grid stride, so they are capped to keep the grid within [`MAX_GRID_X`]), then `.1` blocks
/// give each of `chunks` long-row chunks a warp.
pub(crate) fn param_grid(rows: u32, coop: u32, repeat: u32, block: u32, chunks: u32) -> Result<(u32, u32)> {
    let chunk_blocks = chunks.div_ceil(block / WARP_SIZE);
    let room = MAX_GRID_X.checked_sub(chunk_blocks).filter(|&room| room > 0).ok_or(Error::TooLarge {
        what: "the long-row chunk count",
        value: chunks as usize,
        limit: MAX_GRID_X as usize,
    })?;
    let tile_rows = u64::from(block / coop) * u64::from(repeat);
    let tiles = u64::from(rows).div_ceil(tile_rows);
    // `min` with a u32 value: the conversion cannot fail.
    let row_blocks = u32::try_from(tiles.min(u64::from(room))).unwrap_or(room);
    Ok((row_blocks, chunk_blocks))
}

/// `spmv_csr_param_c<coop>_*`: Reguly & Giles' parametrised kernel, the matrix's long rows split over
/// warps when `split_long_rows`. `coop` is one of [`CSR_PARAM_COOPS`], `repeat >= 1` and `block` a
/// multiple of the warp size of at least 64 (checked by `Kernel::resolve`).
pub(crate) fn csr_param<T: Scalar>(
    gpu: &Gpu,
    p: &Product<'_, T>,
    coop: u32,
    repeat: u32,
    block: u32,
    split_long_rows: bool,
) -> Result<()> {
    let index = CSR_PARAM_COOPS
        .iter()
        .position(|&c| c == coop)
        .ok_or_else(|| Error::InvalidKernel(format!("no parametrised kernel for {coop} threads per row")))?;
    let a = p.a.args();
    let long = p.a.long_rows().args(split_long_rows);
    let (row_blocks, chunk_blocks) = param_grid(a.rows, coop, repeat, block, long.chunks)?;
    let params = CsrParamParams { a, op: p.op, repeat, row_blocks, long };
    // SAFETY: `Product` checked the operands; the long-row arrays and scratch were built for this very
    // matrix at upload (`DeviceLongRows`); the grid has the `row_blocks` the tiles expect, then a warp
    // for each chunk; whole warps per block keep the shuffles' member mask full.
    unsafe { launch(gpu, &gpu.kernels::<T>().csr_param[index], row_blocks + chunk_blocks, block, &params) }
}

/// The grid of the balanced kernel: `.0` blocks give each of `chunks` long-row chunks a warp, then
/// `.1` blocks walk the `tasks` row tasks, a warp per task (with a grid stride, so they are capped
/// to keep the grid within [`MAX_GRID_X`]; at least one block when there are tasks).
pub(crate) fn balanced_grid(tasks: u32, chunks: u32, block: u32) -> Result<(u32, u32)> {
    let warps = block / WARP_SIZE;
    let chunk_blocks = chunks.div_ceil(warps);
    let room = MAX_GRID_X.checked_sub(chunk_blocks).filter(|&room| room > 0).ok_or(Error::TooLarge {
        what: "the long-row chunk count",
        value: chunks as usize,
        limit: MAX_GRID_X as usize,
    })?;
    Ok((chunk_blocks, tasks.div_ceil(warps).min(room)))
}

/// `spmv_csr_balanced_*`: a warp per row task of about equal work, and a warp per chunk of the
/// matrix's rows of at least `BALANCED_LONG_ROW` entries. `block` is a multiple of the warp size
/// (checked by `Kernel::resolve`).
pub(crate) fn csr_balanced<T: Scalar>(gpu: &Gpu, p: &Product<'_, T>, block: u32) -> Result<()> {
    let tasks = p.a.row_tasks();
    let long = tasks.long_rows();
    let (chunk_blocks, task_blocks) = balanced_grid(tasks.tasks(), long.chunks, block)?;
    let params = CsrBalancedParams {
        a: p.a.args(),
        op: p.op,
        task_rows: tasks.task_rows(),
        tasks: tasks.tasks(),
        chunk_blocks,
        long,
    };
    // SAFETY: `Product` checked the operands; the tasks and the long-row arrays and scratch were built
    // for this very matrix at upload (`DeviceRowTasks`); the grid has a warp for each chunk, then at
    // least one block for the tasks (`Gpu::spmv_with` launches only for matrices with rows, so with
    // tasks); whole warps per block keep the shuffles' member mask full.
    unsafe { launch(gpu, &gpu.kernels::<T>().csr_balanced, chunk_blocks + task_blocks, block, &params) }
}

/// `spmv_scale_*` on `len` elements at `y`.
///
/// # Safety
/// `y` is an address of `gpu`'s context holding `len` elements.
unsafe fn scale_raw<T: Scalar>(gpu: &Gpu, y: AbiPtr<T>, beta: T, len: u32) -> Result<()> {
    const BLOCK: u32 = 256;
    let params = ScaleParams { y, beta, len };
    let grid = grid_blocks(u64::from(len), BLOCK);
    // SAFETY: guaranteed by the caller; the kernel grid-strides over `len`.
    unsafe { launch(gpu, &gpu.kernels::<T>().scale, grid, BLOCK, &params) }
}

/// `probe_stream_read`: reads `data` once with 16-byte loads, `grid` blocks of `block` threads.
pub(crate) fn probe_stream_read(
    gpu: &Gpu,
    data: &DeviceVector<f32>,
    sink: &mut DeviceVector<f32>,
    grid: u32,
    block: u32,
) -> Result<()> {
    data.check_gpu(gpu)?;
    sink.check_gpu(gpu)?;
    if sink.is_empty() {
        return Err(Error::DimensionMismatch { what: "the probe's sink", expected: 1, got: 0 });
    }
    let params = StreamReadParams {
        data: data.addr(gpu),
        sink: sink.addr(gpu),
        len4: (data.len() / 4) as u64,
        sentinel: f32::NEG_INFINITY,
    };
    // SAFETY: `data` holds at least `4 * len4` floats, `sink` at least one; device allocations are
    // 256-byte aligned, as the 16-byte loads need.
    unsafe { launch(gpu, gpu.probe_stream_read(), grid, block, &params) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_grid_covers_tiles_then_chunks() {
        // 32 rows per tile: 1000 rows make 32 tiles.
        assert_eq!(param_grid(1000, 4, 1, 128, 0).unwrap(), (32, 0));
        assert_eq!(param_grid(1000, 4, 3, 128, 0).unwrap(), (11, 0));
        assert_eq!(param_grid(1000, 1, 64, 1024, 0).unwrap(), (1, 0));
        // 4 warps per block of 128: 5 chunks take 2 blocks, 8 chunks 2, 9 chunks 3.
        assert_eq!(param_grid(1000, 4, 1, 128, 5).unwrap(), (32, 2));
        assert_eq!(param_grid(1000, 4, 1, 128, 8).unwrap(), (32, 2));
        assert_eq!(param_grid(1000, 4, 1, 128, 9).unwrap(), (32, 3));
        assert_eq!(param_grid(1, 32, 1, 64, 1).unwrap(), (1, 1));
    }

    #[test]
    fn balanced_grid_covers_chunks_then_tasks() {
        // 4 warps per block of 128.
        assert_eq!(balanced_grid(1, 0, 128).unwrap(), (0, 1));
        assert_eq!(balanced_grid(9, 0, 128).unwrap(), (0, 3));
        assert_eq!(balanced_grid(8, 5, 128).unwrap(), (2, 2));
        assert_eq!(balanced_grid(100, 1, 32).unwrap(), (1, 100));
        // Tasks beyond the grid's limit walk with a stride; the chunks keep a warp each.
        let (chunks, tasks) = balanced_grid(u32::MAX, 1000, 32).unwrap();
        assert_eq!(chunks, 1000);
        assert_eq!(chunks + tasks, MAX_GRID_X);
        assert!(balanced_grid(1, u32::MAX, 32).is_err());
    }

    #[test]
    fn param_grid_stays_within_the_limit() {
        // Two rows per tile: 2^31 tiles, more than a grid holds; the tiles' blocks grid-stride.
        let (rows, chunks) = param_grid(u32::MAX, 32, 1, 64, 1000).unwrap();
        assert_eq!(chunks, 500);
        assert_eq!(rows + chunks, MAX_GRID_X);
    }
}
