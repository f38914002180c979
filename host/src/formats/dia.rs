//! DIA, the diagonal format (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on
//! CUDA", NVIDIA TR 2008, section 4.1), with presence words per row, and optionally narrower values
//! ([`Dia`]).
//!
//! A stencil's or a structured grid's entries lie on a few diagonals: entry `(r, r + o)` for a few
//! offsets `o`. DIA stores the offsets once and, per diagonal, every row's value, so no column is
//! stored at all and the kernel (`kernels-gpu/src/formats/dia.rs`) gathers `x` without first
//! waiting for a column from memory: the wait that held ELL's walk on the stencils (docs/PERF.md,
//! section 30). A row's presence words say which diagonals it has; the kernel leaves the others out
//! of the sum (Bell & Garland multiply their stored zeros, which turns an infinite `x` into NaN).
//! The values may be stored narrower ([`ValueStorage`], as [`CompressedCsr`](super::CompressedCsr)
//! does). A matrix on more than [`DIA_MAX_DIAGONALS`] diagonals, or one whose padding (the rows'
//! missing entries on the diagonals) takes more than [`ELL_MAX_PADDING_RATIO`](
//! super::ELL_MAX_PADDING_RATIO) times its CSR bytes, is refused.

use super::compressed::{Storage, ValueStorage, gamma, max_rounding};
use super::convert::check_u32_dims;
use super::ell::padding_limit_bytes_of;
use super::shape::Shape;
use crate::Result;
use crate::error::FormatError;
use crate::formats::csr::{CsrRef, RowStats};
use crate::scalar::Scalar;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::marker::PhantomData;

/// The most diagonals a [`Dia`] matrix holds: one bit of a row's presence words each.
pub const DIA_MAX_DIAGONALS: usize = kernels_gpu::abi::DIA_MAX_DIAGONALS as usize;

/// Diagonals per presence word.
const WORD_BITS: usize = kernels_gpu::abi::DIA_WORD_BITS as usize;

/// The presence words of each row of a matrix of `diagonals` diagonals.
pub(crate) fn presence_words(diagonals: usize) -> usize {
    diagonals.div_ceil(WORD_BITS)
}

/// Rows per rayon task of the conversion's passes: enough work to amortise a task.
const ROWS_PER_TASK: usize = 16 * 1024;

/// A DIA matrix of `T`, its values stored as `V`: diagonal `d` holds the entries `(r, r + offsets[d])`;
/// `values[d * nrows + r]` is row `r`'s value on it (0 where the row has none), and bit `d % 32` of
/// `present[(d / 32) * nrows + r]` says whether it has one (a word per 32 diagonals and row,
/// word-major as the values are diagonal-major). Built by [`Dia::try_from_csr`], uploaded by
/// [`Gpu::upload_dia`](crate::Gpu::upload_dia).
///
/// ```
/// use gpu_spmv::CsrRef;
/// use gpu_spmv::formats::Dia;
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// // [2 -1  .]
/// // [-1 2 -1]
/// // [.  -1 2]
/// let a = CsrRef::try_new(
///     3, 3, &[0, 2, 5, 7], &[0, 1, 0, 1, 2, 1, 2], &[2.0f64, -1.0, -1.0, 2.0, -1.0, -1.0, 2.0],
/// )?;
/// let dia = Dia::<f64>::try_from_csr(a)?;
/// assert_eq!(dia.offsets(), [-1, 0, 1]);
/// assert_eq!(dia.present(), [0b110, 0b111, 0b011]);
/// assert_eq!(dia.values(), [0.0, -1.0, -1.0, 2.0, 2.0, 2.0, -1.0, -1.0, 0.0]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Dia<T, V = T> {
    stats: RowStats,
    offsets: Vec<i64>,
    present: Vec<u32>,
    values: Vec<V>,
    max_rounding: f64,
    _matrix: PhantomData<T>,
}

impl<T: Scalar, V: ValueStorage<T>> Dia<T, V> {
    /// Converts `a`. Refused, in this order, with:
    /// - [`crate::Error::TooLarge`] when a dimension does not fit 32 bits;
    /// - [`FormatError::TooManyDiagonals`], naming the first entry (by row, then entry) on a
    ///   diagonal past the first [`DIA_MAX_DIAGONALS`] met in that order;
    /// - [`FormatError::DiaPadding`] when the diagonals' slots take more than three times the CSR
    ///   bytes;
    /// - [`FormatError::ValueOutOfRange`] when a finite value lies beyond the range of `V` (one such
    ///   value, not necessarily the first);
    /// - [`FormatError::DuplicateEntry`] for two entries of a row in one column (DIA has one slot for
    ///   both), the first such row.
    ///
    /// All but the last come before anything the size of the diagonals is allocated; the last is
    /// found while the values are gathered, in arrays the padding check has bounded.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        let offsets = diagonals(&a)?;
        let nrows = a.nrows();
        check_dia_padding::<T>(nrows, a.nnz(), offsets.len(), V::STORAGE.bytes())?;
        let max_rounding = max_rounding::<T, V>(&a)?;
        let (present, by_row) = rows_on_diagonals::<T, V>(&a, &offsets)?;
        let present = column_major(&present, nrows, presence_words(offsets.len()));
        let values = column_major(&by_row, nrows, offsets.len());
        Ok(Self { stats: a.stats(), offsets, present, values, max_rounding, _matrix: PhantomData })
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

    /// The diagonals' offsets `column - row`, increasing.
    pub fn offsets(&self) -> &[i64] {
        &self.offsets
    }

    /// The rows' presence words, word-major: bit `d % 32` of word `(d / 32) * nrows + r` is set
    /// where row `r` has an entry on diagonal `d`.
    pub fn present(&self) -> &[u32] {
        &self.present
    }

    /// Whether row `r` has an entry on diagonal `d`.
    fn has(&self, r: usize, d: usize) -> bool {
        self.present[d / WORD_BITS * self.nrows() + r] >> (d % WORD_BITS) & 1 != 0
    }

    /// The `diagonals * nrows` values rounded to `V`, diagonal-major; 0 where a row has no entry.
    pub fn values(&self) -> &[V] {
        &self.values
    }

    /// The (row, column) of every entry, by row, then by diagonal: the conversion's round trip.
    pub fn entries(&self) -> Vec<(usize, usize)> {
        let mut entries = Vec::with_capacity(self.nnz());
        for r in 0..self.nrows() {
            for (d, &offset) in self.offsets.iter().enumerate() {
                if self.has(r, d) {
                    #[allow(clippy::cast_possible_truncation)] // a difference of two 32-bit indices
                    entries.push((r, r.wrapping_add_signed(offset as isize)));
                }
            }
        }
        entries
    }

    /// The largest relative rounding of a value (as [`CompressedCsr::max_rounding`](
    /// super::CompressedCsr::max_rounding): 0 when `V` is `T`).
    pub fn max_rounding(&self) -> f64 {
        self.max_rounding
    }

    /// Bytes of the matrix on the device: the values, the presence words and the offsets.
    pub fn device_bytes(&self) -> usize {
        self.values.len() * V::STORAGE.bytes() + self.present.len() * 4 + self.offsets.len() * 8
    }

    /// The factor `c` of the error bound of row `row` of a product in `T`, as
    /// [`CompressedEll::error_bound`](super::CompressedEll::error_bound) derives it for one
    /// thread's `fma` chain over the row's `n` entries: `c = ρ + (1 + ρ) γ_(n + 2)`.
    ///
    /// # Panics
    ///
    /// If `row >= nrows()`, like a slice index out of bounds.
    pub fn error_bound(&self, row: usize) -> f64 {
        assert!(row < self.nrows(), "row {row} of {}", self.nrows());
        let n = (0..self.offsets.len()).filter(|&d| self.has(row, d)).count();
        let rho = self.max_rounding;
        rho + (1.0 + rho) * gamma(n as f64 + 2.0, T::EPSILON / 2.0)
    }

    /// The storage type of the values.
    pub fn storage(&self) -> Storage {
        V::STORAGE
    }
}

/// Refuses `diagonals` diagonals of `nrows` rows, values of `value_bytes` each and the presence words
/// of a row, where they take more than [`ELL_MAX_PADDING_RATIO`](super::ELL_MAX_PADDING_RATIO) times the
/// bytes of the CSR matrix of `nrows` rows and `nnz` entries of `T`: also for the DIA copy that
/// `Kernel::CsrEllCopy` builds on the device.
pub(crate) fn check_dia_padding<T>(
    nrows: usize,
    nnz: usize,
    diagonals: usize,
    value_bytes: usize,
) -> Result<()> {
    let dia_bytes = dia_bytes(nrows, diagonals, value_bytes);
    let limit_bytes = padding_limit_bytes_of::<T>(nrows, nnz);
    if dia_bytes > limit_bytes {
        return Err(FormatError::DiaPadding { diagonals, dia_bytes, limit_bytes }.into());
    }
    Ok(())
}

/// The bytes of `diagonals` diagonals of `nrows` rows, values of `value_bytes` each, and their
/// presence words (the offsets aside).
pub(crate) fn dia_bytes(nrows: usize, diagonals: usize, value_bytes: usize) -> u128 {
    let row_bytes = diagonals * value_bytes + presence_words(diagonals) * size_of::<u32>();
    nrows as u128 * row_bytes as u128
}

/// The offsets `column - row` of `a`'s entries, increasing; refused when there are more than
/// [`DIA_MAX_DIAGONALS`], naming the entry that brings the first one too many in row order.
fn diagonals<T>(a: &CsrRef<'_, T>) -> Result<Vec<i64>> {
    let (offsets, cols) = (a.row_offsets(), a.col_indices());
    let diagonal = |r: usize, col: usize| col as i64 - r as i64;
    let row = |r: usize| (offsets[r]..).zip(&cols[offsets[r]..offsets[r + 1]]);
    // Each task's distinct offsets, up to one too many: enough to know the matrix has too many.
    let found = (0..a.nrows())
        .into_par_iter()
        .chunks(ROWS_PER_TASK)
        .map(|rows| {
            let mut seen = BTreeSet::new();
            for r in rows {
                for (_, &col) in row(r) {
                    seen.insert(diagonal(r, col));
                    if seen.len() > DIA_MAX_DIAGONALS {
                        return seen;
                    }
                }
            }
            seen
        })
        .reduce(BTreeSet::new, |mut all, part| {
            all.extend(part);
            all
        });
    if found.len() <= DIA_MAX_DIAGONALS {
        return Ok(found.into_iter().collect());
    }
    // Too many: the entry that brings the first one too many, by row then entry (the scan in row
    // order is the rule; the tasks' sets only said it is needed).
    let mut seen = BTreeSet::new();
    for r in 0..a.nrows() {
        for (entry, &col) in row(r) {
            seen.insert(diagonal(r, col));
            if seen.len() > DIA_MAX_DIAGONALS {
                let limit = DIA_MAX_DIAGONALS;
                return Err(FormatError::TooManyDiagonals { row: r, entry, col, limit }.into());
            }
        }
    }
    Ok(seen.into_iter().collect())
}

/// Every row's presence words and its values on the diagonals, both row-major (the row's words,
/// its `D` values), the values rounded to `V`; refused at the first row (in order) holding two
/// entries in one column.
fn rows_on_diagonals<T: Scalar, V: ValueStorage<T>>(
    a: &CsrRef<'_, T>,
    diagonals: &[i64],
) -> Result<(Vec<u32>, Vec<V>)> {
    let (offsets, cols, vals) = (a.row_offsets(), a.col_indices(), a.values());
    let (nrows, width, words) = (a.nrows(), diagonals.len(), presence_words(diagonals.len()));
    let mut present = vec![0u32; nrows * words];
    let mut by_row = vec![V::round(T::ZERO); nrows * width];
    let duplicates: Vec<FormatError> = present
        .par_chunks_mut(ROWS_PER_TASK * words.max(1))
        .zip(by_row.par_chunks_mut(ROWS_PER_TASK * width.max(1)))
        .enumerate()
        .filter_map(|(task, (row_words, slots))| {
            for i in 0..slots.len() / width.max(1) {
                let r = task * ROWS_PER_TASK + i;
                for e in offsets[r]..offsets[r + 1] {
                    // Every entry's offset is among the diagonals (`diagonals` collected them all).
                    let d = diagonals.partition_point(|&o| o < cols[e] as i64 - r as i64);
                    let (word, bit) = (&mut row_words[i * words + d / WORD_BITS], 1 << (d % WORD_BITS));
                    if *word & bit != 0 {
                        let first = (offsets[r]..e).find(|&f| cols[f] == cols[e]).unwrap_or(e);
                        return Some(FormatError::DuplicateEntry { row: r, first, entry: e, col: cols[e] });
                    }
                    *word |= bit;
                    slots[i * width + d] = V::round(vals[e]);
                }
            }
            None
        })
        .collect();
    match duplicates.into_iter().next() {
        Some(duplicate) => Err(duplicate.into()),
        None => Ok((present, by_row)),
    }
}

/// `by_row`'s `nrows` rows of `width` elements, column-major (column `d` at `d * nrows`), as the
/// kernel reads the values and the presence words.
fn column_major<X: Copy + Send + Sync>(by_row: &[X], nrows: usize, width: usize) -> Vec<X> {
    let Some(&fill) = by_row.first() else { return Vec::new() };
    let mut columns = vec![fill; nrows * width];
    columns.par_chunks_mut(nrows).enumerate().for_each(|(d, column)| {
        column.par_chunks_mut(ROWS_PER_TASK).enumerate().for_each(|(task, slots)| {
            let first = task * ROWS_PER_TASK;
            for (i, slot) in slots.iter_mut().enumerate() {
                *slot = by_row[(first + i) * width + d];
            }
        });
    });
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::formats::bf16;

    #[test]
    fn a_rectangular_band_keeps_its_diagonals_and_presence() {
        // [1 . 2 .]
        // [. 3 . 4]
        // [. . 5 .]
        let a =
            CsrRef::try_new(3, 4, &[0, 2, 4, 5], &[2, 0, 1, 3, 2], &[2.0f32, 1.0, 3.0, 4.0, 5.0]).unwrap();
        let dia = Dia::<f32>::try_from_csr(a).unwrap();
        assert_eq!(dia.offsets(), [0, 2]);
        assert_eq!(dia.present(), [0b11, 0b11, 0b01]);
        assert_eq!(dia.values(), [1.0, 3.0, 5.0, 2.0, 4.0, 0.0]);
        assert_eq!(dia.entries(), [(0, 0), (0, 2), (1, 1), (1, 3), (2, 2)]);
        assert_eq!(dia.max_rounding(), 0.0);
    }

    #[test]
    fn too_many_diagonals_are_refused_at_the_first_entry_past_the_limit() {
        // Row r holds column r (offset 0) and, from row 1 on, column 2r (offset r): row 128 brings
        // the 129th diagonal.
        let n = 140;
        let mut offsets = vec![0];
        let mut cols = vec![];
        for r in 0..n {
            cols.push(r);
            if r > 0 {
                cols.push(2 * r);
            }
            offsets.push(cols.len());
        }
        let values = vec![1.0f64; cols.len()];
        let a = CsrRef::try_new(n, 2 * n, &offsets, &cols, &values).unwrap();
        match Dia::<f64>::try_from_csr(a) {
            Err(Error::Format(FormatError::TooManyDiagonals { row: 128, entry, col: 256, limit: 128 })) => {
                assert_eq!(entry, offsets[128] + 1);
            }
            other => panic!("expected TooManyDiagonals at row 128, got {other:?}"),
        }
    }

    #[test]
    fn presence_words_past_the_first_are_word_major() {
        // Three rows of a band 40 wide: row r holds columns r .. r + 40 but for r + 33, on
        // diagonals 0 ..= 39 (two words a row), and row 2 lacks diagonal 1 as well.
        let (n, band) = (3, 40);
        let mut offsets = vec![0];
        let mut cols = vec![];
        for r in 0..n {
            cols.extend((r..r + band).filter(|&c| c != r + 33 && !(r == 2 && c == 3)));
            offsets.push(cols.len());
        }
        let values: Vec<f32> = (0..cols.len()).map(|i| i as f32 + 1.0).collect();
        let a = CsrRef::try_new(n, n + band, &offsets, &cols, &values).unwrap();
        let dia = Dia::<f32>::try_from_csr(a).unwrap();
        assert_eq!(dia.offsets(), (0..40).filter(|&o| o != 33).collect::<Vec<i64>>());
        let high = 0b111_1111; // diagonals 32 ..= 38 (offsets 32 and 34 ..= 39)
        assert_eq!(dia.present(), [u32::MAX, u32::MAX, !0b10, high, high, high]);
        assert_eq!(dia.entries().len(), cols.len());
        assert_eq!(dia.entries()[..3], [(0, 0), (0, 1), (0, 2)]);
        assert_eq!(dia.values()[38 * n..], [39.0, 78.0, 116.0]);
    }

    #[test]
    fn duplicates_and_padding_are_refused_with_their_place() {
        let dup = CsrRef::try_new(2, 2, &[0, 1, 3], &[0, 1, 1], &[1.0f32, 2.0, 3.0]).unwrap();
        assert!(matches!(
            Dia::<f32>::try_from_csr(dup),
            Err(Error::Format(FormatError::DuplicateEntry { row: 1, first: 1, entry: 2, col: 1 }))
        ));
        // One entry on each of 20 diagonals in 1,000 rows: 20 slots a row for 0.02 entries.
        let rows = 1000;
        let mut offsets = vec![0];
        let mut cols = vec![];
        for r in 0..rows {
            if r < 20 {
                cols.push(r * 30);
            }
            offsets.push(cols.len());
        }
        let values = vec![1.0f32; cols.len()];
        let sparse = CsrRef::try_new(rows, 1000, &offsets, &cols, &values).unwrap();
        assert!(matches!(
            Dia::<f32, bf16>::try_from_csr(sparse),
            Err(Error::Format(FormatError::DiaPadding { diagonals: 20, .. }))
        ));
    }
}
