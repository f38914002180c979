//! Reverse Cuthill–McKee reordering (Cuthill & McKee 1969, reversed by George 1971; the
//! pseudo-peripheral start of Gibbs, Poole & Stockmeyer 1976 as George & Liu give it, "Computer
//! Solution of Large Sparse Positive Definite Systems", 1981, section 4.3), which Reguly & Giles
//! (2012, section 5.6) apply before their CSR products: numbering each node's neighbours close to it
//! clusters every row's columns, so the `x` a warp gathers shares cache lines with its neighbours'.
//!
//! A [`Permutation`] is computed on the host from the pattern of `A + Aᵀ` and applied to rows and
//! columns alike: `B = P A Pᵀ`, with `y = A x` exactly when `P y = B (P x)`. The product on `B` then
//! runs in the permuted order: permute `x` in ([`Permutation::to_new`]) and `y` out
//! ([`Permutation::to_old`]) once around a sequence of products (a solver's iterations), not
//! around each one: a gather and a scatter of the vectors per product would move about as many
//! bytes as the reordering saves (docs/PERF.md, "Reordering").

use super::csr::CsrRef;
use crate::{Error, Result};
use std::collections::VecDeque;

/// A numbering of `n` nodes: row and column `new` of the permuted matrix are row and column
/// `new_to_old[new]` of the original.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutation {
    new_to_old: Vec<usize>,
    old_to_new: Vec<usize>,
}

/// A matrix in permuted order, owning its CSR arrays (rows sorted by column).
#[derive(Debug, Clone)]
pub struct PermutedCsr<T> {
    n: usize,
    row_offsets: Vec<usize>,
    col_indices: Vec<usize>,
    values: Vec<T>,
}

impl<T: Copy> PermutedCsr<T> {
    /// The checked view of the arrays.
    pub fn view(&self) -> CsrRef<'_, T> {
        // Built from a valid matrix by a permutation of its rows and columns: still valid.
        CsrRef::try_new(self.n, self.n, &self.row_offsets, &self.col_indices, &self.values)
            .expect("a permuted valid matrix is valid")
    }
}

impl Permutation {
    /// The reverse Cuthill–McKee order of the square matrix `a`'s pattern, symmetrised (`A + Aᵀ`):
    /// each connected component in turn, from a pseudo-peripheral node of low degree, breadth first
    /// with each node's unnumbered neighbours taken by increasing degree; the whole order reversed.
    /// O(nnz log) time and O(n + nnz) memory (the transposed pattern).
    pub fn rcm<T>(a: CsrRef<'_, T>) -> Result<Self> {
        let n = a.nrows();
        if a.ncols() != n {
            return Err(Error::DimensionMismatch {
                what: "the column count of a matrix to reorder (it must be square)",
                expected: n,
                got: a.ncols(),
            });
        }
        let graph = Graph::symmetrised(a);
        let mut order = Vec::with_capacity(n);
        let mut numbered = vec![false; n];
        // Components start from their nodes of least degree: try nodes by increasing degree.
        let mut by_degree: Vec<usize> = (0..n).collect();
        by_degree.sort_by_key(|&v| graph.degree(v));
        let mut scratch = Levels::new(n);
        for &seed in &by_degree {
            if numbered[seed] {
                continue;
            }
            let start = graph.pseudo_peripheral(seed, &mut scratch);
            graph.cuthill_mckee(start, &mut numbered, &mut order);
        }
        order.reverse();
        Ok(Self::from_new_to_old(order))
    }

    /// The permutation that numbers old node `new_to_old[new]` as `new`; `new_to_old` must hold every
    /// node exactly once (the callers build it so).
    fn from_new_to_old(new_to_old: Vec<usize>) -> Self {
        let mut old_to_new = vec![0; new_to_old.len()];
        for (new, &old) in new_to_old.iter().enumerate() {
            old_to_new[old] = new;
        }
        Self { new_to_old, old_to_new }
    }

    /// How many nodes it numbers.
    pub fn len(&self) -> usize {
        self.new_to_old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.new_to_old.is_empty()
    }

    /// For each new index, the old one.
    pub fn new_to_old(&self) -> &[usize] {
        &self.new_to_old
    }

    /// For each old index, the new one.
    pub fn old_to_new(&self) -> &[usize] {
        &self.old_to_new
    }

    /// `v` in the new order (`P v`): element `new` is `v[new_to_old[new]]`.
    pub fn to_new<E: Copy>(&self, v: &[E]) -> Result<Vec<E>> {
        self.check_len("a vector to permute", v.len())?;
        Ok(self.new_to_old.iter().map(|&old| v[old]).collect())
    }

    /// `v` back in the old order (`Pᵀ v`): element `old` is `v[old_to_new[old]]`.
    pub fn to_old<E: Copy>(&self, v: &[E]) -> Result<Vec<E>> {
        self.check_len("a vector to permute back", v.len())?;
        Ok(self.old_to_new.iter().map(|&new| v[new]).collect())
    }

    /// `P A Pᵀ`: row `new` is row `new_to_old[new]` of `a` with its columns renumbered, sorted.
    pub fn permute<T: Copy>(&self, a: CsrRef<'_, T>) -> Result<PermutedCsr<T>> {
        self.check_len("the row count of a matrix to permute", a.nrows())?;
        self.check_len("the column count of a matrix to permute", a.ncols())?;
        let mut row_offsets = Vec::with_capacity(a.nrows() + 1);
        row_offsets.push(0);
        let mut col_indices = Vec::with_capacity(a.nnz());
        let mut values = Vec::with_capacity(a.nnz());
        let mut row: Vec<(usize, T)> = Vec::new();
        for &old in &self.new_to_old {
            let (cols, vals) = a.row(old);
            row.clear();
            row.extend(cols.iter().zip(vals).map(|(&c, &v)| (self.old_to_new[c], v)));
            // Stable: repeated columns keep their order, so the permuted sums add the same terms.
            row.sort_by_key(|&(c, _)| c);
            col_indices.extend(row.iter().map(|&(c, _)| c));
            values.extend(row.iter().map(|&(_, v)| v));
            row_offsets.push(col_indices.len());
        }
        Ok(PermutedCsr { n: a.nrows(), row_offsets, col_indices, values })
    }

    fn check_len(&self, what: &'static str, got: usize) -> Result<()> {
        if got == self.len() {
            return Ok(());
        }
        Err(Error::DimensionMismatch { what, expected: self.len(), got })
    }
}

/// The bandwidth of `a`: the largest `|row - column|` over its entries (0 without entries).
pub fn bandwidth<T>(a: CsrRef<'_, T>) -> usize {
    (0..a.nrows()).flat_map(|r| a.row(r).0.iter().map(move |&c| r.abs_diff(c))).max().unwrap_or(0)
}

/// The symmetrised pattern: each node's neighbours are its row's columns and its column's rows
/// (the transposed pattern, counted out), itself excluded; a neighbour may appear twice.
struct Graph {
    offsets: Vec<usize>,
    neighbours: Vec<usize>,
}

/// Scratch for the level structures of the pseudo-peripheral search.
struct Levels {
    level: Vec<usize>,
    queue: Vec<usize>,
}

impl Levels {
    fn new(n: usize) -> Self {
        Self { level: vec![usize::MAX; n], queue: Vec::with_capacity(n) }
    }
}

impl Graph {
    fn symmetrised<T>(a: CsrRef<'_, T>) -> Self {
        let n = a.nrows();
        let mut counts = vec![0usize; n + 1];
        for r in 0..n {
            let cols = a.row(r).0;
            counts[r + 1] += cols.len();
            for &c in cols {
                counts[c + 1] += 1;
            }
        }
        for v in 0..n {
            counts[v + 1] += counts[v];
        }
        let offsets = counts.clone();
        let mut next = counts;
        let mut neighbours = vec![0; offsets[n]];
        for r in 0..n {
            for &c in a.row(r).0 {
                neighbours[next[r]] = c;
                next[r] += 1;
                neighbours[next[c]] = r;
                next[c] += 1;
            }
        }
        // Self-loops (the diagonal) are no edges.
        let mut kept = Vec::with_capacity(neighbours.len());
        let mut kept_offsets = Vec::with_capacity(n + 1);
        kept_offsets.push(0);
        for v in 0..n {
            kept.extend(neighbours[offsets[v]..offsets[v + 1]].iter().filter(|&&u| u != v));
            kept_offsets.push(kept.len());
        }
        Self { offsets: kept_offsets, neighbours: kept }
    }

    fn neighbours(&self, v: usize) -> &[usize] {
        &self.neighbours[self.offsets[v]..self.offsets[v + 1]]
    }

    fn degree(&self, v: usize) -> usize {
        self.offsets[v + 1] - self.offsets[v]
    }

    /// The breadth-first levels from `root` within its component, in `scratch` (`queue` in visit
    /// order, `level` set for those nodes); returns the depth. The caller resets `level` after.
    fn levels(&self, root: usize, scratch: &mut Levels) -> usize {
        scratch.queue.clear();
        scratch.queue.push(root);
        scratch.level[root] = 0;
        let mut head = 0;
        while let Some(&v) = scratch.queue.get(head) {
            head += 1;
            for &u in self.neighbours(v) {
                if scratch.level[u] == usize::MAX {
                    scratch.level[u] = scratch.level[v] + 1;
                    scratch.queue.push(u);
                }
            }
        }
        scratch.queue.last().map_or(0, |&v| scratch.level[v])
    }

    /// George & Liu's pseudo-peripheral node of `seed`'s component: from `seed`, move to a node of
    /// least degree in the last level while that lengthens the level structure.
    fn pseudo_peripheral(&self, seed: usize, scratch: &mut Levels) -> usize {
        let mut root = seed;
        let mut depth = self.levels(root, scratch);
        loop {
            let last = scratch.queue.iter().copied().filter(|&v| scratch.level[v] == depth);
            let candidate = last.min_by_key(|&v| self.degree(v)).unwrap_or(root);
            for &v in &scratch.queue {
                scratch.level[v] = usize::MAX;
            }
            let candidate_depth = self.levels(candidate, scratch);
            if candidate_depth <= depth {
                for &v in &scratch.queue {
                    scratch.level[v] = usize::MAX;
                }
                return root;
            }
            (root, depth) = (candidate, candidate_depth);
        }
    }

    /// Cuthill–McKee from `start`: appends its component to `order` breadth first, each node's
    /// unnumbered neighbours by increasing degree (ties by index, so the order is reproducible).
    fn cuthill_mckee(&self, start: usize, numbered: &mut [bool], order: &mut Vec<usize>) {
        let mut queue = VecDeque::from([start]);
        numbered[start] = true;
        let mut next = Vec::new();
        while let Some(v) = queue.pop_front() {
            order.push(v);
            next.clear();
            for &u in self.neighbours(v) {
                if !numbered[u] {
                    numbered[u] = true;
                    next.push(u);
                }
            }
            next.sort_by_key(|&u| (self.degree(u), u));
            queue.extend(&next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `A x`, summed in row order.
    fn product(a: CsrRef<'_, f64>, x: &[f64]) -> Vec<f64> {
        (0..a.nrows()).map(|r| a.row(r).0.iter().zip(a.row(r).1).map(|(&c, &v)| v * x[c]).sum()).collect()
    }

    /// Owned CSR arrays of an `n` x `n` pattern, values `1 + (k % 5)`.
    struct Owned {
        n: usize,
        offsets: Vec<usize>,
        cols: Vec<usize>,
        vals: Vec<f64>,
    }

    impl Owned {
        fn new(n: usize, rows: impl Fn(usize) -> Vec<usize>) -> Self {
            let (mut offsets, mut cols) = (vec![0], Vec::new());
            for r in 0..n {
                let mut row = rows(r);
                row.sort_unstable();
                cols.extend(row);
                offsets.push(cols.len());
            }
            let vals = (0..cols.len()).map(|k| 1.0 + (k % 5) as f64).collect();
            Self { n, offsets, cols, vals }
        }

        fn view(&self) -> CsrRef<'_, f64> {
            CsrRef::try_new(self.n, self.n, &self.offsets, &self.cols, &self.vals).unwrap()
        }
    }

    /// A `side` x `side` grid's 5-point stencil, its nodes numbered by the permutation `number`.
    fn grid(side: usize, number: impl Fn(usize) -> usize) -> Owned {
        let n = side * side;
        let mut inverse = vec![0; n];
        for v in 0..n {
            inverse[number(v)] = v;
        }
        Owned::new(n, |r| {
            let v = inverse[r];
            let (i, j) = (v / side, v % side);
            let mut row = vec![number(v)];
            if i > 0 {
                row.push(number(v - side));
            }
            if i + 1 < side {
                row.push(number(v + side));
            }
            if j > 0 {
                row.push(number(v - 1));
            }
            if j + 1 < side {
                row.push(number(v + 1));
            }
            row
        })
    }

    fn assert_permutation(p: &Permutation, n: usize) {
        let mut seen = vec![false; n];
        for &old in p.new_to_old() {
            assert!(!seen[old], "{old} twice");
            seen[old] = true;
        }
        assert_eq!(p.len(), n);
        for (new, &old) in p.new_to_old().iter().enumerate() {
            assert_eq!(p.old_to_new()[old], new);
        }
    }

    /// The permuted product, brought back, is the original product.
    fn assert_same_product(a: &Owned, p: &Permutation) {
        let b = p.permute(a.view()).unwrap();
        let x: Vec<f64> = (0..a.n).map(|i| ((i * 7919) % 101) as f64 - 50.0).collect();
        let want = product(a.view(), &x);
        let got = product(b.view(), &p.to_new(&x).unwrap());
        // Integer-valued: every sum is exact, in any order.
        assert_eq!(p.to_old(&got).unwrap(), want);
    }

    #[test]
    fn a_scrambled_grid_gets_its_band_back() {
        let side = 40;
        let n = side * side;
        // A scrambled numbering: bandwidth near n.
        let scrambled = grid(side, |v| (v * 7919) % n);
        assert!(bandwidth(scrambled.view()) > n / 2);
        let p = Permutation::rcm(scrambled.view()).unwrap();
        assert_permutation(&p, n);
        let b = p.permute(scrambled.view()).unwrap();
        // The natural numbering has bandwidth `side`; a level structure from a corner gives at most
        // two diagonals' worth.
        assert!(bandwidth(b.view()) <= 2 * side, "bandwidth {}", bandwidth(b.view()));
        assert_same_product(&scrambled, &p);
    }

    #[test]
    fn bandwidth_does_not_grow_on_banded_matrices() {
        for (n, half) in [(1, 0), (2, 1), (50, 1), (300, 3), (1000, 10)] {
            let a = Owned::new(n, |r| (r.saturating_sub(half)..(r + half + 1).min(n)).collect());
            let p = Permutation::rcm(a.view()).unwrap();
            assert_permutation(&p, n);
            assert!(bandwidth(p.permute(a.view()).unwrap().view()) <= bandwidth(a.view()), "n {n}");
            assert_same_product(&a, &p);
        }
        let natural = grid(30, |v| v);
        let p = Permutation::rcm(natural.view()).unwrap();
        assert!(bandwidth(p.permute(natural.view()).unwrap().view()) <= bandwidth(natural.view()));
    }

    #[test]
    fn disconnected_components_and_isolated_nodes_are_all_numbered() {
        // Two paths, isolated nodes (no entries, or only a diagonal), an unsymmetric edge.
        let a = Owned::new(12, |r| match r {
            0..=3 => vec![r, (r + 1) % 4],
            5 => vec![5],
            7 => vec![7, 9],
            8 => vec![7, 8],
            9 => vec![8],
            10 => vec![11],
            _ => vec![],
        });
        let p = Permutation::rcm(a.view()).unwrap();
        assert_permutation(&p, 12);
        assert_same_product(&a, &p);
        let empty = Owned::new(0, |_| vec![]);
        assert!(Permutation::rcm(empty.view()).unwrap().is_empty());
    }

    #[test]
    fn bad_shapes_are_refused() {
        let (offsets, cols, vals) = (vec![0, 1, 2], vec![0, 2], vec![1.0, 2.0]);
        let wide = CsrRef::try_new(2, 3, &offsets, &cols, &vals).unwrap();
        assert!(matches!(Permutation::rcm(wide), Err(Error::DimensionMismatch { .. })));
        let a = Owned::new(5, |r| vec![r]);
        let p = Permutation::rcm(a.view()).unwrap();
        assert!(matches!(p.to_new(&[1.0; 4]), Err(Error::DimensionMismatch { .. })));
        assert!(matches!(p.to_old(&[1.0; 6]), Err(Error::DimensionMismatch { .. })));
        let other = Owned::new(6, |r| vec![r]);
        assert!(matches!(p.permute(other.view()), Err(Error::DimensionMismatch { .. })));
    }
}
