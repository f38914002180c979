//! BRC, Blocked Row-Column (Ashari, Sedaghati, Eisenlohr & Sadayappan, J. Parallel Distrib. Comput.
//! 2015): one warp per block of 32 pieces, one lane per piece.
//!
//! The host sorts rows by length, splits rows longer than the block width bound B2 into pieces, and
//! groups 32 pieces of similar length into a block stored column-major: entry `j` of lane `l` at
//! `block_ptr[b] + 32 * j + l`, so a warp's loads at each step are 32 consecutive words. A piece's
//! padding slots come after its entries and hold `PAD_COL`; a lane walks its piece's slots a batch at a
//! time ([`padded_dot`], shared with ELL).
//!
//! A lane whose piece is a whole row writes `alpha * sum + beta * y` to that row. A piece of a split
//! row (its target has `BRC_SPLIT` set, the rest is its slot) is combined in one of two ways:
//! - `spmv_brc_atomic_*`: atomically adds `alpha * sum` to its row, after `spmv_brc_prescale_*` has
//!   scaled the split rows by `beta` (two launches on one stream; the order of the additions varies).
//! - `spmv_brc_partials_*`: stores `sum` to its slot of a scratch buffer, then `spmv_brc_combine_*`
//!   sums each split row's slots in order and writes the row (two launches; deterministic).
//!
//! The split-row kernels run one thread per split row, grid stride. None of these kernels shuffles,
//! so lanes may diverge freely.

use super::FormatReal;
use super::slots::padded_dot;
use crate::abi::{BRC_SPLIT, BrcParams, WARP_SIZE};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// # Safety
/// `p` describes a validated BRC matrix (block pointers and widths inside the entry arrays, every
/// column below the length of `x` or `PAD_COL`, every target a row of `y` or a split flag with a
/// slot of the scratch buffer) and vectors of matching lengths.
#[inline(always)]
unsafe fn brc<T: FormatReal, const ATOMIC: bool>(p: BrcParams<T>) {
    let thread = global_thread();
    let lane = (thread % WARP_SIZE as u64) as usize;
    let warps = grid_threads() / WARP_SIZE as u64;
    let mut block = thread / WARP_SIZE as u64;
    while block < p.a.blocks as u64 {
        let b = block as usize;
        let piece = b * WARP_SIZE as usize + lane;
        if piece < p.a.pieces as usize {
            // SAFETY: `b < blocks` and `piece < pieces`; the block's `width` columns of 32 slots lie
            // inside the entry arrays, and its columns are below the length of `x` or `PAD_COL`
            // (host validation).
            unsafe {
                let width = u32::load_nc(p.a.block_width.as_ptr().add(b));
                let first = u32::load_nc(p.a.block_ptr.as_ptr().add(b)) as usize + lane;
                let sum = padded_dot(
                    p.a.cols.as_ptr(),
                    p.a.values.as_ptr(),
                    p.op.x.as_ptr(),
                    first,
                    WARP_SIZE as usize,
                    width,
                );
                let target = u32::load_nc(p.a.targets.as_ptr().add(piece));
                if target & BRC_SPLIT == 0 {
                    store_axpby(p.op.y.as_mut_ptr(), target as usize, p.op.alpha, sum, p.op.beta);
                } else {
                    let s = (target & !BRC_SPLIT) as usize;
                    if ATOMIC {
                        let row = u32::load_nc(p.split.slot_rows.as_ptr().add(s)) as usize;
                        T::atomic_add(p.op.y.as_mut_ptr().add(row), p.op.alpha * sum);
                    } else {
                        *p.split.partials.as_mut_ptr().add(s) = sum;
                    }
                }
            }
        }
        block += warps;
    }
}

/// `y[row] = beta * y[row]` for every split row (0 when `beta == 0`), before the atomic additions.
///
/// # Safety
/// As for [`brc`].
#[inline(always)]
unsafe fn brc_prescale<T: Real>(p: BrcParams<T>) {
    let (mut s, stride) = (global_thread(), grid_threads());
    while s < p.split.split_count as u64 {
        // SAFETY: `s < split_count`; split rows are rows of `y`, each held by one thread.
        unsafe {
            let row = u32::load_nc(p.split.split_rows.as_ptr().add(s as usize)) as usize;
            store_axpby(p.op.y.as_mut_ptr(), row, T::ZERO, T::ZERO, p.op.beta);
        }
        s += stride;
    }
}

/// `y[row] = alpha * (sum of the row's slots, in order) + beta * y[row]` for every split row.
///
/// # Safety
/// As for [`brc`]; `spmv_brc_partials_*` has written every slot.
#[inline(always)]
unsafe fn brc_combine<T: Real>(p: BrcParams<T>) {
    let (mut s, stride) = (global_thread(), grid_threads());
    while s < p.split.split_count as u64 {
        let i = s as usize;
        // SAFETY: `i < split_count`; `split_ptr` has `split_count + 1` entries bounding the slots.
        unsafe {
            let row = u32::load_nc(p.split.split_rows.as_ptr().add(i)) as usize;
            let start = u32::load_nc(p.split.split_ptr.as_ptr().add(i)) as usize;
            let end = u32::load_nc(p.split.split_ptr.as_ptr().add(i + 1)) as usize;
            let mut sum = T::ZERO;
            for slot in start..end {
                sum = sum + T::load_nc(p.split.partials.as_ptr().add(slot));
            }
            store_axpby(p.op.y.as_mut_ptr(), row, p.op.alpha, sum, p.op.beta);
        }
        s += stride;
    }
}

crate::ptx_entry!(spmv_brc_atomic_f32, BrcParams<f32>, brc::<f32, true>);
crate::ptx_entry!(spmv_brc_atomic_f64, BrcParams<f64>, brc::<f64, true>);
crate::ptx_entry!(spmv_brc_partials_f32, BrcParams<f32>, brc::<f32, false>);
crate::ptx_entry!(spmv_brc_partials_f64, BrcParams<f64>, brc::<f64, false>);
crate::ptx_entry!(spmv_brc_prescale_f32, BrcParams<f32>, brc_prescale::<f32>);
crate::ptx_entry!(spmv_brc_prescale_f64, BrcParams<f64>, brc_prescale::<f64>);
crate::ptx_entry!(spmv_brc_combine_f32, BrcParams<f32>, brc_combine::<f32>);
crate::ptx_entry!(spmv_brc_combine_f64, BrcParams<f64>, brc_combine::<f64>);
