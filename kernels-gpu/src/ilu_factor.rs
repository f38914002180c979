//! ILU(0) and IC(0) factorised on the device, row by row in the IKJ order (Saad, "Iterative Methods
//! for Sparse Linear Systems", 2nd ed., section 10.3.2, Algorithm 10.4; IC(0) as section 10.3.5
//! writes it), over the level schedule of the lower triangular solve (Anderson & Saad 1989; the
//! scheme of cuSPARSE's `csrilu02`, Naumov 2011): row `i` is updated only by the rows `k < i` of its
//! `L` part, which are exactly the rows the lower solve of row `i` reads, so the rows of one level of
//! that schedule are factorised at once, a level after the other. The launches are the solve's own
//! (`host/src/enqueue/krylov.rs`, `ilu_launches`): a wide level a launch, a run of narrow levels one
//! block with a barrier between them.
//!
//! One thread per row. It gathers its row from `A`'s values (repeated entries summed in `A`'s
//! order), factorises it in place in the work pattern, which holds every row's final values for the
//! rows after it, and writes it in the layout the solves read (`IluFactorParams`), so that no other
//! launch rearranges it. The operations are the host oracle's (`reference::ilu::IluFactors`), in its
//! order: in f64 the factors are the oracle's bit for bit; in f32 they are rounded at every step,
//! where the oracle rounds once. The entries of row `k` that update row `i` are found by a merge of
//! the two sorted rows (rows are short: a stencil's or an element's), not by a map the host would
//! build for every pair: the pattern data stays a diagonal position a row.

use crate::abi::{
    ILU_FAULT_ENTRY, ILU_FAULT_FACTOR, ILU_FAULT_PIVOT, ILU_SOURCE_ADD, ILU_SOURCE_POSITION, ILU_SOURCE_SKIP,
    IluFactorParams,
};
use crate::arch::{Load, atomic_max_u32, global_thread, grid_threads, sync_threads};
use crate::cg::CgReal;
use core::ops::Sub;

/// An element type of the factorisation: [`CgReal`] (division, square root, finiteness) and the
/// subtraction of the updates.
trait FactorReal: CgReal + Sub<Output = Self> {}

impl FactorReal for f32 {}
impl FactorReal for f64 {}

/// Records a fault at `index` in `slot`: the slot ends holding the lowest index of the launch's
/// faults and of earlier launches' (`u32::MAX - index`, raised by an atomic max).
///
/// # Safety
/// `slot` is below `ILU_FAULTS`, `faults` holds that many slots ([`factor`]'s contract).
#[inline(always)]
unsafe fn fault<T>(p: &IluFactorParams<T>, slot: usize, index: u32) {
    // SAFETY: the caller's contract; the slots are changed only atomically during the launches.
    unsafe { atomic_max_u32(p.faults.as_mut_ptr().add(slot), u32::MAX - index) }
}

/// An element of a read-only array of the launch.
///
/// # Safety
/// `i` is inside the array `a` points at, which no thread writes during the launch.
#[inline(always)]
unsafe fn at<E: Load>(a: *const E, i: u32) -> E {
    // SAFETY: the caller's contract.
    unsafe { E::load_nc(a.add(i as usize)) }
}

/// Row `i`'s entries in the work pattern, gathered from `A`'s row `i`; false (and the fault
/// recorded, the row left as it is) when one is not finite, which the oracle refuses before
/// factorising.
///
/// # Safety
/// [`factor`]'s contract; row `i` is the calling thread's.
#[inline(always)]
unsafe fn gather<T: FactorReal>(p: &IluFactorParams<T>, i: u32) -> bool {
    let w = p.work.as_mut_ptr();
    // SAFETY: `a_offsets` holds `n + 1` offsets into `a_values` and `sources`; each source is a
    // position of row `i` in the work pattern, or the skip mark; row `i` is this thread's alone.
    unsafe {
        for e in at(p.a_offsets.as_ptr(), i)..at(p.a_offsets.as_ptr(), i + 1) {
            let source = at(p.sources.as_ptr(), e);
            if source == ILU_SOURCE_SKIP {
                continue;
            }
            let to = w.add((source & ILU_SOURCE_POSITION) as usize);
            let v = at(p.a_values.as_ptr(), e);
            *to = if source & ILU_SOURCE_ADD != 0 { *to + v } else { v };
        }
        for k in at(p.offsets.as_ptr(), i)..at(p.offsets.as_ptr(), i + 1) {
            if !(*w.add(k as usize)).is_finite() {
                fault(p, ILU_FAULT_ENTRY, k);
                return false;
            }
        }
    }
    true
}

/// Whether a pivot is refused as the oracle refuses it in `T`: zero, not finite, or with an
/// inverse that is not (ILU(0)); for IC(0) also not positive.
#[inline(always)]
fn refused<T: FactorReal>(pivot: T, positive: bool) -> bool {
    let one = T::from_u32(1);
    (positive && !(pivot > T::ZERO)) || pivot == T::ZERO || !pivot.is_finite() || !(one / pivot).is_finite()
}

/// ILU(0)'s row `i` (Algorithm 10.4): for each entry `k` left of the diagonal, in column order,
/// `a_ik /= u_kk`, then `a_ij -= a_ik u_kj` for every `j > k` of row `k`'s `U` part that row `i`
/// holds (the two rows merged, both sorted); then the row written out for the solves.
///
/// # Safety
/// [`factor`]'s contract; row `i` is the calling thread's, its `L` part's rows are factorised.
#[inline(always)]
unsafe fn ilu_row<T: FactorReal>(p: &IluFactorParams<T>, i: u32) {
    let (w, cols, offsets, diagonal) =
        (p.work.as_mut_ptr(), p.cols.as_ptr(), p.offsets.as_ptr(), p.diagonal.as_ptr());
    // SAFETY: the contract: every position below is inside row `i` (written by this thread alone)
    // or row `k < i`'s `U` part (final, written before this launch or before the last barrier).
    unsafe {
        if !gather(p, i) {
            return;
        }
        let (begin, d, end) = (at(offsets, i), at(diagonal, i), at(offsets, i + 1));
        for k in begin..d {
            let c = at(cols, k);
            let factor = *w.add(k as usize) / *w.add(at(diagonal, c) as usize);
            *w.add(k as usize) = factor;
            let mut to = k + 1;
            for j in at(diagonal, c) + 1..at(offsets, c + 1) {
                let col = at(cols, j);
                while to < end && at(cols, to) < col {
                    to += 1;
                }
                if to == end {
                    break;
                }
                if at(cols, to) == col {
                    // Not fused: the oracle's `-=` of a product, two roundings.
                    *w.add(to as usize) = *w.add(to as usize) - factor * *w.add(j as usize);
                }
            }
        }
        let pivot = *w.add(d as usize);
        if refused(pivot, false) {
            fault(p, ILU_FAULT_PIVOT, i);
        }
        let mut finite = pivot.is_finite();
        let lower = p.lower_values.as_mut_ptr().add(at(p.lower_at.as_ptr(), i) as usize);
        for k in begin..d {
            let v = *w.add(k as usize);
            finite &= v.is_finite();
            *lower.add((k - begin) as usize) = v;
        }
        *p.pivots.as_mut_ptr().add(at(p.pivot_at.as_ptr(), i) as usize) = pivot;
        let upper = p.upper_values.as_mut_ptr().add(at(p.upper_slots.as_ptr(), i) as usize);
        for k in d + 1..end {
            let v = *w.add(k as usize);
            finite &= v.is_finite();
            *upper.add((k - d - 1) as usize) = v;
        }
        if !finite {
            fault(p, ILU_FAULT_FACTOR, i);
        }
    }
}

/// IC(0)'s row `i`: for each entry `k = (i, c)` left of the diagonal, in column order,
/// `l_ic = (a_ic - Σ_{j<c} l_ij l_cj) / l_cc` over the columns both rows hold (merged), then the
/// pivot `a_ii - Σ l_ij²`, kept in the work pattern's diagonal (`l_ii` is its square root, taken
/// where it is read, as correctly rounded as the oracle's stored one). Each `l_ic` is written out
/// as ILU(0)'s layout has it, `l_ic / l_cc` in row `i`'s `L` and `l_cc l_ic` in row `c`'s `U`.
///
/// # Safety
/// [`factor`]'s contract; row `i` is the calling thread's, its `L` part's rows are factorised.
#[inline(always)]
unsafe fn ic_row<T: FactorReal>(p: &IluFactorParams<T>, i: u32) {
    let (w, cols, offsets, diagonal) =
        (p.work.as_mut_ptr(), p.cols.as_ptr(), p.offsets.as_ptr(), p.diagonal.as_ptr());
    // SAFETY: as in `ilu_row`, over the lower triangle: row `c < i`'s entries are final.
    unsafe {
        if !gather(p, i) {
            return;
        }
        let (begin, d) = (at(offsets, i), at(diagonal, i));
        let lower = p.lower_values.as_mut_ptr().add(at(p.lower_at.as_ptr(), i) as usize);
        let mut finite = true;
        for k in begin..d {
            let c = at(cols, k);
            let mut sum = *w.add(k as usize);
            let mut from = begin;
            for j in at(offsets, c)..at(diagonal, c) {
                let col = at(cols, j);
                while from < k && at(cols, from) < col {
                    from += 1;
                }
                if from == k {
                    break;
                }
                if at(cols, from) == col {
                    sum = sum - *w.add(from as usize) * *w.add(j as usize);
                }
            }
            let root = (*w.add(at(diagonal, c) as usize)).sqrt();
            let l = sum / root;
            *w.add(k as usize) = l;
            let (scaled, mirrored) = (l / root, root * l);
            finite &= scaled.is_finite() && mirrored.is_finite();
            *lower.add((k - begin) as usize) = scaled;
            *p.upper_values.as_mut_ptr().add(at(p.upper_slots.as_ptr(), k) as usize) = mirrored;
        }
        let mut squares = T::ZERO;
        for k in begin..d {
            let l = *w.add(k as usize);
            squares = squares + l * l;
        }
        let pivot = *w.add(d as usize) - squares;
        if refused(pivot, true) {
            fault(p, ILU_FAULT_PIVOT, i);
        }
        *w.add(d as usize) = pivot;
        *p.pivots.as_mut_ptr().add(at(p.pivot_at.as_ptr(), i) as usize) = pivot;
        if !(finite && pivot.is_finite()) {
            fault(p, ILU_FAULT_FACTOR, i);
        }
    }
}

/// Factorises the launch's levels, a level after the other: the grid's threads stride over a
/// level's positions, and with several levels (one block, the host's contract) the block waits at a
/// barrier before the next, so that a row reads only rows finished before it. Positions and the
/// thread's index are 32-bit, as the solves' (`ilu.rs`).
///
/// # Safety
/// `rows` and `starts[first_level ..= first_level + levels]` are the lower solve's schedule of the
/// work pattern (each level's rows distinct, below `n`, every column left of a row's diagonal a row
/// of an earlier level); `offsets`, `cols` and `diagonal` are that pattern (`n` rows, columns sorted
/// and distinct, below `n`, a diagonal each, and for IC(0) last in its row), `work` holds its
/// entries; `a_offsets` (`n + 1`, non-decreasing) bound `a_values` and `sources`, each source the
/// skip mark or a position of its own row (the first of a position's sources without the add bit);
/// `lower_at`, `pivot_at` (a row each) and `upper_slots` (a row each for ILU(0), an entry each for
/// IC(0)) place each value in `lower_values`, `pivots` and `upper_values` inside them, each slot
/// written by one row; `faults` holds `ILU_FAULTS` slots; no array overlaps another; with
/// `levels > 1` the grid is one block, every thread of which calls this.
#[inline(always)]
unsafe fn factor<T: FactorReal, const IC: bool>(p: IluFactorParams<T>) {
    let thread = global_thread().min(u64::from(u32::MAX)) as u32;
    let stride = grid_threads().min(u64::from(u32::MAX)) as u32;
    // SAFETY: the contract above; the barrier is reached by every thread of the one block (the
    // level loop's count is the launch's).
    unsafe {
        for l in 0..p.levels {
            let (start, end) =
                (at(p.starts.as_ptr(), p.first_level + l), at(p.starts.as_ptr(), p.first_level + l + 1));
            if thread < end - start {
                let mut k = start + thread;
                loop {
                    let row = at(p.rows.as_ptr(), k);
                    if IC {
                        ic_row(&p, row)
                    } else {
                        ilu_row(&p, row)
                    }
                    if end - k <= stride {
                        break;
                    }
                    k += stride;
                }
            }
            if l + 1 < p.levels {
                sync_threads();
            }
        }
    }
}

/// `ilu_factor_*`: ILU(0)'s rows of the launch's levels ([`ilu_row`]).
///
/// # Safety
/// [`factor`]'s contract.
#[inline(always)]
unsafe fn ilu<T: FactorReal>(p: IluFactorParams<T>) {
    // SAFETY: the caller's contract.
    unsafe { factor::<T, false>(p) }
}

/// `ic_factor_*`: IC(0)'s rows of the launch's levels ([`ic_row`]).
///
/// # Safety
/// [`factor`]'s contract, over the lower triangle.
#[inline(always)]
unsafe fn ic<T: FactorReal>(p: IluFactorParams<T>) {
    // SAFETY: the caller's contract.
    unsafe { factor::<T, true>(p) }
}

crate::ptx_entry!(ilu_factor_f32, IluFactorParams<f32>, ilu::<f32>);
crate::ptx_entry!(ilu_factor_f64, IluFactorParams<f64>, ilu::<f64>);
crate::ptx_entry!(ic_factor_f32, IluFactorParams<f32>, ic::<f32>);
crate::ptx_entry!(ic_factor_f64, IluFactorParams<f64>, ic::<f64>);
