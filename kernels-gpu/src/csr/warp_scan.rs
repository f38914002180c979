//! Warp-wide scans the row-cutting kernels share (`balanced.rs`, `merge.rs`): elements moved between
//! lanes a 32-bit word at a time, the OR of a mask (`balanced.rs`), and a segmented inclusive sum.

use crate::abi::WARP_SIZE;
use crate::arch::shfl_up_b32;
#[cfg(not(target_feature = "sm_80"))]
use crate::arch::shfl_xor_b32;
use crate::real::Real;

/// An element that moves between lanes one 32-bit word at a time, as the shuffles do.
pub(super) trait Words: Real {
    /// `shuffle` applied to each 32-bit word of `self`. Every lane of the warp must call it.
    fn shuffle(self, shuffle: impl Fn(u32) -> u32) -> Self;
}

impl Words for f32 {
    #[inline(always)]
    fn shuffle(self, shuffle: impl Fn(u32) -> u32) -> Self {
        f32::from_bits(shuffle(self.to_bits()))
    }
}

impl Words for f64 {
    #[inline(always)]
    fn shuffle(self, shuffle: impl Fn(u32) -> u32) -> Self {
        let bits = self.to_bits();
        let lo = shuffle(bits as u32) as u64;
        let hi = shuffle((bits >> 32) as u32) as u64;
        f64::from_bits(hi << 32 | lo)
    }
}

/// The OR of `bits` over the warp, in one `redux.sync` where the module is built for sm_80 or newer
/// (the sm_90 module, which the host takes the balanced kernel from on Hopper): the butterfly below
/// is 80 of a balanced task warp's 594 instructions, and without it the kernel is about 3.5% faster
/// on the public real set's small irregular matrices in a graph (docs/PERF.md, section 42). Every lane
/// of the warp must call it.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub(super) fn warp_or(bits: u32) -> u32 {
    crate::arch::redux_or_b32(bits)
}

/// The OR of `bits` over the warp, by a butterfly (the sm_70 module). Every lane of the warp must
/// call it.
#[cfg(not(target_feature = "sm_80"))]
#[inline(always)]
pub(super) fn warp_or(mut bits: u32) -> u32 {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        bits |= shfl_xor_b32(bits, mask);
        mask /= 2;
    }
    bits
}

/// Inclusive sums of `v` within the segments of the warp that `heads` marks (bit `l`: a segment
/// starts at lane `l`; bit 0 set). Hillis & Steele's scan: at distance `d`, a lane adds the value of
/// lane `lane - d` when that lane is in its segment. Every lane of the warp must call it.
#[inline(always)]
pub(super) fn segmented_scan<T: Words>(mut v: T, heads: u32, lane: u32) -> T {
    // Lanes from the highest head at or below this lane; bit 0 is set, so there is one.
    let into_segment = lane - (31 - (heads & (u32::MAX >> (31 - lane))).leading_zeros());
    let mut d = 1;
    while d < WARP_SIZE {
        let below = v.shuffle(|w| shfl_up_b32(w, d));
        if into_segment >= d {
            v = v + below;
        }
        d *= 2;
    }
    v
}
