//! The storage types of a matrix's values and their exact widening to the product's type: the
//! product's own type, f32 for an f64 product, and the 16-bit binary16 and bfloat16 for either. The
//! compressed formats store their values narrower to move fewer bytes (PERF section 11); every
//! product and sum stays in the product's type.

use crate::abi::{Bf16, F16};
use crate::arch::{Load, f16_to_f32};
use crate::real::Real;

/// A storage type of the values and its exact widening to the product's type `T`.
pub(super) trait Widen<T>: Copy {
    /// The value at `p`, widened.
    ///
    /// # Safety
    /// `p` is a valid, aligned global address of a value that no thread writes during the kernel.
    unsafe fn load_widened(p: *const Self) -> T;

    /// [`Widen::load_widened`] marked to leave L1 first ([`Load::load_nc_evict_first`]), for values
    /// a warp reads a whole line of at once and never again.
    ///
    /// # Safety
    /// As [`Widen::load_widened`].
    unsafe fn load_widened_evict_first(p: *const Self) -> T;
}

impl<T: Real> Widen<T> for T {
    #[inline(always)]
    unsafe fn load_widened(p: *const T) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { T::load_nc(p) }
    }

    #[inline(always)]
    unsafe fn load_widened_evict_first(p: *const T) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { T::load_nc_evict_first(p) }
    }
}

impl Widen<f64> for f32 {
    #[inline(always)]
    unsafe fn load_widened(p: *const f32) -> f64 {
        // SAFETY: guaranteed by the caller.
        f64::from(unsafe { f32::load_nc(p) })
    }

    #[inline(always)]
    unsafe fn load_widened_evict_first(p: *const f32) -> f64 {
        // SAFETY: guaranteed by the caller.
        f64::from(unsafe { f32::load_nc_evict_first(p) })
    }
}

/// bfloat16's bits as the f32 of the same value: a bfloat16 is the upper half of that f32.
#[inline(always)]
fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// The impls of a 16-bit type, whose bits `$to_f32` widens to f32 exactly (and that to f64
/// exactly): its bits are loaded as a `u16`.
macro_rules! widen_half {
    ($($half:ty: $to_f32:ident),+) => {$(
        impl Widen<f32> for $half {
            #[inline(always)]
            unsafe fn load_widened(p: *const $half) -> f32 {
                // SAFETY: guaranteed by the caller; the type is a transparent `u16`.
                $to_f32(unsafe { u16::load_nc(p.cast()) })
            }

            #[inline(always)]
            unsafe fn load_widened_evict_first(p: *const $half) -> f32 {
                // SAFETY: guaranteed by the caller; the type is a transparent `u16`.
                $to_f32(unsafe { u16::load_nc_evict_first(p.cast()) })
            }
        }

        impl Widen<f64> for $half {
            #[inline(always)]
            unsafe fn load_widened(p: *const $half) -> f64 {
                // SAFETY: forwarded.
                f64::from(unsafe { <$half as Widen<f32>>::load_widened(p) })
            }

            #[inline(always)]
            unsafe fn load_widened_evict_first(p: *const $half) -> f64 {
                // SAFETY: forwarded.
                f64::from(unsafe { <$half as Widen<f32>>::load_widened_evict_first(p) })
            }
        }
    )+};
}

widen_half!(F16: f16_to_f32, Bf16: bf16_to_f32);
