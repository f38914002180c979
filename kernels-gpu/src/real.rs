//! The element types the kernels are generic over (f32, f64) and the per-type device operations.

use crate::arch::{Load, fma_if_f32, fma_if_f64, shfl_xor_b32};
use core::ops::{Add, Mul};

/// A kernel element type.
pub trait Real: Load + Add<Output = Self> + Mul<Output = Self> + PartialEq {
    const ZERO: Self;
    /// `self * b + c` with one rounding (`fma.rn`): Rust never contracts `a * b + c` by itself.
    fn fma(self, b: Self, c: Self) -> Self;
    /// `self * b + c` with one rounding where `keep`, else `c`, predicated rather than branched on
    /// (see [`fma_if_f32`]).
    fn fma_if(self, b: Self, c: Self, keep: bool) -> Self;
    /// The value of lane `lane ^ mask` (see [`shfl_xor_b32`]).
    fn shfl_xor(self, mask: u32) -> Self;
}

impl Real for f32 {
    const ZERO: Self = 0.0;

    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        core::f32::math::mul_add(self, b, c)
    }

    #[inline(always)]
    fn fma_if(self, b: Self, c: Self, keep: bool) -> Self {
        fma_if_f32(self, b, c, keep)
    }

    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        f32::from_bits(shfl_xor_b32(self.to_bits(), mask))
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;

    #[inline(always)]
    fn fma(self, b: Self, c: Self) -> Self {
        core::f64::math::mul_add(self, b, c)
    }

    #[inline(always)]
    fn fma_if(self, b: Self, c: Self, keep: bool) -> Self {
        fma_if_f64(self, b, c, keep)
    }

    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        shuffle_f64(self, |w| shfl_xor_b32(w, mask))
    }
}

/// Applies a 32-bit shuffle to both words of an f64: the hardware moves one word per lane.
#[inline(always)]
pub fn shuffle_f64(v: f64, shuffle: impl Fn(u32) -> u32) -> f64 {
    let bits = v.to_bits();
    let lo = shuffle(bits as u32) as u64;
    let hi = shuffle((bits >> 32) as u32) as u64;
    f64::from_bits(hi << 32 | lo)
}

/// Writes `alpha * sum + beta * y[row]` to `y[row]`, without reading `y` when `beta == 0` so that
/// whatever `y` held (NaN included) does not leak into the result.
///
/// # Safety
/// `y` is valid for reads and writes of element `row`, and no other thread touches it.
#[inline(always)]
pub unsafe fn store_axpby<T: Real>(y: *mut T, row: usize, alpha: T, sum: T, beta: T) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let out = y.add(row);
        *out = if beta == T::ZERO { alpha * sum } else { alpha.fma(sum, beta * *out) };
    }
}
