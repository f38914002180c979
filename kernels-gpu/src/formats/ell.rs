//! ELLPACK: one thread per row (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.2).
//!
//! Every row owns `width` slots, and slot `k` of all rows is contiguous (column-major storage), so
//! the 32 lanes of a warp, on 32 consecutive rows, read 32 consecutive column indices and values at
//! each step: coalesced without any cooperation between lanes. A row's padding slots come after its
//! entries and hold `PAD_COL`. A thread walks its row's slots a batch at a time
//! ([`padded_dot`]). Thread `t` handles rows `t, t + grid, ...`.

use super::slots::padded_dot;
use crate::abi::{EllFromCsrParams, EllParams, PAD_COL};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// # Safety
/// `p` describes a validated ELL matrix (every column index below the length of `x`, or `PAD_COL`)
/// and vectors of matching lengths.
#[inline(always)]
unsafe fn ell<T: Real>(p: EllParams<T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    let rows = p.a.rows as usize;
    while row < p.a.rows as u64 {
        let r = row as usize;
        // SAFETY: slot `k` of row `r` is `k * rows + r` with `k < width` and `r < rows`: inside the
        // arrays of `width * rows` slots (host validation); a column that is not `PAD_COL` is
        // below the length of `x`.
        let sum = unsafe {
            padded_dot(p.a.cols.as_ptr(), p.a.values.as_ptr(), p.op.x.as_ptr(), r, rows, p.a.width)
        };
        // SAFETY: `r < rows`, and row `r` belongs to this thread alone.
        unsafe { store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, sum, p.op.beta) };
        row += stride;
    }
}

/// Writes the ELL copy of a CSR matrix that `Kernel::CsrEllCopy` multiplies with (or, with
/// `pattern == 0`, the values of its entries alone, after the CSR matrix's values were replaced):
/// row `r`'s entry `k` to slot `k * rows + r`, then padding (`PAD_COL` and 0) up to the width. A
/// thread per row: the warp's writes of each slot are 32 consecutive words; its reads of the CSR
/// arrays are the thread-per-row kernel's, once.
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
                if entry {
                    *p.ell.values.as_mut_ptr().add(slot) = T::load_nc(p.csr.values.as_ptr().add(first + k));
                } else if p.pattern != 0 {
                    *p.ell.values.as_mut_ptr().add(slot) = T::ZERO;
                }
            }
        }
        row += stride;
    }
}

crate::ptx_entry!(spmv_ell_f32, EllParams<f32>, ell::<f32>);
crate::ptx_entry!(spmv_ell_f64, EllParams<f64>, ell::<f64>);
crate::ptx_entry!(ell_from_csr_f32, EllFromCsrParams<f32>, ell_from_csr::<f32>);
crate::ptx_entry!(ell_from_csr_f64, EllFromCsrParams<f64>, ell_from_csr::<f64>);
