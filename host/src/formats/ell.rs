//! ELLPACK (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on CUDA", NVIDIA TR 2008,
//! section 4.2): every row padded to the same number of slots, stored column-major so that a thread
//! per row reads coalesced (kernel: `kernels-gpu/src/formats/ell.rs`).

use super::convert::{canonical_csr, check_u32_dims, index32};
use super::shape::Shape;
use crate::Result;
use crate::error::FormatError;
use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use kernels_gpu::abi::PAD_COL;
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;

/// The most memory an ELL (or SELL) matrix may take, as a multiple of the bytes of the same matrix in
/// CSR with 32-bit indices (what the device would hold instead). cusp, Bell & Garland's library,
/// refuses ELL conversions whose fill (slots per entry) exceeds 3; the same factor on bytes keeps one
/// long row from allocating gigabytes of padding.
pub const ELL_MAX_PADDING_RATIO: u32 = 3;

/// Rows per rayon task when filling a column of slots: enough work to amortise a task.
const ROWS_PER_TASK: usize = 16 * 1024;

/// An ELL matrix: `width` slots per row; slot `k` of row `r` is at `k * nrows + r`. A row's entries
/// fill its first slots, in CSR order; the other slots hold [`PAD_COL`] and 0.
#[derive(Debug, Clone)]
pub struct Ell<T> {
    nrows: usize,
    ncols: usize,
    nnz: usize,
    width: usize,
    cols: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> Ell<T> {
    /// Converts `a`, padding every row to the longest one; refused with
    /// [`FormatError::EllPadding`] when that takes over [`ELL_MAX_PADDING_RATIO`] times the CSR
    /// bytes, and with [`crate::Error::TooLarge`] when a dimension does not fit 32 bits.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        let width = a.stats().max;
        check_padding(&a, width)?;
        Ok(Self::truncated(a, width))
    }

    /// The first `width` entries of every row of `a` (all of a shorter row): the ELL part of HYB.
    /// `a` passed [`check_u32_dims`], and `width` [`check_padding`].
    pub(crate) fn truncated(a: CsrRef<'_, T>, width: usize) -> Self {
        let (cols, values) = (a.col_indices(), a.values());
        let (cols, values) = fill_slots(&a, width, (PAD_COL, T::ZERO), |_, e| (index32(cols[e]), values[e]));
        let nnz = a.row_offsets().par_windows(2).map(|w| (w[1] - w[0]).min(width)).sum();
        Self { nrows: a.nrows(), ncols: a.ncols(), nnz, width, cols, values }
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// Slots per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The `width * nrows` column indices, slot-major; [`PAD_COL`] marks padding.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// The `width * nrows` values, slot-major; 0 in padding.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The entries as a CSR matrix, sorted, with repeated positions summed.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        canonical_csr(self.nrows, self.ncols, self.entries())
    }

    /// The (row, column, value) of every entry, padding left out.
    pub(crate) fn entries(&self) -> Vec<(usize, usize, T)> {
        let mut entries = Vec::with_capacity(self.nnz);
        for (slot, (&c, &v)) in self.cols.iter().zip(&self.values).enumerate() {
            if c != PAD_COL {
                entries.push((slot % self.nrows, c as usize, v));
            }
        }
        entries
    }
}

/// The column-major slots of the first `width` entries of every row of `a`: slot `k` of row `r`, at
/// `k * nrows + r`, holds `slot(r, e)` for the row's entry `e` (its index in `a`'s arrays) where the
/// row has a `k`-th entry, else `pad`. Filled by all cores, a column of slots at a time. `width`
/// passed [`check_padding`], so the `nrows * width` slots are bounded by the CSR bytes.
pub(crate) fn fill_slots<T, C: Copy + Send + Sync, W: Copy + Send + Sync>(
    a: &CsrRef<'_, T>,
    width: usize,
    pad: (C, W),
    slot: impl Fn(usize, usize) -> (C, W) + Sync,
) -> (Vec<C>, Vec<W>) {
    let (nrows, offsets) = (a.nrows(), a.row_offsets());
    let mut cols = vec![pad.0; nrows * width];
    let mut values = vec![pad.1; nrows * width];
    if nrows > 0 {
        cols.par_chunks_mut(nrows).zip(values.par_chunks_mut(nrows)).enumerate().for_each(
            |(k, (col_slots, value_slots))| {
                col_slots
                    .par_chunks_mut(ROWS_PER_TASK)
                    .zip(value_slots.par_chunks_mut(ROWS_PER_TASK))
                    .enumerate()
                    .for_each(|(task, (cs, vs))| {
                        let first = task * ROWS_PER_TASK;
                        for (i, (c, v)) in cs.iter_mut().zip(vs).enumerate() {
                            let (row, entry) = (first + i, offsets[first + i] + k);
                            if entry < offsets[row + 1] {
                                (*c, *v) = slot(row, entry);
                            }
                        }
                    });
            },
        );
    }
    (cols, values)
}

/// The bytes of one padded slot: its column index and its value.
pub(crate) fn slot_bytes<T>() -> u128 {
    entry_bytes(size_of::<T>())
}

/// The bytes of one stored entry, in CSR or a padded slot: a 32-bit column index and a value of
/// `value_bytes`.
fn entry_bytes(value_bytes: usize) -> u128 {
    4 + value_bytes as u128
}

/// The most bytes a padded form of `a` may take: [`ELL_MAX_PADDING_RATIO`] times the bytes of `a` in
/// CSR with 32-bit indices.
pub(crate) fn padding_limit_bytes<T>(a: &CsrRef<'_, T>) -> u128 {
    padding_limit_bytes_of::<T>(a.nrows(), a.nnz())
}

/// [`padding_limit_bytes`] of a matrix of `nrows` rows and `nnz` entries.
pub(crate) fn padding_limit_bytes_of<T>(nrows: usize, nnz: usize) -> u128 {
    csr_bytes(nrows, nnz, size_of::<T>()) * u128::from(ELL_MAX_PADDING_RATIO)
}

/// The bytes of a matrix of `nrows` rows and `nnz` entries, values of `value_bytes` each, in CSR
/// with 32-bit indices.
pub(crate) fn csr_bytes(nrows: usize, nnz: usize, value_bytes: usize) -> u128 {
    (nrows as u128 + 1) * 4 + nnz as u128 * entry_bytes(value_bytes)
}

/// Refuses `width` slots per row of `a` when they take over [`ELL_MAX_PADDING_RATIO`] times the bytes
/// of `a` in CSR with 32-bit indices, naming the longest row and its length (which `width` may be
/// below, for HYB's ELL part).
pub(crate) fn check_padding<T>(a: &CsrRef<'_, T>, width: usize) -> Result<()> {
    let lengths = a.row_offsets().windows(2).map(|w| w[1] - w[0]);
    check_padding_of::<T>(a.nrows(), a.nnz(), width, lengths)
}

/// [`check_padding`] of a matrix of `nrows` rows of `lengths` entries, `nnz` in all: also for the
/// ELL copy that a plan of `Kernel::CsrEllCopy` builds from a matrix on the device, whose row
/// offsets the host keeps.
pub(crate) fn check_padding_of<T>(
    nrows: usize,
    nnz: usize,
    width: usize,
    lengths: impl Iterator<Item = usize>,
) -> Result<()> {
    let ell_bytes = nrows as u128 * width as u128 * slot_bytes::<T>();
    let limit_bytes = padding_limit_bytes_of::<T>(nrows, nnz);
    if ell_bytes <= limit_bytes {
        return Ok(());
    }
    let (longest_row, longest_len) =
        lengths.enumerate().fold((0, 0), |best, (r, len)| if len > best.1 { (r, len) } else { best });
    Err(FormatError::EllPadding { width, longest_row, longest_len, ell_bytes, limit_bytes }.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_column_major_with_padding_last() {
        // [1 . 2]
        // [. . .]
        // [. 3 .]
        let a = CsrRef::try_new(3, 3, &[0, 2, 2, 3], &[0, 2, 1], &[1.0f32, 2.0, 3.0]).unwrap();
        let ell = Ell::try_from_csr(a).unwrap();
        assert_eq!(ell.width(), 2);
        assert_eq!(ell.nnz(), 3);
        assert_eq!(ell.cols(), [0, PAD_COL, 1, 2, PAD_COL, PAD_COL]);
        assert_eq!(ell.values(), [1.0, 0.0, 3.0, 2.0, 0.0, 0.0]);
    }

    #[test]
    fn one_long_row_is_refused_with_its_index() {
        let mut offsets = vec![0];
        for r in 0..100 {
            offsets.push(offsets[r] + if r == 42 { 90 } else { 1 });
        }
        let nnz = offsets[100];
        let cols: Vec<usize> = (0..nnz).map(|k| k % 100).collect();
        let values = vec![1.0f64; nnz];
        let a = CsrRef::try_new(100, 100, &offsets, &cols, &values).unwrap();
        match Ell::try_from_csr(a) {
            Err(crate::Error::Format(FormatError::EllPadding {
                longest_row, width, longest_len, ..
            })) => {
                assert_eq!((longest_row, width, longest_len), (42, 90, 90));
            }
            other => panic!("expected an EllPadding error, got {other:?}"),
        }
    }
}
