//! `l2_prefetch`: brings byte ranges into the L2 ahead of a kernel that will read them one
//! dependent step at a time.
//!
//! The ILU(0) and IC(0) solves (`ilu.rs`) run long chains of narrow levels in one block: each level
//! waits on its loads, so a load that misses the L2 costs the whole level a trip to DRAM. Inside a
//! solver the product and the vector passes between two applies evict part of the factors
//! (docs/PERF.md, section 26: BiCGSTAB + ILU(0) on fem-q2 took 812 ms, its applies alone about
//! 520). This kernel, launched over every SM just before such a solve, asks for each line of its
//! arrays once (`prefetch.global.L2`): the requests need no registers and no dependent step, so the
//! whole triangle streams in at the memory's rate, a few microseconds, where the one block would
//! fetch it a level at a time (the same solve: 722 ms).
//!
//! Thread mapping: a grid stride over the spans' lines, in span order.

use crate::abi::{L2_LINE_BYTES, L2PrefetchParams};
use crate::arch::{global_thread, grid_threads, prefetch_l2};

/// # Safety
/// Each span's `bytes` bytes from `start` lie inside one global allocation.
#[inline(always)]
unsafe fn prefetch_spans(p: L2PrefetchParams) {
    let (mut line, stride, lines) = (global_thread(), grid_threads(), p.lines());
    while line < lines {
        let mut rest = line;
        for span in &p.spans {
            let lines = span.lines();
            if rest < lines {
                // SAFETY: `rest * 128 < bytes`, inside the span's allocation (the caller).
                unsafe { prefetch_l2(span.start.as_ptr().add((rest * L2_LINE_BYTES) as usize)) };
                break;
            }
            rest -= lines;
        }
        line += stride;
    }
}

crate::ptx_entry!(l2_prefetch, L2PrefetchParams, prefetch_spans);
