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
//!   lane sums alone: no reduction, no convergence requirement. Grid stride over rows.
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
//! `spmm_scale_*`: `Y = beta * Y` when `A * X` contributes nothing, one thread per element.

use crate::abi::{DenseScaleParams, SPMM_COL_PANEL, SpmmParams, WARP_SIZE};
use crate::arch::{Load, global_thread, grid_threads};
use crate::index::coop_slot;
use crate::real::{Real, store_axpby};

const PANEL: usize = SPMM_COL_PANEL as usize;

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

/// # Safety
/// `p.a` is a validated CSR matrix; `X` holds `ncols` rows of `ldx >= k` elements and `Y` `rows`
/// rows of `ldy >= k`, row-major; `LANES` divides 32 and `PER_LANE >= 1`.
#[inline(always)]
unsafe fn spmm_row_major<T: Real, const LANES: u32, const PER_LANE: usize>(p: SpmmParams<T>) {
    let width = LANES as usize * PER_LANE;
    let thread = global_thread();
    let lane = (thread % u64::from(LANES)) as usize;
    let (mut row, stride) = (thread / u64::from(LANES), grid_threads() / u64::from(LANES));
    let (k, ldx, ldy) = (p.op.k as usize, p.op.ldx as usize, p.op.ldy as usize);
    let (x, y) = (p.op.x.as_ptr(), p.op.y.as_mut_ptr());
    while row < u64::from(p.a.rows) {
        let r = row as usize;
        // SAFETY: `r < rows`.
        let (start, end) = unsafe { row_range(&p, r) };
        let mut first = 0;
        while first < k {
            let mut sums = [T::ZERO; PER_LANE];
            for e in start..end {
                // SAFETY: `e < end <= nnz`; the column is below the rows of `X`, and column
                // `first + lane + LANES j < k <= ldx` of it is inside `X`.
                unsafe {
                    let (col, value) = entry(&p, e);
                    for (j, sum) in sums.iter_mut().enumerate() {
                        let c = first + lane + LANES as usize * j;
                        if c < k {
                            *sum = value.fma(T::load_nc(x.add(col * ldx + c)), *sum);
                        }
                    }
                }
            }
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
/// columns of `ldy >= rows`, column-major; the block size is a multiple of 32.
#[inline(always)]
unsafe fn spmm_col_major<T: Real, const COOP: u32>(p: SpmmParams<T>) {
    let slot = coop_slot(global_thread(), grid_threads(), COOP);
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
                if row < rows && c % COOP as usize == lane && first + c < k {
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
crate::ptx_entry!(spmm_scale_f32, DenseScaleParams<f32>, dense_scale::<f32>);
crate::ptx_entry!(spmm_scale_f64, DenseScaleParams<f64>, dense_scale::<f64>);
