//! `RowPartition::balanced` and `Split::new`: refused exactly as documented, and an accepted split
//! that gives back the matrix: every row is its part's local and remote entries, and every ghost is
//! sent by its owner.

use gpu_spmv::formats::{MAX_PARTS, RowPartition, Split};
use gpu_spmv::{CsrRef, Error, FormatError, Scalar};

/// Parts up to which the split is built too (above, only the partition: the split's bookkeeping is
/// per part, and the fuzzer's inputs stay small).
const SPLIT_PARTS: usize = 300;

pub fn check_partition<T: Scalar>(a: CsrRef<'_, T>, parts: usize) {
    let partition = match RowPartition::balanced(&a, parts) {
        Ok(p) => p,
        Err(Error::Format(FormatError::InvalidParameter { value: 0, .. })) => return assert_eq!(parts, 0),
        Err(Error::TooLarge { value, limit, .. }) => {
            return assert!(value == parts && limit == MAX_PARTS && parts > MAX_PARTS);
        }
        Err(e) => panic!("unexpected refusal {e}"),
    };
    assert!((1..=MAX_PARTS).contains(&parts));
    assert_eq!(partition.parts(), parts);
    let (mut next_row, mut next_col) = (0, 0);
    for p in 0..parts {
        let (rows, cols) = (partition.rows(p), partition.cols(p, a.ncols()));
        assert_eq!((rows.start, cols.start), (next_row, next_col), "part {p} does not follow the last");
        (next_row, next_col) = (rows.end, cols.end);
    }
    assert_eq!((next_row, next_col), (a.nrows(), a.ncols()));
    if parts > SPLIT_PARTS {
        return;
    }
    let split = match Split::new(&a, partition.clone()) {
        Ok(split) => split,
        Err(Error::TooLarge { what: "a part's column count", value, .. }) => {
            return assert!(value > u32::MAX as usize);
        }
        Err(e) => panic!("unexpected refusal {e}"),
    };
    for (p, part) in split.parts.iter().enumerate() {
        let (local, remote) = (part.local.view().unwrap(), part.remote.view().unwrap());
        for (i, r) in part.rows.clone().enumerate() {
            let mut got: Vec<(usize, u64)> = local
                .row(i)
                .0
                .iter()
                .zip(local.row(i).1)
                .map(|(&c, v)| (c + part.cols.start, v.to_f64().to_bits()))
                .collect();
            if let Ok(k) = part.remote_rows.binary_search(&i) {
                got.extend(
                    remote
                        .row(k)
                        .0
                        .iter()
                        .zip(remote.row(k).1)
                        .map(|(&g, v)| (part.ghosts[g], v.to_f64().to_bits())),
                );
            }
            let mut want: Vec<(usize, u64)> =
                a.row(r).0.iter().zip(a.row(r).1).map(|(&c, v)| (c, v.to_f64().to_bits())).collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "part {p}, row {r}");
        }
        for (owner, run) in &part.receives {
            let (_, list) =
                split.parts[*owner].sends.iter().find(|(peer, _)| *peer == p).expect("a run no one sends");
            let first = split.parts[*owner].cols.start;
            let sent: Vec<usize> = list.iter().map(|&i| first + i as usize).collect();
            assert_eq!(sent, part.ghosts[run.clone()], "part {p}: ghosts from part {owner}");
        }
    }
}
