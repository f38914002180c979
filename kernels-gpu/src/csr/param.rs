//! CSR parametrised: one kernel with Reguly & Giles' three parameters ("Efficient sparse matrix-vector
//! multiplication on cache-based GPUs", InPar 2012, their CSR kernel and its parameters): `COOP`
//! threads per row (one PTX entry per value), `blockDim` threads per block (set at launch) and
//! `repeat` rows per group (a field of [`CsrParamParams`]).
//!
//! Thread mapping: the rows are cut into tiles of `repeat * blockDim / COOP` consecutive rows. A block
//! takes tiles `b, b + row_blocks, ...`; within a tile its `blockDim / COOP` groups handle, at step
//! `i < repeat`, the consecutive rows `i * groups .. (i + 1) * groups`, so the groups of a warp read
//! neighbouring rows. The lanes of a group stride through the row's entries together and sum by
//! shuffles; the loop bounds depend on the block and tile only, so every lane reaches the shuffles.
//!
//! Long rows (our addition; the paper's dc1 shows the cliff: two rows of 114,200 and 47,190 entries
//! among rows of 6.5 on average, which one group would walk alone while the rest of the GPU idles).
//! When the kernel is first planned for a matrix, the host lists the rows of at least `long.min_len`
//! entries (a length it derives from the row count, the entry count and the SM count: see its
//! `rule.rs`) and cuts each into chunks of [`LONG_ROW_CHUNK`](crate::abi::LONG_ROW_CHUNK) entries
//! (`LongRowArgs`). The launch adds blocks
//! after the `row_blocks` of the tiles; each of their warps takes one chunk (a warp rather than a
//! block, so that its sum needs shuffles only, with no shared memory or block barrier):
//! 1. the tile path skips long rows, and leaves their `y` alone;
//! 2. a chunk warp sums the entries its `chunk_entries` word gives (loaded beside its row's index, so
//!    that the entries' loads wait for neither the row's number nor its offsets), and lane 0 stores
//!    the sum in the chunk's slot of `partials`, then increments its row's counter with
//!    `atom.acq_rel.gpu.inc` (the release: whoever sees the increment sees the slot);
//! 3. the warp whose increment was the row's last (`atom.inc` returns `chunks - 1` and wraps the
//!    counter back to 0, ready for the next product) acquired the other slots by that same
//!    increment, shares that over the warp with `bar.warp.sync`, and sums the row's slots in a fixed
//!    order (lane `l` takes slots `l, l + 32, ...`, then the butterfly), so the result does not
//!    depend on which warp came last; it writes `y = alpha * sum + beta * y`.
//!
//! The chunk path lives in `long_rows.rs`, shared with the balanced kernel.
//!
//! One launch per product, no allocation and no host synchronisation: the slots and counters belong to
//! the matrix, and products on one matrix are ordered by its `Gpu`'s single stream.

use super::long_rows::{Stepwise, long_row_chunk};
use super::{entry_product, row_range};
use crate::abi::{CsrParamParams, WARP_SIZE};
use crate::arch::{block_dim, block_idx, thread_idx};
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

/// # Safety
/// `p` describes a validated CSR matrix, vectors of matching lengths and the matrix's long-row split
/// (or none); the block size is a multiple of 32 and the grid has `row_blocks` blocks plus enough
/// blocks for one warp per chunk.
#[inline(always)]
unsafe fn csr_param<T: Real, const COOP: u32>(p: CsrParamParams<T>) {
    let block = block_idx();
    // SAFETY: forwarded from the caller.
    unsafe {
        if block < p.row_blocks {
            row_tiles::<T, COOP>(&p, block);
        } else {
            let warps = block_dim() / WARP_SIZE;
            let chunk = (block - p.row_blocks) as u64 * warps as u64 + (thread_idx() / WARP_SIZE) as u64;
            if chunk < p.long.chunks as u64 {
                long_row_chunk::<T, Stepwise>(&p.a, &p.op, &p.long, chunk as usize);
            }
        }
    }
}

/// The tiles of block `block`: every row that is not long.
///
/// # Safety
/// As [`csr_param`].
#[inline(always)]
unsafe fn row_tiles<T: Real, const COOP: u32>(p: &CsrParamParams<T>, block: u32) {
    let rows = p.a.rows as u64;
    let groups = (block_dim() / COOP) as u64;
    let tile_rows = groups * p.repeat as u64;
    let tiles = rows.div_ceil(tile_rows);
    let (group, lane) = ((thread_idx() / COOP) as u64, thread_idx() % COOP);
    let mut tile = block as u64;
    while tile < tiles {
        let mut first = tile * tile_rows;
        let tile_end = first + tile_rows;
        while first < tile_end && first < rows {
            let row = first + group;
            let mut sum = T::ZERO;
            let mut mine = false;
            if row < rows {
                // SAFETY: `row < rows`; entries and columns are in range (host validation).
                unsafe {
                    let (start, end) = row_range(&p.a, row as usize);
                    // A row has at most nnz <= u32::MAX entries.
                    mine = !p.long.is_long((end - start) as u32);
                    if mine {
                        let mut k = start + lane as usize;
                        while k < end {
                            sum = entry_product::<T, COOP>(&p.a, p.op.x.as_ptr(), k, sum);
                            k += COOP as usize;
                        }
                    }
                }
            }
            let total = group_sum::<T, COOP>(sum);
            if mine && lane == 0 {
                // SAFETY: `row < rows`, written by lane 0 of its group only.
                unsafe { store_axpby(p.op.y.as_mut_ptr(), row as usize, p.op.alpha, total, p.op.beta) };
            }
            first += groups;
        }
        tile += p.row_blocks as u64;
    }
}

crate::ptx_entry!(spmv_csr_param_c1_f32, CsrParamParams<f32>, csr_param::<f32, 1>);
crate::ptx_entry!(spmv_csr_param_c2_f32, CsrParamParams<f32>, csr_param::<f32, 2>);
crate::ptx_entry!(spmv_csr_param_c4_f32, CsrParamParams<f32>, csr_param::<f32, 4>);
crate::ptx_entry!(spmv_csr_param_c8_f32, CsrParamParams<f32>, csr_param::<f32, 8>);
crate::ptx_entry!(spmv_csr_param_c16_f32, CsrParamParams<f32>, csr_param::<f32, 16>);
crate::ptx_entry!(spmv_csr_param_c32_f32, CsrParamParams<f32>, csr_param::<f32, 32>);
crate::ptx_entry!(spmv_csr_param_c1_f64, CsrParamParams<f64>, csr_param::<f64, 1>);
crate::ptx_entry!(spmv_csr_param_c2_f64, CsrParamParams<f64>, csr_param::<f64, 2>);
crate::ptx_entry!(spmv_csr_param_c4_f64, CsrParamParams<f64>, csr_param::<f64, 4>);
crate::ptx_entry!(spmv_csr_param_c8_f64, CsrParamParams<f64>, csr_param::<f64, 8>);
crate::ptx_entry!(spmv_csr_param_c16_f64, CsrParamParams<f64>, csr_param::<f64, 16>);
crate::ptx_entry!(spmv_csr_param_c32_f64, CsrParamParams<f64>, csr_param::<f64, 32>);
