//! The index kernels of the distributed product (`host/src/formats/partition.rs` builds the index
//! lists): `out[i] = x[indices[i]]`, the pack that puts the entries of a device's `x` that another
//! device needs side by side, so that NCCL sends one contiguous run; and `y[indices[i]] += v[i]`,
//! which adds the remote block's rows into the rows of `y` they are. One thread per element, grid
//! stride: the indexed side is as scattered as the indices, the other coalesced.

use crate::abi::{GatherParams, ScatterAddParams};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::Real;

/// # Safety
/// `p.indices` and `p.out` hold `p.len` elements, every index is below the length of `p.x`, and `out`
/// does not overlap `x` or `indices`.
#[inline(always)]
unsafe fn gather<T: Real>(p: GatherParams<T>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < p.len as u64 {
        let i_ = i as usize;
        // SAFETY: `i < len`; the index is in `x` (the caller's contract); `out[i]` is this thread's.
        unsafe {
            let source = u32::load_nc(p.indices.as_ptr().add(i_)) as usize;
            *p.out.as_mut_ptr().add(i_) = T::load_nc(p.x.as_ptr().add(source));
        }
        i += stride;
    }
}

/// # Safety
/// `p.indices` and `p.v` hold `p.len` elements, the indices are strictly increasing and below the
/// length of `p.y`, and `y` overlaps neither.
#[inline(always)]
unsafe fn scatter_add<T: Real>(p: ScatterAddParams<T>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < p.len as u64 {
        let i_ = i as usize;
        // SAFETY: `i < len`; the index is in `y` and no other thread's (the caller's contract).
        unsafe {
            let target = p.y.as_mut_ptr().add(u32::load_nc(p.indices.as_ptr().add(i_)) as usize);
            *target = *target + T::load_nc(p.v.as_ptr().add(i_));
        }
        i += stride;
    }
}

crate::ptx_entry!(dist_gather_f32, GatherParams<f32>, gather::<f32>);
crate::ptx_entry!(dist_gather_f64, GatherParams<f64>, gather::<f64>);
crate::ptx_entry!(dist_scatter_add_f32, ScatterAddParams<f32>, scatter_add::<f32>);
crate::ptx_entry!(dist_scatter_add_f64, ScatterAddParams<f64>, scatter_add::<f64>);
