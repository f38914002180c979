//! BRC, Blocked Row-Column (Ashari, Sedaghati, Eisenlohr & Sadayappan, J. Parallel Distrib. Comput.
//! 2015; kernels: `kernels-gpu/src/formats/brc.rs`).
//!
//! Rows are sorted by length, longest first (stably), and rows longer than the width bound B2 are
//! split into pieces of B2 entries and a shorter rest, which take their place in the sorted order by
//! their own length. Blocks of B1 = 32 consecutive pieces, one warp each, are stored column-major
//! within the block and padded to their longest piece only, so a block wastes little and every
//! block holds about the same work. The pieces of a split row are combined after the block kernel:
//! by atomics, or in order through a scratch buffer (see the kernels).

use super::convert::{canonical_csr, check_u32_dims, index32, par_fill_segments};
use super::shape::Shape;
use crate::error::FormatError;
use crate::formats::csr::{CsrRef, RowStats};
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{BRC_BLOCK_PIECES, BRC_SPLIT, PAD_COL};
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;
use std::cmp::Reverse;

/// Blocks per rayon task when filling the entry arrays.
const BLOCKS_PER_TASK: usize = 64;

/// Pieces per block, B1, as a `usize`.
const B1: usize = BRC_BLOCK_PIECES as usize;

/// Warps one SM holds at once (2048 threads on every GPU from Volta to Hopper).
const RESIDENT_WARPS_PER_SM: usize = 64;

/// The width bound B2: Ashari et al.'s model, `ceil(min(mean + standard deviation, longest row))`
/// entries per row, capped so that the blocks (one warp each, 32 pieces of at most B2 entries) are
/// at least as many as the GPU's `sm_count` SMs hold at once. Without the cap, a matrix of long rows
/// gets too few blocks to fill the GPU: on the H100 the best B2 measured was a quarter of the model's
/// for rows of 64 to 2,600 entries on average (`docs/PERF.md`). At least 1. The bench auto-tunes around
/// it ([`brc_b2_candidates`]).
pub fn brc_model_b2(stats: &RowStats, sm_count: u32) -> usize {
    let model = (stats.mean + stats.std_dev).min(stats.max as f64).ceil();
    #[allow(clippy::cast_possible_truncation)] // non-negative and at most the longest row
    let model = model as usize;
    let resident_warps = sm_count as usize * RESIDENT_WARPS_PER_SM;
    // 0 SMs (no GPU described) leaves the model uncapped.
    let filling = stats.nnz / (B1 * resident_warps).max(1);
    model.min(filling).max(1)
}

/// The B2 values to auto-tune over: the model's value ([`brc_model_b2`]) times 1/4, 1/2, 1, 2 and 4,
/// kept between 1 and the longest row, ascending and distinct. (Saturating: statistics of any size,
/// even 0 SMs, give candidates, not an overflow.)
pub fn brc_b2_candidates(stats: &RowStats, sm_count: u32) -> Vec<usize> {
    let model = brc_model_b2(stats, sm_count);
    let longest = stats.max.max(1);
    let mut candidates: Vec<usize> =
        [model / 4, model / 2, model, model.saturating_mul(2), model.saturating_mul(4)]
            .iter()
            .map(|&b| b.clamp(1, longest))
            .collect();
    candidates.sort_unstable();
    candidates.dedup();
    candidates
}

/// One piece: a whole row or a part of a split row, `len` entries of CSR from `start`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    target: u32,
    start: usize,
    len: usize,
}

/// A BRC matrix.
#[derive(Debug, Clone)]
pub struct Brc<T> {
    nrows: usize,
    ncols: usize,
    nnz: usize,
    b2: usize,
    permutation: Vec<u32>,
    block_ptr: Vec<u32>,
    block_width: Vec<u32>,
    targets: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
    split_rows: Vec<u32>,
    split_ptr: Vec<u32>,
    slot_rows: Vec<u32>,
}

impl<T: Scalar> Brc<T> {
    /// Converts `a` with width bound `b2` (see [`brc_model_b2`]); refused with
    /// [`FormatError::InvalidParameter`] for `b2 == 0`, and with [`Error::TooLarge`] when the
    /// matrix has `2^31` rows or more, or its padded entries or pieces do not fit 32 bits.
    pub fn try_from_csr(a: CsrRef<'_, T>, b2: usize) -> Result<Self> {
        check_u32_dims(&a)?;
        if b2 == 0 {
            return Err(
                FormatError::InvalidParameter { what: "BRC's B2", value: 0, expected: "at least 1" }.into()
            );
        }
        let split_limit = BRC_SPLIT as usize;
        if a.nrows() >= split_limit {
            return Err(Error::TooLarge {
                what: "the row count of a BRC matrix",
                value: a.nrows(),
                limit: split_limit - 1,
            });
        }
        let offsets = a.row_offsets();
        let len = |r: u32| offsets[r as usize + 1] - offsets[r as usize];

        let mut permutation: Vec<u32> = (0..index32(a.nrows())).collect();
        permutation.par_sort_by_key(|&r| Reverse(len(r)));
        // Sorted longest first, the split rows are a prefix.
        let split_count = permutation.partition_point(|&r| len(r) > b2);
        let split_rows = permutation[..split_count].to_vec();
        let mut split_ptr = Vec::with_capacity(split_count + 1);
        split_ptr.push(0usize);
        for &r in &split_rows {
            split_ptr.push(split_ptr[split_ptr.len() - 1] + len(r).div_ceil(b2));
        }
        let slots = split_ptr[split_count];
        if slots >= split_limit {
            return Err(Error::TooLarge {
                what: "the pieces of BRC's split rows",
                value: slots,
                limit: split_limit - 1,
            });
        }

        let mut pieces: Vec<Piece> = Vec::with_capacity(a.nrows() + slots - split_count);
        for (s, &r) in split_rows.iter().enumerate() {
            let (start, end) = (offsets[r as usize], offsets[r as usize + 1]);
            for (j, piece_start) in (start..end).step_by(b2).enumerate() {
                let target = BRC_SPLIT | index32(split_ptr[s] + j);
                pieces.push(Piece { target, start: piece_start, len: b2.min(end - piece_start) });
            }
        }
        pieces.par_extend(permutation[split_count..].par_iter().map(|&r| Piece {
            target: r,
            start: offsets[r as usize],
            len: len(r),
        }));
        // Pieces of B2 entries first, then the rests of split rows among the whole rows, by length.
        pieces.par_sort_by_key(|p| Reverse(p.len));

        let block_width: Vec<usize> = pieces.chunks(B1).map(|block| block[0].len).collect();
        let mut block_start = Vec::with_capacity(block_width.len() + 1);
        block_start.push(0usize);
        for &w in &block_width {
            block_start.push(block_start[block_start.len() - 1] + w * B1);
        }
        let stored = block_start[block_width.len()];
        if u32::try_from(stored).is_err() {
            return Err(Error::TooLarge {
                what: "BRC's padded entry count",
                value: stored,
                limit: u32::MAX as usize,
            });
        }

        let mut cols = vec![PAD_COL; stored];
        par_fill_segments(&block_start, &mut cols, BLOCKS_PER_TASK, |b, block| {
            for_each_slot(&pieces, b, block.len(), |slot, entry| {
                block[slot] = index32(a.col_indices()[entry])
            });
        });
        let mut values = vec![T::ZERO; stored];
        par_fill_segments(&block_start, &mut values, BLOCKS_PER_TASK, |b, block| {
            for_each_slot(&pieces, b, block.len(), |slot, entry| block[slot] = a.values()[entry]);
        });

        let slot_rows = split_rows
            .iter()
            .zip(split_ptr.windows(2))
            .flat_map(|(&r, w)| std::iter::repeat_n(r, w[1] - w[0]));
        Ok(Self {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            b2,
            slot_rows: slot_rows.collect(),
            permutation,
            block_ptr: block_start[..block_width.len()].iter().map(|&p| index32(p)).collect(),
            block_width: block_width.iter().map(|&w| index32(w)).collect(),
            targets: pieces.par_iter().map(|p| p.target).collect(),
            cols,
            values,
            split_rows,
            split_ptr: split_ptr.iter().map(|&p| index32(p)).collect(),
        })
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// The width bound the matrix was built with.
    pub fn b2(&self) -> usize {
        self.b2
    }

    /// The rows sorted by length, longest first, ties in row order: position `i` holds a row index of
    /// the caller's matrix.
    pub fn permutation(&self) -> &[u32] {
        &self.permutation
    }

    /// Where each block's entries start in [`Brc::cols`] and [`Brc::values`].
    pub fn block_ptr(&self) -> &[u32] {
        &self.block_ptr
    }

    /// Each block's width: its longest piece, the columns of 32 slots it stores.
    pub fn block_width(&self) -> &[u32] {
        &self.block_width
    }

    /// Where each piece's sum goes: a row of the caller's matrix, or `BRC_SPLIT` with the piece's
    /// slot among the split rows' pieces.
    pub fn targets(&self) -> &[u32] {
        &self.targets
    }

    /// Column indices, block by block, column-major inside a block; `PAD_COL` marks padding.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Values, laid out as [`Brc::cols`]; 0 in padding.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The rows longer than B2, longest first.
    pub fn split_rows(&self) -> &[u32] {
        &self.split_rows
    }

    /// The slots of split row `s` are `split_ptr[s] .. split_ptr[s + 1]`.
    pub fn split_ptr(&self) -> &[u32] {
        &self.split_ptr
    }

    /// The row of each slot.
    pub fn slot_rows(&self) -> &[u32] {
        &self.slot_rows
    }

    /// The entries as a CSR matrix, sorted, with repeated positions summed.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut entries = Vec::with_capacity(self.nnz);
        for (b, (&start, &width)) in self.block_ptr.iter().zip(&self.block_width).enumerate() {
            for lane in 0..B1.min(self.targets.len() - b * B1) {
                let target = self.targets[b * B1 + lane];
                let row = if target & BRC_SPLIT == 0 {
                    target
                } else {
                    self.slot_rows[(target & !BRC_SPLIT) as usize]
                };
                for j in 0..width as usize {
                    let slot = start as usize + j * B1 + lane;
                    if self.cols[slot] != PAD_COL {
                        entries.push((row as usize, self.cols[slot] as usize, self.values[slot]));
                    }
                }
            }
        }
        canonical_csr(self.nrows, self.ncols, entries)
    }
}

/// Calls `put(slot, entry)` for every entry of block `b`: entry `j` of the piece in lane `l` goes to
/// slot `j * 32 + l` of the block's `block_len` slots.
fn for_each_slot(pieces: &[Piece], b: usize, block_len: usize, mut put: impl FnMut(usize, usize)) {
    let block = &pieces[b * B1..(b * B1 + B1).min(pieces.len())];
    debug_assert!(block.iter().all(|p| p.len * B1 <= block_len));
    for (lane, piece) in block.iter().enumerate() {
        for j in 0..piece.len {
            put(j * B1 + lane, piece.start + j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SMs of an H100 SXM.
    const SMS: u32 = 132;

    /// Statistics of a matrix with enough entries that the occupancy cap does not bind.
    fn stats(mean: f64, std_dev: f64, max: usize) -> RowStats {
        RowStats { rows: 100, cols: 100, nnz: 1 << 40, mean, std_dev, max, empty_rows: 0 }
    }

    #[test]
    fn b2_model_is_mean_plus_deviation_capped_by_the_longest_row() {
        assert_eq!(brc_model_b2(&stats(10.0, 2.5, 40), SMS), 13);
        assert_eq!(brc_model_b2(&stats(10.0, 40.0, 40), SMS), 40);
        assert_eq!(brc_model_b2(&stats(0.0, 0.0, 0), SMS), 1);
        assert_eq!(brc_model_b2(&stats(3.0, 0.0, 3), SMS), 3);
    }

    #[test]
    fn b2_model_leaves_enough_blocks_to_fill_the_gpu() {
        // The suite's wide-400: 20 M entries, 400 +- 70 per row; one wave of warps holds
        // 32 * 132 * 64 pieces, so B2 = 20e6 / 270,336 = 73 rather than 470.
        let wide = RowStats { nnz: 20_000_000, ..stats(400.0, 70.0, 520) };
        assert_eq!(brc_model_b2(&wide, SMS), 73);
        let empty = RowStats { nnz: 0, ..stats(0.0, 0.0, 0) };
        assert_eq!(brc_model_b2(&empty, SMS), 1);
    }

    #[test]
    fn b2_candidates_surround_the_model() {
        assert_eq!(brc_b2_candidates(&stats(10.0, 2.0, 1000), SMS), [3, 6, 12, 24, 48]);
        assert_eq!(brc_b2_candidates(&stats(10.0, 2.0, 20), SMS), [3, 6, 12, 20]);
        assert_eq!(brc_b2_candidates(&stats(0.0, 0.0, 0), SMS), [1]);
    }

    #[test]
    fn long_rows_split_and_blocks_are_column_major() {
        // Row 0: 5 entries, row 1: 1, row 2: 0, row 3: 2. B2 = 2: row 0 splits into 2 + 2 + 1.
        let offsets = [0, 5, 6, 6, 8];
        let cols = [0, 1, 2, 3, 4, 5, 6, 7];
        let values = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let a = CsrRef::try_new(4, 8, &offsets, &cols, &values).unwrap();
        let brc = Brc::try_from_csr(a, 2).unwrap();
        assert_eq!(brc.permutation(), [0, 3, 1, 2]);
        assert_eq!(brc.split_rows(), [0]);
        assert_eq!(brc.split_ptr(), [0, 3]);
        assert_eq!(brc.slot_rows(), [0, 0, 0]);
        // Pieces by length: slot 0 (2), slot 1 (2), row 3 (2), slot 2 (1), row 1 (1), row 2 (0).
        assert_eq!(brc.targets(), [BRC_SPLIT, BRC_SPLIT | 1, 3, BRC_SPLIT | 2, 1, 2]);
        assert_eq!(brc.block_ptr(), [0]);
        assert_eq!(brc.block_width(), [2]);
        assert_eq!(&brc.cols()[..6], [0, 2, 6, 4, 5, PAD_COL]);
        assert_eq!(&brc.cols()[32..38], [1, 3, 7, PAD_COL, PAD_COL, PAD_COL]);
        assert_eq!(
            brc.to_csr(),
            CsrMatrix::try_from_csr_data(4, 8, offsets.to_vec(), cols.to_vec(), values.to_vec()).unwrap()
        );
    }

    #[test]
    fn b2_of_zero_is_refused() {
        let a = CsrRef::try_new(1, 1, &[0, 1], &[0], &[1.0f32]).unwrap();
        assert!(matches!(
            Brc::try_from_csr(a, 0),
            Err(Error::Format(FormatError::InvalidParameter { value: 0, .. }))
        ));
    }
}
