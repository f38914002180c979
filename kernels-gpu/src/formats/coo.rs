//! COO: `y += alpha * A * x` over (row, column, value) triples sorted by row. `y` must already hold
//! `beta * y`: the host scales it first (a separate launch of `spmv_scale_*`, on the same stream), or
//! an ELL or dense-block kernel wrote it (HYB and the dense-block remainder).
//!
//! Two variants:
//! - `spmv_coo_atomic_*`: one thread per entry, one atomic add per entry: the baseline the papers
//!   compare against. Thread `t` handles entries `t, t + grid, ...`.
//! - `spmv_coo_segmented_*`: a warp per interval of `interval` consecutive entries (Bell & Garland,
//!   NVIDIA TR 2008, section 4.4). The warp walks its interval 32 entries at a time, sums the
//!   products of each run of equal rows with a segmented scan of shuffles, and adds each run's sum to
//!   `y` with one atomic; the run that reaches lane 31 is carried in a register into the next 32
//!   entries, so a row within one interval costs one atomic (Bell & Garland carry it to a second
//!   kernel instead; an atomic per interval boundary is cheaper than that launch). The loop bound of
//!   a warp depends only on its interval, so every lane reaches the shuffles.

use super::FormatReal;
use crate::abi::{CooParams, WARP_SIZE};
use crate::arch::{Load, global_thread, grid_threads, shfl_down_b32, shfl_up_b32};

/// The row of a lane without an entry. Row indices are below the row count, itself at most
/// `u32::MAX`, so no entry has this row.
const NO_ROW: u32 = u32::MAX;

/// `value * x[col]` of entry `k`, and its row.
///
/// # Safety
/// `k < nnz`, and every column index is below the length of `x` (host validation).
#[inline(always)]
unsafe fn entry<T: FormatReal>(p: &CooParams<T>, k: usize) -> (u32, T) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let row = u32::load_nc(p.a.rows.as_ptr().add(k));
        let col = u32::load_nc(p.a.cols.as_ptr().add(k)) as usize;
        (row, T::load_nc(p.a.values.as_ptr().add(k)) * T::load_nc(p.op.x.as_ptr().add(col)))
    }
}

/// # Safety
/// `p` describes a validated COO matrix and vectors of matching lengths.
#[inline(always)]
unsafe fn coo_atomic<T: FormatReal>(p: CooParams<T>) {
    let (mut k, stride) = (global_thread(), grid_threads());
    while k < p.a.nnz as u64 {
        // SAFETY: `k < nnz`; every row index is below the length of `y`.
        unsafe {
            let (row, product) = entry(&p, k as usize);
            T::atomic_add(p.op.y.as_mut_ptr().add(row as usize), p.op.alpha * product);
        }
        k += stride;
    }
}

/// # Safety
/// `p` describes a validated COO matrix and vectors of matching lengths; the block size is a multiple
/// of 32.
#[inline(always)]
unsafe fn coo_segmented<T: FormatReal>(p: CooParams<T>) {
    let thread = global_thread();
    let lane = (thread % WARP_SIZE as u64) as u32;
    let begin = thread / WARP_SIZE as u64 * p.interval;
    let end = (begin + p.interval).min(p.a.nnz as u64);
    let y = p.op.y.as_mut_ptr();
    // The run that reached lane 31 at the previous step; only lane 0 reads it.
    let (mut carry_row, mut carry) = (NO_ROW, T::ZERO);
    let mut base = begin;
    while base < end {
        let k = base + lane as u64;
        let (row, mut sum) = if k < end {
            // SAFETY: `k < end <= nnz`.
            unsafe { entry(&p, k as usize) }
        } else {
            (NO_ROW, T::ZERO)
        };
        if lane == 0 && carry_row != NO_ROW {
            if carry_row == row {
                sum = sum + carry;
            } else {
                // SAFETY: a carried row is a row of the matrix, below the length of `y`.
                unsafe { T::atomic_add(y.add(carry_row as usize), p.op.alpha * carry) };
            }
        }
        // Inclusive scan within runs of equal rows: rows are sorted, so lane `lane - d` holding the
        // same row means every lane between does too.
        // Every lane shuffles before any condition, so the whole warp executes each shuffle.
        let mut d = 1;
        while d < WARP_SIZE {
            let below = sum.shfl_up(d);
            let below_row = shfl_up_b32(row, d);
            if lane >= d && below_row == row {
                sum = sum + below;
            }
            d *= 2;
        }
        // A run ends where the next lane holds another row; lane 31 sees its own row and keeps its
        // run as the carry.
        let next_row = shfl_down_b32(row, 1);
        if row != NO_ROW && next_row != row {
            // SAFETY: `row` is a row of the matrix, below the length of `y`.
            unsafe { T::atomic_add(y.add(row as usize), p.op.alpha * sum) };
        }
        carry_row = shfl_down_b32(row, WARP_SIZE - 1);
        carry = sum.shfl_down(WARP_SIZE - 1);
        base += WARP_SIZE as u64;
    }
    if lane == 0 && carry_row != NO_ROW {
        // SAFETY: as above.
        unsafe { T::atomic_add(y.add(carry_row as usize), p.op.alpha * carry) };
    }
}

crate::ptx_entry!(spmv_coo_atomic_f32, CooParams<f32>, coo_atomic::<f32>);
crate::ptx_entry!(spmv_coo_atomic_f64, CooParams<f64>, coo_atomic::<f64>);
crate::ptx_entry!(spmv_coo_segmented_f32, CooParams<f32>, coo_segmented::<f32>);
crate::ptx_entry!(spmv_coo_segmented_f64, CooParams<f64>, coo_segmented::<f64>);
