//! Few rows, a million columns: imitates rail4284 (SuiteSparse, a railway crew set-covering LP;
//! 4,284 rows x 1,092,610 columns, 11,279,748 entries, 2,633 per row). Each row is long and its
//! columns scattered over an x of 4 to 9 MB: the product is a few thousand long sparse dot products.
//!
//! Every entry of row `r` is present with probability `p_r`, independently, where `p_r` is log-normal
//! with mean rail4284's density and [`SPREAD`]. The smaller sizes divide rows and columns by 4 and 16
//! and keep the density.

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;
use rand::Rng;
use std::f64::consts::TAU;

/// rail4284's shape.
const ROWS: usize = 4_284;
const COLS: usize = 1_092_610;

/// rail4284's density: 11,279,748 entries in 4,284 x 1,092,610.
const DENSITY: f64 = 11_279_748.0 / (ROWS as f64 * COLS as f64);

/// The standard deviation of `ln p_r`: rows from a tenth to ten times the mean length. An assumption
/// of ours, not a figure of rail4284: set-covering rows (a crew leg each) differ widely in how many
/// pairings cover them.
const SPREAD: f64 = 1.0;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: rail4284's shape, 11.3 M entries; Small and Tiny have 1/16 and 1/256 of the entries.
    let shrink = size.pick(16, 4, 1);
    let (rows, cols) = (ROWS / shrink, COLS / shrink);
    build_rows(rows, cols, seed, |_, w| {
        // A standard normal by Box and Muller's transform; 1 - u lies in (0, 1].
        let (u, v): (f64, f64) = (w.rng().random(), w.rng().random());
        let normal = (-2.0 * (1.0 - u).ln()).sqrt() * (TAU * v).cos();
        // E[exp(SPREAD Z - SPREAD^2 / 2)] = 1, so the mean density is DENSITY.
        let p = DENSITY * (SPREAD * normal - SPREAD * SPREAD / 2.0).exp();
        w.bernoulli(0, cols, p);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn short_wide_and_uneven() {
        let a = build(Size::Tiny, 8);
        let s = stats(&a);
        assert_eq!((s.rows, s.cols), (ROWS / 16, COLS / 16));
        // 2,633 / 16 = 165 per row on average; log-normal rows: std about 1.3 times the mean.
        assert!(s.mean > 130.0 && s.mean < 200.0, "{s:?}");
        assert!(s.std_dev > 0.8 * s.mean && s.std_dev < 2.0 * s.mean, "{s:?}");
        assert!(s.max as f64 > 4.0 * s.mean, "{s:?}");
        let spread = a.row_iter().filter(|row| row.col_indices().last() > Some(&(s.cols / 2))).count();
        assert!(spread * 10 > s.rows * 9, "columns are not spread: {spread}");
    }
}
