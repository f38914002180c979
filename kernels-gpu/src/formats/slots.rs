//! The walk that ELL, SELL and BRC share: a dot product of `x` with one row's run of padded slots
//! stored column-major, slot `k` of the run at `first + k * stride`.
//!
//! The slots are loaded a batch at a time with no early exit at the first padding slot (issue 22;
//! PERF section 27). A loop that loads a slot's column index, tests it for padding, then gathers
//! `x` makes every slot a chain of two dependent loads, and a thread keeps one slot's bytes in
//! flight. Here every address of a batch is known before its first load returns, so a batch's
//! index and value loads all leave together, then its gathers, then its products, in slot order:
//! the sum is the one the slot-by-slot loop makes, bit for bit. A batch holds exactly the slots
//! left, up to 8 (its size a constant picked by a `match`), so no slot past the run's end is
//! addressed, and no index or value load needs a predicate; a padding slot inside the run costs its
//! index and value loads, which the short padding of ELL, SELL and BRC makes cheap, while its gather
//! and its `fma` are predicated off. On short runs the instructions issued, not the bytes, set the
//! pace (docs/PERF.md, section 31), hence running pointers and no dead steps.
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
    /// The address of slot `slot`, computed with wrapping arithmetic: only a slot inside the run's
    /// array may be loaded from it.
    fn at(self, slot: usize) -> *const Self::Stored;
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
    fn at(self, slot: usize) -> *const u32 {
        self.wrapping_add(slot)
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
    fn at(self, slot: usize) -> *const i16 {
        self.deltas.wrapping_add(slot)
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

/// Slots a thread loads together at most: 8 index and 8 value loads, then up to 8 gathers, in
/// flight at once. Measured on an H200 (PERF section 27) against the slot-by-slot loop: ELL
/// 1.23-1.89x faster, BRC 1.14-1.74x on its wide blocks. In f64 a batch's loads only leave
/// together where the entry may use more than 32 registers: a change of the batch is a change of
/// the budgets in `abi::REGISTER_BUDGETS` too (docs/PERF.md, section 32).
const BATCH: usize = 8;

/// `sum_k values[s_k] * x[column(s_k)]` over the slots `s_k = first + k * stride`, `k < width`, in
/// order of `k`, skipping padding slots; each value widened to `T` exactly.
///
/// On short runs (5-27 slots) the walk is bound by the instructions it issues, not by its bytes
/// (Nsight Compute in docs/PERF.md, section 31, which measured DIA's walk cut the same way), so it
/// issues few a slot: a batch has exactly the slots left, up to [`BATCH`] (a constant `N` picked by a `match`,
/// so no step is past the run's end and no index or value load is predicated), the addresses are
/// running pointers (one add a slot, no `first + k * stride` product), and a padding slot is kept out
/// of the sum by a predicated `fma` ([`Real::fma_if`]) rather than a select, which the compiler would
/// turn into a branch with the step's loads sunk into it (see [`Run::batch`]).
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
    let run = Run { cols, x, stride };
    // The slot the next batch starts at (computed with wrapping arithmetic: past the last batch,
    // and before the first of an empty run, it may lie outside the arrays, where it is never loaded).
    let mut stored = cols.at(first);
    let mut values = values.wrapping_add(first);
    let mut sum = T::ZERO;
    // Slots not walked yet, counted down (no sum past `width`, which may be as large as `u32::MAX`).
    let mut left = width;
    while left > 0 {
        // SAFETY: the batch's `min(left, BATCH)` slots are the next ones of the run (the caller's
        // contract), and `stored` and `values` are at the first of them.
        unsafe {
            sum = match left {
                1 => run.batch::<V, 1>(sum, &mut stored, &mut values),
                2 => run.batch::<V, 2>(sum, &mut stored, &mut values),
                3 => run.batch::<V, 3>(sum, &mut stored, &mut values),
                4 => run.batch::<V, 4>(sum, &mut stored, &mut values),
                5 => run.batch::<V, 5>(sum, &mut stored, &mut values),
                6 => run.batch::<V, 6>(sum, &mut stored, &mut values),
                7 => run.batch::<V, 7>(sum, &mut stored, &mut values),
                _ => run.batch::<V, BATCH>(sum, &mut stored, &mut values),
            };
        }
        left = left.saturating_sub(BATCH as u32);
    }
    sum
}

/// One run's walk: what every batch of its slots needs.
#[derive(Clone, Copy)]
struct Run<C, T> {
    cols: C,
    x: *const T,
    stride: usize,
}

impl<C: SlotColumns, T: Real> Run<C, T> {
    /// `sum` plus the products of the `N <= BATCH` slots whose columns `stored` and values `values`
    /// enter at, in order, skipping padding; both pointers leave `N` slots (`N * stride` elements)
    /// further. `N` is a constant, so that a batch has no dead steps to predicate off: a run of 5
    /// slots is one batch of 5.
    ///
    /// Every index and value load of the batch is issued first, then every gather of `x`, then the
    /// `fma`s in slot order: the sum of the slot-by-slot loop, bit for bit. A padding slot's gather
    /// stays predicated off (`@p ld.global.nc`, no request) rather than reading some element of `x`
    /// as DIA's does: these kernels are not told the length of `x`, and a run may be all padding
    /// where `x` has no element at all. Its `fma` is predicated off too ([`Real::fma_if`]): a select
    /// there lets the compiler branch around the `fma` and sink the step's loads (pure asm) into the
    /// branch, behind the later steps' products.
    ///
    /// # Safety
    /// The `N` slots at `*stored` and `*values`, each `stride` elements after the one before, are
    /// slots of the run (see [`padded_dot`]).
    #[inline(always)]
    unsafe fn batch<V: Widen<T>, const N: usize>(
        self,
        mut sum: T,
        stored: &mut *const C::Stored,
        values: &mut *const V,
    ) -> T {
        let mut cols = [C::PAD; N];
        let mut vs = [T::ZERO; N];
        for j in 0..N {
            // SAFETY: slot `j < N` of the batch is a slot of the run (the caller's contract).
            unsafe {
                cols[j] = C::Stored::load_nc(*stored);
                vs[j] = V::load_widened(*values);
            }
            // The next slot lies `stride` further (past the arrays after the run's last slot, where
            // it is never loaded).
            *stored = stored.wrapping_add(self.stride);
            *values = values.wrapping_add(self.stride);
        }
        let mut xs = [T::ZERO; N];
        for j in 0..N {
            let entry = cols[j] != C::PAD;
            // SAFETY: a slot that is not padding decodes to a column below the length of `x`; a
            // padding slot's load is predicated off, its address (computed with wrapping arithmetic)
            // never dereferenced.
            xs[j] = unsafe { T::load_nc_or_zero(self.x.wrapping_add(self.cols.column(cols[j])), entry) };
        }
        for j in 0..N {
            sum = vs[j].fma_if(xs[j], sum, cols[j] != C::PAD);
        }
        sum
    }
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
