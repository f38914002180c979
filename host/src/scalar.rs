//! The element types the library computes in: `f32` and `f64`.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use std::fmt::{Debug, Display};
use std::ops::{Add, Mul};

/// Which of the two element types; selects the PTX entries (`..._f32`, `..._f64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Precision {
    Single,
    Double,
}

mod sealed {
    /// Crate-private: the trait [`super::Scalar`] is sealed by, and what the crate alone needs of it.
    pub trait Sealed {
        /// The value's bits: equal exactly when a kernel given one or the other sees the same
        /// argument (NaNs of different payloads differ).
        fn bits(self) -> u64;
    }
    impl Sealed for f32 {
        fn bits(self) -> u64 {
            u64::from(self.to_bits())
        }
    }
    impl Sealed for f64 {
        fn bits(self) -> u64 {
            self.to_bits()
        }
    }
}

/// An element type the kernels exist for. Sealed: implemented for `f32` and `f64` only.
pub trait Scalar:
    sealed::Sealed
    + nalgebra_sparse::na::Scalar
    + cudarc::nccl::NcclType
    + Copy
    + Default
    + Display
    + PartialOrd
    + Add<Output = Self>
    + Mul<Output = Self>
    + DeviceRepr
    + ValidAsZeroBits
    + Send
    + Sync
    + Debug
{
    const ZERO: Self;
    const PRECISION: Precision;
    /// The suffix of this type's PTX entries and its name in reports.
    const NAME: &'static str;
    /// Machine epsilon, as f64 (for error bounds).
    const EPSILON: f64;
    /// `self * a + b` with one rounding.
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn to_f64(self) -> f64;
    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;
}

impl Scalar for f32 {
    const ZERO: Self = 0.0;
    const PRECISION: Precision = Precision::Single;
    const NAME: &'static str = "f32";
    const EPSILON: f64 = f32::EPSILON as f64;
    fn mul_add(self, a: Self, b: Self) -> Self {
        f32::mul_add(self, a, b)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[allow(clippy::cast_possible_truncation)] // rounding to the nearest f32 is the point
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Scalar for f64 {
    const ZERO: Self = 0.0;
    const PRECISION: Precision = Precision::Double;
    const NAME: &'static str = "f64";
    const EPSILON: f64 = f64::EPSILON;
    fn mul_add(self, a: Self, b: Self) -> Self {
        f64::mul_add(self, a, b)
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}
