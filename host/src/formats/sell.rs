//! SELL-C with C = 32, sliced ELLPACK (Kreutzer, Hager, Wellein, Fehske & Bishop, "A unified sparse
//! matrix data format for efficient general sparse matrix-vector multiplication on modern processors
//! with wide SIMD units", SIAM J. Sci. Comput. 2014), without sorting (σ = 1; kernel:
//! `kernels-gpu/src/formats/sell.rs`).
//!
//! ELL pads every row to the longest row of the matrix; SELL pads each slice of 32 consecutive rows
//! only to that slice's longest row, so one long row pads its own slice alone, and one offset per
//! slice replaces CSR's one per row. Inside a slice the slots are column-major, as in ELL, for a warp
//! per slice to read them coalesced.

use super::convert::{canonical_csr, check_u32_dims, index32, narrow, par_fill_segments};
use super::ell::{padding_limit_bytes, slot_bytes};
use super::shape::Shape;
use crate::Result;
use crate::error::FormatError;
use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use kernels_gpu::abi::{PAD_COL, SELL_SLICE_ROWS};
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;

/// Rows per slice, C, as a `usize`.
const C: usize = SELL_SLICE_ROWS as usize;

/// Slices per rayon task when filling the slots: enough work to amortise a task.
const SLICES_PER_TASK: usize = 512;

/// The fewest bytes a SELL matrix may take whatever [`crate::formats::ELL_MAX_PADDING_RATIO`] says:
/// the last slice is stored with its 32 lanes however few rows it holds, so a matrix of a few rows
/// takes up to 32 times its CSR bytes, and would be refused by the ratio alone; a mebibyte of
/// device memory is nothing to refuse a matrix for.
pub const SELL_PADDING_FLOOR_BYTES: u128 = 1 << 20;

/// A SELL-32 matrix: slice `s` holds rows `32 s .. 32 s + 32`, each in `w_s` slots, `w_s` the length
/// of the slice's longest row; its slots start at `slice_ptr[s]`, and slot `k` of lane `l` (row
/// `32 s + l`) is at `slice_ptr[s] + 32 k + l`. A row's entries fill its first slots, in CSR order;
/// the other slots, and every slot of a lane past the last row, hold [`PAD_COL`] and 0.
#[derive(Debug, Clone)]
pub struct Sell<T> {
    nrows: usize,
    ncols: usize,
    nnz: usize,
    slice_ptr: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> Sell<T> {
    /// Converts `a`, padding each slice of 32 rows to its longest row; refused with
    /// [`crate::Error::TooLarge`] when a dimension or the slot count does not fit 32 bits, and with
    /// [`FormatError::SellPadding`] when the slots take over
    /// [`crate::formats::ELL_MAX_PADDING_RATIO`] times the CSR bytes and over
    /// [`SELL_PADDING_FLOOR_BYTES`]. Both are checked before the slots are allocated.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        let (nrows, offsets) = (a.nrows(), a.row_offsets());
        let widths: Vec<usize> = (0..nrows.div_ceil(C))
            .into_par_iter()
            .map(|s| (s * C..nrows.min(s * C + C)).map(|r| offsets[r + 1] - offsets[r]).max().unwrap_or(0))
            .collect();
        // Each width is at most its slice's entries, so their sum is at most `nnz`, below 2^32.
        let slots = narrow("SELL's slot count", widths.iter().sum::<usize>().saturating_mul(C))?;
        check_padding(&a, &widths, slots)?;
        let mut slice_start = Vec::with_capacity(widths.len() + 1);
        slice_start.push(0);
        for &w in &widths {
            slice_start.push(slice_start[slice_start.len() - 1] + w * C);
        }
        let mut cols = vec![PAD_COL; slots as usize];
        par_fill_segments(&slice_start, &mut cols, SLICES_PER_TASK, |s, slice| {
            for_each_slot(offsets, s, |slot, entry| slice[slot] = index32(a.col_indices()[entry]));
        });
        let mut values = vec![T::ZERO; slots as usize];
        par_fill_segments(&slice_start, &mut values, SLICES_PER_TASK, |s, slice| {
            for_each_slot(offsets, s, |slot, entry| slice[slot] = a.values()[entry]);
        });
        Ok(Self {
            nrows,
            ncols: a.ncols(),
            nnz: a.nnz(),
            slice_ptr: slice_start.iter().map(|&p| index32(p)).collect(),
            cols,
            values,
        })
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// The slices, `ceil(nrows / 32)`.
    pub fn slices(&self) -> usize {
        self.slice_ptr.len() - 1
    }

    /// Where each slice's slots start in [`Sell::cols`] and [`Sell::values`], and after the last, the
    /// slot count: `slices() + 1` offsets, the first 0. Slice `s` is `(slice_ptr[s + 1] -
    /// slice_ptr[s]) / 32` slots wide.
    pub fn slice_ptr(&self) -> &[u32] {
        &self.slice_ptr
    }

    /// Column indices, slice by slice, column-major inside a slice; [`PAD_COL`] marks padding.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Values, laid out as [`Sell::cols`]; 0 in padding.
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
        for (s, w) in self.slice_ptr.windows(2).enumerate() {
            for slot in w[0] as usize..w[1] as usize {
                if self.cols[slot] != PAD_COL {
                    let row = s * C + (slot - w[0] as usize) % C;
                    entries.push((row, self.cols[slot] as usize, self.values[slot]));
                }
            }
        }
        entries
    }
}

/// Calls `put(slot, entry)` for every entry of slice `s` of the matrix of row offsets `offsets`: entry
/// `k` of the row in lane `l` goes to slot `32 k + l` of the slice.
fn for_each_slot(offsets: &[usize], s: usize, mut put: impl FnMut(usize, usize)) {
    let rows = offsets.len() - 1;
    for r in s * C..rows.min(s * C + C) {
        for (k, entry) in (offsets[r]..offsets[r + 1]).enumerate() {
            put(k * C + r - s * C, entry);
        }
    }
}

/// Refuses `slots` slots (32 times the sum of the slice `widths`) when they and the slice offsets take
/// over [`crate::formats::ELL_MAX_PADDING_RATIO`] times the bytes of `a` in CSR with 32-bit indices and
/// over [`SELL_PADDING_FLOOR_BYTES`], naming the widest slice and its width.
fn check_padding<T>(a: &CsrRef<'_, T>, widths: &[usize], slots: u32) -> Result<()> {
    let sell_bytes = u128::from(slots) * slot_bytes::<T>() + (widths.len() as u128 + 1) * 4;
    let limit_bytes = padding_limit_bytes(a).max(SELL_PADDING_FLOOR_BYTES);
    if sell_bytes <= limit_bytes {
        return Ok(());
    }
    let (slice, width) = widths
        .iter()
        .copied()
        .enumerate()
        .fold((0, 0), |best, (s, w)| if w > best.1 { (s, w) } else { best });
    Err(FormatError::SellPadding { slice, width, sell_bytes, limit_bytes }.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_column_major_with_padding_last() {
        // 33 rows: row 0 holds columns 0 and 2, row 2 column 1, row 32 (the second slice's lane 0)
        // columns 3, 4 and 5; the others are empty.
        let mut offsets = vec![0, 2, 2];
        offsets.extend(std::iter::repeat_n(3, 30));
        offsets.push(6);
        let values = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let m = CsrMatrix::try_from_csr_data(33, 6, offsets, vec![0, 2, 1, 3, 4, 5], values).unwrap();
        let sell = Sell::try_from_csr(CsrRef::from(&m)).unwrap();
        assert_eq!((sell.slices(), sell.nnz()), (2, 6));
        assert_eq!(sell.slice_ptr(), [0, 64, 160]);
        let mut cols = vec![PAD_COL; 160];
        let mut values = vec![0.0; 160];
        for (slot, col, value) in
            [(0, 0, 1.0), (2, 1, 3.0), (32, 2, 2.0), (64, 3, 4.0), (96, 4, 5.0), (128, 5, 6.0)]
        {
            cols[slot] = col;
            values[slot] = value;
        }
        assert_eq!(sell.cols(), cols);
        assert_eq!(sell.values(), values);
        assert_eq!(sell.to_csr(), m);
    }

    #[test]
    fn no_rows_make_no_slices() {
        let a = CsrRef::<f64>::try_new(0, 4, &[0], &[], &[]).unwrap();
        let sell = Sell::try_from_csr(a).unwrap();
        assert_eq!((sell.slices(), sell.slice_ptr(), sell.cols().len()), (0, &[0][..], 0));
    }

    #[test]
    fn one_long_row_pads_its_slice_alone() {
        // 4096 rows of 4 entries, row 1000 of 200: ELL would pad every row to 200.
        let offsets: Vec<usize> = (0..=4096).map(|r| 4 * r + if r > 1000 { 196 } else { 0 }).collect();
        let nnz = offsets[4096];
        let cols: Vec<usize> = (0..nnz).map(|k| k % 300).collect();
        let values = vec![1.0f64; nnz];
        let a = CsrRef::try_new(4096, 300, &offsets, &cols, &values).unwrap();
        let sell = Sell::try_from_csr(a).unwrap();
        assert_eq!(sell.slice_ptr()[32] - sell.slice_ptr()[31], 200 * 32);
        assert_eq!(*sell.slice_ptr().last().unwrap() as usize, (127 * 4 + 200) * 32);
    }

    #[test]
    fn one_long_row_past_the_limit_is_refused_naming_its_slice() {
        // 100,000 rows of one entry, row 4321 of 99,999: its slice alone holds 3.2 million slots,
        // 13 times the CSR bytes, and far over the floor.
        let n = 100_000;
        let offsets: Vec<usize> = (0..=n).map(|r| r + if r > 4321 { n - 2 } else { 0 }).collect();
        let nnz = offsets[n];
        let cols: Vec<usize> = (0..nnz).map(|k| k % n).collect();
        let values = vec![1.0f32; nnz];
        let a = CsrRef::try_new(n, n, &offsets, &cols, &values).unwrap();
        assert!(padding_limit_bytes(&a) > SELL_PADDING_FLOOR_BYTES);
        match Sell::try_from_csr(a) {
            Err(crate::Error::Format(FormatError::SellPadding { slice, width, sell_bytes, limit_bytes })) => {
                assert_eq!((slice, width), (4321 / 32, n - 1));
                assert_eq!(limit_bytes, padding_limit_bytes(&a));
                assert_eq!(sell_bytes, ((3124 + n as u128 - 1) * 32) * 8 + 3126 * 4);
            }
            other => panic!("expected a SellPadding error, got {other:?}"),
        }
    }

    #[test]
    fn a_few_rows_stay_under_the_floor() {
        // One row of 100 entries: 3200 slots, 32 times its CSR bytes, 38 KB.
        let m = CsrMatrix::try_from_csr_data(1, 100, vec![0, 100], (0..100).collect(), vec![1.0f64; 100])
            .unwrap();
        let sell = Sell::try_from_csr(CsrRef::from(&m)).unwrap();
        assert_eq!(sell.slice_ptr(), [0, 3200]);
        assert_eq!(sell.to_csr(), m);
    }
}
