//! Warp-level reductions.

use crate::real::Real;

/// Sum over the `COOP` consecutive lanes of a group (a power of two up to 32), by a butterfly of
/// `log2(COOP)` shuffles; every lane of the group ends with the total. All 32 lanes of the warp must
/// call it together.
#[inline(always)]
pub fn group_sum<T: Real, const COOP: u32>(mut v: T) -> T {
    let mut offset = COOP / 2;
    while offset > 0 {
        v = v + v.shfl_xor(offset);
        offset /= 2;
    }
    v
}
