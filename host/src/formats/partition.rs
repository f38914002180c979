//! A CSR matrix split over `parts` devices by rows, for the distributed product (`crate::distributed`):
//! the PETSc MPIAIJ split (Balay et al., *PETSc Users Manual*, "Parallel AIJ matrices"), which
//! Ginkgo's distributed matrix also uses (`experimental::distributed::Matrix`, its local and
//! non-local parts).
//!
//! Rows are cut into contiguous ranges balanced by non-zeros ([`RowPartition::balanced`]): the
//! product's time on each device is its bytes, and its bytes are its entries. The columns, and so
//! the entries of `x`, are owned by the same ranges (a square matrix's `x` is distributed like its
//! `y`); the columns past the last row of a rectangular matrix belong to the last part, so every
//! column has one owner even where no row owns it.
//!
//! Each part stores its rows twice over: the *local block* holds the entries whose columns the part
//! owns, renumbered from the part's first column, and the *remote block* those whose columns belong to
//! other parts, renumbered into a compact *ghost vector* that holds each such column once, in
//! increasing order. Because column ownership is contiguous, the ghosts from one owner are one run of
//! that vector: the part receives each run from its owner straight into place, and the owner sends
//! the entries of its `x` that the run lists (its *send list* for that peer, indices into its own `x`).
//! The product on a part is then `y = alpha * L x_own + beta * y` while the ghosts travel, and
//! `y += alpha * R x_ghost` once they have arrived.
//!
//! The remote block keeps only the rows that have remote entries (PETSc's compressed rows for the
//! off-diagonal block, `MatMult_SeqAIJ` with `compressedrow`), with the part's row of each: a
//! stencil's remote block is one plane of rows, and over all the part's rows its product would read
//! the row offsets and read and write all of `y` again, 20 bytes a row, a fifth of the local
//! product's bytes for a 7-point stencil in f64.

use super::convert::index32;
use super::csr::CsrRef;
use super::limits::MAX_PARTS;
use crate::error::FormatError;
use crate::scalar::Scalar;
use crate::{Error, Result};
use std::ops::Range;

/// Contiguous row ranges, one per part, covering every row in order. A part may have no rows (more
/// parts than rows, or one row with most of the entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowPartition {
    /// `parts + 1` row boundaries: part `p` holds rows `starts[p]..starts[p + 1]`.
    starts: Vec<usize>,
}

impl RowPartition {
    /// Rows cut so that each part holds about `nnz / parts` entries: part `p` starts at the first row
    /// whose offset reaches `p * nnz / parts`. Where entries are uneven (one huge row) a part may get
    /// more or none; a matrix without entries is cut into equal row counts instead.
    ///
    /// Refused: `parts == 0` ([`FormatError::InvalidParameter`]), and, before anything is
    /// allocated, more than [`MAX_PARTS`] ([`Error::TooLarge`]).
    pub fn balanced<T>(a: &CsrRef<'_, T>, parts: usize) -> Result<Self> {
        if parts == 0 {
            let e =
                FormatError::InvalidParameter { what: "the part count", value: 0, expected: "at least 1" };
            return Err(e.into());
        }
        if parts > MAX_PARTS {
            return Err(Error::TooLarge { what: "the part count", value: parts, limit: MAX_PARTS });
        }
        let (rows, nnz) = (a.nrows(), a.nnz());
        let offsets = a.row_offsets();
        let mut starts = Vec::with_capacity(parts + 1);
        starts.push(0);
        for p in 1..parts {
            // u128: `p * nnz` may exceed usize on 32-bit hosts, and costs nothing here.
            let start = if nnz == 0 {
                (p as u128 * rows as u128 / parts as u128) as usize
            } else {
                let target = (p as u128 * nnz as u128 / parts as u128) as usize;
                offsets.partition_point(|&o| o < target).min(rows)
            };
            starts.push(start.max(starts[p - 1]));
        }
        starts.push(rows);
        Ok(Self { starts })
    }

    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.starts.len() - 1
    }

    /// The rows of part `p`.
    ///
    /// # Panics
    ///
    /// If `p >= parts()`, like a slice index out of bounds.
    pub fn rows(&self, p: usize) -> Range<usize> {
        self.starts[p]..self.starts[p + 1]
    }

    /// The columns (entries of `x`) part `p` owns among `ncols`: its rows' range clipped to `ncols`,
    /// and for the last part every column after it too.
    ///
    /// # Panics
    ///
    /// If `p >= parts()`, like a slice index out of bounds.
    pub fn cols(&self, p: usize, ncols: usize) -> Range<usize> {
        let end = if p + 1 == self.parts() { ncols } else { self.starts[p + 1].min(ncols) };
        self.starts[p].min(ncols)..end
    }

    /// The part that owns column `col` (`col < ncols`).
    fn owner(&self, col: usize) -> usize {
        // The last part whose first row is at or before `col`, past any parts without rows there.
        self.starts[1..self.parts()].partition_point(|&s| s <= col)
    }
}

/// A block of a part's rows with its own column numbering: CSR arrays ready for `Gpu::upload_csr_parts`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block<T> {
    pub nrows: usize,
    pub ncols: usize,
    pub row_offsets: Vec<usize>,
    pub col_indices: Vec<usize>,
    pub values: Vec<T>,
}

impl<T: Scalar> Block<T> {
    /// The block as a checked CSR view.
    pub fn view(&self) -> Result<CsrRef<'_, T>> {
        Ok(CsrRef::try_new(self.nrows, self.ncols, &self.row_offsets, &self.col_indices, &self.values)?)
    }
}

/// What one part holds and exchanges: its rows and owned columns, its two blocks, and its side of
/// the ghost map.
#[derive(Debug, Clone, PartialEq)]
pub struct Part<T> {
    /// The global rows this part computes (its `y`).
    pub rows: Range<usize>,
    /// The global columns this part owns (its `x`).
    pub cols: Range<usize>,
    /// `rows` by `cols`, columns counted from `cols.start`.
    pub local: Block<T>,
    /// `remote_rows.len()` by `ghosts.len()`, columns numbered as the ghost vector.
    pub remote: Block<T>,
    /// The row of the part (counted from `rows.start`) of each row of `remote`, increasing.
    pub remote_rows: Vec<usize>,
    /// The ghost vector: the global column of each entry, increasing.
    pub ghosts: Vec<usize>,
    /// `(owner, range of the ghost vector)`: the runs received from each other part, in increasing
    /// order of part, without empty runs.
    pub receives: Vec<(usize, Range<usize>)>,
    /// `(peer, indices into this part's x)`: what each other part receives from this one, in its
    /// ghost order, in increasing order of peer, without empty lists.
    pub sends: Vec<(usize, Vec<u32>)>,
}

/// A matrix split over the parts of a [`RowPartition`] (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Split<T> {
    pub partition: RowPartition,
    pub nrows: usize,
    pub ncols: usize,
    pub parts: Vec<Part<T>>,
}

impl<T: Scalar> Split<T> {
    /// `a` split over `partition`. Memory is one copy of `a` plus, per part, its ghost vector and
    /// send lists (each at most the part's entry count). Refused: a partition of other rows than
    /// `a`'s, and a part that owns more than 2^32 columns (its send lists index its `x` in 32 bits).
    pub fn new(a: &CsrRef<'_, T>, partition: RowPartition) -> Result<Self> {
        let parts = partition.parts();
        if partition.starts[parts] != a.nrows() {
            return Err(Error::DimensionMismatch {
                what: "the partition's rows",
                expected: a.nrows(),
                got: partition.starts[parts],
            });
        }
        let ncols = a.ncols();
        for p in 0..parts {
            let owned = partition.cols(p, ncols).len();
            if u32::try_from(owned).is_err() {
                return Err(Error::TooLarge {
                    what: "a part's column count",
                    value: owned,
                    limit: u32::MAX as usize,
                });
            }
        }
        let mut built: Vec<Part<T>> = (0..parts).map(|p| split_rows(a, &partition, p)).collect();
        // Part q sends to part p the run of p's ghosts that q owns, as indices into q's x.
        for p in 0..parts {
            for (owner, run) in built[p].receives.clone() {
                let first = partition.cols(owner, ncols).start;
                // Below the owner's column count, which fits 32 bits (checked above).
                let list = built[p].ghosts[run].iter().map(|&c| index32(c - first)).collect();
                built[owner].sends.push((p, list));
            }
        }
        Ok(Self { partition, nrows: a.nrows(), ncols, parts: built })
    }
}

/// Part `p`'s blocks, ghost vector and receive runs (its send lists are filled in by [`Split::new`]).
fn split_rows<T: Scalar>(a: &CsrRef<'_, T>, partition: &RowPartition, p: usize) -> Part<T> {
    let (rows, cols) = (partition.rows(p), partition.cols(p, a.ncols()));
    let mut ghosts: Vec<usize> =
        rows.clone().flat_map(|r| a.row(r).0.iter().copied()).filter(|c| !cols.contains(c)).collect();
    ghosts.sort_unstable();
    ghosts.dedup();
    let empty = |ncols| Block { nrows: 0, ncols, row_offsets: vec![0], col_indices: vec![], values: vec![] };
    let (mut local, mut remote) = (empty(cols.len()), empty(ghosts.len()));
    let mut remote_rows = Vec::new();
    for r in rows.clone() {
        let (row_cols, row_vals) = a.row(r);
        for (&c, &v) in row_cols.iter().zip(row_vals) {
            let (block, col) = if cols.contains(&c) {
                (&mut local, c - cols.start)
            } else {
                // Present: `ghosts` holds every column of these rows outside `cols`.
                (&mut remote, ghosts.binary_search(&c).unwrap_or_default())
            };
            block.col_indices.push(col);
            block.values.push(v);
        }
        local.row_offsets.push(local.col_indices.len());
        if remote.col_indices.len() > *remote.row_offsets.last().unwrap_or(&0) {
            remote.row_offsets.push(remote.col_indices.len());
            remote_rows.push(r - rows.start);
        }
    }
    local.nrows = rows.len();
    remote.nrows = remote_rows.len();
    let mut receives: Vec<(usize, Range<usize>)> = Vec::new();
    for (g, &c) in ghosts.iter().enumerate() {
        let owner = partition.owner(c);
        match receives.last_mut() {
            Some((o, run)) if *o == owner => run.end = g + 1,
            _ => receives.push((owner, g..g + 1)),
        }
    }
    Part { rows, cols, local, remote, remote_rows, ghosts, receives, sends: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    struct Owned {
        nrows: usize,
        ncols: usize,
        offsets: Vec<usize>,
        cols: Vec<usize>,
        vals: Vec<f64>,
    }

    impl Owned {
        fn view(&self) -> CsrRef<'_, f64> {
            CsrRef::try_new(self.nrows, self.ncols, &self.offsets, &self.cols, &self.vals).unwrap()
        }
    }

    fn random(rng: &mut ChaCha8Rng, nrows: usize, ncols: usize, len: impl Fn(usize) -> usize) -> Owned {
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        for r in 0..nrows {
            let n = if ncols == 0 { 0 } else { len(r) };
            cols.extend((0..n).map(|_| rng.random_range(0..ncols)));
            offsets.push(cols.len());
        }
        let vals = (0..cols.len()).map(|_| rng.random_range(-1.0..1.0)).collect();
        Owned { nrows, ncols, offsets, cols, vals }
    }

    /// A banded matrix: row `r` holds columns `r - w ..= r + w` within range.
    fn banded(n: usize, w: usize) -> Owned {
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        for r in 0..n {
            cols.extend(r.saturating_sub(w)..(r + w + 1).min(n));
            offsets.push(cols.len());
        }
        let vals = (0..cols.len()).map(|k| 1.0 + (k % 7) as f64).collect();
        Owned { nrows: n, ncols: n, offsets, cols, vals }
    }

    /// `y = alpha A x + beta y` row by row (the reference kernels are a tier above this one), and
    /// the sums of magnitudes that bound its rounding.
    fn spmv(alpha: f64, a: CsrRef<'_, f64>, x: &[f64], beta: f64, y: &mut [f64]) -> Vec<f64> {
        let mut scale = Vec::with_capacity(y.len());
        for (r, yr) in y.iter_mut().enumerate() {
            let (cols, vals) = a.row(r);
            let sum: f64 = cols.iter().zip(vals).map(|(&c, &v)| v * x[c]).sum();
            let magnitude: f64 = cols.iter().zip(vals).map(|(&c, &v)| (v * x[c]).abs()).sum();
            scale.push(alpha.abs() * magnitude + (beta * *yr).abs());
            *yr = alpha * sum + beta * *yr;
        }
        scale
    }

    /// The distributed product computed part by part, as the GPUs do it: each part packs its send
    /// lists from its own `x`, each receives its runs into its ghost vector, then `y = alpha L x_own
    /// + beta y` and `y += alpha R x_ghost`.
    fn model(split: &Split<f64>, alpha: f64, x: &[f64], beta: f64, y: &mut [f64]) {
        let own: Vec<&[f64]> = split.parts.iter().map(|p| &x[p.cols.clone()]).collect();
        for (p, part) in split.parts.iter().enumerate() {
            let mut ghost = vec![f64::NAN; part.ghosts.len()];
            for (owner, run) in &part.receives {
                let (_, list) = split.parts[*owner].sends.iter().find(|(peer, _)| *peer == p).unwrap();
                assert_eq!(list.len(), run.len());
                for (g, &i) in run.clone().zip(list) {
                    ghost[g] = own[*owner][i as usize];
                }
            }
            assert!(ghost.iter().all(|v| !v.is_nan()), "part {p}: a ghost was not received");
            let y = &mut y[part.rows.clone()];
            spmv(alpha, part.local.view().unwrap(), own[p], beta, y);
            let mut remote_y = vec![0.0; part.remote_rows.len()];
            spmv(alpha, part.remote.view().unwrap(), &ghost, 0.0, &mut remote_y);
            for (&r, v) in part.remote_rows.iter().zip(remote_y) {
                y[r] += v;
            }
        }
    }

    fn check(name: &str, a: &Owned, parts: usize, rng: &mut ChaCha8Rng) {
        let view = a.view();
        let split = Split::new(&view, RowPartition::balanced(&view, parts).unwrap()).unwrap();
        assert_eq!(split.parts.len(), parts);
        let x: Vec<f64> = (0..a.ncols).map(|_| rng.random_range(-1.0..1.0)).collect();
        let y0: Vec<f64> = (0..a.nrows).map(|_| rng.random_range(-1.0..1.0)).collect();
        let (alpha, beta) = (1.5, -0.5);
        let mut y = y0.clone();
        model(&split, alpha, &x, beta, &mut y);
        let mut plain = y0.clone();
        let scale = spmv(alpha, view, &x, beta, &mut plain);
        for (r, ((got, want), s)) in y.iter().zip(&plain).zip(&scale).enumerate() {
            assert!(
                (got - want).abs() <= 1e-13 * s.max(f64::MIN_POSITIVE),
                "{name}, {parts} parts, row {r}: {got} != {want}"
            );
        }
        // Rows and columns each covered once, in order.
        let mut next_row = 0;
        let mut next_col = 0;
        for part in &split.parts {
            assert_eq!(part.rows.start, next_row);
            assert_eq!(part.cols.start, next_col);
            next_row = part.rows.end;
            next_col = part.cols.end;
            assert!(part.ghosts.iter().all(|c| !part.cols.contains(c)), "{name}: a ghost is owned");
            assert!(part.ghosts.windows(2).all(|w| w[0] < w[1]), "{name}: ghosts not increasing");
            assert!(part.remote_rows.windows(2).all(|w| w[0] < w[1]), "{name}: remote rows not increasing");
            assert!(part.remote.row_offsets.windows(2).all(|w| w[0] < w[1]), "{name}: an empty remote row");
        }
        assert_eq!((next_row, next_col), (a.nrows, a.ncols));
    }

    fn seeded(test: &str) -> ChaCha8Rng {
        let seed: u64 = rand::rng().random();
        eprintln!("{test}: seed {seed}");
        ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn the_distributed_product_equals_the_plain_one() {
        let mut rng = seeded("the_distributed_product_equals_the_plain_one");
        let cases = [
            ("square random", random(&mut rng, 1001, 1001, |r| r % 9)),
            ("banded", banded(777, 5)),
            ("wide: columns no row owns", random(&mut rng, 300, 2000, |r| 1 + r % 6)),
            ("tall: parts owning no columns", random(&mut rng, 2000, 40, |r| r % 4)),
            ("one huge row", random(&mut rng, 500, 500, |r| if r == 250 { 5000 } else { 1 })),
            ("every row empty", random(&mut rng, 100, 100, |_| 0)),
            ("no rows", random(&mut rng, 0, 50, |_| 0)),
            ("no columns", random(&mut rng, 30, 0, |_| 0)),
            ("diagonal: no ghosts", banded(513, 0)),
        ];
        for (name, a) in &cases {
            for parts in [1, 2, 3, 4, 7, 8, 64] {
                check(name, a, parts, &mut rng);
            }
        }
    }

    #[test]
    fn balancing_follows_the_entries() {
        // Rows 0..100 hold 1 entry each, rows 100..200 hold 9: two parts meet where the entries halve.
        let a = Owned {
            nrows: 200,
            ncols: 200,
            offsets: (0..=200).map(|r: usize| r.min(100) + 9 * r.saturating_sub(100)).collect(),
            cols: vec![0; 1000],
            vals: vec![1.0; 1000],
        };
        let partition = RowPartition::balanced(&a.view(), 2).unwrap();
        assert_eq!(partition.rows(0), 0..145);
        assert_eq!(partition.rows(1), 145..200);
        // More parts than rows: the extra parts are empty, and all rows are still covered.
        let tiny = banded(3, 1);
        let partition = RowPartition::balanced(&tiny.view(), 8).unwrap();
        assert_eq!((0..8).map(|p| partition.rows(p).len()).sum::<usize>(), 3);
    }

    #[test]
    fn the_ghost_map_of_a_band_is_its_neighbours() {
        // 4 parts of a band of half-width 2: each inner part receives 2 columns from each side.
        let a = banded(400, 2);
        let view = a.view();
        let split = Split::new(&view, RowPartition::balanced(&view, 4).unwrap()).unwrap();
        let inner = &split.parts[1];
        assert_eq!(
            inner.ghosts,
            vec![inner.rows.start - 2, inner.rows.start - 1, inner.rows.end, inner.rows.end + 1]
        );
        assert_eq!(inner.receives, vec![(0, 0..2), (2, 2..4)]);
        let last = inner.rows.len() - 1;
        assert_eq!(inner.remote_rows, vec![0, 1, last - 1, last]);
        assert_eq!(
            split.parts[0].sends,
            vec![(1, vec![index32(inner.rows.start - 2), index32(inner.rows.start - 1)])]
        );
        assert!(split.parts[0].receives.iter().all(|(o, _)| *o == 1));
    }

    #[test]
    fn bad_input_is_refused() {
        let a = banded(10, 1);
        let view = a.view();
        assert!(matches!(
            RowPartition::balanced(&view, 0),
            Err(Error::Format(FormatError::InvalidParameter { what: "the part count", .. }))
        ));
        for parts in [MAX_PARTS + 1, 1 << 40, usize::MAX] {
            assert!(matches!(
                RowPartition::balanced(&view, parts),
                Err(Error::TooLarge { what: "the part count", value, limit: MAX_PARTS }) if value == parts
            ));
        }
        assert_eq!(RowPartition::balanced(&view, MAX_PARTS).unwrap().parts(), MAX_PARTS);
        let other = banded(11, 1);
        let partition = RowPartition::balanced(&other.view(), 2).unwrap();
        assert!(matches!(Split::new(&view, partition), Err(Error::DimensionMismatch { .. })));
    }
}
