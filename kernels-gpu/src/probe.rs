//! Read-only probes of the memory system. Each thread sums what it reads and stores the sum only if
//! it equals an impossible sentinel, so the loads cannot be optimised away while the kernel writes
//! (almost) nothing.
//!
//! - `probe_stream_read` reads a buffer once, 16 bytes per thread per step, grid stride: the whole
//!   grid moves through memory as one front. The benchmark times it to get the bandwidth a
//!   read-only kernel reaches on this device, which sets the floor every SpMV kernel is measured
//!   against.
//! - `probe_row_runs` reads two arrays the way a warp per row reads a CSR matrix of f32 values (the
//!   vector kernel at 32 lanes): each warp walks runs of consecutive elements of both arrays, 4 bytes
//!   a lane, so thousands of runs are read side by side. It measures what that access pattern alone
//!   costs, without `x`, the sums across lanes or `y` (PERF.md section 36). Every run starts on a
//!   32-byte sector, where a matrix's rows start anywhere: an upper bound for the pattern.

use crate::abi::{RowRunsParams, StreamReadParams, WARP_SIZE};
use crate::arch::{Load, global_thread, grid_threads, load_nc_v4_f32};

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

/// Steps (32 elements of each array) a warp of `probe_row_runs` asks for before it waits: 1 KiB in
/// flight a warp, which the runs of 128 elements show to be enough for the streaming read's rate, so
/// that the probe measures the pattern of runs, not one load chain (the vector kernel's loop asks for
/// one step an iteration in its PTX; the balanced kernel's spans ask for 4 or 8).
const ROW_RUN_STEPS: u64 = 4;

/// The reads stay in bounds with any thread count; with one that is not whole warps, the last, partial
/// warp reads runs that another warp reads too (the launch gives whole warps).
///
/// # Safety
/// `p.data` holds `2 * p.pairs` floats, `p.run > 0` divides `p.pairs`, and `p.sink` holds one float.
#[inline(always)]
unsafe fn row_runs(p: RowRunsParams) {
    let warp_size = WARP_SIZE as u64;
    let (thread, threads) = (global_thread(), grid_threads());
    let (lane, warps) = (thread % warp_size, threads / warp_size);
    let (first, second) = (p.data.as_ptr(), p.data.as_ptr().wrapping_add(p.pairs as usize));
    let run = p.run as u64;
    let mut sum = 0.0f32;
    let mut r = thread / warp_size;
    while r < p.pairs / run {
        let (mut k, end) = (r * run + lane, (r + 1) * run);
        // A batch of steps whose loads are all issued before their sum.
        while k + (ROW_RUN_STEPS - 1) * warp_size < end {
            let (mut a, mut b) = ([0.0f32; ROW_RUN_STEPS as usize], [0.0f32; ROW_RUN_STEPS as usize]);
            for j in 0..ROW_RUN_STEPS as usize {
                // SAFETY: `k + 32 j < end <= pairs`, so both reads are inside `data`, read-only for
                // the whole kernel.
                (a[j], b[j]) = unsafe { pair(first, second, k + j as u64 * warp_size) };
            }
            sum += a.iter().zip(&b).fold(0.0, |s, (a, b)| s + (a + b));
            k += ROW_RUN_STEPS * warp_size;
        }
        while k < end {
            // SAFETY: as above, `k < end`.
            let (a, b) = unsafe { pair(first, second, k) };
            sum += a + b;
            k += warp_size;
        }
        r += warps;
    }
    if sum == p.sentinel {
        // SAFETY: `sink` holds one float; racing writers all write a valid float.
        unsafe { *p.sink.as_mut_ptr() = sum };
    }
}

/// Element `at` of both arrays, with the hint the vector kernel's matrix loads carry at 32 lanes.
///
/// # Safety
/// `first.add(at)` and `second.add(at)` are elements of arrays no thread writes during the kernel.
#[inline(always)]
unsafe fn pair(first: *const f32, second: *const f32, at: u64) -> (f32, f32) {
    let at = at as usize;
    // SAFETY: the caller's.
    unsafe { (f32::load_nc_evict_first(first.add(at)), f32::load_nc_evict_first(second.add(at))) }
}

crate::ptx_entry!(probe_row_runs, RowRunsParams, row_runs);
