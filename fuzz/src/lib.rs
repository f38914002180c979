//! What the fuzz targets share: the properties, included by path from the host's tests (where the
//! proptest suite checks the same ones), and the decoding of fuzzer bytes into a CSR matrix with the
//! conversions' parameters.

use arbitrary::Arbitrary;
use gpu_spmv::{CsrRef, Scalar};

#[path = "../../host/tests/properties/mod.rs"]
pub mod properties;

pub use properties::FormatParams;

/// A CSR matrix as the fuzzer makes it: rows of (column, value), columns taken modulo `ncols` (a row
/// of a matrix without columns is empty), values small integers so that sums are exact in f32.
/// `wide` puts the column count past the kernels' 32-bit limit, where every conversion must refuse.
#[derive(Debug, Arbitrary)]
pub struct Matrix {
    wide: bool,
    ncols: u8,
    rows: Vec<Vec<(u8, i8)>>,
}

impl Matrix {
    pub fn ncols(&self) -> usize {
        let ncols = usize::from(self.ncols);
        if self.wide { (1 << 32) + ncols } else { ncols }
    }

    /// Row offsets, column indices and values.
    pub fn arrays<T: Scalar>(&self) -> (Vec<usize>, Vec<usize>, Vec<T>) {
        let ncols = self.ncols();
        let mut offsets = vec![0];
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        for row in &self.rows {
            if ncols > 0 {
                for &(c, v) in row {
                    cols.push(usize::from(c) % ncols);
                    values.push(T::from_f64(f64::from(v)));
                }
            }
            offsets.push(cols.len());
        }
        (offsets, cols, values)
    }

    /// Calls `check` with the matrix in f32 and in f64.
    pub fn for_each_precision(&self, check: impl Fn(CsrRef<'_, f32>), check64: impl Fn(CsrRef<'_, f64>)) {
        with_csr(self.arrays::<f32>(), self.ncols(), check);
        with_csr(self.arrays::<f64>(), self.ncols(), check64);
    }
}

/// `f` of the CSR matrix of `ncols` columns that a target's row offsets, column indices and values
/// make (valid by construction: the targets build them so).
pub fn with_csr<T: Scalar, R>(
    (offsets, cols, values): (Vec<usize>, Vec<usize>, Vec<T>),
    ncols: usize,
    f: impl FnOnce(CsrRef<'_, T>) -> R,
) -> R {
    f(CsrRef::try_new(offsets.len() - 1, ncols, &offsets, &cols, &values).expect("valid by construction"))
}

/// A parameter from the fuzzer: small values mostly, with the edges (0, past every limit, the top of
/// `usize`) reachable.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Param {
    Small(u16),
    Huge(u64),
    Max,
}

impl Param {
    pub fn value(self) -> usize {
        match self {
            Param::Small(v) => usize::from(v),
            Param::Huge(v) => usize::try_from(v).unwrap_or(usize::MAX),
            Param::Max => usize::MAX,
        }
    }
}

/// An entry's value, for the targets that build their own matrices (`compressed_ell`, `dia`): small
/// integers, scaled ones, any bits, and the special values.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Value {
    Small(i8),
    /// `mantissa * 2^exponent`: values that f16 and bf16 round, that fall below their normal range,
    /// and that lie past f16's range and (in f64) f32's.
    Scaled {
        mantissa: i16,
        exponent: i8,
    },
    /// Any f64 (in an f32 matrix, its rounding): values that f32 rounds too, f64's subnormals, NaN
    /// payloads.
    Bits(u64),
    /// NaN, the infinities and -0.
    Special(u8),
}

impl Value {
    /// The value as an f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Value::Small(v) => f64::from(v),
            Value::Scaled { mantissa, exponent } => f64::from(mantissa) * 2f64.powi(i32::from(exponent)),
            Value::Bits(bits) => f64::from_bits(bits),
            Value::Special(s) => [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0][usize::from(s % 4)],
        }
    }
}
