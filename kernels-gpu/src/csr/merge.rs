//! CSR merge path: Merrill & Garland, "Merge-based Parallel Sparse Matrix-Vector Multiplication",
//! SC16, section 4. A product is a merge of two sorted lists, the row ends `row_offsets[1..]` and
//! the entry indices `0 .. nnz`: consuming an entry adds its product to the running sum, consuming a
//! row end writes the row. Cutting the merged list into equal pieces gives every warp the same
//! work, however the entries fall into rows: empty rows cost an item each, a row of a million
//! entries is spread over thousands of warps, and no row-length statistic has to be right.
//!
//! The host finds where each tile of [`MERGE_TILE`] items starts (the paper's diagonal search, done
//! once per matrix when the kernel is first planned: the coordinates depend on the pattern alone),
//! and which rows cross tiles. A warp takes one tile:
//! 1. it stages the tile's products (coalesced loads, as in the balanced kernel's spans) and the row
//!    ends of its rows in its slice of shared memory;
//! 2. lane `l` takes items `8 l .. 8 l + 8` of the tile: a binary search of the staged row ends on its
//!    first diagonal (section 4.2) gives its row and entry, then it walks its items in order;
//! 3. the rows a lane both starts and ends are written at once; the lane's first row end completes a
//!    row that earlier lanes may have added to: their parts are an exclusive segmented scan of the
//!    lanes' running sums, keyed by the row each lane ends in (the paper's "carry-out" fix-up within
//!    a block);
//! 4. a row crossing tiles (a *split* row) is not written by the main launch: each tile leaves its
//!    part in a slot, and the fix-up launch, a block per split row, adds the slots in a fixed order.
//!    The host sizes its blocks by the longest run of slots
//!    ([`merge_fixup_warps`](crate::abi::merge_fixup_warps)), so a row of millions of entries,
//!    thousands of slots, is summed by hundreds of threads rather than one warp's 32.
//!
//! Deterministic: every sum adds in an order fixed by the matrix's pattern. No atomics, no waiting
//! on other warps, one extra launch (skipped when no row crosses a tile).

use super::span_loads;
use super::warp_scan::{Words, segmented_scan};
use crate::abi::{CsrMergeParams, MERGE_ITEMS_PER_LANE, MERGE_TILE, WARP_SIZE};
use crate::arch::{
    Load, ballot, block_dim, block_idx, dynamic_shared, shfl_up_b32, sync_threads, sync_warp, thread_idx,
};
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

const TILE: usize = MERGE_TILE as usize;
const ITEMS: usize = MERGE_ITEMS_PER_LANE as usize;
const WARP: usize = WARP_SIZE as usize;

/// # Safety
/// `p` describes a validated CSR matrix with at least one row, vectors of matching lengths, and the
/// tiles and split rows the host built for the matrix as [`CsrMergeParams`] says; the block size is a
/// multiple of 32 and the launch has `MERGE_TILE * (size_of::<T>() + 4)` bytes of dynamic shared
/// memory per warp; the grid has a warp for each tile.
#[inline(always)]
unsafe fn csr_merge<T: Words>(p: CsrMergeParams<T>) {
    let warps = (block_dim() / WARP_SIZE) as usize;
    let warp = (thread_idx() / WARP_SIZE) as usize;
    let lane = (thread_idx() % WARP_SIZE) as usize;
    let tile = block_idx() as usize * warps + warp;
    if tile >= p.tiles as usize {
        return;
    }
    // SAFETY: the block's shared memory holds `warps * TILE` elements of `T`, then `warps * TILE`
    // row ends (the launch's contract); each warp takes its own slice of both.
    unsafe {
        let shared = dynamic_shared::<T>();
        let products = shared.add(warp * TILE);
        let ends = shared.add(warps * TILE).cast::<u32>().add(warp * TILE);
        merge_tile(&p, tile, lane, products, ends);
    }
}

/// Tile `tile`, by the calling warp, staged in `products` and `ends`.
///
/// # Safety
/// As [`csr_merge`], `tile < p.tiles`, and `products` and `ends` hold [`MERGE_TILE`] elements each
/// that no other warp uses; the whole warp calls it.
#[inline(always)]
unsafe fn merge_tile<T: Words>(
    p: &CsrMergeParams<T>,
    tile: usize,
    lane: usize,
    products: *mut T,
    ends: *mut u32,
) {
    let offsets = p.a.row_offsets.as_ptr();
    let rows = p.a.rows as usize;
    let items = rows + p.nnz as usize;
    // SAFETY: `tile + 1 <= tiles`; `tile_rows` has `tiles + 1` elements, each on the merge path
    // (`row_offsets[i] <= d - i <= row_offsets[i + 1]` at diagonal `d` and row `i`), so the tile's
    // entries `j0 .. j1` are below nnz and its rows `i0 ..= i1` at most `rows`.
    unsafe {
        let (d0, d1) = (tile * TILE, items.min((tile + 1) * TILE));
        let i0 = u32::load_nc(p.tile_rows.as_ptr().add(tile)) as usize;
        let i1 = u32::load_nc(p.tile_rows.as_ptr().add(tile + 1)) as usize;
        let (j0, j1) = (d0 - i0, d1 - i1);

        // 1. Stage the products of entries `j0 .. j1` (at most a tile) at `products[j - j0]`, and the
        // ends of rows `i0 ..= i1` that exist at `ends[i - i0]`. The walk reads a row's end only while
        // it has an item left, so at `i < i1`, or at `i1` when the tile holds an entry, that is, when
        // at most `TILE - 1` rows end in it: every end it reads is staged.
        if j0 < j1 {
            let (vals, xs) = span_loads::<T, ITEMS>(&p.a, p.op.x.as_ptr(), j0, j1, lane);
            for k in 0..ITEMS {
                let e = lane + k * WARP;
                if j0 + e < j1 {
                    *products.add(e) = vals[k] * xs[k];
                }
            }
        }
        let last_row = i1.min(rows - 1);
        for k in 0..ITEMS {
            let q = lane + k * WARP;
            if i0 + q <= last_row {
                *ends.add(q) = u32::load_nc(offsets.add(i0 + q + 1));
            }
        }
        sync_warp();

        // 2. The lane's first diagonal and its coordinate: the first row `i` whose end is not
        // consumed before it, `row_offsets[i + 1] > d - i - 1` (section 4.2's search, within the tile's
        // corners).
        let d = d1.min(d0 + lane * ITEMS);
        let end = d1.min(d + ITEMS);
        let (mut lo, mut hi) = (i0.max(d.saturating_sub(j1)), i1.min(d - j0));
        while lo < hi {
            let mid = (lo + hi) / 2;
            if *ends.add(mid - i0) as usize + mid < d {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let start_row = lo;
        let (mut i, mut j) = (lo, d - lo);
        let mut sum = T::ZERO;
        // The sum of the lane's first row end, which earlier lanes may have added to.
        let mut first = None;
        for k in 0..ITEMS {
            if d + k < end {
                if j < *ends.add(i - i0) as usize {
                    sum = sum + *products.add(j - j0);
                    j += 1;
                } else {
                    if first.is_some() {
                        // A row this lane started: whole, and the lane's alone.
                        store_axpby(p.op.y.as_mut_ptr(), i, p.op.alpha, sum, p.op.beta);
                    } else {
                        first = Some(sum);
                    }
                    sum = T::ZERO;
                    i += 1;
                }
            }
        }

        // 3. The lanes' running sums, summed within the runs of lanes that end in the same row: lane
        // `l - 1` ends in the row lane `l` starts in, so its scan is what lanes before `l` added to it.
        // `i <= rows <= u32::MAX`.
        let end_row = i as u32;
        // Shuffled by every lane before the test: a shuffle must see the whole warp.
        let previous = shfl_up_b32(end_row, 1);
        let head = lane == 0 || previous != end_row;
        let scan = segmented_scan(sum, ballot(head), lane as u32);
        let before = scan.shuffle(|w| shfl_up_b32(w, 1));
        if let Some(own) = first {
            let total = if lane == 0 { own } else { before + own };
            // Row `i0` started in an earlier tile when it has entries before `j0`.
            if start_row == i0 && tile > 0 && (u32::load_nc(offsets.add(i0)) as usize) < j0 {
                *p.heads.as_mut_ptr().add(tile) = total;
            } else {
                store_axpby(p.op.y.as_mut_ptr(), start_row, p.op.alpha, total, p.op.beta);
            }
        }
        // 4. Lane 31 ends where the tile does, in row `i1`: its scan is the tile's part of that row,
        // which goes on into the next tile when the row exists and has entries in this one.
        if lane == WARP - 1 && i1 < rows && (u32::load_nc(offsets.add(i1)) as usize) < j1 {
            *p.carries.as_mut_ptr().add(tile) = scan;
        }
    }
}

/// The split rows, a block each: the row's carries in tile order (thread `i` of `n` sums carries
/// `i, i + n, ...`, eight loads in flight; the warps' sums then added in warp order), then its head.
///
/// # Safety
/// As [`csr_merge`], run after it on the same operands; the grid has a block per split row, whose
/// size is a multiple of 32 with one `T` of dynamic shared memory per warp.
#[inline(always)]
unsafe fn csr_merge_fixup<T: Real>(p: CsrMergeParams<T>) {
    let split = block_idx() as usize;
    if split >= p.splits as usize {
        return;
    }
    let (threads, tid) = (block_dim() as usize, thread_idx() as usize);
    let (warp, lane) = (tid / WARP, tid % WARP);
    // SAFETY: `split < splits` (block-uniform, so every thread reaches the barrier); the host built
    // the split arrays for this matrix's tiles, each split row with at least one carry
    // (`first < last`) and every slot below `tiles`; the main launch wrote those slots before this
    // launch began; shared memory holds a `T` per warp.
    unsafe {
        let row = u32::load_nc(p.split_rows.as_ptr().add(split)) as usize;
        let first = u32::load_nc(p.split_first.as_ptr().add(split)) as usize;
        let last = u32::load_nc(p.split_last.as_ptr().add(split)) as usize;
        let mut sum = T::ZERO;
        let mut base = first + tid;
        while base < last {
            let mut got = [T::ZERO; ITEMS];
            for (j, v) in got.iter_mut().enumerate() {
                // Clamped, so that all loads are unconditional; the extra values are dropped below.
                *v = T::load_nc(p.carries.as_ptr().add((base + j * threads).min(last - 1)));
            }
            for (j, &v) in got.iter().enumerate() {
                let next = sum + v;
                sum = if base + j * threads < last { next } else { sum };
            }
            base += ITEMS * threads;
        }
        let warp_sum = group_sum::<T, WARP_SIZE>(sum);
        let shared = dynamic_shared::<T>();
        if lane == 0 {
            *shared.add(warp) = warp_sum;
        }
        sync_threads();
        if tid == 0 {
            let mut total = T::ZERO;
            for w in 0..threads / WARP {
                total = total + *shared.add(w);
            }
            let total = total + T::load_nc(p.heads.as_ptr().add(last));
            store_axpby(p.op.y.as_mut_ptr(), row, p.op.alpha, total, p.op.beta);
        }
    }
}

crate::ptx_entry!(spmv_csr_merge_f32, CsrMergeParams<f32>, csr_merge::<f32>);
crate::ptx_entry!(spmv_csr_merge_f64, CsrMergeParams<f64>, csr_merge::<f64>);
crate::ptx_entry!(spmv_csr_merge_fixup_f32, CsrMergeParams<f32>, csr_merge_fixup::<f32>);
crate::ptx_entry!(spmv_csr_merge_fixup_f64, CsrMergeParams<f64>, csr_merge_fixup::<f64>);
