//! `out[i] = x[indices[i]]`: the pack of the distributed product, which puts the entries of a
//! device's `x` that another device needs side by side, so that NCCL sends one contiguous run
//! (`host/src/formats/partition.rs` builds the index lists). One thread per element, grid stride:
//! the reads of `x` are as scattered as the indices, the writes coalesced.

use crate::abi::GatherParams;
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

crate::ptx_entry!(dist_gather_f32, GatherParams<f32>, gather::<f32>);
crate::ptx_entry!(dist_gather_f64, GatherParams<f64>, gather::<f64>);
