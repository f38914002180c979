//! The local matrix approach (LMA; Reguly & Giles, "Efficient sparse matrix-vector multiplication on
//! cache-based GPUs", InPar 2012, section 8): a finite element operator kept as its element matrices
//! and element-to-node map, applied as `y = sum_e P_eᵀ K_e (P_e x)` without assembling `A`. Kernels:
//! `kernels-gpu/src/formats/lma.rs`.
//!
//! Storage, as the kernels read it: element `s` (in stored order) has `m` nodes, node `k` at
//! `nodes[k * elements + s]`, and a dense `m x m` matrix, entry `(i, j)` at
//! `values[(i * m + j) * elements + s]`: entry-major, so that a warp on consecutive elements reads
//! consecutive words.
//!
//! Colouring: elements that share a node get different colours (greedy, in input order: each element
//! takes the smallest colour none of its neighbours has; 4 colours on a quadrilateral grid), and are
//! stored sorted by colour, so that colour `c` is the range `colour_offsets[c] .. colour_offsets[c + 1]`
//! and one launch per colour needs no atomics.
//!
//! Dirichlet nodes: a slot may hold [`NO_NODE`] instead of a node, for a node whose value is
//! prescribed. It is not an unknown: it reads no `x`, writes no `y`, and its row and column of the
//! element matrix are dropped (stored as zeros). So the operator is the stiffness matrix with the
//! Dirichlet rows and columns eliminated, symmetric positive definite when the full one is
//! positive semidefinite with a kernel the conditions remove (the Laplacian's constants), and the
//! unknowns are numbered `0 .. node_count` without the Dirichlet nodes. The boundary values enter
//! through the right-hand side, which is the caller's.

use super::convert::narrow;
use crate::error::FormatError;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::LMA_NO_NODE;
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;

/// A slot of the element-to-node map given to [`Lma::try_new`] that names no unknown (a Dirichlet
/// node); stored as [`LMA_NO_NODE`].
pub const NO_NODE: usize = usize::MAX;

/// Rows per rayon task of [`Lma::to_csr`].
const ROWS_PER_TASK: usize = 4096;

/// A finite element operator in the local matrix approach (see the module documentation).
#[derive(Debug, Clone)]
pub struct Lma<T> {
    node_count: usize,
    nodes_per_element: usize,
    elements: usize,
    /// `order[s]`: the input index of stored element `s`.
    order: Vec<usize>,
    colour_offsets: Vec<usize>,
    nodes: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> Lma<T> {
    /// An operator on `node_count` unknowns from `element_nodes` (element `e`'s `nodes_per_element`
    /// nodes at `e * nodes_per_element ..`, each below `node_count` or [`NO_NODE`]) and
    /// `element_matrices` (element `e`'s dense matrix, row-major, at `e * m * m ..`). A node may
    /// appear twice in an element (the entries then add up).
    ///
    /// Refused: `nodes_per_element == 0` or a map whose length is not a multiple of it
    /// ([`FormatError::InvalidParameter`]), matrices of the wrong total length
    /// ([`Error::DimensionMismatch`]), a node past the count ([`FormatError::LmaNodeOutOfRange`],
    /// naming the element and slot), and counts over the kernels' 32-bit indices
    /// ([`Error::TooLarge`]; the node count must stay below `u32::MAX`, which marks [`NO_NODE`]).
    pub fn try_new(
        node_count: usize,
        nodes_per_element: usize,
        element_nodes: &[usize],
        element_matrices: &[T],
    ) -> Result<Self> {
        let m = nodes_per_element;
        if m == 0 {
            return Err(FormatError::InvalidParameter {
                what: "nodes per element",
                value: 0,
                expected: "at least 1",
            }
            .into());
        }
        if !element_nodes.len().is_multiple_of(m) {
            return Err(FormatError::InvalidParameter {
                what: "the element-to-node map's length",
                value: element_nodes.len(),
                expected: "a multiple of the nodes per element",
            }
            .into());
        }
        let elements = element_nodes.len() / m;
        let expected = elements * m * m;
        if element_matrices.len() != expected {
            return Err(Error::DimensionMismatch {
                what: "element_matrices",
                expected,
                got: element_matrices.len(),
            });
        }
        if node_count >= LMA_NO_NODE as usize {
            let limit = LMA_NO_NODE as usize - 1;
            return Err(Error::TooLarge { what: "the node count", value: node_count, limit });
        }
        narrow("the element count", elements)?;
        for (k, &node) in element_nodes.iter().enumerate() {
            if node != NO_NODE && node >= node_count {
                return Err(FormatError::LmaNodeOutOfRange {
                    element: k / m,
                    slot: k % m,
                    node,
                    nodes: node_count,
                }
                .into());
            }
        }

        let colours = greedy_colours(node_count, m, element_nodes);
        let colour_count = colours.iter().max().map_or(0, |&c| c + 1);
        let mut order: Vec<usize> = (0..elements).collect();
        order.sort_by_key(|&e| colours[e]);
        let mut colour_offsets = vec![0; colour_count + 1];
        for &c in &colours {
            colour_offsets[c + 1] += 1;
        }
        for c in 0..colour_count {
            colour_offsets[c + 1] += colour_offsets[c];
        }

        let mut nodes = vec![LMA_NO_NODE; m * elements];
        let mut values = vec![T::ZERO; m * m * elements];
        for (s, &e) in order.iter().enumerate() {
            let slots = &element_nodes[e * m..(e + 1) * m];
            for (k, &node) in slots.iter().enumerate() {
                if node != NO_NODE {
                    // Below `node_count < u32::MAX` (checked above).
                    nodes[k * elements + s] = u32::try_from(node).expect("node below u32::MAX");
                }
            }
            for i in 0..m {
                for j in 0..m {
                    if slots[i] != NO_NODE && slots[j] != NO_NODE {
                        values[(i * m + j) * elements + s] = element_matrices[(e * m + i) * m + j];
                    }
                }
            }
        }
        Ok(Self { node_count, nodes_per_element: m, elements, order, colour_offsets, nodes, values })
    }

    /// The unknowns: the operator is `node_count x node_count`.
    pub fn node_count(&self) -> usize {
        self.node_count
    }

    pub fn nodes_per_element(&self) -> usize {
        self.nodes_per_element
    }

    pub fn elements(&self) -> usize {
        self.elements
    }

    /// `colours() + 1` offsets: colour `c` is stored elements `offsets[c] .. offsets[c + 1]`.
    pub fn colour_offsets(&self) -> &[usize] {
        &self.colour_offsets
    }

    pub fn colours(&self) -> usize {
        self.colour_offsets.len() - 1
    }

    /// For each stored element, its index in the input.
    pub fn element_order(&self) -> &[usize] {
        &self.order
    }

    /// The `m * elements` map, entry-major; [`LMA_NO_NODE`] for a Dirichlet slot.
    pub fn nodes(&self) -> &[u32] {
        &self.nodes
    }

    /// The `m * m * elements` element matrix entries, entry-major; 0 in the rows and columns of
    /// Dirichlet slots.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The node of slot `k` of stored element `s`, if it has one.
    fn node(&self, k: usize, s: usize) -> Option<usize> {
        let node = self.nodes[k * self.elements + s];
        (node != LMA_NO_NODE).then_some(node as usize)
    }

    fn value(&self, i: usize, j: usize, s: usize) -> T {
        self.values[(i * self.nodes_per_element + j) * self.elements + s]
    }

    /// `y = alpha * A * x + beta * y` on the CPU, `y` not read when `beta == 0`. Elements in stored
    /// order, each row summed by `fma` from column 0 and added as `y = fma(alpha, sum, y)` after `y`
    /// was scaled as `spmv_scale_*` scales it: the operations of the coloured GPU kernel in the same
    /// order at every node, so its result is this one bit for bit.
    pub fn spmv(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        for (what, got) in [("x", x.len()), ("y", y.len())] {
            if got != self.node_count {
                return Err(Error::DimensionMismatch { what, expected: self.node_count, got });
            }
        }
        for v in y.iter_mut() {
            *v = if beta == T::ZERO { T::ZERO } else { T::ZERO.mul_add(T::ZERO, beta * *v) };
        }
        let m = self.nodes_per_element;
        let mut xs = vec![T::ZERO; m];
        for s in 0..self.elements {
            for (k, xk) in xs.iter_mut().enumerate() {
                *xk = self.node(k, s).map_or(T::ZERO, |node| x[node]);
            }
            for i in 0..m {
                if let Some(node) = self.node(i, s) {
                    let sum = xs
                        .iter()
                        .enumerate()
                        .fold(T::ZERO, |sum, (j, &xj)| self.value(i, j, s).mul_add(xj, sum));
                    y[node] = alpha.mul_add(sum, y[node]);
                }
            }
        }
        Ok(())
    }

    /// The diagonal of the assembled operator: each element's diagonal entries added to their nodes.
    pub fn diagonal(&self) -> Vec<T> {
        let mut d = vec![T::ZERO; self.node_count];
        for s in 0..self.elements {
            for i in 0..self.nodes_per_element {
                if let Some(node) = self.node(i, s) {
                    d[node] = d[node] + self.value(i, i, s);
                }
            }
        }
        d
    }

    /// The assembled matrix `sum_e P_eᵀ K_e P_e`: sorted rows, the contributions to an entry summed
    /// in stored element order. Rows in parallel, each from the elements at its node, so that the
    /// millions of element entries of a large mesh are never sorted as one list.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let (n, m, elements) = (self.node_count, self.nodes_per_element, self.elements);
        // The (element, slot) pairs at each node, in stored element order.
        let mut at_offsets = vec![0usize; n + 1];
        for &node in &self.nodes {
            if node != LMA_NO_NODE {
                at_offsets[node as usize + 1] += 1;
            }
        }
        for i in 0..n {
            at_offsets[i + 1] += at_offsets[i];
        }
        let mut fill = at_offsets.clone();
        let mut at = vec![(0usize, 0usize); at_offsets[n]];
        for s in 0..elements {
            for k in 0..m {
                if let Some(node) = self.node(k, s) {
                    at[fill[node]] = (s, k);
                    fill[node] += 1;
                }
            }
        }
        let chunks: Vec<(Vec<usize>, Vec<usize>, Vec<T>)> = (0..n.div_ceil(ROWS_PER_TASK))
            .into_par_iter()
            .map(|task| {
                let rows = task * ROWS_PER_TASK..((task + 1) * ROWS_PER_TASK).min(n);
                let (mut lens, mut cols, mut vals) = (Vec::with_capacity(rows.len()), vec![], vec![]);
                let mut row_entries: Vec<(usize, T)> = vec![];
                for row in rows {
                    row_entries.clear();
                    for &(s, i) in &at[at_offsets[row]..at_offsets[row + 1]] {
                        for j in 0..m {
                            if let Some(col) = self.node(j, s) {
                                row_entries.push((col, self.value(i, j, s)));
                            }
                        }
                    }
                    // Stable: the contributions to one entry stay in element order.
                    row_entries.sort_by_key(|&(col, _)| col);
                    let before = cols.len();
                    for &(col, v) in &row_entries {
                        if cols.len() > before && cols.last() == Some(&col) {
                            let last = vals.len() - 1;
                            vals[last] = vals[last] + v;
                        } else {
                            cols.push(col);
                            vals.push(v);
                        }
                    }
                    lens.push(cols.len() - before);
                }
                (lens, cols, vals)
            })
            .collect();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        let (mut cols, mut vals) = (vec![], vec![]);
        for (lens, c, v) in chunks {
            for len in lens {
                offsets.push(offsets[offsets.len() - 1] + len);
            }
            cols.extend(c);
            vals.extend(v);
        }
        CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals)
            .expect("sorted, distinct, in-range entries form a valid CSR matrix")
    }
}

/// The greedy colouring of the elements in input order: each takes the smallest colour that no
/// element sharing one of its nodes took before it. A bitset of the colours taken at each node, wide
/// enough for the most colours an element can need: one more than its neighbours, which are at most
/// the other elements at its nodes.
fn greedy_colours(node_count: usize, m: usize, element_nodes: &[usize]) -> Vec<usize> {
    let mut at_node = vec![0usize; node_count];
    for &node in element_nodes.iter().filter(|&&n| n != NO_NODE) {
        at_node[node] += 1;
    }
    let most_neighbours = element_nodes
        .chunks(m)
        .map(|slots| slots.iter().filter(|&&n| n != NO_NODE).map(|&n| at_node[n] - 1).sum::<usize>())
        .max()
        .unwrap_or(0);
    let words = (most_neighbours + 1).div_ceil(64);
    let mut taken = vec![0u64; node_count * words];
    let mut used = vec![0u64; words];
    element_nodes
        .chunks(m)
        .map(|slots| {
            used.fill(0);
            for &node in slots.iter().filter(|&&n| n != NO_NODE) {
                for (u, t) in used.iter_mut().zip(&taken[node * words..(node + 1) * words]) {
                    *u |= t;
                }
            }
            let (word, free) = used
                .iter()
                .enumerate()
                .find(|&(_, &u)| u != u64::MAX)
                .map(|(w, &u)| (w, !u))
                .expect("an element has fewer neighbours than the bitset has colours, so one is free");
            let bit = free.trailing_zeros() as usize;
            for &node in slots.iter().filter(|&&n| n != NO_NODE) {
                taken[node * words + word] |= 1 << bit;
            }
            word * 64 + bit
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two 1D elements sharing node 1: `[0 1]`, `[1 2]`, each with the matrix `[2 -1; -1 2]`.
    fn two_bars() -> Lma<f64> {
        Lma::try_new(3, 2, &[0, 1, 1, 2], &[2.0, -1.0, -1.0, 2.0, 2.0, -1.0, -1.0, 2.0]).unwrap()
    }

    #[test]
    fn assembles_and_applies_two_elements() {
        let a = two_bars();
        assert_eq!(a.colours(), 2);
        assert_eq!(a.colour_offsets(), [0, 1, 2]);
        assert_eq!(a.nodes(), [0, 1, 1, 2]);
        let csr = a.to_csr();
        let (offsets, cols, vals) = csr.csr_data();
        assert_eq!(offsets, [0, 2, 5, 7]);
        assert_eq!(cols, [0, 1, 0, 1, 2, 1, 2]);
        assert_eq!(vals, [2.0, -1.0, -1.0, 4.0, -1.0, -1.0, 2.0]);
        let mut y = vec![f64::NAN; 3];
        a.spmv(1.0, &[1.0, 2.0, 3.0], 0.0, &mut y).unwrap();
        assert_eq!(y, [0.0, 4.0, 4.0]);
        a.spmv(2.0, &[1.0, 0.0, 0.0], -1.0, &mut y).unwrap();
        assert_eq!(y, [4.0, -6.0, -4.0]);
        assert_eq!(a.diagonal(), [2.0, 4.0, 2.0]);
    }

    #[test]
    fn dirichlet_slots_drop_their_rows_and_columns() {
        // Node 0 of the first bar is prescribed: unknowns are the old nodes 1 and 2, now 0 and 1.
        let a = Lma::try_new(
            2,
            2,
            &[NO_NODE, 0, 0, 1],
            &[f64::NAN, f64::NAN, f64::NAN, 2.0, 2.0, -1.0, -1.0, 2.0],
        )
        .unwrap();
        let csr = a.to_csr();
        assert_eq!(csr.csr_data().2, [4.0, -1.0, -1.0, 2.0]);
        let mut y = vec![0.0; 2];
        a.spmv(1.0, &[1.0, 1.0], 0.0, &mut y).unwrap();
        assert_eq!(y, [3.0, 1.0]);
    }

    #[test]
    fn colours_separate_elements_that_share_nodes() {
        // A 5 x 4 grid of quadrilaterals (6 x 5 nodes), numbered row by row.
        let (ex, ey) = (5, 4);
        let mut map = vec![];
        for j in 0..ey {
            for i in 0..ex {
                let n0 = j * (ex + 1) + i;
                map.extend([n0, n0 + 1, n0 + ex + 1, n0 + ex + 2]);
            }
        }
        let a = Lma::try_new((ex + 1) * (ey + 1), 4, &map, &vec![1.0f32; ex * ey * 16]).unwrap();
        assert_eq!(a.colours(), 4);
        for c in 0..a.colours() {
            let mut seen = vec![false; a.node_count()];
            for s in a.colour_offsets()[c]..a.colour_offsets()[c + 1] {
                for k in 0..4 {
                    let node = a.node(k, s).unwrap();
                    assert!(!seen[node], "colour {c}: node {node} twice");
                    seen[node] = true;
                }
            }
        }
        let mut order = a.element_order().to_vec();
        order.sort_unstable();
        assert_eq!(order, (0..ex * ey).collect::<Vec<_>>());
    }

    #[test]
    fn a_star_needs_a_colour_per_element() {
        // 70 bars all sharing node 0: 70 colours, past one word of the bitset.
        let map: Vec<usize> = (1..=70).flat_map(|i| [0, i]).collect();
        let a = Lma::try_new(71, 2, &map, &vec![1.0f64; 70 * 4]).unwrap();
        assert_eq!(a.colours(), 70);
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let e = Lma::<f64>::try_new(3, 2, &[0, 1, 1, 3], &[0.0; 8]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Format(FormatError::LmaNodeOutOfRange { element: 1, slot: 1, node: 3, nodes: 3 })
            ),
            "{e}"
        );
        let e = Lma::<f64>::try_new(3, 2, &[0, 1, 1, 2], &[0.0; 7]).unwrap_err();
        assert!(
            matches!(e, Error::DimensionMismatch { what: "element_matrices", expected: 8, got: 7 }),
            "{e}"
        );
        let e = Lma::<f64>::try_new(3, 2, &[0, 1, 1], &[0.0; 4]).unwrap_err();
        assert!(matches!(e, Error::Format(FormatError::InvalidParameter { value: 3, .. })), "{e}");
        let e = Lma::<f64>::try_new(3, 0, &[], &[]).unwrap_err();
        assert!(matches!(e, Error::Format(FormatError::InvalidParameter { value: 0, .. })), "{e}");
        let e = Lma::<f64>::try_new(u32::MAX as usize, 1, &[], &[]).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the node count", .. }), "{e}");
        let e = two_bars().spmv(1.0, &[0.0; 2], 0.0, &mut [0.0; 3]).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { what: "x", expected: 3, got: 2 }), "{e}");
    }

    #[test]
    fn no_elements_is_the_zero_operator() {
        let a = Lma::<f32>::try_new(4, 9, &[], &[]).unwrap();
        assert_eq!((a.elements(), a.colours()), (0, 0));
        assert_eq!(a.to_csr().nnz(), 0);
        let mut y = vec![1.0f32; 4];
        a.spmv(1.0, &[1.0; 4], 3.0, &mut y).unwrap();
        assert_eq!(y, [3.0; 4]);
    }
}
