//! SpMM, `Y = alpha * A * X + beta * Y` for a CSR matrix `A` and dense `X`, `Y` of `k` columns: each
//! entry of `A` is read once for many columns of `X`, where `k` products would read it `k` times.
//! Ours, after the two mappings of Yang, Buluç & Owens ("Design principles for sparse matrix
//! multiplication on the GPU", Euro-Par 2018, section 4): row splitting with lanes over the columns
//! of a row-major `X`, and a group over a row's entries for a column-major one.
//!
//! - `spmm_csr_rm_w<W>_*` (row-major `X` and `Y`): a group of `LANES = min(W, 32)` consecutive
//!   threads per row of `A`, lane `l` owning columns `l, l + LANES, ...` of a panel of `W` columns
//!   (`PER_LANE = W / LANES` of them). The group walks the row once per panel; at each entry every
//!   lane reads the same column index and value (one broadcast load) and its columns of that row of
//!   `X`, contiguous across the group, so the reads of `X` and the writes of `Y` are coalesced. A
//!   lane sums alone: no reduction, no convergence requirement. Grid stride over rows. The entries
//!   are read a few at a time, their gathers in flight together ([`panel_sums`]): a row of 6
//!   entries is two round trips rather than six.
//! - `spmm_csr_cm_c<COOP>_*` (column-major `X` and `Y`): `COOP` lanes per row as in the CSR vector
//!   kernel (`index::coop_slot`), each lane keeping [`SPMM_COL_PANEL`] sums, one per column of the
//!   panel: the lanes stride through the row's entries, and each entry's value multiplies the
//!   panel's 8 gathers of `X` at its column. The group then adds its lanes' sums with shuffles, and
//!   lane `l` writes columns `l, l + COOP, ...` of the panel: across the groups of a warp, rows are
//!   consecutive, so each column's writes are contiguous. Rows go to warps in order with a
//!   warp-uniform bound, so every lane reaches the shuffles.
//!
//! Both walk the panels of a row before the next row: the passes after the first read the row's
//! entries from L1, so `A` crosses DRAM once for all `k` columns.
//!
//! Long rows: a group walks its row's entries one after the other, so a row of 100 k entries among
//! rows of 6 would be the whole product's critical path (and a warp of groups waits for its longest
//! row). When the plan splits them, the rows of at least `long.min_len` entries are skipped by the
//! groups and cut into [`LONG_ROW_CHUNK`](crate::abi::LONG_ROW_CHUNK)-entry chunks (the CSR
//! product's split, `csr/param.rs`), one warp each, in the first `chunk_blocks` blocks of the same
//! launch: the warp's lanes are spread over the columns of a panel as the kernel's groups are (all
//! 32 on one column panel of the row-major `X` for `w >= 32`; `32 / w` entry lanes of `w` column lanes
//! each below that; one entry lane per lane with the column panel in registers for the column-major
//! `X`), their sums added over the entry lanes by shuffles and written to the plan's `partials`, one
//! per chunk and column. A second
//! launch, `spmm_long_rows_*`, gives each long row and column a warp that adds the row's partial
//! sums and writes `Y`: unlike the CSR split's last-warp-finishes scheme, the sums of a row of 11,000
//! chunks are then spread over `k` warps instead of left to one. Every sum is in a fixed order, so
//! the product is deterministic.
//!
//! `spmm_scale_*`: `Y = beta * Y` when `A * X` contributes nothing, one thread per element.

use crate::abi::{DenseScaleParams, SPMM_COL_PANEL, SpmmLongRowsParams, SpmmParams, WARP_SIZE};
use crate::arch::{Load, block_dim, block_idx, global_thread, grid_dim, grid_threads, thread_idx};
use crate::csr::long_rows::chunk_entries;
use crate::index::coop_slot;
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

const PANEL: usize = SPMM_COL_PANEL as usize;
const WARP: usize = WARP_SIZE as usize;

/// The entries of `row`, as [`crate::csr`]'s row walk reads them.
///
/// # Safety
/// `row < p.a.rows`.
#[inline(always)]
unsafe fn row_range<T>(p: &SpmmParams<T>, row: usize) -> (usize, usize) {
    let offsets = p.a.row_offsets.as_ptr();
    // SAFETY: `row + 1 <= rows`, and the offsets array has `rows + 1` elements.
    unsafe { (u32::load_nc(offsets.add(row)) as usize, u32::load_nc(offsets.add(row + 1)) as usize) }
}

/// Entry `e`'s column and value.
///
/// # Safety
/// `e < nnz`.
#[inline(always)]
unsafe fn entry<T: Real>(p: &SpmmParams<T>, e: usize) -> (usize, T) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        (u32::load_nc(p.a.col_indices.as_ptr().add(e)) as usize, T::load_nc(p.a.values.as_ptr().add(e)))
    }
}

/// This thread's index among the threads after the chunk blocks, and their count: the rows' part of
/// the grid.
#[inline(always)]
fn row_part<T>(p: &SpmmParams<T>) -> (u64, u64) {
    let threads = u64::from(block_dim());
    let thread = u64::from(block_idx() - p.chunk_blocks) * threads + u64::from(thread_idx());
    (thread, u64::from(grid_dim() - p.chunk_blocks) * threads)
}

/// Whether the row of entries `start .. end` is left to the chunk warps.
#[inline(always)]
fn is_long<T>(p: &SpmmParams<T>, start: usize, end: usize) -> bool {
    // A row has at most nnz <= u32::MAX entries.
    p.long.is_long((end - start) as u32)
}

/// # Safety
/// `p.a` is a validated CSR matrix; `X` holds `ncols` rows of `ldx >= k` elements and `Y` `rows`
/// rows of `ldy >= k`, row-major; `LANES` divides 32 and `PER_LANE >= 1`; the block size is a
/// multiple of 32; `p.long` is the matrix's long-row split with room for `k` partial sums per chunk,
/// and the grid has `chunk_blocks` blocks, a warp for each chunk, then at least one.
#[inline(always)]
unsafe fn spmm_row_major<T: Real, const LANES: u32, const PER_LANE: usize>(p: SpmmParams<T>) {
    if block_idx() < p.chunk_blocks {
        // SAFETY: forwarded from the caller; element `(r, c)` of `X` is at `r * ldx + c`.
        return unsafe { long_row_chunk::<T, LANES, PER_LANE>(&p, (p.op.ldx as usize, 1)) };
    }
    let width = LANES as usize * PER_LANE;
    let (thread, threads) = row_part(&p);
    let lane = (thread % u64::from(LANES)) as usize;
    let (mut row, stride) = (thread / u64::from(LANES), threads / u64::from(LANES));
    let (k, ldx, ldy) = (p.op.k as usize, p.op.ldx as usize, p.op.ldy as usize);
    let y = p.op.y.as_mut_ptr();
    while row < u64::from(p.a.rows) {
        let r = row as usize;
        // SAFETY: `r < rows`.
        let (start, end) = unsafe { row_range(&p, r) };
        // A long row's sums are the chunk warps', and its `Y` the second launch's.
        if is_long(&p, start, end) {
            row += stride;
            continue;
        }
        let mut first = 0;
        while first < k {
            // SAFETY: forwarded from the caller; element `(r, c)` of `X` is at `r * ldx + c`.
            let sums =
                unsafe { panel_sums::<T, LANES, PER_LANE>(&p, (ldx, 1), (start, end, 1), first + lane) };
            for (j, &sum) in sums.iter().enumerate() {
                let c = first + lane + LANES as usize * j;
                if c < k {
                    // SAFETY: `r < rows` and `c < k <= ldy`: inside `Y`; element `(r, c)` is this
                    // lane's alone.
                    unsafe { store_axpby(y, r * ldy + c, p.op.alpha, sum, p.op.beta) };
                }
            }
            first += width;
        }
        row += stride;
    }
}

/// # Safety
/// `p.a` is a validated CSR matrix; `X` holds `k` columns of `ldx >= ncols` elements and `Y` `k`
/// columns of `ldy >= rows`, column-major; the block size is a multiple of 32; `p.long` and the grid
/// as for [`spmm_row_major`].
#[inline(always)]
unsafe fn spmm_col_major<T: Real, const COOP: u32>(p: SpmmParams<T>) {
    if block_idx() < p.chunk_blocks {
        // SAFETY: forwarded from the caller; element `(r, c)` of `X` is at `c * ldx + r`.
        return unsafe { long_row_chunk::<T, 1, PANEL>(&p, (1, p.op.ldx as usize)) };
    }
    let (thread, threads) = row_part(&p);
    let slot = coop_slot(thread, threads, COOP);
    let rows = u64::from(p.a.rows);
    let (k, ldx, ldy) = (p.op.k as usize, p.op.ldx as usize, p.op.ldy as usize);
    let (x, y) = (p.op.x.as_ptr(), p.op.y.as_mut_ptr());
    let lane = slot.lane as usize;
    let mut warp_row = slot.warp_first_row;
    // Both bounds are the warp's (rows dealt warp by warp, `k` the grid's): every lane reaches the
    // shuffles.
    while warp_row < rows {
        let row = warp_row + u64::from(slot.group_in_warp);
        let r = row as usize;
        let (start, end) = if row < rows {
            // SAFETY: `r < rows`.
            unsafe { row_range(&p, r) }
        } else {
            (0, 0)
        };
        // A long row's sums are the chunk warps', and its `Y` the second launch's: its group walks
        // no entries (the warp still reaches the shuffles) and writes nothing.
        let mine = row < rows && !is_long(&p, start, end);
        let (start, end) = if mine { (start, end) } else { (0, 0) };
        let mut first = 0;
        while first < k {
            let mut sums = [T::ZERO; PANEL];
            let mut e = start + lane;
            while e < end {
                // SAFETY: `e < end <= nnz`; the column is below `ncols <= ldx`, and column
                // `first + c < k` of `X` is inside it.
                unsafe {
                    let (col, value) = entry(&p, e);
                    for (c, sum) in sums.iter_mut().enumerate() {
                        if first + c < k {
                            *sum = value.fma(T::load_nc(x.add((first + c) * ldx + col)), *sum);
                        }
                    }
                }
                e += COOP as usize;
            }
            // The butterfly of `reduce::group_sum` over all the panel's sums at each step: the array
            // is indexed by constants only, so it stays in registers (a loop of `group_sum` calls,
            // left rolled by LLVM, indexes it at run time and puts it in local memory in f64).
            let mut offset = COOP / 2;
            while offset > 0 {
                for sum in &mut sums {
                    *sum = *sum + sum.shfl_xor(offset);
                }
                offset /= 2;
            }
            for (c, &sum) in sums.iter().enumerate() {
                if mine && c % COOP as usize == lane && first + c < k {
                    // SAFETY: `r < rows <= ldy` and `first + c < k`: inside `Y`; element
                    // `(r, first + c)` is this lane's alone.
                    unsafe { store_axpby(y, (first + c) * ldy + r, p.op.alpha, sum, p.op.beta) };
                }
            }
            first += PANEL;
        }
        warp_row += slot.row_stride;
    }
}

/// Entries a lane reads before their gathers in [`panel_sums`], for one column per lane: its gathers
/// of `X` in flight. Divided by the columns per lane (down to 1), so that a lane keeps about as many
/// registers whatever its panel.
const ENTRY_BATCH: usize = 4;

/// A lane's sums of one panel: the products of entries `first, first + step, ...` below `to` with
/// the elements of `X` at their columns and at columns `col, col + LANES, ...` (`PER_LANE` of
/// them), element `(r, c)` of `X` at `r * strides.0 + c * strides.1`. The entries are added in that
/// order, so the sums do not depend on timing. Sums of columns at or past `k` are of no use: the
/// caller drops them.
///
/// A batch of the lane's entries at once (indices past `to` clamped to `to - 1`, their products
/// dropped): their columns and values, then every gather, loaded and multiplied unconditionally
/// (a column past `k` clamped to `k - 1`) and then selected, so that a lane has `batch * PER_LANE`
/// gathers in flight; a load under a branch would wait for the products before it.
///
/// # Safety
/// `p.a` is a validated CSR matrix, `to <= nnz`, `k >= 1`, and `X` holds `(r, c)` there for every
/// `r < ncols` and `c < k`.
#[inline(always)]
unsafe fn panel_sums<T: Real, const LANES: u32, const PER_LANE: usize>(
    p: &SpmmParams<T>,
    (row_stride, col_stride): (usize, usize),
    (first, to, step): (usize, usize, usize),
    col: usize,
) -> [T; PER_LANE] {
    let (x, k) = (p.op.x.as_ptr(), p.op.k as usize);
    let batch = (ENTRY_BATCH / PER_LANE).max(1);
    let mut sums = [T::ZERO; PER_LANE];
    let mut e = first;
    while e < to {
        let mut cols = [0usize; ENTRY_BATCH];
        let mut vals = [T::ZERO; ENTRY_BATCH];
        for i in 0..ENTRY_BATCH {
            if i < batch {
                // SAFETY: the index is below `to <= nnz`.
                (cols[i], vals[i]) = unsafe { entry(p, (e + i * step).min(to - 1)) };
            }
        }
        for i in 0..ENTRY_BATCH {
            if i >= batch {
                continue;
            }
            for (j, sum) in sums.iter_mut().enumerate() {
                let c = (col + LANES as usize * j).min(k - 1);
                // SAFETY: the column is below `ncols`, and `c < k`: inside `X`.
                let xv = unsafe { T::load_nc(x.add(cols[i] * row_stride + c * col_stride)) };
                let next = vals[i].fma(xv, *sum);
                *sum = if e + i * step < to { next } else { *sum };
            }
        }
        e += batch * step;
    }
    sums
}

/// The calling warp's chunk of a long row (the `chunk_blocks` blocks' warps in order), if there is
/// one: its products summed for every column of `X`, `LANES` lanes over the `PER_LANE` columns of a
/// panel each and `32 / LANES` over the entries, and written to `p.long.partials`. Element `(r, c)`
/// of `X` is at `r * strides.0 + c * strides.1`.
///
/// # Safety
/// As the kernel that calls it, and `X` holds `(r, c)` there for every `r < ncols` and `c < k`.
#[inline(always)]
unsafe fn long_row_chunk<T: Real, const LANES: u32, const PER_LANE: usize>(
    p: &SpmmParams<T>,
    strides: (usize, usize),
) {
    let long = &p.long;
    let warps = (block_dim() / WARP_SIZE) as usize;
    let chunk = block_idx() as usize * warps + (thread_idx() / WARP_SIZE) as usize;
    if chunk >= long.chunks as usize {
        return;
    }
    let lane = (thread_idx() % WARP_SIZE) as usize;
    let (col_lane, entry_lane) = (lane % LANES as usize, lane / LANES as usize);
    let entry_lanes = WARP / LANES as usize;
    let (k, chunks) = (p.op.k as usize, long.chunks as usize);
    // SAFETY: `chunk < chunks`; the host built `chunk_entries` inside the entries of the chunk's long
    // row.
    let (from, to) = unsafe { chunk_entries(long.chunk_entries, chunk) };
    let mut panel = 0;
    while panel < k {
        // SAFETY: forwarded from the caller.
        let mut sums = unsafe {
            panel_sums::<T, LANES, PER_LANE>(
                p,
                strides,
                (from + entry_lane, to, entry_lanes),
                panel + col_lane,
            )
        };
        // The entry lanes of each column lane are `LANES` apart: a butterfly over those offsets, each
        // step over the whole panel (constant indices keep `sums` in registers, as in
        // `spmm_col_major`).
        let mut offset = WARP_SIZE / 2;
        while offset >= LANES {
            for sum in &mut sums {
                *sum = *sum + sum.shfl_xor(offset);
            }
            offset /= 2;
        }
        if entry_lane == 0 {
            for (j, &sum) in sums.iter().enumerate() {
                let c = panel + col_lane + LANES as usize * j;
                if c < k {
                    // SAFETY: the plan sized `partials` to `k * chunks`; slot `(c, chunk)` is this
                    // lane's alone.
                    unsafe { long.partials.as_mut_ptr().add(c * chunks + chunk).write(sum) };
                }
            }
        }
        panel += LANES as usize * PER_LANE;
    }
}

/// Partial sums a lane loads before adding any, in [`long_rows`]: a row of 2.9 M entries has 11,400
/// chunks, 360 per lane, which one load at a time would make a chain of 360 L2 round trips.
const BATCH: usize = 16;

/// `spmm_long_rows_*`: for each long row and column of `Y`, a warp adds the row's partial sums of
/// that column (lane `l` the chunks `l, l + 32, ...` in order, `BATCH` loads in flight, then a
/// butterfly) and writes the element of `Y`.
///
/// # Safety
/// `p.long` is a matrix's long-row split whose `partials` the launch of [`SpmmParams`] before this
/// one filled for `k` columns; `Y` holds `rows x k` elements in the layout `p.row_major` names with
/// its `ldy`; the block size is a multiple of 32.
#[inline(always)]
unsafe fn long_rows<T: Real>(p: SpmmLongRowsParams<T>) {
    let (long, k) = (&p.long, u64::from(p.op.k));
    let lane = (thread_idx() % WARP_SIZE) as usize;
    let (mut warp, stride) = (global_thread() / WARP as u64, grid_threads() / WARP as u64);
    // The bound is the warp's: every lane reaches the butterfly.
    while warp < u64::from(long.count) * k {
        let (j, c) = ((warp / k) as usize, (warp % k) as usize);
        // SAFETY: `j < count`, `first_chunk` has `count + 1` elements and `rows` `count`; the slots
        // `c * chunks + first .. c * chunks + end` lie inside the `k * chunks` partial sums.
        unsafe {
            let row = u32::load_nc(long.rows.as_ptr().add(j)) as usize;
            let first = u32::load_nc(long.first_chunk.as_ptr().add(j)) as usize;
            let end = u32::load_nc(long.first_chunk.as_ptr().add(j + 1)) as usize;
            let slots = long.partials.as_ptr().add(c * long.chunks as usize);
            let mut sum = T::ZERO;
            let mut base = first;
            while base < end {
                let mut got = [T::ZERO; BATCH];
                for (i, v) in got.iter_mut().enumerate() {
                    // Clamped, so that all loads are unconditional; the extra values are dropped.
                    *v = T::load_nc(slots.add((base + lane + i * WARP).min(end - 1)));
                }
                for (i, &v) in got.iter().enumerate() {
                    let next = sum + v;
                    sum = if base + lane + i * WARP < end { next } else { sum };
                }
                base += BATCH * WARP;
            }
            let total = group_sum::<T, WARP_SIZE>(sum);
            if lane == 0 {
                let (ldy, r) = (p.op.ldy as usize, row);
                let at = if p.row_major != 0 { r * ldy + c } else { c * ldy + r };
                // SAFETY: `r < rows` and `c < k`: inside `Y`, this warp's element alone.
                store_axpby(p.op.y.as_mut_ptr(), at, p.op.alpha, total, p.op.beta);
            }
        }
        warp += stride;
    }
}

/// # Safety
/// `p.y` holds `p.outer` runs of `p.inner` elements, `p.ld >= inner` apart.
#[inline(always)]
unsafe fn dense_scale<T: Real>(p: DenseScaleParams<T>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    let (inner, ld) = (u64::from(p.inner), p.ld as usize);
    while i < inner * u64::from(p.outer) {
        let (outer, at) = ((i / inner) as usize, (i % inner) as usize);
        // SAFETY: `outer < p.outer` and `at < inner <= ld`; each element belongs to one thread.
        unsafe { store_axpby(p.y.as_mut_ptr(), outer * ld + at, T::ZERO, T::ZERO, p.beta) };
        i += stride;
    }
}

const _: () = assert!(WARP_SIZE == 32, "the row-major widths below assume 32 lanes per warp");

crate::ptx_entry!(spmm_csr_rm_w4_f32, SpmmParams<f32>, spmm_row_major::<f32, 4, 1>);
crate::ptx_entry!(spmm_csr_rm_w8_f32, SpmmParams<f32>, spmm_row_major::<f32, 8, 1>);
crate::ptx_entry!(spmm_csr_rm_w16_f32, SpmmParams<f32>, spmm_row_major::<f32, 16, 1>);
crate::ptx_entry!(spmm_csr_rm_w32_f32, SpmmParams<f32>, spmm_row_major::<f32, 32, 1>);
crate::ptx_entry!(spmm_csr_rm_w64_f32, SpmmParams<f32>, spmm_row_major::<f32, 32, 2>);
crate::ptx_entry!(spmm_csr_rm_w4_f64, SpmmParams<f64>, spmm_row_major::<f64, 4, 1>);
crate::ptx_entry!(spmm_csr_rm_w8_f64, SpmmParams<f64>, spmm_row_major::<f64, 8, 1>);
crate::ptx_entry!(spmm_csr_rm_w16_f64, SpmmParams<f64>, spmm_row_major::<f64, 16, 1>);
crate::ptx_entry!(spmm_csr_rm_w32_f64, SpmmParams<f64>, spmm_row_major::<f64, 32, 1>);
crate::ptx_entry!(spmm_csr_rm_w64_f64, SpmmParams<f64>, spmm_row_major::<f64, 32, 2>);
crate::ptx_entry!(spmm_csr_cm_c1_f32, SpmmParams<f32>, spmm_col_major::<f32, 1>);
crate::ptx_entry!(spmm_csr_cm_c2_f32, SpmmParams<f32>, spmm_col_major::<f32, 2>);
crate::ptx_entry!(spmm_csr_cm_c4_f32, SpmmParams<f32>, spmm_col_major::<f32, 4>);
crate::ptx_entry!(spmm_csr_cm_c8_f32, SpmmParams<f32>, spmm_col_major::<f32, 8>);
crate::ptx_entry!(spmm_csr_cm_c16_f32, SpmmParams<f32>, spmm_col_major::<f32, 16>);
crate::ptx_entry!(spmm_csr_cm_c32_f32, SpmmParams<f32>, spmm_col_major::<f32, 32>);
crate::ptx_entry!(spmm_csr_cm_c1_f64, SpmmParams<f64>, spmm_col_major::<f64, 1>);
crate::ptx_entry!(spmm_csr_cm_c2_f64, SpmmParams<f64>, spmm_col_major::<f64, 2>);
crate::ptx_entry!(spmm_csr_cm_c4_f64, SpmmParams<f64>, spmm_col_major::<f64, 4>);
crate::ptx_entry!(spmm_csr_cm_c8_f64, SpmmParams<f64>, spmm_col_major::<f64, 8>);
crate::ptx_entry!(spmm_csr_cm_c16_f64, SpmmParams<f64>, spmm_col_major::<f64, 16>);
crate::ptx_entry!(spmm_csr_cm_c32_f64, SpmmParams<f64>, spmm_col_major::<f64, 32>);
crate::ptx_entry!(spmm_long_rows_f32, SpmmLongRowsParams<f32>, long_rows::<f32>);
crate::ptx_entry!(spmm_long_rows_f64, SpmmLongRowsParams<f64>, long_rows::<f64>);
crate::ptx_entry!(spmm_scale_f32, DenseScaleParams<f32>, dense_scale::<f32>);
crate::ptx_entry!(spmm_scale_f64, DenseScaleParams<f64>, dense_scale::<f64>);
