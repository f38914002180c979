//! CSR with compressed column indices (`CompressedArgs`): per segment of 32 rows a base column and
//! 16-bit offsets from it, or plain 32-bit columns where the segment's columns span too far; values
//! in the product's type or in a narrower storage type, widened exactly before the product.
//!
//! The row walk and the order of the sums are those of the cooperative CSR kernels (`group_rows`
//! in `csr/mod.rs`: lane `l` of a row's `COOP` lanes adds entries `start + l, start + l + COOP, ...`
//! in order with one `fma` each, then the group's butterfly), so with values in the product's type
//! the result is bit-identical to `spmv_csr_vector_c<coop>_*` and to `spmv_csr_param_c<coop>_*`
//! with one row per group and no long rows. The decoding adds no dependent load: the segment's two
//! header words sit in one 32-byte sector that all lanes of the warp read together, and the column
//! comes from the same position in one stream or the other.
//!
//! The copy that Auto multiplies with on the device (`Kernel::CsrCompressedCopy`) is built here
//! too, from a CSR matrix on the device, in two passes a warp per segment: its heads, then (after
//! the host has counted each stream's entries) its columns; its values and row offsets are the CSR
//! matrix's own arrays.

use super::widen::Widen;
use crate::abi::{
    Bf16, COMPRESSED_EVICT_FIRST_MIN_LANES, COMPRESSED_SEGMENT_ROWS, CompressedArgs, CompressedColumnsParams,
    CompressedHeadsParams, CompressedParams, CsrArgs, F16, WARP_SIZE, compressed_head, compressed_segment,
};
use crate::arch::{Load, global_thread, grid_threads, lane_id, shfl_xor_b32};
use crate::csr::group_rows;
use crate::real::Real;

/// Lane `lane`'s partial sum over `row`.
///
/// # Safety
/// `row < a.rows`, `a` was built from a validated CSR matrix with columns below the length of `x`
/// (by the host's conversion, or on the device by the copy's two kernels below).
#[inline(always)]
unsafe fn lane_sum<V: Widen<T>, T: Real, const COOP: u32>(
    a: &CompressedArgs<V>,
    x: *const T,
    row: usize,
    lane: usize,
) -> T {
    let segment = row / COMPRESSED_SEGMENT_ROWS as usize;
    let mut sum = T::ZERO;
    // SAFETY: `row + 1 <= rows` offsets and `rows.div_ceil(32)` segments of two words exist; the
    // host's encoding puts `k - shift` inside `deltas` or `escapes` for every entry `k` of the
    // segment, and every decoded column inside `x`.
    unsafe {
        let offsets = a.row_offsets.as_ptr();
        let (start, end) =
            (u32::load_nc(offsets.add(row)) as usize, u32::load_nc(offsets.add(row + 1)) as usize);
        let head = u32::load_nc(a.segments.as_ptr().add(2 * segment));
        let shift = u32::load_nc(a.segments.as_ptr().add(2 * segment + 1)) as usize;
        let mut k = start + lane;
        if compressed_segment(head) {
            while k < end {
                let col = (head + u32::from(stream::<u16, COOP>(a.deltas.as_ptr().add(k - shift)))) as usize;
                sum = value::<V, T, COOP>(a.values.as_ptr().add(k)).fma(T::load_nc(x.add(col)), sum);
                k += COOP as usize;
            }
        } else {
            while k < end {
                let col = stream::<u32, COOP>(a.escapes.as_ptr().add(k - shift)) as usize;
                sum = value::<V, T, COOP>(a.values.as_ptr().add(k)).fma(T::load_nc(x.add(col)), sum);
                k += COOP as usize;
            }
        }
    }
    sum
}

/// An element of the matrix's column streams read by a group of `COOP` lanes a row: leaving L1
/// first from [`COMPRESSED_EVICT_FIRST_MIN_LANES`] lanes up, where a group's step takes half a line
/// or more of the 2-byte offsets, as the CSR kernels' wide groups do of their columns (PERF sections
/// 35 and 37).
///
/// # Safety
/// As [`Load::load_nc`].
#[inline(always)]
unsafe fn stream<E: Load, const COOP: u32>(p: *const E) -> E {
    // SAFETY: forwarded.
    unsafe {
        if COOP >= COMPRESSED_EVICT_FIRST_MIN_LANES { E::load_nc_evict_first(p) } else { E::load_nc(p) }
    }
}

/// A value, widened, read as [`stream`] reads the columns: the hint goes on both streams or on
/// neither (on the offsets alone it cost 1-6%, section 37).
///
/// # Safety
/// As [`Widen::load_widened`].
#[inline(always)]
unsafe fn value<V: Widen<T>, T, const COOP: u32>(p: *const V) -> T {
    // SAFETY: forwarded.
    unsafe {
        if COOP >= COMPRESSED_EVICT_FIRST_MIN_LANES {
            V::load_widened_evict_first(p)
        } else {
            V::load_widened(p)
        }
    }
}

/// # Safety
/// `p` was built by the host from a validated CSR matrix and vectors of matching lengths; the block
/// size is a multiple of 32.
#[inline(always)]
unsafe fn compressed<V: Widen<T>, T: Real, const COOP: u32>(p: CompressedParams<V, T>) {
    let x = p.op.x.as_ptr();
    // SAFETY: `group_rows` passes rows below `rows`.
    let row_sum = |row, lane| unsafe { lane_sum::<V, T, COOP>(&p.a, x, row, lane) };
    // SAFETY: forwarded from the caller.
    unsafe { group_rows::<T, COOP>(p.a.rows, &p.op, row_sum) }
}

/// Calls `segment(s, first, end)` for each segment `s` of `csr` that the calling warp takes (a warp
/// per segment, grid-strided), with the segment's entries `first .. end`; every lane of the warp
/// takes the same segments.
///
/// # Safety
/// `csr` is valid CSR of `csr.rows` rows; the grid's blocks are whole warps.
#[inline(always)]
unsafe fn each_segment<T>(csr: &CsrArgs<T>, mut segment: impl FnMut(usize, usize, usize)) {
    let warp_size = u64::from(WARP_SIZE);
    let (mut s, stride) = (global_thread() / warp_size, grid_threads() / warp_size);
    let rows = csr.rows as usize;
    let segments = rows.div_ceil(COMPRESSED_SEGMENT_ROWS as usize) as u64;
    while s < segments {
        let first_row = s as usize * COMPRESSED_SEGMENT_ROWS as usize;
        let end_row = (first_row + COMPRESSED_SEGMENT_ROWS as usize).min(rows);
        // SAFETY: `first_row < end_row <= rows`: both offsets exist.
        let (first, end) = unsafe {
            let offsets = csr.row_offsets.as_ptr();
            (u32::load_nc(offsets.add(first_row)) as usize, u32::load_nc(offsets.add(end_row)) as usize)
        };
        segment(s as usize, first, end);
        s += stride;
    }
}

/// Writes each segment's head (`CompressedHeadsParams`): the lanes walk the segment's columns 32
/// apart, keeping their smallest and largest, and the warp's butterfly joins them.
///
/// # Safety
/// `p.csr` is valid CSR; `p.heads` holds a word for each of its segments; the grid's blocks are
/// whole warps.
#[inline(always)]
unsafe fn compressed_heads_from_csr<T: Real>(p: CompressedHeadsParams<T>) {
    let cols = p.csr.col_indices.as_ptr();
    let head = |s: usize, first: usize, end: usize| {
        let (mut lo, mut hi) = (u32::MAX, 0);
        let mut k = first + lane_id() as usize;
        while k < end {
            // SAFETY: `k < end`, inside the column array.
            let c = unsafe { u32::load_nc(cols.add(k)) };
            (lo, hi) = (lo.min(c), hi.max(c));
            k += WARP_SIZE as usize;
        }
        let mut mask = WARP_SIZE / 2;
        while mask > 0 {
            (lo, hi) = (lo.min(shfl_xor_b32(lo, mask)), hi.max(shfl_xor_b32(hi, mask)));
            mask /= 2;
        }
        if lane_id() == 0 {
            // SAFETY: a word for each segment (the caller's contract).
            unsafe { *p.heads.as_mut_ptr().add(s) = compressed_head(lo, hi) };
        }
    };
    // SAFETY: forwarded from the caller.
    unsafe { each_segment(&p.csr, head) }
}

/// Writes each entry's column where the segment table puts it (`CompressedColumnsParams`),
/// consecutive lanes consecutive entries.
///
/// # Safety
/// `p.csr` is valid CSR; `p.segments` is the table the host made from the heads
/// `compressed_heads_from_csr` wrote for this matrix, and `deltas` and `escapes` hold the entries of
/// the compressed and of the plain segments; the grid's blocks are whole warps.
#[inline(always)]
unsafe fn compressed_columns_from_csr<T: Real>(p: CompressedColumnsParams<T>) {
    let cols = p.csr.col_indices.as_ptr();
    let write = |s: usize, first: usize, end: usize| {
        // SAFETY: the table holds two words for each segment; for each entry `k` of segment `s`,
        // `k - shift` lies inside the stream of the segment's kind, and a compressed segment's
        // columns lie within `u16::MAX` above its head (both by the host's count from the heads).
        unsafe {
            let head = u32::load_nc(p.segments.as_ptr().add(2 * s));
            let shift = u32::load_nc(p.segments.as_ptr().add(2 * s + 1)) as usize;
            let mut k = first + lane_id() as usize;
            while k < end {
                let c = u32::load_nc(cols.add(k));
                if compressed_segment(head) {
                    #[allow(clippy::cast_possible_truncation)] // within `u16::MAX` of the head
                    let delta = (c - head) as u16;
                    *p.deltas.as_mut_ptr().add(k - shift) = delta;
                } else {
                    *p.escapes.as_mut_ptr().add(k - shift) = c;
                }
                k += WARP_SIZE as usize;
            }
        }
    };
    // SAFETY: forwarded from the caller.
    unsafe { each_segment(&p.csr, write) }
}

crate::ptx_entry!(
    compressed_heads_from_csr_f32,
    CompressedHeadsParams<f32>,
    compressed_heads_from_csr::<f32>
);
crate::ptx_entry!(
    compressed_heads_from_csr_f64,
    CompressedHeadsParams<f64>,
    compressed_heads_from_csr::<f64>
);
crate::ptx_entry!(
    compressed_columns_from_csr_f32,
    CompressedColumnsParams<f32>,
    compressed_columns_from_csr::<f32>
);
crate::ptx_entry!(
    compressed_columns_from_csr_f64,
    CompressedColumnsParams<f64>,
    compressed_columns_from_csr::<f64>
);

/// The entries of one storage type and product type, one per cooperative width.
macro_rules! compressed_entries {
    ($v:ty, $t:ty; $($name:ident = $coop:literal),+) => {$(
        crate::ptx_entry!($name, CompressedParams<$v, $t>, compressed::<$v, $t, $coop>);
    )+};
}

compressed_entries!(f32, f32; spmv_compressed_c1_f32 = 1, spmv_compressed_c2_f32 = 2, spmv_compressed_c4_f32 = 4,
    spmv_compressed_c8_f32 = 8, spmv_compressed_c16_f32 = 16, spmv_compressed_c32_f32 = 32);
compressed_entries!(f64, f64; spmv_compressed_c1_f64 = 1, spmv_compressed_c2_f64 = 2, spmv_compressed_c4_f64 = 4,
    spmv_compressed_c8_f64 = 8, spmv_compressed_c16_f64 = 16, spmv_compressed_c32_f64 = 32);
compressed_entries!(f32, f64; spmv_compressed_c1_f32_f64 = 1, spmv_compressed_c2_f32_f64 = 2,
    spmv_compressed_c4_f32_f64 = 4, spmv_compressed_c8_f32_f64 = 8, spmv_compressed_c16_f32_f64 = 16,
    spmv_compressed_c32_f32_f64 = 32);
compressed_entries!(F16, f32; spmv_compressed_c1_f16_f32 = 1, spmv_compressed_c2_f16_f32 = 2,
    spmv_compressed_c4_f16_f32 = 4, spmv_compressed_c8_f16_f32 = 8, spmv_compressed_c16_f16_f32 = 16,
    spmv_compressed_c32_f16_f32 = 32);
compressed_entries!(F16, f64; spmv_compressed_c1_f16_f64 = 1, spmv_compressed_c2_f16_f64 = 2,
    spmv_compressed_c4_f16_f64 = 4, spmv_compressed_c8_f16_f64 = 8, spmv_compressed_c16_f16_f64 = 16,
    spmv_compressed_c32_f16_f64 = 32);
compressed_entries!(Bf16, f32; spmv_compressed_c1_bf16_f32 = 1, spmv_compressed_c2_bf16_f32 = 2,
    spmv_compressed_c4_bf16_f32 = 4, spmv_compressed_c8_bf16_f32 = 8, spmv_compressed_c16_bf16_f32 = 16,
    spmv_compressed_c32_bf16_f32 = 32);
compressed_entries!(Bf16, f64; spmv_compressed_c1_bf16_f64 = 1, spmv_compressed_c2_bf16_f64 = 2,
    spmv_compressed_c4_bf16_f64 = 4, spmv_compressed_c8_bf16_f64 = 8, spmv_compressed_c16_bf16_f64 = 16,
    spmv_compressed_c32_bf16_f64 = 32);
