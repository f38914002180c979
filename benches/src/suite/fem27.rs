//! 3D 27-point stencil on an n x n x n grid: the pattern of trilinear hexahedral finite elements, as
//! in the HPCG benchmark's matrix (26.5 entries per row at its sizes). Each row holds 3 x 3 runs of 3
//! consecutive columns, so neighbouring rows share most of the x they read.

use super::Size;
use super::rows::build as build_rows;
use nalgebra_sparse::CsrMatrix;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 729,000 rows, 19 M entries.
    let n = size.pick(12, 33, 90);
    let plane = n * n;
    let near = |c: usize| c.saturating_sub(1)..(c + 2).min(n);
    build_rows(n * plane, n * plane, seed, |r, w| {
        let (x, y, z) = (r % n, r / n % n, r / plane);
        for zz in near(z) {
            for yy in near(y) {
                for xx in near(x) {
                    w.push(zz * plane + yy * n + xx);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn twenty_seven_points_inside() {
        let a = build(Size::Tiny, 1);
        let s = stats(&a);
        let n = 12;
        assert_eq!(s.rows, n * n * n);
        // Per axis, the 3-point rule gives 3n - 2 pairs; the stencil is their product.
        assert_eq!(s.nnz, (3 * n - 2).pow(3));
        assert_eq!(s.max, 27);
        assert_eq!(a.row(0).nnz(), 8);
        assert!(s.mean > 20.0 && s.mean < 27.0, "{s:?}");
    }
}
