//! The walk that ELL, SELL and BRC share: a dot product of `x` with one row's run of padded slots
//! stored column-major, slot `k` of the run at `first + k * stride`.
//!
//! The slots are loaded a batch at a time with no early exit at the first padding slot (issue 22;
//! PERF section 27). A loop that loads a slot's column index, tests it for padding, then gathers
//! `x` makes every slot a chain of two dependent loads, and a thread keeps one slot's bytes in
//! flight. Here every address of a batch is known before its first load returns, so a batch's
//! index and value loads all leave together, then its gathers, then its products, in slot order:
//! the sum is the one the slot-by-slot loop makes, bit for bit. Slots past the run's end are
//! predicated off (`@p ld.global.nc`: no request, no branch); a padding slot inside the run costs
//! its index and value loads, which the short padding of ELL, SELL and BRC makes cheap.

use crate::abi::PAD_COL;
use crate::arch::Load;
use crate::real::Real;

/// Slots a thread loads together: 8 index and 8 value loads, then up to 8 gathers, in flight at
/// once. Measured on an H200 (PERF section 27) against the slot-by-slot loop: ELL 1.23-1.89x
/// faster, BRC 1.14-1.74x on its wide blocks.
const BATCH: usize = 8;

/// `sum_k values[s_k] * x[cols[s_k]]` over the slots `s_k = first + k * stride`, `k < width`, in
/// order of `k`, skipping the slots whose column is `PAD_COL`.
///
/// # Safety
/// Every slot `first + k * stride` with `k < width` lies inside `cols` and `values`, which no thread
/// writes during the kernel; every column that is not `PAD_COL` is below the length of `x`.
#[inline(always)]
pub(super) unsafe fn padded_dot<T: Real>(
    cols: *const u32,
    values: *const T,
    x: *const T,
    first: usize,
    stride: usize,
    width: u32,
) -> T {
    let mut sum = T::ZERO;
    // Slots walked so far; the next batch's steps are `done + j`, live while `j < width - done`
    // (no sum past `width`, which may be as large as `u32::MAX`).
    let mut done = 0u32;
    while done < width {
        let left = width - done;
        let mut batch_cols = [PAD_COL; BATCH];
        let mut batch_values = [T::ZERO; BATCH];
        for j in 0..BATCH {
            let live = (j as u32) < left;
            // A dead step addresses the run's last slot (in bounds) and loads nothing.
            let slot = first + (done + (j as u32).min(left - 1)) as usize * stride;
            // SAFETY: `slot` is one of the run's slots (the caller's contract).
            unsafe {
                let col = u32::load_nc_or_zero(cols.add(slot), live);
                batch_cols[j] = if live { col } else { PAD_COL };
                batch_values[j] = T::load_nc_or_zero(values.add(slot), live);
            }
        }
        let mut xs = [T::ZERO; BATCH];
        for j in 0..BATCH {
            let entry = batch_cols[j] != PAD_COL;
            let col = if entry { batch_cols[j] as usize } else { 0 };
            // SAFETY: a column that is not `PAD_COL` is below the length of `x`; a padding step
            // loads nothing (its address, `x` itself, is not dereferenced).
            xs[j] = unsafe { T::load_nc_or_zero(x.add(col), entry) };
        }
        for j in 0..BATCH {
            let next = batch_values[j].fma(xs[j], sum);
            sum = if batch_cols[j] != PAD_COL { next } else { sum };
        }
        done = done.saturating_add(BATCH as u32);
    }
    sum
}
