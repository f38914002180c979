//! The host's share of a staged upload: how an array is cut into the chunks that go through a
//! `Gpu`'s pinned staging buffers one at a time (`Gpu::upload_csr_u32`, `Gpu::upload_csr_ref`), and
//! the pass by all cores that fills a chunk, copying and checking it in one read. Pure CPU code.
//!
//! The host's work on the `u32` row offsets of `Gpu::upload_csr_u32` is here too: their statistics
//! ([`offsets_stats`]) and the matrix's host copy of them ([`offsets_copy`]); their check is
//! `CsrRef::try_new`'s own ([`first_decrease`](super::first_decrease)).
//!
//! Public so that the host's rate can be measured apart from the link's, on the same bytes and by
//! the same code: the upload's pace is the slower of the two (docs/PERF.md, section 20), and
//! `spmv-bench`'s upload table times this pass, and each step of the offsets, alone beside the
//! whole upload.

use super::csr::RowStats;
#[cfg(test)]
use super::csr::first_decrease;
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// Bytes of each pinned staging buffer: large enough that a chunk's copy over the link (~0.3 ms at
/// 55 GB/s) dwarfs the fixed cost of starting it and of the pass that fills it, small enough to keep
/// [`STAGES`] of them with every `Gpu`.
pub const STAGE_BYTES: usize = 16 << 20;

/// Pinned staging buffers a `Gpu` keeps: one is filled while the other's copy runs. Two are enough
/// for the host's pass and the link to overlap fully, each chunk's pass waiting only for the copy
/// of the chunk two before it, which started before the previous pass did: the pace is the slower
/// of the two rates, and more stages would only absorb jitter (docs/PERF.md, section 20).
pub const STAGES: usize = 2;

/// Bytes of the pieces a chunk's pass hands to rayon: 128 pieces a chunk, enough to spread over
/// the cores evenly, each large enough to pay for its task.
const PIECE_BYTES: usize = 128 << 10;

/// The chunks of an array of `len` elements of `E`, in order: consecutive ranges of at most
/// [`STAGE_BYTES`] bytes each (at least one element), covering `0..len` exactly; none when `len`
/// is 0.
pub fn stage_chunks<E>(len: usize) -> impl Iterator<Item = Range<usize>> {
    let chunk = (STAGE_BYTES / size_of::<E>().max(1)).max(1);
    (0..len).step_by(chunk).map(move |first| first..len.min(first + chunk))
}

/// Copies `source` into `dest` by all cores and returns the first position `i` where
/// `bad(source[i])` holds (`None`: nowhere). Each piece is read once: the check rides on the copy
/// as a reduction the compiler vectorises, and only a piece where it found something is searched
/// again for the position. With `|_| false` it is a parallel copy. Refused, with nothing written,
/// when the lengths differ ([`Error::DimensionMismatch`]).
pub fn copy_checked<E: Copy + Send + Sync>(
    source: &[E],
    dest: &mut [E],
    bad: impl Fn(E) -> bool + Sync,
) -> Result<Option<usize>> {
    if source.len() != dest.len() {
        return Err(Error::DimensionMismatch {
            what: "the copy's destination",
            expected: source.len(),
            got: dest.len(),
        });
    }
    let piece = (PIECE_BYTES / size_of::<E>().max(1)).max(1);
    Ok(dest
        .par_chunks_mut(piece)
        .zip(source.par_chunks(piece))
        .enumerate()
        .filter_map(|(i, (d, s))| {
            let mut found = false;
            for (d, &s) in d.iter_mut().zip(s) {
                *d = s;
                found |= bad(s);
            }
            if found { s.iter().position(|&x| bad(x)).map(|k| i * piece + k) } else { None }
        })
        .min())
}

/// Elements below which a rayon task over row offsets is not split further: enough work to pay
/// for a task.
const OFFSETS_MIN: usize = 1 << 15;

/// The statistics of the rows of `ncols` columns that `row_offsets` describe, in one pass by all
/// cores.
pub fn offsets_stats(row_offsets: &[u32], ncols: usize) -> RowStats {
    RowStats::from_u32_offsets(row_offsets, ncols)
}

/// A copy of `row_offsets` made by all cores: the pages of a fresh allocation are faulted in on
/// first touch, 4 KiB at a time, which by one core was the one serial step of an upload (17.6 MB
/// for stencil2d-5).
pub fn offsets_copy(row_offsets: &[u32]) -> Vec<u32> {
    row_offsets.par_iter().with_min_len(OFFSETS_MIN).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_array_in_order_within_a_stage() {
        for len in
            [0, 1, 5, STAGE_BYTES / 4 - 1, STAGE_BYTES / 4, STAGE_BYTES / 4 + 1, 3 * STAGE_BYTES / 4 + 7]
        {
            let chunks: Vec<_> = stage_chunks::<u32>(len).collect();
            let mut next = 0;
            for c in &chunks {
                assert_eq!(c.start, next, "len {len}: chunks in order, no gap");
                assert!(!c.is_empty() && c.len() * 4 <= STAGE_BYTES, "len {len}: {c:?} fits a stage");
                next = c.end;
            }
            assert_eq!(next, len, "len {len}: chunks end at the array's end");
            assert_eq!(chunks.len(), len.div_ceil(STAGE_BYTES / 4));
        }
        assert_eq!(
            stage_chunks::<f64>(STAGE_BYTES / 8 + 1).map(|c| c.len()).collect::<Vec<_>>(),
            [STAGE_BYTES / 8, 1]
        );
    }

    #[test]
    fn offsets_steps_find_the_first_decrease_and_copy() {
        let n = 3 * OFFSETS_MIN + 5;
        let mut offsets: Vec<u32> = (0..u32::try_from(n).unwrap()).map(|i| i * 2).collect();
        assert_eq!(first_decrease(&offsets), None);
        assert_eq!(offsets_copy(&offsets), offsets);
        let stats = offsets_stats(&offsets, 7);
        assert_eq!((stats.rows, stats.cols, stats.nnz, stats.max), (n - 1, 7, 2 * (n - 1), 2));
        for at in [2 * OFFSETS_MIN + 1, OFFSETS_MIN - 1] {
            offsets[at] = 0;
        }
        // Rows `OFFSETS_MIN - 2` and `2 * OFFSETS_MIN` decrease, in different tasks: the first is named.
        assert_eq!(first_decrease(&offsets), Some(OFFSETS_MIN - 2));
        assert_eq!(first_decrease::<u32>(&[]), None);
        assert_eq!(first_decrease(&[3u32]), None);
    }

    #[test]
    fn copies_everything_and_finds_the_first_bad_position() {
        let n = 5 * PIECE_BYTES / 4 + 3;
        let source: Vec<u32> = (0..n).map(|i| u32::try_from(i % 1000).unwrap()).collect();
        let mut dest = vec![u32::MAX; n];
        assert_eq!(copy_checked(&source, &mut dest, |c| c >= 1000).unwrap(), None);
        assert_eq!(dest, source);
        // Bad entries in several pieces, and two in one: the first is named.
        for first in [0, 17, PIECE_BYTES / 4 - 1, PIECE_BYTES / 4, n - 1] {
            let mut source = source.clone();
            for at in [first, first + (n - first) / 2, n - 1] {
                source[at] = 1000 + u32::try_from(at).unwrap();
            }
            let mut dest = vec![0; n];
            assert_eq!(copy_checked(&source, &mut dest, |c| c >= 1000).unwrap(), Some(first));
            assert_eq!(dest, source, "the whole of a bad array is copied too");
        }
        let mut empty: [u32; 0] = [];
        assert_eq!(copy_checked(&[], &mut empty, |_| true).unwrap(), None);
        let mut short = vec![7u32; n - 1];
        assert!(matches!(
            copy_checked(&source, &mut short, |_| false),
            Err(Error::DimensionMismatch { expected, got, .. }) if expected == n && got == n - 1
        ));
        assert!(short.iter().all(|&v| v == 7), "nothing written on a refusal");
    }
}
