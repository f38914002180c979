//! The CSR form of `Aᵀ`, built on the device from `A`'s arrays; ours. `Aᵀ`'s entries are `A`'s
//! sorted by column, stably: a least-significant-digit radix sort (Satish, Harris & Garland,
//! "Designing efficient sorting algorithms for manycore GPUs", IPDPS 2009, section 3: per-tile digit
//! counts, their scan, a stable scatter) of the column indices, carrying each entry's index. `A`'s
//! entries are in row order, and a stable sort keeps that order among equal columns, so each row of
//! `Aᵀ` comes out sorted by the row of `A` (and, for repeated columns in one row, by position): the
//! same arrays on every run, whatever the timing.
//!
//! The launches, in stream order (the host's `enqueue/transpose.rs` makes them):
//! 1. `csrt_build_init`: each entry's row of `A`, and the identity permutation. One thread per row.
//! 2. Per [`RADIX_BITS`](crate::abi::RADIX_BITS) bits of the largest column index:
//!    `csrt_build_histogram` (each tile's count per digit), `csrt_build_scan` over the counts
//!    (digit-major, so the scan gives each (digit, tile) its first position), `csrt_build_scatter` (each entry to its position, keys and payload
//!    ping-ponging between two buffers). A warp per tile of [`RADIX_TILE`] entries, walked in order
//!    32 entries at a time: `match.any` finds the lanes of equal digits, a lane's rank among them
//!    is the count of lower lanes, and the lowest lane adds the group to the digit's counter in the
//!    warp's slice of shared memory; so the scatter is stable without a block-wide scan.
//! 3. `csrt_build_offsets`: the row offsets of `Aᵀ`, by a binary search of each column in the sorted
//!    keys. One thread per offset.
//! 4. `csrt_build_gather_*`: each position's row of `A` (`Aᵀ`'s column) and value, through the
//!    permutation. One thread per entry.

use crate::abi::{
    RADIX_DIGITS, RADIX_TILE, RADIX_TILE_STEPS, RadixParams, SCAN_ITEMS, ScanParams, TransposeGatherParams,
    TransposeInitParams, TransposeOffsetsParams, WARP_SIZE,
};
use crate::arch::{
    Load, block_dim, dynamic_shared, global_thread, grid_threads, match_any_b32, shfl_up_b32, sync_threads,
    sync_warp, thread_idx,
};

/// The digit of a lane past the last entry: outside `0 .. RADIX_DIGITS`, so it matches no entry.
const NO_DIGIT: u32 = RADIX_DIGITS;

/// # Safety
/// `p.row_offsets` holds `p.rows + 1` valid CSR offsets; `entry_rows` and `perm` hold `nnz` elements.
#[inline(always)]
unsafe fn init(p: TransposeInitParams) {
    let (mut row, stride) = (global_thread(), grid_threads());
    while row < u64::from(p.rows) {
        let r = row as usize;
        // SAFETY: `r < rows`; the row's entries `start .. end` are below `nnz`, and each belongs to
        // this thread alone.
        unsafe {
            let start = u32::load_nc(p.row_offsets.as_ptr().add(r)) as usize;
            let end = u32::load_nc(p.row_offsets.as_ptr().add(r + 1)) as usize;
            for k in start..end {
                *p.entry_rows.as_mut_ptr().add(k) = r as u32;
                *p.perm.as_mut_ptr().add(k) = k as u32;
            }
        }
        row += stride;
    }
}

/// Where a warp of a radix kernel is: its first tile, the tile stride, its lane, and its slice of
/// [`RADIX_DIGITS`] counters in the block's shared memory.
struct RadixWarp {
    first_tile: u64,
    tile_stride: u64,
    lane: u32,
    counters: *mut u32,
}

impl RadixWarp {
    /// # Safety
    /// The block has `RADIX_SHARED_BYTES` of dynamic shared memory for its `blockDim / 32` warps.
    #[inline(always)]
    unsafe fn new() -> Self {
        let warp_in_block = (thread_idx() / WARP_SIZE) as usize;
        Self {
            first_tile: global_thread() / u64::from(WARP_SIZE),
            tile_stride: grid_threads() / u64::from(WARP_SIZE),
            lane: thread_idx() % WARP_SIZE,
            // SAFETY: the caller's contract: warp `w`'s slice starts at `w * RADIX_DIGITS`.
            counters: unsafe { dynamic_shared::<u32>().add(warp_in_block * RADIX_DIGITS as usize) },
        }
    }

    /// Entry `step` of `tile` for this lane, with its digit ([`NO_DIGIT`] past the last entry), and
    /// the lanes of the warp holding the same digit. The whole warp calls it.
    ///
    /// # Safety
    /// `p.keys_in` holds `p.n` elements.
    #[inline(always)]
    unsafe fn entry(&self, p: &RadixParams, tile: u64, step: u32) -> (usize, u32, u32, u32) {
        let k = tile * u64::from(RADIX_TILE) + u64::from(step * WARP_SIZE + self.lane);
        let (key, digit) = if k < u64::from(p.n) {
            // SAFETY: `k < n`.
            let key = unsafe { u32::load_nc(p.keys_in.as_ptr().add(k as usize)) };
            (key, (key >> p.shift) % RADIX_DIGITS)
        } else {
            (0, NO_DIGIT)
        };
        (k as usize, key, digit, match_any_b32(digit))
    }
}

/// Stage 1 of a radix pass: `counts[d * tiles + tile]` = the entries of `tile` whose digit is `d`.
///
/// # Safety
/// `p.keys_in` holds `p.n` elements, `p.counts` `RADIX_DIGITS * p.tiles`, `p.tiles` covers `n`; the
/// block is whole warps with `RADIX_SHARED_BYTES` of dynamic shared memory.
#[inline(always)]
unsafe fn histogram(p: RadixParams) {
    // SAFETY: the caller's contract.
    let w = unsafe { RadixWarp::new() };
    let mut tile = w.first_tile;
    // The bound is the warp's: every lane reaches `match.any` and the warp barriers.
    while tile < u64::from(p.tiles) {
        // SAFETY: counters `lane + 32 i < RADIX_DIGITS` of this warp's slice; `counts` holds
        // `RADIX_DIGITS * tiles` elements; entries below `n` only.
        unsafe {
            for d in (w.lane..RADIX_DIGITS).step_by(WARP_SIZE as usize) {
                *w.counters.add(d as usize) = 0;
            }
            sync_warp();
            for step in 0..RADIX_TILE_STEPS {
                let (_, _, digit, peers) = w.entry(&p, tile, step);
                if digit != NO_DIGIT && peers.trailing_zeros() == w.lane {
                    *w.counters.add(digit as usize) += peers.count_ones();
                }
                sync_warp();
            }
            for d in (w.lane..RADIX_DIGITS).step_by(WARP_SIZE as usize) {
                *p.counts.as_mut_ptr().add(d as usize * p.tiles as usize + tile as usize) =
                    *w.counters.add(d as usize);
            }
            sync_warp();
        }
        tile += w.tile_stride;
    }
}

/// Stage 3 of a radix pass: each entry of `keys_in`/`perm_in` to its stable position in
/// `keys_out`/`perm_out`, from the scanned counts.
///
/// # Safety
/// As [`histogram`], with `counts` scanned; `perm_in` holds `n` elements, `keys_out` and `perm_out`
/// `n` each, not overlapping the inputs.
#[inline(always)]
unsafe fn scatter(p: RadixParams) {
    // SAFETY: the caller's contract.
    let w = unsafe { RadixWarp::new() };
    let below = (1u32 << w.lane) - 1;
    let mut tile = w.first_tile;
    while tile < u64::from(p.tiles) {
        // SAFETY: as in `histogram`; the scanned counts put every entry at a distinct position below
        // `n` (a permutation), so each output element is written once.
        unsafe {
            for d in (w.lane..RADIX_DIGITS).step_by(WARP_SIZE as usize) {
                *w.counters.add(d as usize) =
                    *p.counts.as_ptr().add(d as usize * p.tiles as usize + tile as usize);
            }
            sync_warp();
            for step in 0..RADIX_TILE_STEPS {
                let (k, key, digit, peers) = w.entry(&p, tile, step);
                if digit != NO_DIGIT {
                    let at = (*w.counters.add(digit as usize) + (peers & below).count_ones()) as usize;
                    *p.keys_out.as_mut_ptr().add(at) = key;
                    *p.perm_out.as_mut_ptr().add(at) = u32::load_nc(p.perm_in.as_ptr().add(k));
                }
                // Every lane has read its digit's counter before the lowest lane moves it on.
                sync_warp();
                if digit != NO_DIGIT && peers.trailing_zeros() == w.lane {
                    *w.counters.add(digit as usize) += peers.count_ones();
                }
                sync_warp();
            }
        }
        tile += w.tile_stride;
    }
}

/// The exclusive prefix sum of `p.data` in place, by one block: tiles of `SCAN_ITEMS` consecutive
/// elements per thread, a shuffle scan of the threads' sums within each warp, the warps' sums
/// through shared memory, and a carry from tile to tile; ours. One block suffices for a one-time
/// build: the transpose's counts are 1/16 of the entries (a decoupled look-back scan, Merrill &
/// Garland 2016, would spread it over the GPU at the price of a far longer kernel). The assembly
/// from COO triples (`assemble.rs`) scans one flag per triple with it too, its slowest step at
/// large sizes (docs/PERF.md, section 20).
///
/// # Safety
/// `p.data` holds `p.len` elements; one block of `SCAN_BLOCK_THREADS` threads with
/// `SCAN_SHARED_BYTES` of dynamic shared memory.
#[inline(always)]
unsafe fn scan(p: ScanParams) {
    const ITEMS: usize = SCAN_ITEMS as usize;
    let shared = dynamic_shared::<u32>();
    let (t, lane, warp) = (thread_idx(), thread_idx() % WARP_SIZE, thread_idx() / WARP_SIZE);
    let warps = block_dim() / WARP_SIZE;
    let tile = block_dim() as usize * ITEMS;
    let (len, data) = (p.len as usize, p.data.as_mut_ptr());
    let mut carry = 0u32;
    let mut base = 0usize;
    // The bound is the block's: every thread reaches the shuffles and barriers.
    while base < len {
        let first = base + t as usize * ITEMS;
        let mut items = [0u32; ITEMS];
        for (i, item) in items.iter_mut().enumerate() {
            if first + i < len {
                // SAFETY: `first + i < len`.
                *item = unsafe { *data.add(first + i) };
            }
        }
        let total: u32 = items.iter().sum();
        let mut inclusive = total;
        let mut d = 1;
        while d < WARP_SIZE {
            let lower = shfl_up_b32(inclusive, d);
            if lane >= d {
                inclusive += lower;
            }
            d *= 2;
        }
        let (mut before, mut tile_total) = (0u32, 0u32);
        // SAFETY: slots `0 .. warps` of `SCAN_SHARED_BYTES`; every thread reaches both barriers, the
        // second keeping the next tile from overwriting slots still being read.
        unsafe {
            if lane == WARP_SIZE - 1 {
                *shared.add(warp as usize) = inclusive;
            }
            sync_threads();
            for w in 0..warps {
                let s = *shared.add(w as usize);
                before += if w < warp { s } else { 0 };
                tile_total += s;
            }
            sync_threads();
        }
        let mut running = carry + before + inclusive - total;
        for (i, &item) in items.iter().enumerate() {
            if first + i < len {
                // SAFETY: `first + i < len`, this thread's element.
                unsafe { *data.add(first + i) = running };
            }
            running += item;
        }
        carry += tile_total;
        base += tile;
    }
}

/// # Safety
/// `p.keys` holds `p.nnz` ascending elements, `p.offsets` `p.cols + 1`.
#[inline(always)]
unsafe fn offsets(p: TransposeOffsetsParams) {
    let (mut j, stride) = (global_thread(), grid_threads());
    while j <= u64::from(p.cols) {
        let (mut lo, mut hi) = (0usize, p.nnz as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // SAFETY: `mid < hi <= nnz`.
            if u64::from(unsafe { u32::load_nc(p.keys.as_ptr().add(mid)) }) < j {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        // SAFETY: `j <= cols`.
        unsafe { *p.offsets.as_mut_ptr().add(j as usize) = lo as u32 };
        j += stride;
    }
}

/// # Safety
/// `p.perm` is a permutation of `0 .. p.nnz`; `entry_rows`, `values`, `out_cols` and `out_values`
/// hold `nnz` elements each.
#[inline(always)]
unsafe fn gather<T: Load>(p: TransposeGatherParams<T>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(p.nnz) {
        let at = i as usize;
        // SAFETY: `at < nnz`, and so is `perm[at]`.
        unsafe {
            let k = u32::load_nc(p.perm.as_ptr().add(at)) as usize;
            *p.out_cols.as_mut_ptr().add(at) = u32::load_nc(p.entry_rows.as_ptr().add(k));
            *p.out_values.as_mut_ptr().add(at) = T::load_nc(p.values.as_ptr().add(k));
        }
        i += stride;
    }
}

crate::ptx_entry!(csrt_build_init, TransposeInitParams, init);
crate::ptx_entry!(csrt_build_histogram, RadixParams, histogram);
crate::ptx_entry!(csrt_build_scatter, RadixParams, scatter);
crate::ptx_entry!(csrt_build_scan, ScanParams, scan);
crate::ptx_entry!(csrt_build_offsets, TransposeOffsetsParams, offsets);
crate::ptx_entry!(csrt_build_gather_f32, TransposeGatherParams<f32>, gather::<f32>);
crate::ptx_entry!(csrt_build_gather_f64, TransposeGatherParams<f64>, gather::<f64>);
