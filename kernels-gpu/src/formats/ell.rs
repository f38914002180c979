//! ELLPACK: a thread, or a few, per row (Bell & Garland, "Efficient Sparse Matrix-Vector
//! Multiplication on CUDA", NVIDIA TR 2008, section 4.2).
//!
//! Every row owns `width` slots, and slot `k` of all rows is contiguous (column-major storage), so
//! the 32 lanes of a warp, on 32 consecutive rows, read 32 consecutive column indices and values at
//! each step: coalesced without any cooperation between lanes. A row's padding slots come after its
//! entries and hold `PAD_COL`. A thread walks its row's slots a batch at a time ([`padded_dot`]).
//!
//! With `LANES` lanes a row (`spmv_ell_l<LANES>_*`; the host takes enough that a lane's share of
//! the width fits one batch, docs/PERF.md section 29), lane `h` of a row walks slots `h, h + LANES,
//! ...`, so that a wide row's slots are all in flight at once instead of a batch after another, and
//! the lanes' sums are added by shuffles, in a fixed order. A warp still reads whole sectors: at
//! each step its `32 / LANES` rows' slots `k .. k + LANES` are `LANES` runs of consecutive words.
//! Warp `w`'s threads handle rows `(w * 32 + lane) / LANES`, then a grid further, and so on.

use super::slots::padded_dot;
use crate::abi::{EllFromCsrParams, EllParams, PAD_COL, WARP_SIZE};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// # Safety
/// `p` describes a validated ELL matrix (every column index below the length of `x`, or `PAD_COL`)
/// and vectors of matching lengths; `LANES` is a power of two up to 32, and the block whole warps.
#[inline(always)]
unsafe fn ell<T: Real, const LANES: u32>(p: EllParams<T>) {
    let lanes = u64::from(LANES);
    let lane = global_thread() % u64::from(WARP_SIZE);
    // The warp's first thread: warp-aligned, as is the grid's stride (whole warps), so that the
    // loop's test is the same for every lane of a warp and all of them reach the shuffles.
    let (mut first, stride) = (global_thread() - lane, grid_threads());
    let rows = p.a.rows as usize;
    while first / lanes < u64::from(p.a.rows) {
        let thread = first + lane;
        let (r, h) = ((thread / lanes) as usize, (thread % lanes) as u32);
        let live = r < rows;
        let mut sum = T::ZERO;
        if live && h < p.a.width {
            // SAFETY: lane `h`'s slots of row `r` are `(h + LANES j) * rows + r` with
            // `h + LANES j < width` and `r < rows`: inside the arrays of `width * rows` slots (host
            // validation); a column that is not `PAD_COL` is below the length of `x`.
            sum = unsafe {
                padded_dot(
                    p.a.cols.as_ptr(),
                    p.a.values.as_ptr(),
                    p.op.x.as_ptr(),
                    h as usize * rows + r,
                    LANES as usize * rows,
                    (p.a.width - h).div_ceil(LANES),
                )
            };
        }
        let mut mask = LANES / 2;
        while mask > 0 {
            sum = sum + sum.shfl_xor(mask);
            mask /= 2;
        }
        if live && h == 0 {
            // SAFETY: `r < rows`, and row `r` belongs to this lane alone.
            unsafe { store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, sum, p.op.beta) };
        }
        first += stride;
    }
}

/// Writes the ELL copy of a CSR matrix that `Kernel::CsrEllCopy` multiplies with (or, with
/// `pattern == 0`, its values alone, after the CSR matrix's values were replaced): row `r`'s entry
/// `k` to slot `k * rows + r`, then padding (`PAD_COL` and 0) up to the width. A thread per row: the
/// warp's writes of each slot are 32 consecutive words; its reads of the CSR arrays are the
/// thread-per-row kernel's, once.
///
/// # Safety
/// `p.csr` is valid CSR of `p.csr.rows` rows, none longer than `p.ell.width`; `p.ell` holds
/// `width * rows` slots of `p.ell.rows == p.csr.rows` rows, which no other thread reads or writes
/// during the kernel.
#[inline(always)]
unsafe fn ell_from_csr<T: Real>(p: EllFromCsrParams<T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    let rows = p.ell.rows as usize;
    while row < u64::from(p.ell.rows) {
        let r = row as usize;
        // SAFETY: `r < rows`, so offsets `r` and `r + 1` exist; the row's entries `first + k`,
        // `k < len <= width`, lie inside the CSR arrays, and its slots `k * rows + r`, `k < width`,
        // inside the ELL arrays, written by this thread alone.
        unsafe {
            let first = u32::load_nc(p.csr.row_offsets.as_ptr().add(r)) as usize;
            let len = u32::load_nc(p.csr.row_offsets.as_ptr().add(r + 1)) as usize - first;
            for k in 0..p.ell.width as usize {
                let slot = k * rows + r;
                let entry = k < len;
                if p.pattern != 0 {
                    let col =
                        if entry { u32::load_nc(p.csr.col_indices.as_ptr().add(first + k)) } else { PAD_COL };
                    *p.ell.cols.as_mut_ptr().add(slot) = col;
                }
                let value = if entry { T::load_nc(p.csr.values.as_ptr().add(first + k)) } else { T::ZERO };
                *p.ell.values.as_mut_ptr().add(slot) = value;
            }
        }
        row += stride;
    }
}

crate::ptx_entry!(spmv_ell_l1_f32, EllParams<f32>, ell::<f32, 1>);
crate::ptx_entry!(spmv_ell_l1_f64, EllParams<f64>, ell::<f64, 1>);
crate::ptx_entry!(spmv_ell_l2_f32, EllParams<f32>, ell::<f32, 2>);
crate::ptx_entry!(spmv_ell_l2_f64, EllParams<f64>, ell::<f64, 2>);
crate::ptx_entry!(spmv_ell_l4_f32, EllParams<f32>, ell::<f32, 4>);
crate::ptx_entry!(spmv_ell_l4_f64, EllParams<f64>, ell::<f64, 4>);
crate::ptx_entry!(spmv_ell_l8_f32, EllParams<f32>, ell::<f32, 8>);
crate::ptx_entry!(spmv_ell_l8_f64, EllParams<f64>, ell::<f64, 8>);
crate::ptx_entry!(ell_from_csr_f32, EllFromCsrParams<f32>, ell_from_csr::<f32>);
crate::ptx_entry!(ell_from_csr_f64, EllFromCsrParams<f64>, ell_from_csr::<f64>);
