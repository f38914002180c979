//! `y = beta * y` (or `y = 0` when `beta == 0`): the whole product when `A * x` contributes nothing.
//! One thread per element, grid stride.

use crate::abi::ScaleParams;
use crate::arch::{global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// # Safety
/// `p.y` holds `p.len` elements.
#[inline(always)]
unsafe fn scale<T: Real>(p: ScaleParams<T>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < p.len as u64 {
        // SAFETY: `i < len`, and each element belongs to one thread.
        unsafe { store_axpby(p.y.as_mut_ptr(), i as usize, T::ZERO, T::ZERO, p.beta) };
        i += stride;
    }
}

crate::ptx_entry!(spmv_scale_f32, ScaleParams<f32>, scale::<f32>);
crate::ptx_entry!(spmv_scale_f64, ScaleParams<f64>, scale::<f64>);
