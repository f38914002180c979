//! The long-row chunk path shared by the parametrised kernel (`param.rs`, whose doc describes the
//! scheme) and the balanced kernel (`balanced.rs`): a warp sums one
//! [`LONG_ROW_CHUNK`](crate::abi::LONG_ROW_CHUNK)-entry chunk of a long row into the row's slot of
//! `partials`, and the warp whose chunk completes the row sums the row's slots in a fixed order and
//! writes its `y`. How a warp reads is a type parameter ([`ChunkReads`]), so that the parametrised
//! kernel keeps the registers of full occupancy.

use super::{SPAN_STEPS, entry_product, span_sum, warp_row_store};
use crate::abi::{Axpby, CsrArgs, DevicePtr, EntrySpan, LongRowArgs, WARP_SIZE};
use crate::arch::{Load, atomic_inc_acq_rel_u32, shfl_idx_b32, sync_warp, thread_idx};
use crate::real::Real;
use crate::reduce::group_sum;

/// Chunk `chunk` of a long row, summed by the calling warp; the row's last warp writes its `y`.
///
/// # Safety
/// `a`, `op` and `long` describe a validated CSR matrix, vectors of matching lengths and the matrix's
/// long-row split; `chunk < long.chunks`; the whole warp calls it.
#[inline(always)]
pub(crate) unsafe fn long_row_chunk<T: Real, R: ChunkReads>(
    a: &CsrArgs<T>,
    op: &Axpby<T>,
    long: &LongRowArgs<T>,
    chunk: usize,
) {
    let lane = (thread_idx() % WARP_SIZE) as usize;
    // SAFETY: `chunk < chunks`; the host built `chunk_row`, `chunk_entries`, `rows` and
    // `first_chunk` consistently from the row offsets the matrix uploaded, with every long row below
    // `rows` and each chunk's entries inside its row, at most `LONG_ROW_CHUNK` of them.
    unsafe {
        let j = u32::load_nc(long.chunk_row.as_ptr().add(chunk)) as usize;
        let (from, to) = chunk_entries(long.chunk_entries, chunk);
        // Asked for before the entries' sum, which does not wait for them.
        let row = u32::load_nc(long.rows.as_ptr().add(j)) as usize;
        let first = u32::load_nc(long.first_chunk.as_ptr().add(j)) as usize;
        let count = u32::load_nc(long.first_chunk.as_ptr().add(j + 1)) as usize - first;
        let total = group_sum::<T, WARP_SIZE>(R::chunk_sum(a, op.x.as_ptr(), from, to, lane));

        let mut done = 0;
        if lane == 0 {
            long.partials.as_mut_ptr().add(chunk).write_volatile(total);
            // Releases the partial sum; the row's last warp acquires every other chunk's.
            // `count` is at most chunks <= u32::MAX.
            done = atomic_inc_acq_rel_u32(long.counters.as_mut_ptr().add(j), count as u32 - 1);
        }
        sync_warp();
        if shfl_idx_b32(done, 0) as usize + 1 == count {
            warp_row_store(op, row, R::partials_sum(long.partials.as_ptr().add(first), count, lane), lane);
        }
    }
}

/// The entries `from .. to` of chunk `chunk`, one load of its word in `entries` (the CSR product's
/// `LongRowArgs::chunk_entries`, or SpMM's copy of the same pointer).
///
/// # Safety
/// `entries` holds the host's words of at least `chunk + 1` chunks (`EntrySpan` wraps the `u64` it
/// is loaded as).
#[inline(always)]
pub(crate) unsafe fn chunk_entries(entries: DevicePtr<EntrySpan>, chunk: usize) -> (usize, usize) {
    // SAFETY: the caller's.
    let span = EntrySpan(unsafe { u64::load_nc(entries.as_ptr().add(chunk).cast()) });
    (span.from() as usize, span.to() as usize)
}

/// How a chunk warp reads its chunk's entries and, if last, its row's partial sums. Both sums take
/// lane `l`'s elements `l, l + 32, ...` in that order, so the two ways give the same results.
pub(crate) trait ChunkReads {
    /// The lane's sum of the products of entries `from + lane, from + lane + 32, ...` below `to`.
    ///
    /// # Safety
    /// `from < to <= nnz`, `to - from <= LONG_ROW_CHUNK`, and the host validated every column index
    /// against the length of `x`.
    unsafe fn chunk_sum<T: Real>(a: &CsrArgs<T>, x: *const T, from: usize, to: usize, lane: usize) -> T;

    /// The lane's sum of slots `lane, lane + 32, ...` below `count` of `slots`. Volatile reads: the
    /// slots were written by other warps of this kernel, and must be read from memory, after the
    /// caller's acquire.
    ///
    /// # Safety
    /// `count >= 1`, and `slots` holds `count` elements written before the caller's acquire.
    unsafe fn partials_sum<T: Real>(slots: *const T, count: usize, lane: usize) -> T;
}

/// One load per step, as the row paths of the parametrised kernel: its registers stay within the 32
/// of full occupancy, which its tile path needs on regular matrices.
pub(super) struct Stepwise;

/// Eight loads in flight per lane before any sum (`span_sum`, and the same for the partial sums):
/// for the balanced kernel, whose tasks hold as many registers anyway. A row of 2.9 M entries has
/// 11,000 partial sums, which one load at a time would make a tail of hundreds of L2 round trips.
pub(crate) struct Batched;

impl ChunkReads for Stepwise {
    #[inline(always)]
    unsafe fn chunk_sum<T: Real>(a: &CsrArgs<T>, x: *const T, from: usize, to: usize, lane: usize) -> T {
        let mut sum = T::ZERO;
        let mut k = from + lane;
        while k < to {
            // SAFETY: `k < to <= nnz` (caller).
            sum = unsafe { entry_product::<T, WARP_SIZE>(a, x, k, sum) };
            k += WARP_SIZE as usize;
        }
        sum
    }

    #[inline(always)]
    unsafe fn partials_sum<T: Real>(slots: *const T, count: usize, lane: usize) -> T {
        let mut sum = T::ZERO;
        let mut slot = lane;
        while slot < count {
            // SAFETY: `slot < count` (caller).
            sum = sum + unsafe { slots.add(slot).read_volatile() };
            slot += WARP_SIZE as usize;
        }
        sum
    }
}

impl ChunkReads for Batched {
    #[inline(always)]
    unsafe fn chunk_sum<T: Real>(a: &CsrArgs<T>, x: *const T, from: usize, to: usize, lane: usize) -> T {
        // SAFETY: forwarded from the caller; a chunk is one span.
        unsafe { span_sum(a, x, from, to, lane, T::ZERO) }
    }

    #[inline(always)]
    unsafe fn partials_sum<T: Real>(slots: *const T, count: usize, lane: usize) -> T {
        let mut sum = T::ZERO;
        let mut base = 0;
        while base < count {
            let mut got = [T::ZERO; SPAN_STEPS];
            for (j, v) in got.iter_mut().enumerate() {
                // Clamped, so that all loads are unconditional; the extra values are dropped below.
                let slot = (base + lane + j * WARP_SIZE as usize).min(count - 1);
                // SAFETY: `slot < count` (caller).
                *v = unsafe { slots.add(slot).read_volatile() };
            }
            for (j, &v) in got.iter().enumerate() {
                let next = sum + v;
                sum = if base + lane + j * (WARP_SIZE as usize) < count { next } else { sum };
            }
            base += SPAN_STEPS * WARP_SIZE as usize;
        }
        sum
    }
}
