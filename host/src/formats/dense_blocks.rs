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

use super::convert::{canonical_csr, check_u32_dims, index32};
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

/// One block of rows, converted: its window, its padded slots row by row, and its remainder.
#[derive(Debug)]
struct Block<T> {
    window_start: u32,
    row_slots: Vec<usize>,
    cols: Vec<u32>,
    values: Vec<T>,
    rest: Vec<(u32, u32, T)>,
}

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
    /// [`crate::Error::TooLarge`] when a dimension or the padded entry count does not fit 32 bits.
    pub fn try_from_csr(a: CsrRef<'_, T>, window: usize) -> Result<Self> {
        check_u32_dims(&a)?;
        if window == 0 || window * size_of::<T>() > DENSE_MAX_WINDOW_BYTES {
            let expected = "at least 1, with the window's elements in DENSE_MAX_WINDOW_BYTES";
            return Err(FormatError::InvalidParameter {
                what: "the dense-block window",
                value: window,
                expected,
            }
            .into());
        }
        let blocks: Vec<Block<T>> =
            (0..a.nrows().div_ceil(ROWS)).into_par_iter().map(|b| convert_block(&a, b, window)).collect();
        let mut row_offsets = Vec::with_capacity(a.nrows() + 1);
        row_offsets.push(0usize);
        for len in blocks.iter().flat_map(|b| &b.row_slots) {
            row_offsets.push(row_offsets[row_offsets.len() - 1] + len);
        }
        let stored = row_offsets[a.nrows()];
        crate::formats::convert::narrow("the dense blocks' padded entry count", stored)?;
        let (mut cols, mut values) = (Vec::with_capacity(stored), Vec::with_capacity(stored));
        let (mut rest_rows, mut rest_cols, mut rest_values) = (Vec::new(), Vec::new(), Vec::new());
        for block in &blocks {
            cols.extend_from_slice(&block.cols);
            values.extend_from_slice(&block.values);
            for &(r, c, v) in &block.rest {
                rest_rows.push(r);
                rest_cols.push(c);
                rest_values.push(v);
            }
        }
        Ok(Self {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            window,
            window_start: blocks.iter().map(|b| b.window_start).collect(),
            row_offsets: row_offsets.iter().map(|&o| index32(o)).collect(),
            cols,
            values,
            remainder: Coo::from_sorted(a.nrows(), a.ncols(), rest_rows, rest_cols, rest_values),
        })
    }

    pub fn nrows(&self) -> usize {
        self.nrows
    }

    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Entries held, in blocks and remainder (padding not counted).
    pub fn nnz(&self) -> usize {
        self.nnz
    }

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

/// Block `b` of `a`: rows `b * ROWS ..` and their split between window and remainder.
fn convert_block<T: Scalar>(a: &CsrRef<'_, T>, b: usize, window: usize) -> Block<T> {
    let rows = b * ROWS..((b + 1) * ROWS).min(a.nrows());
    let offsets = a.row_offsets();
    let entries = offsets[rows.start]..offsets[rows.end];
    let mut sorted: Vec<usize> = a.col_indices()[entries.clone()].to_vec();
    sorted.sort_unstable();
    let (start, held) = best_window(&sorted, window);
    let has_window = held > 0 && held as f64 >= DENSE_MIN_CAPTURE * entries.len() as f64;
    let in_window = |c: usize| has_window && c >= start && c - start < window;
    let mut block = Block {
        window_start: if has_window { index32(start) } else { DENSE_NO_WINDOW },
        row_slots: Vec::with_capacity(rows.len()),
        cols: Vec::new(),
        values: Vec::new(),
        rest: Vec::new(),
    };
    for r in rows {
        let (cols, values) = a.row(r);
        let before = block.cols.len();
        for (&c, &v) in cols.iter().zip(values) {
            if in_window(c) {
                block.cols.push(index32(c - start));
                block.values.push(v);
            } else {
                block.rest.push((index32(r), index32(c), v));
            }
        }
        let padded = (block.cols.len() - before).next_multiple_of(GROUP) + before;
        block.cols.resize(padded, PAD_COL);
        block.values.resize(padded, T::ZERO);
        block.row_slots.push(padded - before);
    }
    block
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
    }
}
