//! A planar triangulation: imitates delaunay_n22 (SuiteSparse / DIMACS10, the Delaunay triangulation
//! of 2^22 random points; 4,194,304 rows, 25,165,738 entries, 6.0 per row, no diagonal).
//!
//! The points are a 2^k x 2^k grid, each grid square cut along one of its diagonals at random (a hash
//! of the square, so both ends of an edge agree): 4 to 8 neighbours per vertex, 6 on average, as in a
//! Delaunay triangulation. Vertices are numbered along the Z-order (Morton) curve, as a spatial sort
//! of the points would number them: neighbours are mostly close in number, with long jumps where the
//! curve does.

use super::Size;
use super::rows::{build as build_rows, chance};
use nalgebra_sparse::CsrMatrix;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 2048^2 = 2^22 vertices as delaunay_n22, 25 M entries.
    generate(size.pick(6, 9, 11), seed)
}

/// The triangulation of the `2^k x 2^k` grid.
fn generate(k: u32, seed: u64) -> CsrMatrix<f64> {
    let side = 1usize << k;
    // Whether square (a, b) (corners (a, b) and (a + 1, b + 1)) is cut from (a, b) to (a + 1, b + 1),
    // rather than from (a + 1, b) to (a, b + 1).
    let falling = |a: usize, b: usize| chance(seed, a as u64, b as u64, 0.5);
    build_rows(side * side, side * side, seed, |r, w| {
        let (i, j) = deinterleave(r);
        let (up, down, left, right) = (i > 0, i + 1 < side, j > 0, j + 1 < side);
        let mut link = |i: usize, j: usize| w.push(interleave(i, j));
        if up {
            link(i - 1, j);
        }
        if down {
            link(i + 1, j);
        }
        if left {
            link(i, j - 1);
        }
        if right {
            link(i, j + 1);
        }
        if down && right && falling(i, j) {
            link(i + 1, j + 1);
        }
        if up && left && falling(i - 1, j - 1) {
            link(i - 1, j - 1);
        }
        if down && left && !falling(i, j - 1) {
            link(i + 1, j - 1);
        }
        if up && right && !falling(i - 1, j) {
            link(i - 1, j + 1);
        }
    })
}

/// The Morton index of grid point `(i, j)`: the bits of `i` and `j` interleaved, `j`'s in the even
/// places.
fn interleave(i: usize, j: usize) -> usize {
    spread(i) << 1 | spread(j)
}

/// The grid point of a Morton index (the inverse of [`interleave`]).
fn deinterleave(m: usize) -> (usize, usize) {
    (gather(m >> 1), gather(m))
}

/// The low 32 bits of `x` moved to the even bit places.
fn spread(x: usize) -> usize {
    let mut x = x as u64 & 0xffff_ffff;
    x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x << 2) & 0x3333_3333_3333_3333;
    x = (x | x << 1) & 0x5555_5555_5555_5555;
    x as usize
}

/// The even bits of `x`, packed (the inverse of [`spread`]).
fn gather(x: usize) -> usize {
    let mut x = x as u64 & 0x5555_5555_5555_5555;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x >> 4) & 0x00ff_00ff_00ff_00ff;
    x = (x | x >> 8) & 0x0000_ffff_0000_ffff;
    x = (x | x >> 16) & 0x0000_0000_ffff_ffff;
    x as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::tests::stats;

    #[test]
    fn morton_order_round_trips() {
        assert_eq!(interleave(0b11, 0b01), 0b1011);
        for m in (0..1 << 22).step_by(9_973) {
            let (i, j) = deinterleave(m);
            assert_eq!(interleave(i, j), m);
        }
    }

    #[test]
    fn a_triangulation_with_six_neighbours_on_average() {
        let a = build(Size::Tiny, 6);
        let s = stats(&a);
        let side = 64;
        assert_eq!(s.rows, side * side);
        // Edges: the grid's 2 side (side - 1), and one diagonal per square; each is two entries.
        assert_eq!(s.nnz, 2 * (2 * side * (side - 1) + (side - 1) * (side - 1)));
        assert!(s.mean > 5.8 && s.mean < 6.0, "{s:?}");
        assert!(s.max <= 8 && s.max >= 7, "{s:?}");
        assert!(a.row_iter().all(|row| row.nnz() >= 2));
        assert!(a.row_iter().enumerate().all(|(r, row)| !row.col_indices().contains(&r)));
        assert_eq!(a.pattern(), a.transpose().pattern(), "the graph is undirected");
    }
}
