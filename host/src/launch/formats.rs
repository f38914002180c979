//! Launches of the kernels of the formats beyond CSR, one typed function per kernel family. Each
//! takes its device matrix, valid by construction (its upload narrowed every index, and its
//! conversion put every column below `ncols` or at `PAD_COL`), and [`Operands`] that
//! `operator::spmv` checked against it: `x` has `ncols` elements, `y` has `nrows`, all in `gpu`'s
//! context.

use super::{launch, launch_shared, scale_raw};
use crate::Result;
use crate::device::{
    BrcCombine, CooKernel, DeviceBrc, DeviceCoo, DeviceDenseBlocks, DeviceEll, DeviceVector, Gpu,
};
use crate::formats::convert::narrow;
use crate::operator::sealed::Operands;
use crate::scalar::Scalar;
use kernels_gpu::abi::{
    BrcParams, CooParams, DENSE_BLOCK_ROWS, DENSE_BLOCK_THREADS, DenseBlockParams, EllParams, WARP_SIZE,
};
use kernels_gpu::index::grid_blocks;

/// Threads per block of the ELL, COO and BRC kernels: the 128 that `Kernel::Auto` uses for CSR
/// (Reguly & Giles 2012), a multiple of the warp as the segmented and BRC kernels need.
const BLOCK: u32 = 128;

/// Warps per SM the segmented COO kernel fills at most: 64 are resident on an SM from Volta to Hopper
/// (2048 threads). More warps would only shorten the intervals and add atomics at their ends.
const COO_WARPS_PER_SM: u64 = 64;

/// `spmv_scale_*` over a whole vector: `y = beta * y` (0 when `beta == 0`, `y` unread), the first
/// launch of the products whose later kernels accumulate into `y`.
pub(crate) fn scale_vector<T: Scalar>(gpu: &Gpu, y: &mut DeviceVector<T>, beta: T) -> Result<()> {
    y.check_gpu(gpu)?;
    let len = narrow("the vector length", y.len())?;
    // SAFETY: `y` lives in `gpu`'s context and holds `len` elements.
    unsafe { scale_raw(gpu, y.addr(gpu), beta, len) }
}

/// `spmv_ell_*`: a thread per row, `y = alpha * A * x + beta * y`.
pub(crate) fn ell<T: Scalar>(gpu: &Gpu, a: &DeviceEll<T>, op: &Operands<'_, T>) -> Result<()> {
    let params = EllParams { a: a.args(), op: op.axpby(gpu) };
    let grid = grid_blocks(u64::from(params.a.rows), BLOCK);
    // SAFETY: the matrix holds `width * rows` slots, each `PAD_COL` or a column of `x`; `y` has `rows`
    // elements. The kernel grid-strides over the rows.
    unsafe { launch(gpu, &gpu.kernels::<T>().formats.ell, grid, BLOCK, &params) }
}

/// The warps and the interval of entries per warp (a multiple of 32, so every warp starts on an
/// aligned entry) of the segmented COO kernel for `nnz` entries on `sm_count` SMs: at most as many
/// warps as fill the GPU, together covering every entry, each but the last with a full interval.
pub(crate) fn coo_intervals(nnz: u64, sm_count: u32) -> (u64, u64) {
    let max_warps = (u64::from(sm_count) * COO_WARPS_PER_SM).max(1);
    let warp = u64::from(WARP_SIZE);
    let interval = nnz.div_ceil(max_warps).next_multiple_of(warp).max(warp);
    (nnz.div_ceil(interval).max(1), interval)
}

/// `spmv_coo_atomic_*` or `spmv_coo_segmented_*`: `y += alpha * A * x`. The caller has already made
/// `y` hold `beta * y` on this stream (a scale launch, or the ELL or dense-block kernel).
pub(crate) fn coo<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceCoo<T>,
    kernel: CooKernel,
    op: &Operands<'_, T>,
) -> Result<()> {
    let nnz = u64::from(a.args().nnz);
    let kernels = &gpu.kernels::<T>().formats;
    let (f, grid, interval) = match kernel {
        CooKernel::Atomic => (&kernels.coo_atomic, grid_blocks(nnz, BLOCK), 0),
        CooKernel::Segmented => {
            let (warps, interval) = coo_intervals(nnz, gpu.sm_count());
            (&kernels.coo_segmented, grid_blocks(warps * u64::from(WARP_SIZE), BLOCK), interval)
        }
    };
    let params = CooParams { a: a.args(), op: op.accumulate(gpu), interval };
    // SAFETY: the matrix's rows are rows of `y` and its columns columns of `x`; the atomic kernel
    // grid-strides over the entries, and the segmented kernel's warps times `interval` cover them
    // (`coo_intervals`), in blocks of whole warps.
    unsafe { launch(gpu, f, grid, BLOCK, &params) }
}

/// The BRC kernels: for [`BrcCombine::Deterministic`], `spmv_brc_partials_*` then
/// `spmv_brc_combine_*`; for [`BrcCombine::Atomic`], `spmv_brc_prescale_*` then `spmv_brc_atomic_*`.
/// The split-row kernel is skipped (a grid of 0) when no row was split.
pub(crate) fn brc<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceBrc<T>,
    combine: BrcCombine,
    op: &Operands<'_, T>,
) -> Result<()> {
    let params = BrcParams { a: a.args(), split: a.split_args(), op: op.axpby(gpu) };
    let kernels = &gpu.kernels::<T>().formats;
    let block_grid = grid_blocks(u64::from(params.a.blocks) * u64::from(WARP_SIZE), BLOCK);
    let split_grid = grid_blocks(u64::from(params.split.split_count), BLOCK);
    // SAFETY: the blocks' slots lie inside the entry arrays, columns are `PAD_COL` or columns of `x`,
    // targets are rows of `y` or slots of the scratch buffer, whose rows are rows of `y` (by
    // construction of `DeviceBrc`). The block kernels grid-stride over blocks, a warp each; the
    // split-row kernels over split rows. The stream orders the two launches.
    unsafe {
        match combine {
            BrcCombine::Deterministic => {
                launch(gpu, &kernels.brc_partials, block_grid, BLOCK, &params)?;
                launch(gpu, &kernels.brc_combine, split_grid, BLOCK, &params)
            }
            BrcCombine::Atomic => {
                launch(gpu, &kernels.brc_prescale, split_grid, BLOCK, &params)?;
                launch(gpu, &kernels.brc_atomic, block_grid, BLOCK, &params)
            }
        }
    }
}

/// `spmv_dense_blocks_*`: a block of `DENSE_BLOCK_THREADS` threads per block of rows, with the window
/// of `x` in dynamic shared memory; `y = alpha * A_blocks * x + beta * y`.
pub(crate) fn dense_blocks<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceDenseBlocks<T>,
    op: &Operands<'_, T>,
) -> Result<()> {
    let params = DenseBlockParams { a: a.args(), op: op.axpby(gpu) };
    let grid = grid_blocks(u64::from(params.a.rows).div_ceil(u64::from(DENSE_BLOCK_ROWS)), 1);
    let shared_bytes = narrow("the dense-block window's bytes", a.window() * size_of::<T>())?;
    // SAFETY: every window lies inside `x` up to `ncols`, every column offset is `PAD_COL` or below
    // `window` (by construction of `DeviceDenseBlocks`), the window is at most 48 KiB (checked by the
    // conversion), and the block has the `DENSE_BLOCK_THREADS` threads the kernel's barriers expect.
    unsafe {
        launch_shared(
            gpu,
            &gpu.kernels::<T>().formats.dense_blocks,
            grid,
            DENSE_BLOCK_THREADS,
            shared_bytes,
            &params,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coo_intervals_cover_every_entry_in_whole_warps() {
        for nnz in [0u64, 1, 31, 32, 33, 1000, 132 * 64 * 32, 132 * 64 * 32 + 1, 1 << 33] {
            for sm_count in [1, 132] {
                let (warps, interval) = coo_intervals(nnz, sm_count);
                assert!(warps >= 1 && warps <= u64::from(sm_count) * COO_WARPS_PER_SM, "{nnz}, {sm_count}");
                assert!(interval % 32 == 0 && interval >= 32, "{nnz}, {sm_count}");
                assert!(warps * interval >= nnz, "{nnz}, {sm_count}");
                // Every warp but a lone one for an empty matrix has entries.
                assert!((warps - 1) * interval < nnz.max(1), "{nnz}, {sm_count}");
            }
        }
    }
}
