//! CSR aligned: `GROUP` threads per row whose loads start on aligned boundaries (Baskaran &
//! Bordawekar, "Optimizing sparse matrix-vector multiplication on GPUs", IBM RC24704, 2008: the
//! half-warp thread mapping, aligned global memory access, and x through the texture cache).
//!
//! Thread mapping as in `vector.rs`: a warp holds `32 / GROUP` groups, one row each, rows assigned
//! warp by warp so that every lane reaches the shuffles of the reduction (`rows_by_groups` in `mod.rs`).
//!
//! Aligned access: a row rarely starts at a multiple of `GROUP`, so a group that began at the row's
//! first entry would straddle two aligned segments of `GROUP` entries at every step. Instead the group
//! walks the segments `GROUP`-aligned in the arrays: the head is the segment that holds the row's first
//! entry, in which the lanes before the row start sit idle; the body is every segment after it. Each
//! step of the group then reads one aligned segment of values and of column indices (for `GROUP` 32
//! and `f32`, one 128-byte line). The arrays themselves start 256-byte aligned (`cuMemAlloc`).
//!
//! `X` says how x is read: through the read-only data cache, the texture path of the paper, or with
//! plain global loads, so that the paper's cached/uncached comparison can be repeated.

use super::{PlainX, ReadOnlyX, XLoad, entry_product_via, rows_by_groups};
use crate::abi::CsrParams;
use crate::real::Real;

/// The partial sum of one lane over its entries of the row `start..end`.
///
/// # Safety
/// `start..end` is a row's range of entries; columns are in range (host validation).
#[inline(always)]
unsafe fn lane_sum<T: Real, X: XLoad, const GROUP: u32>(
    p: &CsrParams<T>,
    start: usize,
    end: usize,
    lane: usize,
) -> T {
    let group = GROUP as usize;
    let x = p.op.x.as_ptr();
    let head = start - start % group;
    let mut sum = T::ZERO;
    let k = head + lane;
    if k >= start && k < end {
        // SAFETY: `start <= k < end`.
        sum = unsafe { entry_product_via::<T, X, GROUP>(&p.a, x, k, sum) };
    }
    let mut k = head + group + lane;
    while k < end {
        // SAFETY: `start < k < end`.
        sum = unsafe { entry_product_via::<T, X, GROUP>(&p.a, x, k, sum) };
        k += group;
    }
    sum
}

/// # Safety
/// `p` describes a validated CSR matrix and vectors of matching lengths; the block size is a multiple
/// of 32.
#[inline(always)]
unsafe fn csr_aligned<T: Real, X: XLoad, const GROUP: u32>(p: CsrParams<T>) {
    // SAFETY: `rows_by_groups` passes a row's own range.
    let lane_sum = |start, end, lane| unsafe { lane_sum::<T, X, GROUP>(&p, start, end, lane) };
    // SAFETY: forwarded from the caller.
    unsafe { rows_by_groups::<T, GROUP>(&p, lane_sum) }
}

crate::ptx_entry!(spmv_csr_aligned_g8_nc_f32, CsrParams<f32>, csr_aligned::<f32, ReadOnlyX, 8>);
crate::ptx_entry!(spmv_csr_aligned_g16_nc_f32, CsrParams<f32>, csr_aligned::<f32, ReadOnlyX, 16>);
crate::ptx_entry!(spmv_csr_aligned_g32_nc_f32, CsrParams<f32>, csr_aligned::<f32, ReadOnlyX, 32>);
crate::ptx_entry!(spmv_csr_aligned_g8_plain_f32, CsrParams<f32>, csr_aligned::<f32, PlainX, 8>);
crate::ptx_entry!(spmv_csr_aligned_g16_plain_f32, CsrParams<f32>, csr_aligned::<f32, PlainX, 16>);
crate::ptx_entry!(spmv_csr_aligned_g32_plain_f32, CsrParams<f32>, csr_aligned::<f32, PlainX, 32>);
crate::ptx_entry!(spmv_csr_aligned_g8_nc_f64, CsrParams<f64>, csr_aligned::<f64, ReadOnlyX, 8>);
crate::ptx_entry!(spmv_csr_aligned_g16_nc_f64, CsrParams<f64>, csr_aligned::<f64, ReadOnlyX, 16>);
crate::ptx_entry!(spmv_csr_aligned_g32_nc_f64, CsrParams<f64>, csr_aligned::<f64, ReadOnlyX, 32>);
crate::ptx_entry!(spmv_csr_aligned_g8_plain_f64, CsrParams<f64>, csr_aligned::<f64, PlainX, 8>);
crate::ptx_entry!(spmv_csr_aligned_g16_plain_f64, CsrParams<f64>, csr_aligned::<f64, PlainX, 16>);
crate::ptx_entry!(spmv_csr_aligned_g32_plain_f64, CsrParams<f64>, csr_aligned::<f64, PlainX, 32>);
