//! ELLPACK: one thread per row (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.2).
//!
//! Every row owns `width` slots, and slot `k` of all rows is contiguous (column-major storage), so
//! the 32 lanes of a warp, on 32 consecutive rows, read 32 consecutive column indices and values at
//! each step: coalesced without any cooperation between lanes. A row's padding slots come after its
//! entries and hold `PAD_COL`. A thread walks its row's slots a batch at a time
//! ([`ell_rows`]). Thread `t` handles rows `t, t + grid, ...`.

use super::slots::ell_rows;
use crate::abi::{EllFromCsrParams, EllParams, PAD_COL};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::Real;

/// # Safety
/// `p` describes a validated ELL matrix (every column index below the length of `x`, or `PAD_COL`)
/// and vectors of matching lengths.
#[inline(always)]
unsafe fn ell<T: Real>(p: EllParams<T>) {
    // SAFETY: the arrays hold `width * rows` slots (host validation), each `PAD_COL` or a column of
    // `x`.
    unsafe { ell_rows(p.a.rows, p.a.width, |_| p.a.cols.as_ptr(), p.a.values.as_ptr(), &p.op) }
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
