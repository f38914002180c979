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

use super::widen::Widen;
use crate::abi::{Bf16, COMPRESSED_PLAIN, COMPRESSED_SEGMENT_ROWS, CompressedArgs, CompressedParams, F16};
use crate::arch::Load;
use crate::csr::group_rows;
use crate::real::Real;

/// Lane `lane`'s partial sum over `row`.
///
/// # Safety
/// `row < a.rows`, `a` was built by the host from a validated CSR matrix with columns below the
/// length of `x`.
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
        if head & COMPRESSED_PLAIN == 0 {
            while k < end {
                let col = (head + u32::from(u16::load_nc(a.deltas.as_ptr().add(k - shift)))) as usize;
                sum = V::load_widened(a.values.as_ptr().add(k)).fma(T::load_nc(x.add(col)), sum);
                k += COOP as usize;
            }
        } else {
            while k < end {
                let col = u32::load_nc(a.escapes.as_ptr().add(k - shift)) as usize;
                sum = V::load_widened(a.values.as_ptr().add(k)).fma(T::load_nc(x.add(col)), sum);
                k += COOP as usize;
            }
        }
    }
    sum
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
