//! Borrowed CSR arrays, checked once at the boundary, and the row statistics kernel selection reads.

use super::shape::Shape;
use crate::error::CsrError;
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;

/// Entries (or rows) from which [`CsrRef::try_new`] checks on all cores.
const PARALLEL_CHECK: usize = 1 << 16;

/// The first row `r` whose offsets decrease (`row_offsets[r] > row_offsets[r + 1]`), by all cores
/// past 64 Ki rows; `None` where they never do. The check of `CsrRef::try_new` and of
/// `Gpu::upload_csr_u32`. Each core tests a run of rows without a branch (a reduction the compiler
/// vectorises) and searches for the row only in a run that has one: a search by `position` over
/// windows, element by element, took 6 ms for 4 M rows (PERF section 20).
pub fn first_decrease<O: Copy + PartialOrd + Sync>(row_offsets: &[O]) -> Option<usize> {
    let rows = row_offsets.len().saturating_sub(1);
    row_offsets[..rows].par_chunks(PARALLEL_CHECK).enumerate().find_map_first(|(run, starts)| {
        let first = run * PARALLEL_CHECK;
        let ends = &row_offsets[first + 1..=first + starts.len()];
        let decreases = starts.iter().zip(ends).fold(false, |any, (s, e)| any | (s > e));
        decreases.then(|| starts.iter().zip(ends).position(|(s, e)| s > e).map(|k| first + k)).flatten()
    })
}

/// A CSR matrix borrowed from the caller's arrays, known to be valid: `row_offsets` has `nrows + 1`
/// entries, starts at 0, never decreases and ends at `nnz`; every column index is below `ncols`.
///
/// Column indices need not be sorted within a row, and may repeat: the product sums every entry, so a
/// repeated `(row, col)` acts as the sum of its values. ([`CsrMatrix`] itself is always sorted and
/// free of duplicates.)
#[derive(Debug, Clone, Copy)]
pub struct CsrRef<'a, T> {
    nrows: usize,
    ncols: usize,
    row_offsets: &'a [usize],
    col_indices: &'a [usize],
    values: &'a [T],
}

impl<'a, T> CsrRef<'a, T> {
    /// Checks the arrays and borrows them; the error names the first row or entry at fault.
    pub fn try_new(
        nrows: usize,
        ncols: usize,
        row_offsets: &'a [usize],
        col_indices: &'a [usize],
        values: &'a [T],
    ) -> Result<Self, CsrError> {
        let nnz = values.len();
        if col_indices.len() != nnz {
            return Err(CsrError::LengthMismatch { col_indices: col_indices.len(), values: nnz });
        }
        if row_offsets.len().checked_sub(1) != Some(nrows) {
            return Err(CsrError::OffsetsLength { rows: nrows, got: row_offsets.len() });
        }
        if row_offsets[0] != 0 {
            return Err(CsrError::OffsetsStart(row_offsets[0]));
        }
        if let Some(row) = first_decrease(row_offsets) {
            let (start, end) = (row_offsets[row], row_offsets[row + 1]);
            return Err(CsrError::OffsetsDecrease { row, start, end });
        }
        let last = row_offsets[nrows];
        if last != nnz {
            return Err(CsrError::OffsetsEnd { last, nnz });
        }
        let out_of_range =
            |(row, w): (usize, &[usize])| (w[0]..w[1]).find(|&k| col_indices[k] >= ncols).map(|k| (row, k));
        // Large arrays are checked by all cores; the first fault in row order is the one named
        // either way.
        let parallel = nnz.max(nrows) >= PARALLEL_CHECK;
        let column = if parallel {
            row_offsets.par_windows(2).enumerate().find_map_first(out_of_range)
        } else {
            row_offsets.windows(2).enumerate().find_map(out_of_range)
        };
        if let Some((row, k)) = column {
            return Err(CsrError::ColumnOutOfRange { row, entry: k, col: col_indices[k], ncols });
        }
        Ok(Self { nrows, ncols, row_offsets, col_indices, values })
    }

    /// Borrows arrays already known to satisfy the invariants (checked when their owner was made).
    pub(crate) fn from_valid(
        nrows: usize,
        ncols: usize,
        row_offsets: &'a [usize],
        col_indices: &'a [usize],
        values: &'a [T],
    ) -> Self {
        Self { nrows, ncols, row_offsets, col_indices, values }
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.values.len() }
    }

    crate::formats::shape_accessors!();

    pub fn row_offsets(&self) -> &'a [usize] {
        self.row_offsets
    }

    pub fn col_indices(&self) -> &'a [usize] {
        self.col_indices
    }

    pub fn values(&self) -> &'a [T] {
        self.values
    }

    /// The column indices and values of row `row`.
    ///
    /// # Panics
    ///
    /// If `row >= nrows`, like a slice index out of bounds.
    pub fn row(&self, row: usize) -> (&'a [usize], &'a [T]) {
        let range = self.row_offsets[row]..self.row_offsets[row + 1];
        (&self.col_indices[range.clone()], &self.values[range])
    }

    /// Whether the column indices of every row are strictly increasing.
    pub fn has_sorted_rows(&self) -> bool {
        (0..self.nrows).all(|r| self.row(r).0.windows(2).all(|w| w[0] < w[1]))
    }

    /// Row-length statistics (one pass over the row offsets).
    pub fn stats(&self) -> RowStats {
        RowStats::from_offsets(self.row_offsets, self.ncols)
    }
}

impl<'a, T: nalgebra_sparse::na::Scalar> From<&'a CsrMatrix<T>> for CsrRef<'a, T> {
    /// A [`CsrMatrix`] is valid by construction.
    fn from(m: &'a CsrMatrix<T>) -> Self {
        let (row_offsets, col_indices, values) = m.csr_data();
        Self::from_valid(m.nrows(), m.ncols(), row_offsets, col_indices, values)
    }
}

/// Row-length statistics of a matrix: what kernel selection reads (in constant time, once computed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowStats {
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    /// Mean entries per row (0 for a matrix without rows).
    pub mean: f64,
    /// Standard deviation of the entries per row.
    pub std_dev: f64,
    /// The longest row.
    pub max: usize,
    /// Rows without entries.
    pub empty_rows: usize,
}

impl RowStats {
    /// Statistics of the rows described by CSR row offsets. Offsets that are not CSR give statistics
    /// of no use but no panic: a decrease counts as an empty row, and `nnz` is the sum of the lengths
    /// (saturating), which for CSR offsets is their last.
    pub fn from_offsets(row_offsets: &[usize], cols: usize) -> Self {
        Self::of_lengths(row_offsets, cols, |w| w[1].saturating_sub(w[0]))
    }

    /// As [`RowStats::from_offsets`], for the kernels' `u32` offsets.
    pub(crate) fn from_u32_offsets(row_offsets: &[u32], cols: usize) -> Self {
        Self::of_lengths(row_offsets, cols, |w| w[1].saturating_sub(w[0]) as usize)
    }

    /// The statistics of the row lengths `length(w)` of each window `w` of two offsets, in one
    /// pass by all cores (an upload computes them beside its copies). Integer sums, so the result
    /// does not depend on how the pass is split; the variance from them, `(n Σl² - (Σl)²) / n²`,
    /// with one rounding.
    fn of_lengths<O: Sync>(row_offsets: &[O], cols: usize, length: impl Fn(&[O]) -> usize + Sync) -> Self {
        #[derive(Clone, Copy, Default)]
        struct Sums {
            nnz: usize,
            squares: u128,
            max: usize,
            empty: usize,
        }
        let sums = row_offsets
            .par_windows(2)
            .with_min_len(PARALLEL_CHECK)
            .fold(Sums::default, |s, w| {
                let l = length(w);
                Sums {
                    nnz: s.nnz.saturating_add(l),
                    squares: s.squares.saturating_add((l as u128) * (l as u128)),
                    max: s.max.max(l),
                    empty: s.empty + usize::from(l == 0),
                }
            })
            .reduce(Sums::default, |a, b| Sums {
                nnz: a.nnz.saturating_add(b.nnz),
                squares: a.squares.saturating_add(b.squares),
                max: a.max.max(b.max),
                empty: a.empty + b.empty,
            });
        let rows = row_offsets.len().saturating_sub(1);
        let (mean, variance) = if rows == 0 {
            (0.0, 0.0)
        } else {
            let mean = sums.nnz as f64 / rows as f64;
            // `rows Σl² - (Σl)²`, exact in u128 wherever it fits (every matrix of 32-bit sizes),
            // rounded once; the f64 difference of the mean square and the squared mean otherwise.
            let spread = (rows as u128)
                .checked_mul(sums.squares)
                .zip((sums.nnz as u128).checked_pow(2))
                .and_then(|(scaled, square)| scaled.checked_sub(square));
            let variance = match spread {
                Some(spread) => spread as f64 / (rows as f64 * rows as f64),
                None => (sums.squares as f64 / rows as f64 - mean * mean).max(0.0),
            };
            (mean, variance)
        };
        RowStats {
            rows,
            cols,
            nnz: sums.nnz,
            mean,
            std_dev: variance.sqrt(),
            max: sums.max,
            empty_rows: sums.empty,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::IndexFaults;

    /// Past `PARALLEL_CHECK`, several faults of a kind far apart: the first in row order is named,
    /// as the sequential model names it.
    #[test]
    fn the_parallel_check_names_the_first_fault() {
        let nrows = 3 * PARALLEL_CHECK;
        let offsets: Vec<usize> = (0..=nrows).map(|r| 2 * r).collect();
        let cols: Vec<usize> = (0..2 * nrows).map(|k| k % 97).collect();
        let values = vec![1.0f32; cols.len()];
        let model = |offsets: &[usize], cols: &[usize]| {
            let narrow = |a: &[usize]| a.iter().map(|&i| u32::try_from(i).unwrap()).collect::<Vec<_>>();
            let (o, c) = (narrow(offsets), narrow(cols));
            IndexFaults::find(&o, &c, 97).verdict((nrows, 97), &o, (c.len(), values.len()), |k| c[k])
        };
        let mut bad_cols = cols.clone();
        for k in [5 * PARALLEL_CHECK + 3, PARALLEL_CHECK + 1, 4 * PARALLEL_CHECK] {
            bad_cols[k] = 97 + k % 5;
        }
        let error = CsrRef::try_new(nrows, 97, &offsets, &bad_cols, &values).unwrap_err();
        assert_eq!(Err(error.clone()), model(&offsets, &bad_cols));
        assert!(matches!(error, CsrError::ColumnOutOfRange { entry, .. } if entry == PARALLEL_CHECK + 1));
        let mut bad_offsets = offsets.clone();
        for r in [2 * PARALLEL_CHECK, PARALLEL_CHECK + 7] {
            bad_offsets[r] = bad_offsets[r + 1] + 1;
        }
        let error = CsrRef::try_new(nrows, 97, &bad_offsets, &cols, &values).unwrap_err();
        assert_eq!(Err(error.clone()), model(&bad_offsets, &cols));
        assert!(matches!(error, CsrError::OffsetsDecrease { row, .. } if row == PARALLEL_CHECK + 7));
    }
}
