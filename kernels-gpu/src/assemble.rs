//! A CSR matrix from COO triples on the device (a matrix assembled there, a finite element code's
//! element contributions say), with repeated (row, column) pairs summed; ours. The triples are
//! sorted by (row, column) stably: two least-significant-digit radix sorts with the transpose's
//! kernels (`transpose/build.rs`), first by column, then by row, carrying each triple's index, so
//! equal pairs keep their input order. A repeated pair's values are then summed in that order, by
//! one thread, so the sum rounds the same way on every run and as the CPU reference
//! (`host/src/reference/assemble.rs`) rounds it.
//!
//! The launches, in stream order (the host's `enqueue/assemble.rs` makes them):
//! 1. `coo_assemble_iota`: the identity permutation.
//! 2. The radix passes over the column indices (`csrt_build_histogram`, `_scan`, `_scatter`).
//! 3. `coo_assemble_keys`: the row index of each triple in the column order, through the
//!    permutation; then the radix passes over them.
//! 4. `coo_assemble_heads`: a 1 where a (row, column) pair starts in the sorted order, a 0
//!    elsewhere and after the last triple; `csrt_build_scan` turns the flags into each pair's
//!    position among the distinct pairs, and its last element into their count.
//! 5. `coo_assemble_compact`: each distinct pair's row, column and first sorted position (its run
//!    of repeats ends where the next one starts); `csrt_build_offsets` then finds the row offsets.
//! 6. `coo_assemble_sum_*`: each distinct pair's value, the sum of its run. Only this step reads
//!    the values, so new values of the same pattern need it alone.

use crate::abi::{CooCompactParams, CooHeadsParams, CooIotaParams, CooKeysParams, CooSumParams};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::Real;

/// # Safety
/// `p.perm` holds `p.n` elements.
#[inline(always)]
unsafe fn iota(p: CooIotaParams) {
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(p.n) {
        // SAFETY: `i < n`, this thread's element.
        unsafe { *p.perm.as_mut_ptr().add(i as usize) = i as u32 };
        i += stride;
    }
}

/// # Safety
/// `p.perm` and `p.keys` hold `p.n` elements, the permutation's below `n`, `p.source` `n`; `keys`
/// overlaps neither input.
#[inline(always)]
unsafe fn keys(p: CooKeysParams) {
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(p.n) {
        let i_ = i as usize;
        // SAFETY: `i < n`, and so is `perm[i]`; `keys[i]` is this thread's.
        unsafe {
            let k = u32::load_nc(p.perm.as_ptr().add(i_)) as usize;
            *p.keys.as_mut_ptr().add(i_) = u32::load_nc(p.source.as_ptr().add(k));
        }
        i += stride;
    }
}

/// The sorted triple `i`'s (row, column): its row from the sorted keys, its column through the
/// permutation.
///
/// # Safety
/// `i < n`; `rows` and `perm` hold `n` elements, the permutation's below the length of `cols`.
#[inline(always)]
unsafe fn pair(rows: *const u32, cols: *const u32, perm: *const u32, i: usize) -> (u32, u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let k = u32::load_nc(perm.add(i)) as usize;
        (u32::load_nc(rows.add(i)), u32::load_nc(cols.add(k)))
    }
}

/// # Safety
/// `p.rows` (sorted) and `p.perm` hold `p.n` elements, `p.cols` `n`, `p.heads` `n + 1`.
#[inline(always)]
unsafe fn heads(p: CooHeadsParams) {
    let (mut i, stride) = (global_thread(), grid_threads());
    let (rows, cols, perm) = (p.rows.as_ptr(), p.cols.as_ptr(), p.perm.as_ptr());
    while i <= u64::from(p.n) {
        let i_ = i as usize;
        let head = i < u64::from(p.n)
            // SAFETY: `i < n`, and `i - 1` too where read.
            && (i == 0 || unsafe { pair(rows, cols, perm, i_) != pair(rows, cols, perm, i_ - 1) });
        // SAFETY: `i <= n`, this thread's element.
        unsafe { *p.heads.as_mut_ptr().add(i_) = u32::from(head) };
        i += stride;
    }
}

/// # Safety
/// As [`heads`], with `p.positions` the exclusive scan of the heads (`n + 1` elements, the last one
/// `p.distinct`); `p.run_starts` holds `distinct + 1` elements, `p.out_rows` and `p.out_cols`
/// `distinct`.
#[inline(always)]
unsafe fn compact(p: CooCompactParams) {
    let (mut i, stride) = (global_thread(), grid_threads());
    let (rows, cols, perm) = (p.rows.as_ptr(), p.cols.as_ptr(), p.perm.as_ptr());
    while i <= u64::from(p.n) {
        let i_ = i as usize;
        // SAFETY: `i <= n`; a head's position is below `distinct`, the end's is `distinct`, and each
        // position is written by the one thread whose head it is.
        unsafe {
            let at = u32::load_nc(p.positions.as_ptr().add(i_)) as usize;
            if i == u64::from(p.n) {
                *p.run_starts.as_mut_ptr().add(at) = p.n;
            } else if at != u32::load_nc(p.positions.as_ptr().add(i_ + 1)) as usize {
                let (row, col) = pair(rows, cols, perm, i_);
                *p.run_starts.as_mut_ptr().add(at) = i as u32;
                *p.out_rows.as_mut_ptr().add(at) = row;
                *p.out_cols.as_mut_ptr().add(at) = col;
            }
        }
        i += stride;
    }
}

/// # Safety
/// `p.run_starts` holds `p.distinct + 1` non-decreasing positions into `p.perm`, whose elements are
/// below the length of `p.values`; `p.out_values` holds `distinct` elements and overlaps no input.
#[inline(always)]
unsafe fn sum<T: Real>(p: CooSumParams<T>) {
    let (mut u, stride) = (global_thread(), grid_threads());
    while u < u64::from(p.distinct) {
        let u_ = u as usize;
        // SAFETY: `u < distinct`, so `u + 1 <= distinct`; the run's positions are in `perm`, its
        // entries in `values`; `out_values[u]` is this thread's.
        unsafe {
            let start = u32::load_nc(p.run_starts.as_ptr().add(u_)) as usize;
            let end = u32::load_nc(p.run_starts.as_ptr().add(u_ + 1)) as usize;
            let value =
                |j: usize| T::load_nc(p.values.as_ptr().add(u32::load_nc(p.perm.as_ptr().add(j)) as usize));
            let mut total = value(start);
            for j in start + 1..end {
                total = total + value(j);
            }
            *p.out_values.as_mut_ptr().add(u_) = total;
        }
        u += stride;
    }
}

crate::ptx_entry!(coo_assemble_iota, CooIotaParams, iota);
crate::ptx_entry!(coo_assemble_keys, CooKeysParams, keys);
crate::ptx_entry!(coo_assemble_heads, CooHeadsParams, heads);
crate::ptx_entry!(coo_assemble_compact, CooCompactParams, compact);
crate::ptx_entry!(coo_assemble_sum_f32, CooSumParams<f32>, sum::<f32>);
crate::ptx_entry!(coo_assemble_sum_f64, CooSumParams<f64>, sum::<f64>);
