//! Kernels of the storage formats beyond CSR, one file per format, and the element operations only
//! they need (atomic adds and shifting warp shuffles).
//!
//! HYB has no kernel of its own: the host launches the ELL kernel, then the accumulating COO kernel,
//! on one stream (Bell & Garland, NVIDIA TR 2008, section 4.5, do the same).

mod brc;
mod compressed;
mod compressed_ell;
mod coo;
mod dense_blocks;
mod dia;
mod ell;
mod lma;
mod sell;
mod slots;
mod widen;

use crate::arch::{AtomicAdd, shfl_down_b32, shfl_up_b32};
use crate::real::{Real, shuffle_f64};

/// An element type the accumulating kernels work on: [`Real`] plus an atomic add and the shifting
/// shuffles of the segmented reduction.
pub(crate) trait FormatReal: Real + AtomicAdd {
    /// The value of lane `lane - delta` (a lane below `delta` gets its own value). Every lane of the
    /// warp must execute it.
    fn shfl_up(self, delta: u32) -> Self;
    /// The value of lane `lane + delta` (a lane above `31 - delta` gets its own value). Every lane of
    /// the warp must execute it.
    fn shfl_down(self, delta: u32) -> Self;
}

impl FormatReal for f32 {
    #[inline(always)]
    fn shfl_up(self, delta: u32) -> Self {
        f32::from_bits(shfl_up_b32(self.to_bits(), delta))
    }

    #[inline(always)]
    fn shfl_down(self, delta: u32) -> Self {
        f32::from_bits(shfl_down_b32(self.to_bits(), delta))
    }
}

impl FormatReal for f64 {
    #[inline(always)]
    fn shfl_up(self, delta: u32) -> Self {
        shuffle_f64(self, |w| shfl_up_b32(w, delta))
    }

    #[inline(always)]
    fn shfl_down(self, delta: u32) -> Self {
        shuffle_f64(self, |w| shfl_down_b32(w, delta))
    }
}
