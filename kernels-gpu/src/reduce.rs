//! Reductions: over a warp's lanes, over a block, and over a grid in two stages (the CG and Krylov
//! kernels' deterministic dot products; `cg.rs`, "Dot products", gives the scheme).

use crate::abi::{CG_BLOCK_THREADS, CG_MAX_BLOCKS, WARP_SIZE};
use crate::arch::{
    atomic_inc_u32, block_idx, dynamic_shared, fence_acq_rel_gpu, grid_dim, sync_threads, sync_threads_or,
    thread_idx,
};
use crate::real::Real;

/// Warps per block of the block reductions: the slots per sum of their shared memory.
const WARPS: usize = (CG_BLOCK_THREADS / WARP_SIZE) as usize;

/// Sum over the `COOP` consecutive lanes of a group (a power of two up to 32), by a butterfly of
/// `log2(COOP)` shuffles; every lane of the group ends with the total. All 32 lanes of the warp must
/// call it together.
#[inline(always)]
pub fn group_sum<T: Real, const COOP: u32>(mut v: T) -> T {
    let mut offset = COOP / 2;
    while offset > 0 {
        v = v + v.shfl_xor(offset);
        offset /= 2;
    }
    v
}

/// Each of the `N` values summed over the block: a butterfly over each warp's lanes, then the warp
/// sums added in warp order. Every thread gets the same totals.
///
/// # Safety
/// Every thread of the block calls it (block-uniform control flow); the block has
/// [`CG_BLOCK_THREADS`] threads and `N * WARPS` elements of dynamic shared memory (`N` at most
/// [`CG_MAX_SUMS`](crate::abi::CG_MAX_SUMS) or [`KRYLOV_BASIS_GROUP`](crate::abi::KRYLOV_BASIS_GROUP)).
#[inline(always)]
pub unsafe fn block_sums<T: Real, const N: usize>(values: [T; N]) -> [T; N] {
    let shared = dynamic_shared::<T>();
    let (warp, lane) = ((thread_idx() / WARP_SIZE) as usize, thread_idx() % WARP_SIZE);
    let warp_sums = values.map(group_sum::<T, WARP_SIZE>);
    let mut totals = [T::ZERO; N];
    // SAFETY: slots `k * WARPS + warp < N * WARPS`; every thread reaches both barriers (caller). The
    // second keeps a following call from overwriting slots still being read.
    unsafe {
        if lane == 0 {
            for (k, &s) in warp_sums.iter().enumerate() {
                *shared.add(k * WARPS + warp) = s;
            }
        }
        sync_threads();
        for (k, total) in totals.iter_mut().enumerate() {
            for w in 0..WARPS {
                *total = *total + *shared.add(k * WARPS + w);
            }
        }
        sync_threads();
    }
    totals
}

/// The two stages of the dot products: stores the block's `sums` in its slots of `partials`, and
/// returns, in every thread of the block that arrives last, the sums over the grid (`None` in the
/// other blocks). The last block's totals are added in block order whichever block it is.
///
/// # Safety
/// As [`block_sums`]; `partials` holds `N * CG_MAX_BLOCKS` elements, the grid
/// has at most [`CG_MAX_BLOCKS`] blocks, and `*arrivals` is 0 at the launch (it is again after it:
/// the counter wraps).
#[inline(always)]
pub unsafe fn grid_sums<T: Real, const N: usize>(
    sums: [T; N],
    partials: *mut T,
    arrivals: *mut u32,
) -> Option<[T; N]> {
    let (block, blocks) = (block_idx(), grid_dim());
    // SAFETY: forwarded from the caller.
    let block_totals = unsafe { block_sums(sums) };
    let mut last = false;
    if thread_idx() == 0 {
        // SAFETY: slot `k * CG_MAX_BLOCKS + block` is inside `partials` (`block < CG_MAX_BLOCKS`) and
        // written by this block only; the fences order the stores before the arrival and the
        // arrival before the last block's reads (release and acquire).
        unsafe {
            for (k, &s) in block_totals.iter().enumerate() {
                partials.add(k * CG_MAX_BLOCKS as usize + block as usize).write_volatile(s);
            }
            fence_acq_rel_gpu();
            last = atomic_inc_u32(arrivals, blocks - 1) == blocks - 1;
            fence_acq_rel_gpu();
        }
    }
    // SAFETY: every thread of the block reaches it (caller).
    if !unsafe { sync_threads_or(last) } {
        return None;
    }
    // SAFETY: every block stored its slots before arriving; the branch is uniform across the block
    // (`sync_threads_or` gave all threads one answer).
    Some(unsafe { grid_totals(partials, 0, blocks) })
}

/// Stage 2 of the dot products: the sums over `blocks` blocks of the partials `first .. first + N`
/// (sum `k` of block `b` at `(first + k) * CG_MAX_BLOCKS + b`), each thread taking blocks `t, t +
/// 256, ...` and the block then adding the threads' sums with [`block_sums`]: the same order
/// whichever block runs it.
///
/// # Safety
/// As [`block_sums`]; `partials` holds `(first + N) * CG_MAX_BLOCKS` elements, `blocks <= CG_MAX_BLOCKS`, and those slots were
/// stored and made visible (released, then acquired) before the call.
#[inline(always)]
pub unsafe fn grid_totals<T: Real, const N: usize>(partials: *const T, first: usize, blocks: u32) -> [T; N] {
    let mut mine = [T::ZERO; N];
    let mut b = thread_idx();
    while b < blocks {
        for (k, m) in mine.iter_mut().enumerate() {
            // SAFETY: slot `(first + k) * CG_MAX_BLOCKS + b` is inside `partials` (caller).
            *m = *m
                + unsafe { partials.add((first + k) * CG_MAX_BLOCKS as usize + b as usize).read_volatile() };
        }
        b += CG_BLOCK_THREADS;
    }
    // SAFETY: forwarded from the caller.
    unsafe { block_sums(mine) }
}

/// Stores the block's sums of `sums` as the partials `first .. first + N` of (virtual) block `slot`.
///
/// # Safety
/// As [`block_sums`]; `partials` holds `(first + N) * CG_MAX_BLOCKS` elements, `slot < CG_MAX_BLOCKS`, and no other block writes
/// these slots during the launch.
#[inline(always)]
pub unsafe fn store_block_sums<T: Real, const N: usize>(
    sums: [T; N],
    partials: *mut T,
    first: usize,
    slot: u32,
) {
    // SAFETY: forwarded from the caller.
    let totals = unsafe { block_sums(sums) };
    if thread_idx() == 0 {
        for (k, &t) in totals.iter().enumerate() {
            // SAFETY: inside `partials`, this block's (caller).
            unsafe { partials.add((first + k) * CG_MAX_BLOCKS as usize + slot as usize).write_volatile(t) };
        }
    }
}
