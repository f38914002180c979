//! 3D 7-point stencil on an n x n x n grid, rows in x-fastest order: imitates atmosmodd (SuiteSparse,
//! an atmospheric model; 1,270,432 rows, 8,814,880 entries, 6.9 per row). Short regular rows whose
//! outer bands lie n^2 apart, so x is read in three distant streams.

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 2.9 M rows, 20 M entries.
    let n = size.pick(14, 52, 142);
    let plane = n * n;
    build_rows(n * plane, n * plane, seed, |r, w| {
        let (x, y, z) = (r % n, r / n % n, r / plane);
        if z > 0 {
            w.push(r - plane);
        }
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
        if z + 1 < n {
            w.push(r + plane);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn seven_points_inside_fewer_on_the_faces() {
        let a = build(Size::Tiny, 1);
        let s = stats(&a);
        let n = 14;
        assert_eq!((s.rows, s.cols), (n * n * n, n * n * n));
        // 7 per point, less one for each missing neighbour: 6 faces of n^2 points.
        assert_eq!(s.nnz, 7 * n * n * n - 6 * n * n);
        assert_eq!(s.max, 7);
        let centre = (n * n + n + 1) * 5;
        let cols = [centre - n * n, centre - n, centre - 1, centre, centre + 1, centre + n, centre + n * n];
        assert_eq!(a.row(centre).col_indices(), cols);
    }
}
