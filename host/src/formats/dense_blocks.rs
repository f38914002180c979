//! Dense sub-blocks sharing a window of `x` (Baskaran & Bordawekar, "Optimizing Sparse
//! Matrix-Vector Multiplication on GPUs", IBM Research Report RC24704, 2008: their optional block
//! format; kernel: `kernels-gpu/src/formats/dense_blocks.rs`).
//!
//! Rows go in blocks of `DENSE_BLOCK_ROWS` consecutive rows. Each block gets the window of `window`
//! consecutive columns, starting at a multiple of [`DENSE_WINDOW_ALIGN`], that holds most of its
//! entries; the kernel loads that part of `x` into shared memory once and every row of the block
//! reads it there. A row's entries inside the window are padded to a multiple of
//! `DENSE_ROW_THREADS` (the half warp that walks the row); every other entry, and every entry of a
//! block whose window would hold less than [`DENSE_MIN_CAPTURE`] of the block's entries, goes to a
//! COO remainder that the accumulating COO kernel applies after, so any matrix works. Baskaran &
//! Bordawekar found the format rarely pays off; it is kept simple.

use super::convert::{canonical_csr, check_u32_dims, index32, narrow, par_fill_segments};
use super::shape::Shape;
use crate::Result;
use crate::error::FormatError;
use crate::formats::coo::Coo;
use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use kernels_gpu::abi::{DENSE_BLOCK_ROWS, DENSE_NO_WINDOW, DENSE_ROW_THREADS, PAD_COL};
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;

/// Columns of `x` a block shares by default: 8 KiB of shared memory in f32, 16 KiB in f64, so that
/// several blocks fit an SM at once.
pub const DENSE_WINDOW: usize = 2048;

/// The shared memory a window may take: what a block gets without the driver's opt-in.
pub const DENSE_MAX_WINDOW_BYTES: usize = 48 * 1024;

/// Windows start at a multiple of this many columns, so the load of a window is coalesced: 32
/// columns are one 128-byte line of f32.
pub const DENSE_WINDOW_ALIGN: usize = 32;

/// The least share of a block's entries its window must hold for the block to get one: below it, the
/// window's load costs more than the reuse it buys. A choice of this crate, not of the paper.
pub const DENSE_MIN_CAPTURE: f64 = 0.5;

const ROWS: usize = DENSE_BLOCK_ROWS as usize;
const GROUP: usize = DENSE_ROW_THREADS as usize;

/// Rows per rayon task when counting and filling slots: enough work to amortise a task.
const ROWS_PER_TASK: usize = 4096;

/// A matrix in dense blocks plus a COO remainder.
#[derive(Debug, Clone)]
pub struct DenseBlocks<T> {
    nrows: usize,
    ncols: usize,
    nnz: usize,
    window: usize,
    window_start: Vec<u32>,
    row_offsets: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
    remainder: Coo<T>,
}

impl<T: Scalar> DenseBlocks<T> {
    /// Converts `a` with windows of `window` columns ([`DENSE_WINDOW`] is a good start); refused with
    /// [`FormatError::InvalidParameter`] for a window of 0 or over [`DENSE_MAX_WINDOW_BYTES`], and with
    /// [`crate::Error::TooLarge`] when a dimension or the padded entry count does not fit 32 bits,
    /// found before anything of the padded size is allocated.
    pub fn try_from_csr(a: CsrRef<'_, T>, window: usize) -> Result<Self> {
        check_u32_dims(&a)?;
        if window
            .checked_mul(size_of::<T>())
            .is_none_or(|bytes| window == 0 || bytes > DENSE_MAX_WINDOW_BYTES)
        {
            let expected = "at least 1, with the window's elements in DENSE_MAX_WINDOW_BYTES";
            return Err(FormatError::InvalidParameter {
                what: "the dense-block window",
                value: window,
                expected,
            }
            .into());
        }
        let window_start: Vec<u32> =
            (0..a.nrows().div_ceil(ROWS)).into_par_iter().map(|b| block_window(&a, b, window)).collect();
        let in_window = |r: usize, c: usize| {
            let start = window_start[r / ROWS];
            start != DENSE_NO_WINDOW && c >= start as usize && c - (start as usize) < window
        };
        let held = |r: usize| a.row(r).0.iter().filter(|&&c| in_window(r, c)).count();
        // The padded size is checked before anything is sized by it: 2^28 rows of one entry each
        // would pad to 2^32 slots, and must be refused before a slot or a per-row count is allocated.
        let stored: usize = (0..a.nrows())
            .into_par_iter()
            .with_min_len(ROWS_PER_TASK)
            .map(|r| held(r).next_multiple_of(GROUP))
            .sum();
        narrow("the dense blocks' padded entry count", stored)?;

        let held: Vec<usize> = (0..a.nrows()).into_par_iter().with_min_len(ROWS_PER_TASK).map(held).collect();
        let slot_offsets = prefix_sums(held.iter().map(|&h| h.next_multiple_of(GROUP)));
        let rest_offsets = prefix_sums(a.row_offsets().windows(2).zip(&held).map(|(w, &h)| w[1] - w[0] - h));
        drop(held);
        let window_entries = |r: usize| {
            let (cols, values) = a.row(r);
            cols.iter().zip(values).filter(move |&(&c, _)| in_window(r, c))
        };
        let rest_entries = |r: usize| {
            let (cols, values) = a.row(r);
            cols.iter().zip(values).filter(move |&(&c, _)| !in_window(r, c))
        };

        let mut cols = vec![PAD_COL; stored];
        par_fill_segments(&slot_offsets, &mut cols, ROWS_PER_TASK, |r, slots| {
            let start = window_start[r / ROWS] as usize;
            for (slot, (&c, _)) in slots.iter_mut().zip(window_entries(r)) {
                *slot = index32(c - start);
            }
        });
        let mut values = vec![T::ZERO; stored];
        par_fill_segments(&slot_offsets, &mut values, ROWS_PER_TASK, |r, slots| {
            for (slot, (_, &v)) in slots.iter_mut().zip(window_entries(r)) {
                *slot = v;
            }
        });
        let rest = rest_offsets[a.nrows()];
        let mut rest_rows = vec![0; rest];
        par_fill_segments(&rest_offsets, &mut rest_rows, ROWS_PER_TASK, |r, seg| seg.fill(index32(r)));
        let mut rest_cols = vec![0; rest];
        par_fill_segments(&rest_offsets, &mut rest_cols, ROWS_PER_TASK, |r, seg| {
            for (slot, (&c, _)) in seg.iter_mut().zip(rest_entries(r)) {
                *slot = index32(c);
            }
        });
        let mut rest_values = vec![T::ZERO; rest];
        par_fill_segments(&rest_offsets, &mut rest_values, ROWS_PER_TASK, |r, seg| {
            for (slot, (_, &v)) in seg.iter_mut().zip(rest_entries(r)) {
                *slot = v;
            }
        });
        Ok(Self {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            window,
            window_start,
            row_offsets: slot_offsets.iter().map(|&o| index32(o)).collect(),
            cols,
            values,
            remainder: Coo::from_sorted(a.nrows(), a.ncols(), rest_rows, rest_cols, rest_values),
        })
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// Columns per window.
    pub fn window(&self) -> usize {
        self.window
    }

    /// The first column of each block's window, or `DENSE_NO_WINDOW`.
    pub fn window_start(&self) -> &[u32] {
        &self.window_start
    }

    /// `nrows + 1` offsets of each row's slots (a multiple of the half warp per row).
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }

    /// Column offsets into the row's block's window; `PAD_COL` marks padding.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Values, laid out as [`DenseBlocks::cols`]; 0 in padding.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The entries outside the windows.
    pub fn remainder(&self) -> &Coo<T> {
        &self.remainder
    }

    /// The entries as a CSR matrix, sorted, with repeated positions summed.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut entries = self.remainder.entries();
        for r in 0..self.nrows {
            let start = self.window_start[r / ROWS] as usize;
            for k in self.row_offsets[r] as usize..self.row_offsets[r + 1] as usize {
                if self.cols[k] != PAD_COL {
                    entries.push((r, start + self.cols[k] as usize, self.values[k]));
                }
            }
        }
        canonical_csr(self.nrows, self.ncols, entries)
    }
}

/// The window of `window` columns, starting at a multiple of [`DENSE_WINDOW_ALIGN`], that holds the
/// most of the sorted `cols` (the first such window), with the count it holds.
fn best_window(sorted_cols: &[usize], window: usize) -> (usize, usize) {
    let mut best = (0, 0);
    for (i, &c) in sorted_cols.iter().enumerate() {
        let start = c / DENSE_WINDOW_ALIGN * DENSE_WINDOW_ALIGN;
        if i > 0 && sorted_cols[i - 1] >= start {
            continue; // an earlier column of the same aligned start tried it
        }
        let end = start.saturating_add(window);
        // No earlier column reaches `start`, so the window's columns begin at `i`.
        let held = sorted_cols[i..].partition_point(|&c| c < end);
        if held > best.1 {
            best = (start, held);
        }
    }
    best
}

/// The first column of the window of block `b` of `a` (rows `b * ROWS ..`), or `DENSE_NO_WINDOW` when
/// the best window holds less than [`DENSE_MIN_CAPTURE`] of the block's entries.
fn block_window<T>(a: &CsrRef<'_, T>, b: usize, window: usize) -> u32 {
    let offsets = a.row_offsets();
    let entries = offsets[b * ROWS]..offsets[((b + 1) * ROWS).min(a.nrows())];
    let mut sorted: Vec<usize> = a.col_indices()[entries.clone()].to_vec();
    sorted.sort_unstable();
    let (start, held) = best_window(&sorted, window);
    if held > 0 && held as f64 >= DENSE_MIN_CAPTURE * entries.len() as f64 {
        index32(start)
    } else {
        DENSE_NO_WINDOW
    }
}

/// `[0, l0, l0 + l1, ...]`: the offsets of consecutive segments of the given lengths.
fn prefix_sums(lengths: impl ExactSizeIterator<Item = usize>) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(lengths.len() + 1);
    let mut sum = 0;
    offsets.push(sum);
    for len in lengths {
        sum += len;
        offsets.push(sum);
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_window_holds_the_most_columns() {
        assert_eq!(best_window(&[], 64), (0, 0));
        assert_eq!(best_window(&[5, 6, 7], 64), (0, 3));
        // Starts are multiples of 32: [96, 160) holds 100 and 150; [128, 192) holds 150 and 160..=162.
        assert_eq!(best_window(&[10, 100, 150, 160, 161, 162], 64), (128, 4));
        assert_eq!(best_window(&[0, 1, 1000, 1001, 1002], 16), (992, 3));
    }

    #[test]
    fn rows_are_padded_and_the_rest_goes_to_the_remainder() {
        // One row block: row 0 has columns 0, 1, 2 and 5000; row 1 has 3. Window 64 from column 0.
        let a =
            CsrRef::try_new(2, 6000, &[0, 4, 5], &[0, 1, 2, 5000, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let d = DenseBlocks::try_from_csr(a, 64).unwrap();
        assert_eq!(d.window_start(), [0]);
        assert_eq!(d.row_offsets(), [0, 16, 32]);
        assert_eq!(&d.cols()[..4], [0, 1, 2, PAD_COL]);
        assert_eq!(d.cols()[16], 3);
        assert_eq!(d.remainder().rows(), [0]);
        assert_eq!(d.remainder().cols(), [5000]);
        assert_eq!(d.nnz(), 5);
    }

    #[test]
    fn scattered_blocks_get_no_window() {
        let a = CsrRef::try_new(1, 10_000, &[0, 3], &[0, 4000, 9000], &[1.0f64, 2.0, 3.0]).unwrap();
        let d = DenseBlocks::try_from_csr(a, 64).unwrap();
        assert_eq!(d.window_start(), [DENSE_NO_WINDOW]);
        assert_eq!(d.row_offsets(), [0, 0]);
        assert_eq!(d.remainder().nnz(), 3);
    }

    #[test]
    fn window_is_checked() {
        let a = CsrRef::try_new(1, 1, &[0, 1], &[0], &[1.0f64]).unwrap();
        assert!(DenseBlocks::try_from_csr(a, 0).is_err());
        assert!(DenseBlocks::try_from_csr(a, 6 * 1024).is_ok());
        assert!(DenseBlocks::try_from_csr(a, 6 * 1024 + 1).is_err());
        // `window * 8` would wrap to 0 or to a small size.
        for window in [1 << 61, (1 << 61) + 1, usize::MAX] {
            assert!(matches!(
                DenseBlocks::try_from_csr(a, window),
                Err(crate::Error::Format(FormatError::InvalidParameter { value, .. })) if value == window
            ));
        }
        let a = CsrRef::try_new(1, 1, &[0, 1], &[0], &[1.0f32]).unwrap();
        assert!(DenseBlocks::try_from_csr(a, 1 << 62).is_err());
    }
}
