//! A power-law graph: imitates webbase-1M (SuiteSparse, a web crawl; 1,000,005 rows, 3,105,536
//! entries, 3.1 per row with a standard deviation of 25, longest row 4,700). Most rows hold one to
//! three entries and a few hold thousands: the load imbalance that defeats one thread per row.
//!
//! Row lengths follow a discrete Pareto law, `P(len >= k) = k^-TAIL`, capped at [`MAX_LEN`]. Half of a
//! row's links go near the row (pages of the same site, numbered together by the crawl), half to
//! popular pages: column `floor(n u^3)` for uniform `u`, so low-numbered columns are linked to most,
//! and x is read at random but with hot spots.

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;
use rand::Rng;

/// The tail exponent of the row lengths: with [`MAX_LEN`], a mean of 3.0 and a standard deviation of
/// 25 (computed from the law), webbase-1M's figures.
const TAIL: f64 = 1.4;

/// The longest row: above webbase-1M's 4,700, so that the capped law keeps its standard deviation.
const MAX_LEN: usize = 6_500;

/// The rows around a row that its local links go to.
const LOCAL_WINDOW: usize = 1 << 16;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 6.5 M rows, 20 M entries.
    generate(size.pick(16_384, 325_000, 6_500_000), seed)
}

pub(crate) fn generate(n: usize, seed: u64) -> CsrMatrix<f64> {
    let max_len = MAX_LEN.min(n / 4);
    let window = LOCAL_WINDOW.min(n);
    build_rows(n, n, seed, |r, w| {
        let u: f64 = w.rng().random();
        // 1 - u lies in (0, 1]: lengths from 1 up; the float-to-int cast saturates.
        let len = ((1.0 - u).powf(-1.0 / TAIL) as usize).min(max_len);
        let start = r.saturating_sub(window / 2).min(n - window);
        for k in 0..len {
            let col = if k % 2 == 0 {
                start + w.rng().random_range(0..window)
            } else {
                let u: f64 = w.rng().random();
                ((n as f64 * u * u * u) as usize).min(n - 1)
            };
            w.push(col);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn heavy_tailed_rows() {
        for seed in 0..4 {
            let a = build(Size::Tiny, seed);
            let s = stats(&a);
            assert_eq!(s.rows, 16_384);
            assert!(s.mean > 2.4 && s.mean < 3.6, "seed {seed}: {s:?}");
            assert!(s.std_dev > 3.0 * s.mean, "seed {seed}: {s:?}");
            assert!(s.max > 100, "seed {seed}: {s:?}");
            let short = a.row_iter().filter(|row| row.nnz() <= 2).count();
            assert!(short * 10 > s.rows * 7, "seed {seed}: {short} rows of 1 or 2 entries");
        }
    }

    #[test]
    fn low_columns_are_popular() {
        let a = generate(200_000, 5);
        let n = a.ncols();
        let first_tenth = a.col_indices().iter().filter(|&&c| c < n / 10).count();
        // Popular links: 0.1^(1/3) = 46 % in the first tenth; local ones: 10 %.
        assert!(first_tenth * 100 > a.nnz() * 20, "{first_tenth} of {}", a.nnz());
    }
}
