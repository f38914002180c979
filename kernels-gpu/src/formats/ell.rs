//! ELLPACK: one thread per row (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.2).
//!
//! Every row owns `width` slots, and slot `k` of all rows is contiguous (column-major storage), so
//! the 32 lanes of a warp, on 32 consecutive rows, read 32 consecutive column indices and values at
//! each step: coalesced without any cooperation between lanes. A row's padding slots come after its
//! entries and hold `PAD_COL`. A thread walks its row's slots a batch at a time
//! ([`padded_dot`]). Thread `t` handles rows `t, t + grid, ...`.

use super::slots::padded_dot;
use crate::abi::EllParams;
use crate::arch::{global_thread, grid_threads};
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

crate::ptx_entry!(spmv_ell_f32, EllParams<f32>, ell::<f32>);
crate::ptx_entry!(spmv_ell_f64, EllParams<f64>, ell::<f64>);
