//! SELL-C with C = 32, sliced ELLPACK (Kreutzer, Hager, Wellein, Fehske & Bishop, "A unified sparse
//! matrix data format for efficient general sparse matrix-vector multiplication on modern processors
//! with wide SIMD units", SIAM J. Sci. Comput. 2014), without sorting (σ = 1): one warp per slice of
//! 32 consecutive rows, a lane per row.
//!
//! ELL pads every row to the longest row of the whole matrix; SELL pads each slice only to its own
//! longest row, so a long row costs padding in its own slice alone, and it needs one offset per slice
//! where CSR needs one per row. Inside a slice the slots are column-major as in ELL (slot `k` of lane
//! `l` at `slice_ptr[s] + 32 k + l`), so the warp's loads at each slot are 32 consecutive words, and a
//! lane walks its row's slots a batch at a time ([`padded_dot`], shared with ELL and BRC). The
//! slice's width is its share of the slots, `(slice_ptr[s + 1] - slice_ptr[s]) / 32`: no array of
//! widths. Warp `w` handles slices `w, w + warps, ...`; no kernel here shuffles, so lanes past the
//! last row simply stay idle.

use super::slots::padded_dot;
use crate::abi::{SELL_SLICE_ROWS, SellParams};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// # Safety
/// `p` describes a validated SELL matrix (`slices + 1` slice offsets, each slice's slots inside the
/// entry arrays, every column below the length of `x` or `PAD_COL`) and vectors of matching lengths;
/// the grid's threads are a multiple of [`SELL_SLICE_ROWS`].
#[inline(always)]
unsafe fn sell<T: Real>(p: SellParams<T>) {
    let c = u64::from(SELL_SLICE_ROWS);
    let thread = global_thread();
    let lane = (thread % c) as usize;
    let groups = grid_threads() / c;
    let mut slice = thread / c;
    while slice < u64::from(p.a.slices) {
        let s = slice as usize;
        let row = s * SELL_SLICE_ROWS as usize + lane;
        if row < p.a.rows as usize {
            // SAFETY: `s < slices`, so `slice_ptr[s]` and `slice_ptr[s + 1]` exist; the slice's
            // `width * 32` slots from `slice_ptr[s]` lie inside the entry arrays, and its columns are
            // below the length of `x` or `PAD_COL` (host validation). `row < rows`, and row `row`
            // belongs to this lane alone.
            unsafe {
                let first = u32::load_nc(p.a.slice_ptr.as_ptr().add(s));
                let end = u32::load_nc(p.a.slice_ptr.as_ptr().add(s + 1));
                let sum = padded_dot(
                    p.a.cols.as_ptr(),
                    p.a.values.as_ptr(),
                    p.op.x.as_ptr(),
                    first as usize + lane,
                    SELL_SLICE_ROWS as usize,
                    (end - first) / SELL_SLICE_ROWS,
                );
                store_axpby(p.op.y.as_mut_ptr(), row, p.op.alpha, sum, p.op.beta);
            }
        }
        slice += groups;
    }
}

crate::ptx_entry!(spmv_sell_f32, SellParams<f32>, sell::<f32>);
crate::ptx_entry!(spmv_sell_f64, SellParams<f64>, sell::<f64>);
