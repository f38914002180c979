//! ELL with 16-bit column offsets from the row, and optionally narrower values ([`CompressedEll`]).
//!
//! ELL's batched walk reaches the CSR floor on matrices of equal rows (docs/PERF.md, section 28), so
//! what it still spends is bytes: 4 of column and 4 or 8 of value a slot. Stencils, bands and finite
//! elements numbered along a grid keep every column within `2^15` of its row, so here a slot stores
//! `column - row` in 16 bits: the kernel (`kernels-gpu/src/formats/compressed_ell.rs`) adds it to the
//! thread's own row, with no load that ELL's walk does not make. The values may also be stored
//! narrower, as [`CompressedCsr`](super::CompressedCsr)'s ([`ValueStorage`]): an f32 slot of ELL
//! moves 8 bytes, here 6 (f32 values) or 4 (bfloat16). A matrix with a column farther from its row
//! is refused ([`FormatError::ColumnFarFromRow`]); [`CompressedCsr`](super::CompressedCsr), whose
//! offsets count from a segment's base and which keeps plain columns where they do not fit, takes
//! any matrix.

use super::compressed::{Storage, ValueStorage, gamma, max_rounding};
use super::convert::check_u32_dims;
use super::ell::{check_padding, fill_slots};
use super::shape::Shape;
use crate::Result;
use crate::error::FormatError;
use crate::formats::csr::{CsrRef, RowStats};
use crate::scalar::Scalar;
use kernels_gpu::abi::{MAX_ROW_DELTA, PAD_DELTA};
use rayon::prelude::*;
use std::marker::PhantomData;

/// An ELL matrix of `T` whose slots store their column as a 16-bit offset from the row and their value
/// as `V`: slot `k` of row `r` at `k * nrows + r`. A row's entries fill its first slots, in CSR
/// order; the rest hold `kernels_gpu::abi::PAD_DELTA` and 0. Built by [`CompressedEll::try_from_csr`],
/// uploaded by [`Gpu::upload_compressed_ell`](crate::Gpu::upload_compressed_ell).
///
/// ```
/// use gpu_spmv::CsrRef;
/// use gpu_spmv::formats::{CompressedEll, bf16};
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// // [4 -1 .]
/// // [. 2  1]
/// // [. .  3]
/// let a = CsrRef::try_new(3, 3, &[0, 2, 4, 5], &[0, 1, 1, 2, 2], &[4.0f32, -1.0, 2.0, 1.0, 3.0])?;
/// let exact = CompressedEll::<f32>::try_from_csr(a)?;
/// assert_eq!(exact.width(), 2);
/// assert_eq!(exact.deltas(), [0, 0, 0, 1, 1, i16::MIN]);
/// let narrow = CompressedEll::<f32, bf16>::try_from_csr(a)?; // asked for: bf16 values
/// assert_eq!(narrow.device_bytes(), 6 * (2 + 2));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CompressedEll<T, V = T> {
    stats: RowStats,
    width: usize,
    deltas: Vec<i16>,
    values: Vec<V>,
    max_rounding: f64,
    _matrix: PhantomData<T>,
}

impl<T: Scalar, V: ValueStorage<T>> CompressedEll<T, V> {
    /// Converts `a`, padding every row to the longest one. Refused with
    /// [`FormatError::ColumnFarFromRow`] (the first such entry) when a column lies farther than
    /// `i16::MAX` from its row; as [`Ell`](super::Ell) refuses, with [`FormatError::EllPadding`], when
    /// the padding takes over [`ELL_MAX_PADDING_RATIO`](super::ELL_MAX_PADDING_RATIO) times the CSR
    /// bytes; with [`FormatError::ValueOutOfRange`] when a finite value lies beyond the range of `V`;
    /// and with [`crate::Error::TooLarge`] when a dimension does not fit 32 bits. Every check comes before
    /// the slots are allocated.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        let stats = a.stats();
        check_padding(&a, stats.max)?;
        check_deltas(&a)?;
        let max_rounding = max_rounding::<T, V>(&a)?;
        // `check_padding` bounded the `rows * max` slots by three times the CSR arrays' bytes.
        let (cols, values) = (a.col_indices(), a.values());
        let (deltas, values) = fill_slots(&a, stats.max, (PAD_DELTA, V::round(T::ZERO)), |row, e| {
            #[allow(clippy::cast_possible_truncation)] // `check_deltas` bounded it by `MAX_ROW_DELTA`
            let delta = (cols[e] as i64 - row as i64) as i16;
            (delta, V::round(values[e]))
        });
        Ok(Self { stats, width: stats.max, deltas, values, max_rounding, _matrix: PhantomData })
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.stats.rows, ncols: self.stats.cols, nnz: self.stats.nnz }
    }

    crate::formats::shape_accessors!();

    /// The row statistics of the matrix it was built from.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    /// Slots per row: the longest row's entries.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The `width * nrows` column offsets from the row, slot-major; `kernels_gpu::abi::PAD_DELTA`
    /// (`i16::MIN`) marks padding.
    pub fn deltas(&self) -> &[i16] {
        &self.deltas
    }

    /// The `width * nrows` values rounded to `V`, slot-major; 0 in padding.
    pub fn values(&self) -> &[V] {
        &self.values
    }

    /// The (row, column) of every slot that is not padding, slot-major: the conversion's round trip.
    pub fn entries(&self) -> Vec<(usize, usize)> {
        let rows = self.nrows().max(1);
        self.deltas
            .iter()
            .enumerate()
            .filter(|&(_, &d)| d != PAD_DELTA)
            .map(|(slot, &d)| (slot % rows, (slot % rows).wrapping_add_signed(isize::from(d))))
            .collect()
    }

    /// The largest relative rounding of a value (as [`CompressedCsr::max_rounding`](
    /// super::CompressedCsr::max_rounding): 0 when `V` is `T`).
    pub fn max_rounding(&self) -> f64 {
        self.max_rounding
    }

    /// Bytes of the matrix on the device, padding included.
    pub fn device_bytes(&self) -> usize {
        self.deltas.len() * 2 + self.values.len() * V::STORAGE.bytes()
    }

    /// The factor `c` of the error bound of row `row` of a product in `T`:
    /// `|ŷ_i - (α A x + β y)_i| <= c (|α| Σ_k |a_ik x_k| + |β y_i|)`, with `c = ρ + (1 + ρ) γ_(n + 2)`,
    /// `n` the row's entries and `γ_m` of the unit roundoff of `T`.
    ///
    /// Why: as [`CompressedCsr::error_bound`](super::CompressedCsr::error_bound) derives, with one
    /// thread's `fma` chain over the row in place of its lanes and butterfly: each product passes at
    /// most `n` roundings, and `y = fma(α, s, β y)` two more.
    ///
    /// # Panics
    ///
    /// If `row >= nrows()`, like a slice index out of bounds.
    pub fn error_bound(&self, row: usize) -> f64 {
        assert!(row < self.nrows(), "row {row} out of bounds for {} rows", self.nrows());
        let n = (0..self.width).filter(|&k| self.deltas[k * self.nrows() + row] != PAD_DELTA).count();
        let rho = self.max_rounding;
        rho + (1.0 + rho) * gamma(n as f64 + 2.0, T::EPSILON / 2.0)
    }

    /// The storage type of the values.
    pub fn storage(&self) -> Storage {
        V::STORAGE
    }
}

/// Refuses the first entry of `a` (by row, then entry) whose column lies farther than
/// `MAX_ROW_DELTA` from its row.
fn check_deltas<T>(a: &CsrRef<'_, T>) -> Result<()> {
    let (offsets, cols) = (a.row_offsets(), a.col_indices());
    let limit = MAX_ROW_DELTA as usize;
    let far = (0..a.nrows()).into_par_iter().find_map_first(|row| {
        (offsets[row]..offsets[row + 1]).find(|&e| cols[e].abs_diff(row) > limit).map(|e| (row, e))
    });
    match far {
        Some((row, entry)) => {
            Err(FormatError::ColumnFarFromRow { row, entry, col: cols[entry], limit }.into())
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::formats::bf16;

    #[test]
    fn offsets_count_from_the_row_and_padding_is_last() {
        // [1 . 2]
        // [. . .]
        // [. 3 .]
        let a = CsrRef::try_new(3, 3, &[0, 2, 2, 3], &[0, 2, 1], &[1.0f32, 2.0, 3.0]).unwrap();
        let c = CompressedEll::<f32>::try_from_csr(a).unwrap();
        assert_eq!(c.width(), 2);
        assert_eq!(c.deltas(), [0, PAD_DELTA, -1, 2, PAD_DELTA, PAD_DELTA]);
        assert_eq!(c.values(), [1.0, 0.0, 3.0, 2.0, 0.0, 0.0]);
        assert_eq!(c.entries(), [(0, 0), (2, 1), (0, 2)]);
        assert_eq!(c.max_rounding(), 0.0);
    }

    #[test]
    fn a_column_too_far_from_its_row_is_refused_with_its_place() {
        let limit = MAX_ROW_DELTA as usize;
        // Row 2 reaches exactly the limit (kept); row 3's second entry lies one past it.
        let (n, far) = (limit + 10, limit + 4);
        let offsets = [0, 1, 2, 4, 6];
        let cols = [0, 1, 2, 2 + limit, 3, far];
        let values = [1.0f64; 6];
        let a = CsrRef::try_new(4, n, &offsets, &cols, &values).unwrap();
        match CompressedEll::<f64>::try_from_csr(a) {
            Err(Error::Format(FormatError::ColumnFarFromRow { row: 3, entry: 5, col, limit: l })) => {
                assert_eq!((col, l), (far, limit));
            }
            other => panic!("expected ColumnFarFromRow at row 3, entry 5, got {other:?}"),
        }
        let kept = CsrRef::try_new(3, n, &offsets[..4], &cols[..4], &values[..4]).unwrap();
        let c = CompressedEll::<f64>::try_from_csr(kept).unwrap();
        assert!(c.deltas().contains(&MAX_ROW_DELTA));
    }

    #[test]
    fn narrow_values_report_their_rounding_and_out_of_range_values_are_refused() {
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[1, 0], &[1.0f32 / 3.0, 1.0e30]).unwrap();
        let c = CompressedEll::<f32, bf16>::try_from_csr(a).unwrap();
        assert!(c.max_rounding() > 0.0 && c.max_rounding() <= 2f64.powi(-8));
        assert!(c.error_bound(0) > c.max_rounding());
        let too_big = CsrRef::try_new(2, 2, &[0, 1, 2], &[1, 0], &[1.0f32, 1.0e30]).unwrap();
        assert!(matches!(
            CompressedEll::<f32, crate::formats::f16>::try_from_csr(too_big),
            Err(Error::Format(FormatError::ValueOutOfRange { row: 1, entry: 1, .. }))
        ));
    }
}
