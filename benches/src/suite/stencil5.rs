//! 2D 5-point stencil on an n x n grid, rows in row-major order: the discrete Laplacian of a 2D
//! problem, imitating ecology2 (SuiteSparse; 999,999 rows, 4,995,991 entries). The most regular
//! structure of the suite: 5 entries in nearly every row, at fixed distances from the diagonal.

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 4 M rows, 20 M entries (ecology2 is 1000 x 1000).
    let n = size.pick(50, 450, 2000);
    build_rows(n * n, n * n, seed, |r, w| {
        let (x, y) = (r % n, r / n);
        if y > 0 {
            w.push(r - n);
        }
        if x > 0 {
            w.push(r - 1);
        }
        w.push(r);
        if x + 1 < n {
            w.push(r + 1);
        }
        if y + 1 < n {
            w.push(r + n);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn five_points_inside_fewer_on_the_border() {
        let a = build(Size::Tiny, 1);
        let s = stats(&a);
        assert_eq!((s.rows, s.cols), (2500, 2500));
        // 5 per row, less one for each of the 4 * 50 border neighbours missing.
        assert_eq!(s.nnz, 5 * 2500 - 4 * 50);
        assert_eq!(s.max, 5);
        assert_eq!(a.row(51).col_indices(), [1, 50, 51, 52, 101]);
        assert_eq!(a.row(0).col_indices(), [0, 1, 50]);
    }
}
