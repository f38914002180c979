//! Dense sub-blocks with the window of `x` they share in shared memory (Baskaran & Bordawekar,
//! "Optimizing Sparse Matrix-Vector Multiplication on GPUs", IBM Research Report RC24704, 2008: their
//! optional block format, which they found rarely pays off).
//!
//! A thread block of `DENSE_BLOCK_THREADS` threads handles `DENSE_BLOCK_ROWS` consecutive rows, a
//! group of `DENSE_ROW_THREADS` lanes per row. The block's window of `x` (`window` columns from the
//! block's `window_start`) is loaded into shared memory once, coalesced; then each group walks its
//! row's entries (padded to a multiple of the group size, padding marked `PAD_COL`), whose columns
//! are offsets into the window, and sums its lanes with shuffles. Entries outside the window are in
//! the format's COO remainder, which the host applies next with the accumulating COO kernel. Blocks
//! go to thread blocks with a grid stride; the loop bound is uniform across the thread block, so every
//! thread reaches the barriers and the shuffles.

use crate::abi::{
    DENSE_BLOCK_ROWS, DENSE_BLOCK_THREADS, DENSE_NO_WINDOW, DENSE_ROW_THREADS, DenseBlockParams, PAD_COL,
};
use crate::arch::{Load, block_idx, dynamic_shared, grid_dim, sync_threads, thread_idx};
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

/// # Safety
/// `p` describes validated dense blocks (every window inside `x`, every column offset below the
/// window or `PAD_COL`), vectors of matching lengths; launched with `DENSE_BLOCK_THREADS` threads
/// per block and `window` elements of `T` of dynamic shared memory.
#[inline(always)]
unsafe fn dense_blocks<T: Real>(p: DenseBlockParams<T>) {
    let tid = thread_idx();
    let window = dynamic_shared::<T>();
    let (row_in_block, lane) = (tid / DENSE_ROW_THREADS, tid % DENSE_ROW_THREADS);
    let blocks = (p.a.rows as u64).div_ceil(DENSE_BLOCK_ROWS as u64);
    let mut block = block_idx() as u64;
    while block < blocks {
        // SAFETY: `block < blocks`, the length of `window_start`.
        let start = unsafe { u32::load_nc(p.a.window_start.as_ptr().add(block as usize)) };
        if start != DENSE_NO_WINDOW {
            let mut i = tid;
            while i < p.a.window {
                let col = start as u64 + i as u64;
                if col < p.a.ncols as u64 {
                    // SAFETY: `i < window`, the shared memory's length; `col < ncols`, the length of
                    // `x`. The previous step's readers passed the barrier at its end.
                    unsafe { *window.add(i as usize) = T::load_nc(p.op.x.as_ptr().add(col as usize)) };
                }
                i += DENSE_BLOCK_THREADS;
            }
        }
        // SAFETY: reached by every thread of the block (the loop bound is uniform across it).
        unsafe { sync_threads() };
        let row = block * DENSE_BLOCK_ROWS as u64 + row_in_block as u64;
        let mut sum = T::ZERO;
        if row < p.a.rows as u64 {
            // SAFETY: `row < rows`, and `row_offsets` has `rows + 1` entries bounding the row's slots;
            // a column offset that is not `PAD_COL` is below `window` and was loaded above (the host
            // puts only columns below `ncols` in a window).
            unsafe {
                let offsets = p.a.row_offsets.as_ptr();
                let end = u32::load_nc(offsets.add(row as usize + 1)) as usize;
                let mut k = u32::load_nc(offsets.add(row as usize)) as usize + lane as usize;
                while k < end {
                    let col = u32::load_nc(p.a.cols.as_ptr().add(k));
                    if col != PAD_COL {
                        sum = T::load_nc(p.a.values.as_ptr().add(k)).fma(*window.add(col as usize), sum);
                    }
                    k += DENSE_ROW_THREADS as usize;
                }
            }
        }
        let total = group_sum::<T, DENSE_ROW_THREADS>(sum);
        if row < p.a.rows as u64 && lane == 0 {
            // SAFETY: `row < rows`, written by lane 0 of its group only.
            unsafe { store_axpby(p.op.y.as_mut_ptr(), row as usize, p.op.alpha, total, p.op.beta) };
        }
        // SAFETY: as above; the next step overwrites the window only after every read of this one.
        unsafe { sync_threads() };
        block += grid_dim() as u64;
    }
}

crate::ptx_entry!(spmv_dense_blocks_f32, DenseBlockParams<f32>, dense_blocks::<f32>);
crate::ptx_entry!(spmv_dense_blocks_f64, DenseBlockParams<f64>, dense_blocks::<f64>);
