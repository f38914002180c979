//! COO (Bell & Garland, NVIDIA TR 2008, section 4.4): one (row, column, value) triple per entry,
//! sorted by row (kernels: `kernels-gpu/src/formats/coo.rs`).

use super::convert::{canonical_csr, check_u32_dims, index32, narrow, par_fill_segments};
use super::limits::check_declared;
use super::shape::Shape;
use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use crate::{Error, Result};
use nalgebra_sparse::CsrMatrix;
use std::borrow::Cow;

/// Rows per rayon task when expanding rows into triples.
const ROWS_PER_TASK: usize = 4096;

/// A COO matrix: triples sorted by row, in CSR order within a row.
#[derive(Debug, Clone)]
pub struct Coo<T> {
    nrows: usize,
    ncols: usize,
    rows: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> Coo<T> {
    /// Converts `a`; refused with [`crate::Error::TooLarge`] when a dimension or the entry count does
    /// not fit 32 bits.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        Ok(Self::beyond(a, 0))
    }

    /// The entries of every row of `a` after its first `skip` (all of them for 0): the COO part of
    /// HYB. `a` passed [`check_u32_dims`].
    pub(crate) fn beyond(a: CsrRef<'_, T>, skip: usize) -> Self {
        let offsets = a.row_offsets();
        let kept: Cow<'_, [usize]> = if skip == 0 {
            Cow::Borrowed(offsets)
        } else {
            let mut kept = Vec::with_capacity(offsets.len());
            kept.push(0);
            for w in offsets.windows(2) {
                kept.push(kept[kept.len() - 1] + (w[1] - w[0]).saturating_sub(skip));
            }
            Cow::Owned(kept)
        };
        let total = kept.last().copied().unwrap_or(0);
        let source = |r: usize| (offsets[r] + skip).min(offsets[r + 1])..offsets[r + 1];
        let mut rows = vec![0; total];
        par_fill_segments(&kept, &mut rows, ROWS_PER_TASK, |r, seg| seg.fill(index32(r)));
        let mut cols = vec![0; total];
        par_fill_segments(&kept, &mut cols, ROWS_PER_TASK, |r, seg| {
            for (c, &src) in seg.iter_mut().zip(&a.col_indices()[source(r)]) {
                *c = index32(src);
            }
        });
        let mut values = vec![T::ZERO; total];
        par_fill_segments(&kept, &mut values, ROWS_PER_TASK, |r, seg| {
            seg.copy_from_slice(&a.values()[source(r)]);
        });
        Self { nrows: a.nrows(), ncols: a.ncols(), rows, cols, values }
    }

    /// Triples already sorted by row, with indices in range (the dense-block remainder).
    pub(crate) fn from_sorted(
        nrows: usize,
        ncols: usize,
        rows: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        debug_assert!(rows.windows(2).all(|w| w[0] <= w[1]));
        Self { nrows, ncols, rows, cols, values }
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.values.len() }
    }

    crate::formats::shape_accessors!();

    /// The row of each entry, non-decreasing.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// The column of each entry.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The entries as a CSR matrix, sorted, with repeated positions summed.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        canonical_csr(self.nrows, self.ncols, self.entries())
    }

    /// The (row, column, value) of every entry.
    pub(crate) fn entries(&self) -> Vec<(usize, usize, T)> {
        let triples = self.rows.iter().zip(&self.cols).zip(&self.values);
        triples.map(|((&r, &c), &v)| (r as usize, c as usize, v)).collect()
    }
}

/// The sizes of a matrix of `dims` (rows, columns) assembled from COO triples given as three arrays
/// of the lengths `lens` (row indices, column indices, values), as the kernels' `u32`s: the
/// dimensions and the triple count. Refused: column indices or values of another length than the
/// row indices ([`Error::DimensionMismatch`] naming them); a dimension past `u32`, more than
/// `COO_ASSEMBLE_MAX_ENTRIES` triples, or a row count (which sizes the row offsets) past the
/// declared-count limit of the triples given ([`Error::TooLarge`]). The CPU reference and the device
/// assembly refuse alike, before allocating.
pub(crate) fn check_triple_sizes(dims: (usize, usize), [rows, cols, values]: [usize; 3]) -> Result<[u32; 3]> {
    for (what, got) in [("the column indices", cols), ("the values", values)] {
        if got != rows {
            return Err(Error::DimensionMismatch { what, expected: rows, got });
        }
    }
    let limit = kernels_gpu::abi::COO_ASSEMBLE_MAX_ENTRIES as usize;
    if rows > limit {
        return Err(Error::TooLarge { what: "the triple count", value: rows, limit });
    }
    let n = narrow("the triple count", rows)?;
    check_declared("the row count (it sizes the row offsets)", dims.0, rows)?;
    Ok([narrow("the row count", dims.0)?, narrow("the column count", dims.1)?, n])
}

/// The refusal of triples whose first row index out of range is `row` and first column index out
/// of range `col`, each as (triple, index), of a matrix of `dims`: [`Error::IndexOutOfRange`] naming
/// the earlier triple, its row when both of its indices are out of range; `Ok` when neither is.
pub(crate) fn triple_index_verdict(
    dims: (usize, usize),
    row: Option<(usize, usize)>,
    col: Option<(usize, usize)>,
) -> Result<()> {
    let fault = |what, (entry, index), len| Err(Error::IndexOutOfRange { what, entry, index, len });
    match (row, col) {
        (Some(r), Some(c)) if c.0 < r.0 => fault("the column indices", c, dims.1),
        (Some(r), _) => fault("the row indices", r, dims.0),
        (None, Some(c)) => fault("the column indices", c, dims.1),
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_expand_in_order_and_skip_drops_each_rows_head() {
        let a =
            CsrRef::try_new(3, 4, &[0, 3, 3, 5], &[3, 0, 2, 1, 1], &[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let coo = Coo::try_from_csr(a).unwrap();
        assert_eq!(coo.rows(), [0, 0, 0, 2, 2]);
        assert_eq!(coo.cols(), [3, 0, 2, 1, 1]);
        let tail = Coo::beyond(a, 1);
        assert_eq!(tail.rows(), [0, 0, 2]);
        assert_eq!(tail.cols(), [0, 2, 1]);
        assert_eq!(tail.values(), [2.0, 3.0, 5.0]);
        assert_eq!(Coo::beyond(a, 5).nnz(), 0);
    }
}
