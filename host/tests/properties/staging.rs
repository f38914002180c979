//! The pass that fills an upload's staging chunks (`gpu_spmv::formats::copy_checked`): for any
//! source, destination length and bound, either the lengths differ and it refuses with nothing
//! written, or the destination is the source and the position it names is the first entry at or
//! past the bound.

use gpu_spmv::Error;
use gpu_spmv::formats::{copy_checked, stage_chunks};

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
