//! The host's passes of a staged upload (`gpu_spmv::formats::staging`): for any source, destination
//! length and bound, `copy_checked` either refuses different lengths with nothing written, or
//! copies the source and names its first entry at or past the bound; for any row offsets, even
//! decreasing ones, `first_decrease`, `offsets_copy` and `offsets_stats` agree with a sequential
//! reading of them and do not panic.

use gpu_spmv::Error;
use gpu_spmv::formats::{copy_checked, first_decrease, offsets_copy, offsets_stats, stage_chunks};

/// `copy_checked(source, dest of dest_len, |v| v >= bound)` against its contract, and the chunks of
/// `source` against theirs (consecutive, in order, covering it).
pub fn check_copy_checked(source: &[u32], dest_len: usize, bound: u32) {
    const UNWRITTEN: u32 = 0xDEAD_BEEF;
    let mut dest = vec![UNWRITTEN; dest_len];
    match copy_checked(source, &mut dest, |v| v >= bound) {
        Ok(found) => {
            assert_eq!(dest_len, source.len(), "accepted a destination of another length");
            assert_eq!(dest, source, "the destination is not the source");
            assert_eq!(found, source.iter().position(|&v| v >= bound), "not the first entry past the bound");
        }
        Err(Error::DimensionMismatch { expected, got, .. }) => {
            assert_eq!((expected, got), (source.len(), dest_len), "the refusal's lengths");
            assert_ne!(dest_len, source.len(), "refused equal lengths");
            assert!(dest.iter().all(|&v| v == UNWRITTEN), "a refusal wrote into the destination");
        }
        Err(other) => panic!("copy_checked failed with {other}"),
    }
    let mut next = 0;
    for chunk in stage_chunks::<u32>(source.len()) {
        assert!(chunk.start == next && chunk.end > chunk.start, "chunk {chunk:?} after {next}");
        next = chunk.end;
    }
    assert_eq!(next, source.len(), "the chunks do not cover the source");
}

/// The offsets' passes on any `row_offsets` (decreasing ones included) against a sequential reading.
pub fn check_offsets_passes(row_offsets: &[u32], ncols: usize) {
    let decrease = row_offsets.windows(2).position(|w| w[0] > w[1]);
    assert_eq!(first_decrease(row_offsets), decrease, "not the first decreasing row");
    assert_eq!(offsets_copy(row_offsets), row_offsets, "the copy differs");
    let stats = offsets_stats(row_offsets, ncols);
    let lengths: Vec<usize> = row_offsets.windows(2).map(|w| w[1].saturating_sub(w[0]) as usize).collect();
    assert_eq!(stats.rows, lengths.len(), "rows");
    assert_eq!(stats.cols, ncols, "columns");
    assert_eq!(stats.nnz, lengths.iter().sum::<usize>(), "entries");
    assert_eq!(stats.max, lengths.iter().copied().max().unwrap_or(0), "longest row");
}
