//! ELLPACK: one thread per row (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.2).
//!
//! Every row owns `width` slots, and slot `k` of all rows is contiguous (column-major storage), so
//! the 32 lanes of a warp, on 32 consecutive rows, read 32 consecutive column indices and values at
//! each step: coalesced without any cooperation between lanes. A row's padding slots come after its
//! entries and hold `PAD_COL`; the thread stops at the first one. Thread `t` handles rows
//! `t, t + grid, ...`.

use crate::abi::{EllParams, PAD_COL};
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
        let mut sum = T::ZERO;
        let mut slot = r;
        for _ in 0..p.a.width {
            // SAFETY: `slot = k * rows + r` with `k < width` and `r < rows`: inside the arrays of
            // `width * rows` slots; a column that is not `PAD_COL` is below the length of `x`.
            unsafe {
                let col = u32::load_nc(p.a.cols.as_ptr().add(slot));
                if col == PAD_COL {
                    break;
                }
                sum = T::load_nc(p.a.values.as_ptr().add(slot))
                    .fma(T::load_nc(p.op.x.as_ptr().add(col as usize)), sum);
            }
            slot += rows;
        }
        // SAFETY: `r < rows`, and row `r` belongs to this thread alone.
        unsafe { store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, sum, p.op.beta) };
        row += stride;
    }
}

crate::ptx_entry!(spmv_ell_f32, EllParams<f32>, ell::<f32>);
crate::ptx_entry!(spmv_ell_f64, EllParams<f64>, ell::<f64>);
