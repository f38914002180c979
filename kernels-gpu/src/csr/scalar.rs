//! CSR scalar: one thread per row (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.3).
//!
//! Thread `t` of the grid handles rows `t, t + grid, ...`. Simple and good for very short rows, but the
//! lanes of a warp read entries of 32 different rows, so its loads of values and column indices are
//! not coalesced once rows are longer than a few entries.

use super::{entry_product, row_range};
use crate::abi::CsrParams;
use crate::arch::{global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// # Safety
/// `p` describes a validated CSR matrix and vectors of matching lengths.
#[inline(always)]
unsafe fn csr_scalar<T: Real>(p: CsrParams<T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    while row < p.a.rows as u64 {
        let r = row as usize;
        // SAFETY: `r < rows`; the entries and their columns are in range (host validation).
        unsafe {
            let (start, end) = row_range(&p.a, r);
            let mut sum = T::ZERO;
            for k in start..end {
                sum = entry_product::<T, 1>(&p.a, p.op.x.as_ptr(), k, sum);
            }
            store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, sum, p.op.beta);
        }
        row += stride;
    }
}

crate::ptx_entry!(spmv_csr_scalar_f32, CsrParams<f32>, csr_scalar::<f32>);
crate::ptx_entry!(spmv_csr_scalar_f64, CsrParams<f64>, csr_scalar::<f64>);
