//! ELLPACK: one thread per row (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.2).
//!
//! Every row owns `width` slots, and slot `k` of all rows is contiguous (column-major storage), so
//! the 32 lanes of a warp, on 32 consecutive rows, read 32 consecutive column indices and values at
//! each step: coalesced without any cooperation between lanes. A row's padding slots come after its
//! entries and hold `PAD_COL`. A thread walks its row's slots a batch at a time
//! ([`ell_rows`]). Thread `t` handles rows `t, t + grid, ...`.

use super::slots::{ell_rows, ell_rows_from_csr};
use crate::abi::{EllFromCsrParams, EllParams};
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

/// Writes the ELL copy of a CSR matrix that `Kernel::CsrEllCopy` multiplies with in its plain form
/// (or, with `pattern == 0`, the values of its entries alone, after the CSR matrix's values were
/// replaced): [`ell_rows_from_csr`] with plain columns, which always fit.
///
/// # Safety
/// `p.csr` is valid CSR of `p.csr.rows` rows, none longer than `p.ell.width`; `p.ell` holds
/// `width * rows` slots of `p.ell.rows == p.csr.rows` rows, which no other thread reads or writes
/// during the kernel.
#[inline(always)]
unsafe fn ell_from_csr<T: Real>(p: EllFromCsrParams<T>) {
    let slots = (p.ell.cols.as_mut_ptr(), p.ell.values.as_mut_ptr());
    let plain = |_| p.ell.cols.as_ptr();
    // SAFETY: forwarded; a plain column always fits, so the null misfit word is never touched.
    unsafe {
        ell_rows_from_csr(
            &p.csr,
            (p.ell.rows, p.ell.width),
            plain,
            slots,
            p.pattern != 0,
            core::ptr::null_mut(),
        )
    }
}

crate::ptx_entry!(spmv_ell_f32, EllParams<f32>, ell::<f32>);
crate::ptx_entry!(spmv_ell_f64, EllParams<f64>, ell::<f64>);
crate::ptx_entry!(ell_from_csr_f32, EllFromCsrParams<f32>, ell_from_csr::<f32>);
crate::ptx_entry!(ell_from_csr_f64, EllFromCsrParams<f64>, ell_from_csr::<f64>);
