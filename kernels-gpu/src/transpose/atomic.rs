//! `spmv_csrt_atomic_c<COOP>_*`: `y += alpha * Aᵀ * x`, with `y` already scaled by `beta`. Ours: the
//! COO atomic kernel's scatter (Bell & Garland, NVIDIA TR 2008, section 4.4, as a baseline) applied
//! to a CSR matrix read by rows: row `i` of `A` holds column `i` of `Aᵀ`, so each of its entries
//! `a_ij` adds `alpha * x_i * a_ij` to `y_j`. No extra memory; the order of the adds to one `y_j`,
//! and so its rounding, varies from run to run.
//!
//! Thread mapping: `COOP` consecutive threads per row of `A` (grid stride over rows); the lanes of a
//! group read the row's entries `COOP` apart, so their loads are contiguous, and each adds its own
//! products. No lane waits for another: there is no reduction, hence no convergence requirement.

use crate::abi::CsrTransposeParams;
use crate::arch::{AtomicAdd, Load, global_thread, grid_threads};
use crate::real::Real;

/// # Safety
/// `p.a` is a validated CSR matrix, `p.op.x` holds one element per row and `p.op.y` one per column
/// of it, and no other kernel writes `y` during the launch.
#[inline(always)]
unsafe fn csrt_atomic<T: Real + AtomicAdd, const COOP: u32>(p: CsrTransposeParams<T>) {
    let thread = global_thread();
    let lane = (thread % u64::from(COOP)) as usize;
    let (mut row, stride) = (thread / u64::from(COOP), grid_threads() / u64::from(COOP));
    let (offsets, cols, values) = (p.a.row_offsets.as_ptr(), p.a.col_indices.as_ptr(), p.a.values.as_ptr());
    while row < u64::from(p.a.rows) {
        let r = row as usize;
        // SAFETY: `r < rows`: the offsets array has `rows + 1` elements and `x` `rows`; the entries
        // `start .. end` are inside the arrays and their columns below the length of `y` (host
        // validation); every write to `y` is atomic.
        unsafe {
            let (start, end) =
                (u32::load_nc(offsets.add(r)) as usize, u32::load_nc(offsets.add(r + 1)) as usize);
            let scaled = p.op.alpha * T::load_nc(p.op.x.as_ptr().add(r));
            let mut k = start + lane;
            while k < end {
                let col = u32::load_nc(cols.add(k)) as usize;
                T::atomic_add(p.op.y.as_mut_ptr().add(col), T::load_nc(values.add(k)) * scaled);
                k += COOP as usize;
            }
        }
        row += stride;
    }
}

crate::ptx_entry!(spmv_csrt_atomic_c1_f32, CsrTransposeParams<f32>, csrt_atomic::<f32, 1>);
crate::ptx_entry!(spmv_csrt_atomic_c2_f32, CsrTransposeParams<f32>, csrt_atomic::<f32, 2>);
crate::ptx_entry!(spmv_csrt_atomic_c4_f32, CsrTransposeParams<f32>, csrt_atomic::<f32, 4>);
crate::ptx_entry!(spmv_csrt_atomic_c8_f32, CsrTransposeParams<f32>, csrt_atomic::<f32, 8>);
crate::ptx_entry!(spmv_csrt_atomic_c16_f32, CsrTransposeParams<f32>, csrt_atomic::<f32, 16>);
crate::ptx_entry!(spmv_csrt_atomic_c32_f32, CsrTransposeParams<f32>, csrt_atomic::<f32, 32>);
crate::ptx_entry!(spmv_csrt_atomic_c1_f64, CsrTransposeParams<f64>, csrt_atomic::<f64, 1>);
crate::ptx_entry!(spmv_csrt_atomic_c2_f64, CsrTransposeParams<f64>, csrt_atomic::<f64, 2>);
crate::ptx_entry!(spmv_csrt_atomic_c4_f64, CsrTransposeParams<f64>, csrt_atomic::<f64, 4>);
crate::ptx_entry!(spmv_csrt_atomic_c8_f64, CsrTransposeParams<f64>, csrt_atomic::<f64, 8>);
crate::ptx_entry!(spmv_csrt_atomic_c16_f64, CsrTransposeParams<f64>, csrt_atomic::<f64, 16>);
crate::ptx_entry!(spmv_csrt_atomic_c32_f64, CsrTransposeParams<f64>, csrt_atomic::<f64, 32>);
