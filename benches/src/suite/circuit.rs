//! A circuit matrix with two dense rows: imitates dc1 (SuiteSparse, circuit simulation; 116,835 rows,
//! 766,396 entries, 6.6 per row, with rows of 114,190 and 47,193 entries). Those two rows (a ground
//! and a supply node, wired to most devices) hold a fifth of the entries: the worst case for kernels
//! that give a row to a thread or a warp, which wait on them.
//!
//! The two hub nodes sit at a third and two thirds of the rows, and connect to each other. Every other
//! node connects to each hub with that hub's probability in [`HUBS`] (a hash of the pair, so that the
//! hub's row and column agree), to itself, and to 0 to [`MAX_EXTRA`] other nodes, alternately near it
//! and anywhere.

use super::Size;
use super::rows::{build as build_rows, chance};
use nalgebra_sparse::CsrMatrix;
use rand::Rng;

/// The fraction of all nodes each hub connects to: dc1's two long rows, 114,190 and 47,193 of its
/// 116,835 columns.
const HUBS: [f64; 2] = [0.977, 0.404];

/// Connections of an ordinary node besides itself and the hubs: uniform in `0 ..= MAX_EXTRA`, for a
/// mean of 6.3 entries per row with the hubs' (dc1: 6.6).
const MAX_EXTRA: usize = 5;

/// How far the near connections of a node reach.
const NEAR: usize = 64;

pub(super) fn build(size: Size, seed: u64) -> CsrMatrix<f64> {
    // Full: 3 M rows, 19 M entries.
    let n = size.pick(3_000, 150_000, 3_000_000);
    let hubs = [n / 3, 2 * n / 3];
    let linked = |hub: usize, node: usize| chance(seed, hub as u64, node as u64, HUBS[hub]);
    build_rows(n, n, seed, |r, w| {
        if let Some(hub) = hubs.iter().position(|&h| h == r) {
            hubs.iter().for_each(|&h| w.push(h));
            (0..n).filter(|&c| !hubs.contains(&c) && linked(hub, c)).for_each(|c| w.push(c));
            return;
        }
        w.push(r);
        for (hub, &h) in hubs.iter().enumerate() {
            if linked(hub, r) {
                w.push(h);
            }
        }
        let extra = w.rng().random_range(0..=MAX_EXTRA);
        for k in 0..extra {
            let col = if k % 2 == 0 {
                let near = r.saturating_sub(NEAR)..(r + NEAR + 1).min(n);
                w.rng().random_range(near)
            } else {
                w.rng().random_range(0..n)
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
    fn two_dense_rows_among_short_ones() {
        let a = build(Size::Tiny, 7);
        let s = stats(&a);
        let n = 3_000;
        assert_eq!((s.rows, s.cols), (n, n));
        assert!(s.mean > 5.8 && s.mean < 7.0, "{s:?}");
        let mut lens: Vec<(usize, usize)> = a.row_iter().map(|row| row.nnz()).zip(0..).collect();
        lens.sort_unstable();
        let [.., third, (second, r2), (first, r1)] = lens[..] else { panic!("too few rows") };
        assert_eq!((r1, r2), (n / 3, 2 * n / 3));
        assert!(first.abs_diff(2_931) < 40, "longest row: {first}");
        assert!(second.abs_diff(1_213) < 100, "second row: {second}");
        assert!(third.0 <= 3 + MAX_EXTRA, "third row: {third:?}");
        // The hubs' columns mirror their rows, but for the odd random connection that hits a hub.
        let with_hub = a.row_iter().filter(|row| row.col_indices().binary_search(&(n / 3)).is_ok()).count();
        assert!((first..first + 10).contains(&with_hub), "{with_hub} rows reach the hub of {first}");
    }

    #[test]
    fn small_keeps_the_proportions_of_dc1() {
        let a = build(Size::Small, 1);
        let s = stats(&a);
        assert!(s.mean > 5.8 && s.mean < 7.0, "{s:?}");
        let first = a.row(s.rows / 3).nnz() as f64 / s.cols as f64;
        assert!((first - HUBS[0]).abs() < 0.005, "{first}");
    }
}
