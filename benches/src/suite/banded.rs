//! A narrow band of dense 3 x 3 blocks: imitates cant (SuiteSparse, FEM of a cantilever; 62,451 rows,
//! 4,007,383 entries, 64.2 per row, at most 78), whose mesh has 3 unknowns per node and numbers nodes
//! so that neighbours lie close.
//!
//! Node `i` couples with itself and, with probability [`COUPLING`], with each node `j` such that
//! `|i - j| <= HALF_BAND`; the choice is a hash of the pair, so the pattern is symmetric as cant's is.
//! Each coupling puts a 3 x 3 block in the matrix, so the three rows of a node are alike.

use super::Size;
use super::rows::{build as build_rows, chance};
use nalgebra_sparse::CsrMatrix;

/// Unknowns per mesh node (displacements in 3D).
const DOFS: usize = 3;

/// Nodes on either side of a node that it may couple with: 3 * (2 * 13 + 1) = 81 columns at most,
/// just above cant's longest row of 78.
const HALF_BAND: usize = 13;

/// Probability that a node couples with a node of its band: 3 * (1 + 26 * 0.782) = 64 entries per row
/// on average, cant's mean.
const COUPLING: f64 = 0.782;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 104,000 nodes, 312,000 rows, 20 M entries.
    let nodes = size.pick(1_000, 5_200, 104_000);
    build_rows(nodes * DOFS, nodes * DOFS, seed, |r, w| {
        let i = r / DOFS;
        for j in i.saturating_sub(HALF_BAND)..(i + HALF_BAND + 1).min(nodes) {
            let (lo, hi) = (i.min(j) as u64, i.max(j) as u64);
            if i == j || chance(seed, lo, hi, COUPLING) {
                w.push(j * DOFS);
                w.push(j * DOFS + 1);
                w.push(j * DOFS + 2);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn about_64_per_row_in_a_narrow_symmetric_band() {
        let a = build(Size::Tiny, 2);
        let s = stats(&a);
        assert_eq!(s.rows, 3_000);
        assert!(s.mean > 60.0 && s.mean < 66.0, "{s:?}");
        assert!(s.std_dev > 3.0 && s.std_dev < 10.0, "{s:?}");
        assert!(s.max <= 81 && s.max >= 75, "{s:?}");
        let transpose = a.transpose();
        assert_eq!(a.pattern(), transpose.pattern(), "the pattern is symmetric");
        for (r, row) in a.row_iter().enumerate() {
            let cols = row.col_indices();
            assert!(cols.iter().all(|&c| c.abs_diff(r) <= DOFS * (HALF_BAND + 1)), "row {r}");
            assert_eq!(cols, a.row(r / DOFS * DOFS).col_indices(), "rows of a node differ");
        }
    }
}
