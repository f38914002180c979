//! Uniformly random entries: the 30,000 x 20,000 matrix at 1 % density of the student report this
//! project started from, with the columns and density kept and more rows. Every entry is present with
//! probability [`DENSITY`], independently: 200 entries per row, spread over all of x, so that x is
//! read at random and mostly from L2 (20,000 columns are 80 to 160 KB).

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;

/// The student report's columns.
const COLS: usize = 20_000;

/// The student report's density.
const DENSITY: f64 = 0.01;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 100,000 rows, 20 M entries; Tiny and Small are shorter, not narrower.
    let rows = size.pick(1_000, 5_000, 100_000);
    build_rows(rows, COLS, seed, |_, w| w.bernoulli(0, COLS, DENSITY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn one_percent_binomial_rows() {
        let a = build(Size::Tiny, 4);
        let s = stats(&a);
        assert_eq!((s.rows, s.cols), (1_000, COLS));
        // Binomial(20,000, 0.01): mean 200, standard deviation 14.1.
        assert!(s.mean > 195.0 && s.mean < 205.0, "{s:?}");
        assert!(s.std_dev > 11.0 && s.std_dev < 17.0, "{s:?}");
        let left = a.col_indices().iter().filter(|&&c| c < COLS / 2).count();
        assert!(left.abs_diff(s.nnz - left) * 50 < s.nnz, "columns are not uniform: {left} of {}", s.nnz);
    }
}
