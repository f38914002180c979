//! CSR kernels, one variant per file, and the row walk they share.

mod aligned;
mod balanced;
pub(crate) mod long_rows;
mod merge;
mod panels;
mod param;
mod scalar;
mod vector;
mod warp_scan;

use crate::abi::{Axpby, CsrArgs, CsrParams, EVICT_FIRST_MIN_LANES, LONG_ROW_CHUNK, WARP_SIZE};
use crate::arch::{Load, global_thread, grid_threads};
use crate::index::coop_slot;
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

/// Steps (entries per lane) of one [`span_sum`]: a long-row chunk, or a task of the balanced kernel.
const SPAN_STEPS: usize = (LONG_ROW_CHUNK / WARP_SIZE) as usize;

/// The half-open range of entries of `row`.
///
/// # Safety
/// `row < a.rows`.
#[inline(always)]
unsafe fn row_range<T>(a: &CsrArgs<T>, row: usize) -> (usize, usize) {
    let offsets = a.row_offsets.as_ptr();
    // SAFETY: `row + 1 <= rows`, and the offsets array has `rows + 1` elements.
    unsafe { (u32::load_nc(offsets.add(row)) as usize, u32::load_nc(offsets.add(row + 1)) as usize) }
}

/// Adds a row's lane sums over the warp (a butterfly) and has lane 0 write
/// `y[row] = alpha * total + beta * y[row]`: how a warp that owns a whole row (the balanced
/// kernel's) or the last of its chunks (`long_rows.rs`) finishes it.
///
/// # Safety
/// The whole warp calls it with the same `row`; `row < op.y`'s length, and no other warp writes
/// `y[row]`.
#[inline(always)]
unsafe fn warp_row_store<T: Real>(op: &Axpby<T>, row: usize, sum: T, lane: usize) {
    let total = group_sum::<T, WARP_SIZE>(sum);
    if lane == 0 {
        // SAFETY: forwarded from the caller; only lane 0 writes.
        unsafe { store_axpby(op.y.as_mut_ptr(), row, op.alpha, total, op.beta) };
    }
}

/// The row walk of the cooperative CSR kernels (`vector.rs`, `aligned.rs`) on a CSR matrix:
/// [`group_rows`] with `lane_sum(start, end, lane)` a lane's partial sum over its row's entries
/// `start..end`.
///
/// # Safety
/// `p` describes a validated CSR matrix and vectors of matching lengths; the block size is a multiple
/// of 32.
#[inline(always)]
unsafe fn rows_by_groups<T: Real, const COOP: u32>(
    p: &CsrParams<T>,
    lane_sum: impl Fn(usize, usize, usize) -> T,
) {
    let row_sum = |row: usize, lane: usize| {
        // SAFETY: `group_rows` passes rows below `rows`.
        let (start, end) = unsafe { row_range(&p.a, row) };
        lane_sum(start, end, lane)
    };
    // SAFETY: forwarded from the caller.
    unsafe { group_rows::<T, COOP>(p.a.rows, &p.op, row_sum) }
}

/// The row walk of the cooperative kernels: rows are dealt to warps in order, `COOP` lanes to a row
/// (`index::coop_slot`); `row_sum(row, lane)` is a lane's partial sum over its row; the group adds
/// its lanes' sums with shuffles and lane 0 writes `y`. The loop runs to the warp's bound, not the
/// row's, so every lane of the warp reaches the shuffles with the full member mask. The compressed-
/// index kernel (`formats/compressed.rs`) walks its rows with it too, which makes its sums the same
/// as the CSR kernels'.
///
/// # Safety
/// `op.y` has `rows` elements, no other thread writes them, and `row_sum` is safe to call for every
/// `row < rows`; the block size is a multiple of 32.
#[inline(always)]
pub(crate) unsafe fn group_rows<T: Real, const COOP: u32>(
    rows: u32,
    op: &Axpby<T>,
    row_sum: impl Fn(usize, usize) -> T,
) {
    let slot = coop_slot(global_thread(), grid_threads(), COOP);
    let rows = rows as u64;
    let mut first = slot.warp_first_row;
    while first < rows {
        let row = first + slot.group_in_warp as u64;
        let mut sum = T::ZERO;
        if row < rows {
            sum = row_sum(row as usize, slot.lane as usize);
        }
        let total = group_sum::<T, COOP>(sum);
        if row < rows && slot.lane == 0 {
            // SAFETY: `row < rows`, written by lane 0 of its group only.
            unsafe { store_axpby(op.y.as_mut_ptr(), row as usize, op.alpha, total, op.beta) };
        }
        first += slot.row_stride;
    }
}

/// Entry `k`'s column and value, read by a group of `LANES` lanes a row: leaving L1 first from
/// [`EVICT_FIRST_MIN_LANES`] lanes up.
///
/// # Safety
/// `k < nnz`.
#[inline(always)]
unsafe fn entry<T: Real, const LANES: u32>(a: &CsrArgs<T>, k: usize) -> (usize, T) {
    let (cols, vals) = (a.col_indices.as_ptr(), a.values.as_ptr());
    // SAFETY: `k < nnz`, inside both arrays (caller).
    unsafe {
        if LANES >= EVICT_FIRST_MIN_LANES {
            (u32::load_nc_evict_first(cols.add(k)) as usize, T::load_nc_evict_first(vals.add(k)))
        } else {
            (u32::load_nc(cols.add(k)) as usize, T::load_nc(vals.add(k)))
        }
    }
}

/// `sum + A[k] * x[col[k]]`, x read through the read-only data cache, by a group of `LANES` lanes a
/// row.
///
/// # Safety
/// `k < nnz`, and the host validated every column index against the length of `x`.
#[inline(always)]
unsafe fn entry_product<T: Real, const LANES: u32>(a: &CsrArgs<T>, x: *const T, k: usize, sum: T) -> T {
    // SAFETY: guaranteed by the caller.
    unsafe { entry_product_via::<T, ReadOnlyX, LANES>(a, x, k, sum) }
}

/// `sum + A[k] * x[col[k]]`, x read the way `X` says; the matrix always through the read-only path
/// ([`entry`]).
///
/// # Safety
/// As [`entry_product`].
#[inline(always)]
unsafe fn entry_product_via<T: Real, X: XLoad, const LANES: u32>(
    a: &CsrArgs<T>,
    x: *const T,
    k: usize,
    sum: T,
) -> T {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let (col, value) = entry::<T, LANES>(a, k);
        value.fma(X::load(x.add(col)), sum)
    }
}

/// The values of entries `from + lane + 32 j` for `j < STEPS`, and the elements of `x` at their
/// columns (a warp's 32 consecutive entries a step: [`entry`] for 32 lanes). Indices past `to` are
/// clamped to `to - 1` (the caller drops what they read), so every load is unconditional and in one
/// basic block: a lane issues all its column and value loads, then all its `x` loads, before the
/// first product, instead of waiting out a load chain per step.
///
/// # Safety
/// `from < to <= nnz`, and the host validated every column index against the length of `x`.
#[inline(always)]
unsafe fn span_loads<T: Real, const STEPS: usize>(
    a: &CsrArgs<T>,
    x: *const T,
    from: usize,
    to: usize,
    lane: usize,
) -> ([T; STEPS], [T; STEPS]) {
    let mut cols = [0usize; STEPS];
    let mut vals = [T::ZERO; STEPS];
    for j in 0..STEPS {
        let k = (from + lane + j * WARP_SIZE as usize).min(to - 1);
        // SAFETY: `k < to <= nnz`.
        unsafe {
            (cols[j], vals[j]) = entry::<T, WARP_SIZE>(a, k);
        }
    }
    let mut xs = [T::ZERO; STEPS];
    for j in 0..STEPS {
        // SAFETY: every column index is below the length of `x` (caller).
        xs[j] = unsafe { T::load_nc(x.add(cols[j])) };
    }
    (vals, xs)
}

/// `sum` plus the products of entries `from + lane, from + lane + 32, ...` below `to`, added in that
/// order: a span of at most [`SPAN_STEPS`] steps, its loads issued together (see [`span_loads`]).
///
/// # Safety
/// As [`span_loads`], and `to - from <= SPAN_STEPS * 32`.
#[inline(always)]
unsafe fn span_sum<T: Real>(a: &CsrArgs<T>, x: *const T, from: usize, to: usize, lane: usize, sum: T) -> T {
    // SAFETY: forwarded from the caller.
    let (vals, xs) = unsafe { span_loads::<T, SPAN_STEPS>(a, x, from, to, lane) };
    let mut sum = sum;
    for j in 0..SPAN_STEPS {
        // The product before the test, which then only selects: with the product inside it, LLVM
        // sinks the loads it alone uses into the branch, after the other steps' loads.
        let next = vals[j].fma(xs[j], sum);
        sum = if from + lane + j * (WARP_SIZE as usize) < to { next } else { sum };
    }
    sum
}

/// How a kernel reads `x`: a type parameter, so that one kernel source yields the variants that
/// Baskaran & Bordawekar compare (x through the texture cache or not).
trait XLoad {
    /// # Safety
    /// `p` is a valid, aligned global address that no thread writes during the kernel.
    unsafe fn load<T: Real>(p: *const T) -> T;
}

/// `x` through the read-only data cache (`ld.global.nc`), the successor of the texture path.
struct ReadOnlyX;

/// `x` through the ordinary global load path (`ld.global`).
struct PlainX;

impl XLoad for ReadOnlyX {
    #[inline(always)]
    unsafe fn load<T: Real>(p: *const T) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { T::load_nc(p) }
    }
}

impl XLoad for PlainX {
    #[inline(always)]
    unsafe fn load<T: Real>(p: *const T) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { T::load_global(p) }
    }
}
