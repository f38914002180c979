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
//!
//! The walk is generic over how a slot stores its column ([`SlotColumns`]: a plain index, or a
//! 16-bit offset from the run's row) and its value ([`Widen`]: the product's type or a narrower
//! one), so that the compressed ELL format moves fewer bytes through the same walk.

use super::widen::Widen;
use crate::abi::{Axpby, CsrArgs, MAX_ROW_DELTA, PAD_COL, PAD_DELTA};
use crate::arch::{Load, atomic_max_u32, global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// Where a run's slots keep their columns, and how a stored column decodes.
pub(super) trait SlotColumns: Copy {
    /// What a slot stores.
    type Stored: Load + PartialEq;
    /// The stored form of a padding slot.
    const PAD: Self::Stored;
    /// The address of slot `slot`.
    ///
    /// # Safety
    /// `slot` lies inside the run's array.
    unsafe fn at(self, slot: usize) -> *const Self::Stored;
    /// The column of a slot that stores `stored`, not [`SlotColumns::PAD`].
    fn column(self, stored: Self::Stored) -> usize;
    /// What a slot of this run stores for `column`, the inverse of [`SlotColumns::column`]; `None`
    /// where the storage cannot hold it.
    fn stored(self, column: u32) -> Option<Self::Stored>;
}

/// Plain 32-bit columns, [`PAD_COL`] in padding (ELL, SELL, BRC).
impl SlotColumns for *const u32 {
    type Stored = u32;
    const PAD: u32 = PAD_COL;

    #[inline(always)]
    unsafe fn at(self, slot: usize) -> *const u32 {
        // SAFETY: guaranteed by the caller.
        unsafe { self.add(slot) }
    }

    #[inline(always)]
    fn column(self, stored: u32) -> usize {
        stored as usize
    }

    #[inline(always)]
    fn stored(self, column: u32) -> Option<u32> {
        Some(column)
    }
}

/// The columns of row `row` as 16-bit offsets from `row`, [`PAD_DELTA`] in padding (the
/// compressed ELL format, `abi::CompressedEllArgs`).
#[derive(Clone, Copy)]
pub(super) struct RowDeltas {
    pub deltas: *const i16,
    pub row: usize,
}

impl SlotColumns for RowDeltas {
    type Stored = i16;
    const PAD: i16 = PAD_DELTA;

    #[inline(always)]
    unsafe fn at(self, slot: usize) -> *const i16 {
        // SAFETY: guaranteed by the caller.
        unsafe { self.deltas.add(slot) }
    }

    #[inline(always)]
    fn column(self, stored: i16) -> usize {
        self.row.wrapping_add_signed(isize::from(stored))
    }

    #[inline(always)]
    fn stored(self, column: u32) -> Option<i16> {
        let delta = i64::from(column) - self.row as i64;
        (delta.unsigned_abs() <= MAX_ROW_DELTA as u64).then_some(delta as i16)
    }
}

/// Slots a thread loads together: 8 index and 8 value loads, then up to 8 gathers, in flight at
/// once. Measured on an H200 (PERF section 27) against the slot-by-slot loop: ELL 1.23-1.89x
/// faster, BRC 1.14-1.74x on its wide blocks.
const BATCH: usize = 8;

/// `sum_k values[s_k] * x[column(s_k)]` over the slots `s_k = first + k * stride`, `k < width`, in
/// order of `k`, skipping padding slots; each value widened to `T` exactly.
///
/// # Safety
/// Every slot `first + k * stride` with `k < width` lies inside `cols` and `values`, which no thread
/// writes during the kernel; every slot that is not padding decodes to a column below the length of
/// `x`.
#[inline(always)]
pub(super) unsafe fn padded_dot<C: SlotColumns, V: Widen<T>, T: Real>(
    cols: C,
    values: *const V,
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
        let mut batch_cols = [C::PAD; BATCH];
        let mut batch_values = [T::ZERO; BATCH];
        for j in 0..BATCH {
            let live = (j as u32) < left;
            // A dead step addresses the run's last slot (in bounds) and loads nothing.
            let slot = first + (done + (j as u32).min(left - 1)) as usize * stride;
            // SAFETY: `slot` is one of the run's slots (the caller's contract).
            unsafe {
                let col = C::Stored::load_nc_or_zero(cols.at(slot), live);
                batch_cols[j] = if live { col } else { C::PAD };
                batch_values[j] = V::load_widened_or_zero(values.add(slot), live);
            }
        }
        let mut xs = [T::ZERO; BATCH];
        for j in 0..BATCH {
            let entry = batch_cols[j] != C::PAD;
            let col = if entry { cols.column(batch_cols[j]) } else { 0 };
            // SAFETY: a slot that is not padding decodes to a column below the length of `x`; a
            // padding step loads nothing (its address, `x` itself, is not dereferenced).
            xs[j] = unsafe { T::load_nc_or_zero(x.add(col), entry) };
        }
        for j in 0..BATCH {
            let next = batch_values[j].fma(xs[j], sum);
            sum = if batch_cols[j] != C::PAD { next } else { sum };
        }
        done = done.saturating_add(BATCH as u32);
    }
    sum
}

/// `y = alpha * A * x + beta * y` over ELL's column-major slots, a thread per row with a grid stride:
/// slot `k` of row `r` at `k * rows + r`, its column kept by `columns(r)`, its value in `values`. The
/// loop of ELL and of compressed ELL (Bell & Garland, NVIDIA TR 2008, section 4.2).
///
/// # Safety
/// Every slot `k * rows + r`, `k < width`, `r < rows`, lies inside `columns(r)`'s array and
/// `values`, which no thread writes during the kernel; every slot that is not padding decodes to a
/// column below the length of `op.x`; `op.y` has `rows` elements.
#[inline(always)]
pub(super) unsafe fn ell_rows<C: SlotColumns, V: Widen<T>, T: Real>(
    rows: u32,
    width: u32,
    columns: impl Fn(usize) -> C,
    values: *const V,
    op: &Axpby<T>,
) {
    let (mut row, stride) = (global_thread(), grid_threads());
    while row < u64::from(rows) {
        let r = row as usize;
        // SAFETY: the run of row `r < rows` is its slots `r + k * rows`, `k < width` (the caller's
        // contract).
        let sum = unsafe { padded_dot(columns(r), values, op.x.as_ptr(), r, rows as usize, width) };
        // SAFETY: `r < rows`, and row `r` belongs to this thread alone.
        unsafe { store_axpby(op.y.as_mut_ptr(), r, op.alpha, sum, op.beta) };
        row += stride;
    }
}

/// Writes the ELL slots of the CSR matrix `csr` (or, without `pattern`, the values of its entries
/// alone, after the matrix's values were replaced), a thread per row: row `r`'s entry `k` to slot
/// `k * rows + r`, its column as `columns(r)` stores it, then padding ([`SlotColumns::PAD`] and 0).
/// The warp's writes of each slot are 32 consecutive elements; its reads of the CSR arrays are the
/// thread-per-row kernel's, once. A column the storage cannot hold raises `*misfit` to 1 and leaves
/// padding in its slot: the copy is then unusable. The build of ELL's and compressed ELL's copies.
///
/// # Safety
/// `csr` is valid CSR of `rows` rows, none longer than `width`; `stored` and `values` hold `width *
/// rows` slots, which no other thread reads or writes during the kernel; `misfit` is a valid `u32`
/// that the kernel changes only atomically wherever `columns` can fail to store a column.
#[inline(always)]
pub(super) unsafe fn ell_rows_from_csr<C: SlotColumns, T: Real>(
    csr: &CsrArgs<T>,
    (rows, width): (u32, u32),
    columns: impl Fn(usize) -> C,
    (stored, values): (*mut C::Stored, *mut T),
    pattern: bool,
    misfit: *mut u32,
) {
    let (mut row, stride) = (global_thread(), grid_threads());
    while row < u64::from(rows) {
        let r = row as usize;
        // SAFETY: `r < rows`, so offsets `r` and `r + 1` exist; the row's entries `first + k`,
        // `k < len <= width`, lie inside the CSR arrays, and its slots `k * rows + r`, `k < width`,
        // inside `stored` and `values`, written by this thread alone.
        unsafe {
            let first = u32::load_nc(csr.row_offsets.as_ptr().add(r)) as usize;
            let len = u32::load_nc(csr.row_offsets.as_ptr().add(r + 1)) as usize - first;
            let mut fits = true;
            for k in 0..width as usize {
                let slot = k * rows as usize + r;
                let entry = k < len;
                if pattern {
                    let column = if entry {
                        let column = columns(r).stored(u32::load_nc(csr.col_indices.as_ptr().add(first + k)));
                        fits &= column.is_some();
                        column.unwrap_or(C::PAD)
                    } else {
                        C::PAD
                    };
                    *stored.add(slot) = column;
                }
                if entry {
                    *values.add(slot) = T::load_nc(csr.values.as_ptr().add(first + k));
                } else if pattern {
                    *values.add(slot) = T::ZERO;
                }
            }
            if !fits {
                atomic_max_u32(misfit, 1);
            }
        }
        row += stride;
    }
}
