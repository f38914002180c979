//! Wide rows near the diagonal: imitates nd24k (SuiteSparse, a 3D mesh problem in nested-dissection
//! order; 72,000 rows, 28,715,634 entries, 398.8 per row, at most 520), whose rows are long enough
//! that one warp per row (or more) pays.
//!
//! Row `r` takes between [`MIN_LEN`] and [`MAX_LEN`] distinct columns (uniformly) from the
//! [`WINDOW`] columns centred on `r`.

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;
use rand::Rng;

/// The shortest row; with [`MAX_LEN`], a mean of 400 as nd24k's.
const MIN_LEN: usize = 280;

/// The longest row: nd24k's longest.
const MAX_LEN: usize = 520;

/// The columns a row draws from, centred on the diagonal: wide enough for the rows to look random
/// within, narrow enough that consecutive rows read overlapping parts of x (about 1 in 10 of the
/// window per row).
const WINDOW: usize = 4_001;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 50,000 rows, 20 M entries. Tiny: just wider than the longest row.
    generate(size.pick(600, 2_500, 50_000), seed)
}

fn generate(n: usize, seed: u64) -> CsrMatrix<f64> {
    let window = WINDOW.min(n);
    build_rows(n, n, seed, |r, w| {
        let len = w.rng().random_range(MIN_LEN..=MAX_LEN);
        let start = r.saturating_sub(window / 2).min(n - window);
        w.sample(start, window, len);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn rows_of_280_to_520_near_the_diagonal() {
        let a = build(Size::Tiny, 3);
        let s = stats(&a);
        assert_eq!(s.rows, 600);
        assert!(s.mean > 380.0 && s.mean < 420.0, "{s:?}");
        assert!(s.max <= MAX_LEN, "{s:?}");
        assert!(a.row_iter().all(|row| row.nnz() >= MIN_LEN));

        let a = generate(6_000, 3);
        for (r, row) in a.row_iter().enumerate() {
            assert!(row.col_indices().iter().all(|&c| c.abs_diff(r) <= WINDOW), "row {r}");
        }
    }
}
