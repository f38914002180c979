//! CSR by column panels: `x` staged in shared memory a panel of columns at a time, so that a matrix
//! of few, long rows over a wide `x` gathers from shared memory instead of L2 (docs/PERF.md, section
//! 18, next step (d); the panels of Williams et al., "Optimization of sparse matrix-vector
//! multiplication on emerging multicore platforms", SC 2007, section 4.3, "cache blocking", done per
//! thread block).
//!
//! Why: on the suite's short-wide matrix (4,284 rows, 1.09 M columns, 2,600 entries a row) every
//! kernel of `csr/` gathers each `x[col]` as its own 32-byte sector from L2, since consecutive
//! entries of a row name scattered columns: 32 bytes moved for a 4-byte element, 4x the matrix's own
//! bytes. A panel of `x` copied once into a block's shared memory serves every row of the block.
//!
//! Launch (`CsrPanelsParams`): the `panels x groups` items (panel `b`, row group `g`), taken in
//! panel-major order (`b * groups + g`), are cut into as many contiguous ranges as there are blocks,
//! one each: block `i` takes items `i * items / blocks .. (i + 1) * items / blocks`. The host
//! launches about as many blocks as the GPU keeps resident at once and makes the row groups fine
//! (many items a block), so every block does the same share of the (panel, row) plane, whatever the
//! number of panels: no block waits on a last, partial wave. A block's range covers one panel's rows,
//! or the end of one panel's and the start of the next's; for each panel of its range, a block
//! 1. copies the panel, `x[b * panel_cols ..]`, into its dynamic shared memory: 16-byte loads when
//!    `x` is 16-byte aligned, [`CSR_PANELS_STAGE_LOADS`] in flight per thread, else one element at
//!    a time, as many in flight;
//! 2. deals the panel's rows of its range to groups of `COOP` lanes, a round of `32 x warps` rows at
//!    a time. Each warp reads its round's 32 rows' segments in the panel from the table with one
//!    load a lane (`table[b * rows + r] .. table[(b + 1) * rows + r]`, panel-major, built on the
//!    device from the sorted columns), then hands them to its groups by shuffles, `32 / COOP` rows
//!    at a time: no group waits on a table read of its own. A group sums
//!    `values[k] * panel[col[k] - b * panel_cols]`, lane `l` taking entries `l, l + COOP, ...` with
//!    [`CSR_PANELS_STEPS`] loads in flight, adds its lanes by a butterfly within the group and
//!    writes the row's partial sum for the panel;
//! 3. meets its threads at a barrier before the next panel overwrites the staged one.
//!
//! A second launch (`spmv_csr_panels_combine_*`) adds each row's partial sums in panel order, a warp
//! per row, and writes `y = alpha * sum + beta * y` (`y` unread when `beta == 0`). No atomics: every
//! sum is added in an order fixed by the plan, so two products give the same bits.
//!
//! A row whose columns decrease somewhere has no run of entries per panel. Its table (built by
//! [`csr_panel_table`], which checks every row) gives it no entries in any panel, and the second
//! launch sums the whole row itself, gathering `x` from global memory: correct for any CSR matrix,
//! slower only for such rows, and the plan needs no answer from the device.

use crate::abi::{
    CSR_PANELS_STAGE_LOADS, CSR_PANELS_STEPS, CsrArgs, CsrPanelTableParams, CsrPanelsParams, WARP_SIZE,
};
use crate::arch::{
    Load, block_dim, block_idx, dynamic_shared, global_thread, grid_dim, grid_threads, load_nc_v4_u32,
    shfl_idx_b32, shfl_xor_b32, sync_threads, thread_idx,
};
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

const STEPS: usize = CSR_PANELS_STEPS as usize;
const STAGE_LOADS: usize = CSR_PANELS_STAGE_LOADS as usize;
const WARP: usize = WARP_SIZE as usize;

/// A 16-byte unit of a panel, so that the store to shared memory is one `st.shared.v4`.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Unit([u32; 4]);

/// # Safety
/// `p` was built by the host for a CSR matrix whose table [`csr_panel_table`] built (so that every
/// segment it gives a row in a panel holds columns of that panel), vectors of matching lengths;
/// `panels >= 1` panels cover the `ncols` columns (`(panels - 1) * panel_cols < ncols` where
/// `ncols > 0`); `groups` is at most the row count, so that
/// `panels * groups <= rows * (panels + 1) <= u32::MAX`; the block is whole warps, with
/// `panel_cols` elements of `T` of dynamic shared memory. Any grid size.
#[inline(always)]
unsafe fn csr_panels<T: Real, const COOP: u32>(p: CsrPanelsParams<T>) {
    let q = &p.panels;
    // Declared as 16-byte units, so that the block's dynamic shared memory is 16-byte aligned for
    // the staging's vector stores.
    let panel = dynamic_shared::<Unit>().cast::<T>();
    let tid = thread_idx() as usize;
    let (warp, lane_in_warp) = (tid / WARP, tid % WARP);
    let coop = COOP as usize;
    let (groups_per_warp, group_in_warp, lane) = (WARP / coop, lane_in_warp / coop, lane_in_warp % coop);
    let block_groups = block_dim() as usize / WARP * groups_per_warp;
    // Rows a block takes per round: `coop` rows for each of its `block_groups` groups, 32 a warp.
    let round_rows = coop * block_groups;
    // The rows of this lane's table read in a round: iteration `lane_in_warp / groups_per_warp` of
    // group `lane_in_warp % groups_per_warp`.
    let my_offset = lane_in_warp / groups_per_warp * block_groups
        + warp * groups_per_warp
        + lane_in_warp % groups_per_warp;
    let (rows, panels, groups) = (p.a.rows as usize, q.panels as usize, q.groups);
    // No rows, no items (the host launches at least one panel).
    if groups == 0 || panels == 0 {
        return;
    }
    // At most `u32::MAX` items (safety contract): the range's bounds fit a u32, and the products
    // that find them a u64.
    let items = q.panels as u64 * groups as u64;
    let (block, blocks) = (block_idx() as u64, grid_dim() as u64);
    let mut item = (block * items / blocks) as u32;
    let end = ((block + 1) * items / blocks) as u32;
    // The loop bound and every barrier below are uniform across the block.
    while item < end {
        let b = item / groups;
        // `(b + 1) * groups <= items` for `b < panels`.
        let next = end.min((b + 1) * groups);
        let (g0, g1) = ((item - b * groups) as usize, (next - b * groups) as usize);
        let b = b as usize;
        let first_col = b * q.panel_cols as usize;
        let len = (q.ncols as usize - first_col).min(q.panel_cols as usize);
        // SAFETY: `first_col + len <= ncols`, the length of `x`; the panel holds `panel_cols >= len`
        // elements; the barrier at the end of the previous panel ordered its reads before these writes.
        unsafe { stage_panel(p.op.x.as_ptr().add(first_col), panel, len) };
        // SAFETY: reached by every thread of the block (uniform bound).
        unsafe { sync_threads() };
        // SAFETY: `g0 < g1 <= groups`, and `group_rows` has `groups + 1` ascending rows up to `rows`.
        let (row0, row1) = unsafe {
            let g = q.group_rows.as_ptr();
            (u32::load_nc(g.add(g0)) as usize, u32::load_nc(g.add(g1)) as usize)
        };
        // SAFETY: `b < panels`: panel `b`'s and `b + 1`'s table columns, `rows` entries each.
        let (starts, ends) = unsafe {
            let t = q.table.as_ptr().add(b * rows);
            (t, t.add(rows))
        };
        let mut round = row0;
        // Uniform across the block.
        while round < row1 {
            let mine = round + my_offset;
            let (mut from_mine, mut to_mine) = (0u32, 0u32);
            if mine < row1 {
                // SAFETY: `mine < rows`: inside both table columns.
                (from_mine, to_mine) =
                    unsafe { (u32::load_nc(starts.add(mine)), u32::load_nc(ends.add(mine))) };
            }
            let mut k = 0;
            // Uniform across the warp, so that every lane reaches the shuffles and the butterfly.
            while k < coop {
                let first = round + k * block_groups + warp * groups_per_warp;
                if first >= row1 {
                    break;
                }
                let src = (k * groups_per_warp + group_in_warp) as u32;
                let (from, to) = (shfl_idx_b32(from_mine, src) as usize, shfl_idx_b32(to_mine, src) as usize);
                let row = first + group_in_warp;
                // SAFETY: `from <= to <= nnz`, and every column of `from .. to` is in the panel (the
                // table's segment of `row` in panel `b`; an empty one, 0 .. 0, for a row past `row1`).
                let sum = unsafe { segment_sum::<T, COOP>(&p.a, panel, first_col, from, to, lane) };
                let total = group_sum::<T, COOP>(sum);
                if row < row1 && lane == 0 {
                    // SAFETY: `row < rows`, `b < panels`: the one slot of this (row, panel), written
                    // by lane 0 of the one group that took the row in the one block whose range holds
                    // the item of (panel `b`, the row's group).
                    unsafe { *q.partials.as_mut_ptr().add(row * panels + b) = total };
                }
                k += 1;
            }
            round += round_rows;
        }
        // SAFETY: as above; the next panel overwrites the staged one only after every read of it.
        unsafe { sync_threads() };
        item = next;
    }
}

/// Copies `len` elements of `x` from `src` into the block's panel, every thread of the block taking
/// its share: 16-byte units when `src` is 16-byte aligned (the panel is, as the start of the dynamic
/// shared memory), the rest one element at a time; each thread issues [`STAGE_LOADS`] loads before
/// its first store, clamped so that all loads are unconditional.
///
/// # Safety
/// `src .. src + len` is inside `x`, which no thread writes during the kernel; the panel holds at
/// least `len` elements, which no thread reads until the barrier after this call.
#[inline(always)]
unsafe fn stage_panel<T: Real>(src: *const T, panel: *mut T, len: usize) {
    let (tid, threads) = (thread_idx() as usize, block_dim() as usize);
    let per_unit = 16 / size_of::<T>();
    let units = if (src as usize).is_multiple_of(16) { len / per_unit } else { 0 };
    let (from, to) = (src.cast::<u32>(), panel.cast::<Unit>());
    let mut base = 0;
    while base < units {
        let mut got = [Unit([0; 4]); STAGE_LOADS];
        for (j, unit) in got.iter_mut().enumerate() {
            let u = (base + tid + j * threads).min(units - 1);
            // SAFETY: `u < units`: 16 bytes inside `src .. src + len`, 16-byte aligned.
            *unit = Unit(unsafe { load_nc_v4_u32(from.add(4 * u)) });
        }
        for (j, unit) in got.iter().enumerate() {
            let u = base + tid + j * threads;
            if u < units {
                // SAFETY: `u < units`: inside the panel's first `len` elements, 16-byte aligned.
                unsafe { *to.add(u) = *unit };
            }
        }
        base += STAGE_LOADS * threads;
    }
    let mut base = units * per_unit;
    while base < len {
        let mut got = [T::ZERO; STAGE_LOADS];
        for (j, v) in got.iter_mut().enumerate() {
            let i = (base + tid + j * threads).min(len - 1);
            // SAFETY: `i < len`.
            *v = unsafe { T::load_nc(src.add(i)) };
        }
        for (j, &v) in got.iter().enumerate() {
            let i = base + tid + j * threads;
            if i < len {
                // SAFETY: `i < len`, inside the panel.
                unsafe { *panel.add(i) = v };
            }
        }
        base += STAGE_LOADS * threads;
    }
}

/// A lane's sum of `values[k] * panel[col[k] - first_col]` over entries `from + lane + COOP j`
/// below `to`, in that order, [`STEPS`] loads of columns and values in flight before the first
/// product (indices clamped to `to - 1`, whose products are dropped).
///
/// # Safety
/// `from <= to <= nnz`; every column of entries `from .. to` is at least `first_col` and below
/// `first_col` plus the panel's staged length.
#[inline(always)]
unsafe fn segment_sum<T: Real, const COOP: u32>(
    a: &CsrArgs<T>,
    panel: *const T,
    first_col: usize,
    from: usize,
    to: usize,
    lane: usize,
) -> T {
    let coop = COOP as usize;
    let mut sum = T::ZERO;
    let mut base = from;
    while base < to {
        let mut cols = [0usize; STEPS];
        let mut vals = [T::ZERO; STEPS];
        for j in 0..STEPS {
            let k = (base + lane + j * coop).min(to - 1);
            // SAFETY: `from <= k < to <= nnz`.
            unsafe {
                cols[j] = u32::load_nc(a.col_indices.as_ptr().add(k)) as usize;
                vals[j] = T::load_nc(a.values.as_ptr().add(k));
            }
        }
        for j in 0..STEPS {
            // SAFETY: the column of an entry of the segment lies in the staged panel (caller).
            let next = vals[j].fma(unsafe { *panel.add(cols[j] - first_col) }, sum);
            sum = if base + lane + j * coop < to { next } else { sum };
        }
        base += STEPS * coop;
    }
    sum
}

/// `y = alpha * (sum of the row's partial sums, in panel order) + beta * y`, a warp per row (grid
/// stride): lane `l` adds panels `l, l + 32, ...`, [`STEPS`] loads in flight, then a butterfly. A
/// row whose columns decrease (its table's last entry is its start, not its end: see
/// [`csr_panel_table`]) has partial sums of zero, and the warp adds the whole row's products to them,
/// lane `l` taking entries `l, l + 32, ...` and gathering `x` from global memory.
///
/// # Safety
/// `p` is the parameter struct of the `spmv_csr_panels_c<coop>_*` launch that ran before on the
/// stream, which wrote every partial sum; `panels >= 1`; the block is whole warps.
#[inline(always)]
unsafe fn csr_panels_combine<T: Real>(p: CsrPanelsParams<T>) {
    let (rows, panels) = (p.a.rows as u64, p.panels.panels as usize);
    let lane = (thread_idx() as usize) % WARP;
    let mut row = global_thread() / WARP as u64;
    let stride = grid_threads() / WARP as u64;
    // Uniform across the warp.
    while row < rows {
        let r = row as usize;
        // SAFETY: `r < rows`: its `panels` sums are inside the scratch.
        let sums = unsafe { p.panels.partials.as_ptr().add(r * panels) };
        let mut sum = T::ZERO;
        let mut base = 0;
        while base < panels {
            let mut got = [T::ZERO; STEPS];
            for (j, v) in got.iter_mut().enumerate() {
                let b = (base + lane + j * WARP).min(panels - 1);
                // SAFETY: `b < panels`; written by the previous launch on the stream.
                *v = unsafe { T::load_nc(sums.add(b)) };
            }
            for (j, &v) in got.iter().enumerate() {
                let next = sum + v;
                sum = if base + lane + j * WARP < panels { next } else { sum };
            }
            base += STEPS * WARP;
        }
        let mut total = group_sum::<T, WARP_SIZE>(sum);
        // SAFETY: `r < rows`: the offsets have `rows + 1` elements, and the table's last column
        // (panel `panels`) `rows` entries.
        let (start, end, last) = unsafe {
            let offsets = p.a.row_offsets.as_ptr();
            let last = p.panels.table.as_ptr().add(panels * rows as usize + r);
            (u32::load_nc(offsets.add(r)), u32::load_nc(offsets.add(r + 1)), u32::load_nc(last))
        };
        // Uniform across the warp (every lane read the same words), so that every lane reaches the
        // butterfly.
        if last != end {
            let (mut k, end) = (start as usize + lane, end as usize);
            let mut whole = T::ZERO;
            while k < end {
                // SAFETY: `k < end <= nnz`, and the matrix's columns are below `ncols`, the length
                // of `x`.
                whole = unsafe {
                    let col = u32::load_nc(p.a.col_indices.as_ptr().add(k)) as usize;
                    T::load_nc(p.a.values.as_ptr().add(k)).fma(T::load_nc(p.op.x.as_ptr().add(col)), whole)
                };
                k += WARP;
            }
            total = total + group_sum::<T, WARP_SIZE>(whole);
        }
        if lane == 0 {
            // SAFETY: `r < rows`, written by lane 0 of this warp only.
            unsafe { store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, total, p.op.beta) };
        }
        row += stride;
    }
}

/// The panel table of a CSR matrix, panel-major (`table[b * rows + r]`), a warp per row (grid
/// stride): lane `l` writes the row's table entries `l, l + 32, ...` up to `panels`, entry `b` the
/// first entry of the row whose column is at least `b * panel_cols` (a binary search in the row's
/// columns; `panels * panel_cols >= ncols`, so entry `panels` is the row's end). Every lane first
/// checks that the row's columns do not decrease over its pairs `(k, k + 1)`, and the warp agrees by
/// a butterfly; a row whose columns decrease gets its start in every entry (no entries in any
/// panel, and a last entry that is not its end, which tells the combine to sum the row whole).
///
/// # Safety
/// `p` describes valid CSR row offsets and column indices of `rows` rows, and `table` holds
/// `rows * (panels + 1)` elements.
#[inline(always)]
unsafe fn csr_panel_table(p: CsrPanelTableParams) {
    let lane = (thread_idx() as usize) % WARP;
    let mut row = global_thread() / WARP as u64;
    let stride = grid_threads() / WARP as u64;
    let (offsets, cols) = (p.row_offsets.as_ptr(), p.col_indices.as_ptr());
    let (width, rows) = (p.panels as usize + 1, p.rows as usize);
    // Uniform across the warp.
    while row < p.rows as u64 {
        let r = row as usize;
        // SAFETY: `r < rows`: the offsets have `rows + 1` elements, and bound the row's entries.
        let (start, end) =
            unsafe { (u32::load_nc(offsets.add(r)) as usize, u32::load_nc(offsets.add(r + 1)) as usize) };
        let mut k = start + lane;
        let mut decreases = 0u32;
        while k + 1 < end {
            // SAFETY: `k + 1 < end <= nnz`.
            decreases |= unsafe { u32::from(u32::load_nc(cols.add(k)) > u32::load_nc(cols.add(k + 1))) };
            k += WARP;
        }
        let mut offset = WARP_SIZE / 2;
        while offset > 0 {
            decreases |= shfl_xor_b32(decreases, offset);
            offset /= 2;
        }
        let mut b = lane;
        while b < width {
            let target = b as u64 * p.panel_cols as u64;
            let (mut lo, mut hi) = (start, if decreases != 0 { start } else { end });
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                // SAFETY: `start <= mid < end`.
                if (unsafe { u32::load_nc(cols.add(mid)) } as u64) < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            // SAFETY: `r < rows`, `b <= panels`: inside the `(panels + 1) * rows` entries; entry
            // positions are below `nnz <= u32::MAX`.
            unsafe { *p.table.as_mut_ptr().add(b * rows + r) = lo as u32 };
            b += WARP;
        }
        row += stride;
    }
}

crate::ptx_entry!(spmv_csr_panels_c4_f32, CsrPanelsParams<f32>, csr_panels::<f32, 4>);
crate::ptx_entry!(spmv_csr_panels_c4_f64, CsrPanelsParams<f64>, csr_panels::<f64, 4>);
crate::ptx_entry!(spmv_csr_panels_c8_f32, CsrPanelsParams<f32>, csr_panels::<f32, 8>);
crate::ptx_entry!(spmv_csr_panels_c8_f64, CsrPanelsParams<f64>, csr_panels::<f64, 8>);
crate::ptx_entry!(spmv_csr_panels_c16_f32, CsrPanelsParams<f32>, csr_panels::<f32, 16>);
crate::ptx_entry!(spmv_csr_panels_c16_f64, CsrPanelsParams<f64>, csr_panels::<f64, 16>);
crate::ptx_entry!(spmv_csr_panels_c32_f32, CsrPanelsParams<f32>, csr_panels::<f32, 32>);
crate::ptx_entry!(spmv_csr_panels_c32_f64, CsrPanelsParams<f64>, csr_panels::<f64, 32>);
crate::ptx_entry!(spmv_csr_panels_combine_f32, CsrPanelsParams<f32>, csr_panels_combine::<f32>);
crate::ptx_entry!(spmv_csr_panels_combine_f64, CsrPanelsParams<f64>, csr_panels_combine::<f64>);
crate::ptx_entry!(spmv_csr_panels_table, CsrPanelTableParams, csr_panel_table);
