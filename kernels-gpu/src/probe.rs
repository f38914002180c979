//! `probe_stream_read`: reads a buffer once, 16 bytes per thread per step, as fast as the memory
//! system allows. The benchmark times it to get the bandwidth a read-only kernel reaches on this
//! device, which sets the floor every SpMV kernel is measured against.
//!
//! Thread mapping: grid stride over `float4` elements; each thread sums what it reads and stores the
//! sum only if it equals an impossible sentinel, so the loads cannot be optimised away while the
//! kernel writes (almost) nothing.

use crate::abi::StreamReadParams;
use crate::arch::{global_thread, grid_threads, load_nc_v4_f32};

/// # Safety
/// `p.data` holds `4 * p.len4` floats, `p.sink` one.
#[inline(always)]
unsafe fn stream_read(p: StreamReadParams) {
    let (mut i, stride) = (global_thread(), grid_threads());
    let mut sum = 0.0f32;
    while i < p.len4 {
        // SAFETY: `i < len4`; the buffer is 16-byte aligned (a device allocation) and read-only.
        let v = unsafe { load_nc_v4_f32(p.data.as_ptr().add(4 * i as usize)) };
        sum += v[0] + v[1] + v[2] + v[3];
        i += stride;
    }
    if sum == p.sentinel {
        // SAFETY: `sink` holds one float; racing writers all write a valid float.
        unsafe { *p.sink.as_mut_ptr() = sum };
    }
}

crate::ptx_entry!(probe_stream_read, StreamReadParams, stream_read);
