//! The local matrix approach (LMA; Reguly & Giles, "Efficient sparse matrix-vector multiplication on
//! cache-based GPUs", InPar 2012, section 8): a finite element operator kept as its element matrices
//! and element-to-node map, applied as `y = sum_e P_eᵀ K_e (P_e x)` without assembling `A`. Kernels:
//! `kernels-gpu/src/formats/lma.rs`.
//!
//! Storage, as the kernels read it: element `s` (in stored order) has `m` nodes, node `k` at
//! `nodes[s * m + k]`, and a dense `m x m` matrix at `values[s * v ..]`, `v` values per element
//! ([`LmaStorage`]): all `m * m` entries row by row, or, when every element matrix is symmetric, the
//! upper triangle with the diagonal row by row (`m (m + 1) / 2` values: 52% of the bytes at
//! `m = 25`). Element-major, so that the consecutive elements a warp of the kernel takes at a step
//! are one contiguous run of values that it reads coalesced.
//!
//! Which storage is chosen automatically: [`Lma::try_new`] compares every element matrix with its
//! transpose bit for bit (after the Dirichlet rows and columns are zeroed) and packs the upper
//! triangles when all are equal; [`Lma::storage`] says which it chose. Not an option of the
//! constructor, because nothing but the bytes depends on it: the packed storage holds the very
//! values of the full one, and every product (the CPU's here and both GPU kernels) reads entry
//! `(i, j)` in the same order from either, so the results are the same bits. A caller could only
//! choose the full storage of a symmetric operator to move more bytes; [`Lma::to_full_storage`]
//! makes it, for comparisons. The check costs one read of the element matrices, which the
//! constructor reads anyway.
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
use super::limits::check_declared;
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

/// How an [`Lma`] stores its element matrices: chosen by [`Lma::try_new`] (see the module
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LmaStorage {
    /// Every entry: `m * m` values per element, row by row.
    Full,
    /// Every element matrix is symmetric, bit for bit (its Dirichlet rows and columns zeroed): the
    /// upper triangle with the diagonal, row by row, `m (m + 1) / 2` values per element.
    Symmetric,
}

impl LmaStorage {
    /// Values stored per element of `m` nodes; `None` past `usize`.
    pub fn values_per_element(self, m: usize) -> Option<usize> {
        match self {
            LmaStorage::Full => m.checked_mul(m),
            LmaStorage::Symmetric => {
                // `m (m + 1) / 2`, halving whichever factor is even.
                let n = m.checked_add(1)?;
                if m.is_multiple_of(2) { (m / 2).checked_mul(n) } else { m.checked_mul(n / 2) }
            }
        }
    }

    fn is_symmetric(self) -> bool {
        self == LmaStorage::Symmetric
    }
}

/// Where entry `(i, j)` of an element matrix sits among the element's values in `storage`, for
/// `i, j < m` (the symmetric storage reads `(j, i)` for `i > j`).
fn entry_index(storage: LmaStorage, m: usize, i: usize, j: usize) -> usize {
    match storage {
        LmaStorage::Full => i * m + j,
        LmaStorage::Symmetric => {
            let (i, j) = if i <= j { (i, j) } else { (j, i) };
            // Row `i` of the upper triangle starts after rows `0 .. i`, of `m - q` values each.
            i * m - i * i.saturating_sub(1) / 2 + (j - i)
        }
    }
}

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
    storage: LmaStorage,
    /// Values per element: `m * m`, or `m (m + 1) / 2` for [`LmaStorage::Symmetric`].
    per_element: usize,
    /// Whether some element names a node in two of its slots.
    repeats_nodes: bool,
    values: Vec<T>,
}

impl<T: Scalar> Lma<T> {
    /// An operator on `node_count` unknowns from `element_nodes` (element `e`'s `nodes_per_element`
    /// nodes at `e * nodes_per_element ..`, each below `node_count` or [`NO_NODE`]) and
    /// `element_matrices` (element `e`'s dense matrix, row-major, at `e * m * m ..`). A node may
    /// appear twice in an element (the entries then add up). The element matrices are stored packed
    /// when every one is symmetric bit for bit ([`LmaStorage::Symmetric`], see [`Lma::storage`]),
    /// else whole.
    ///
    /// Refused: `nodes_per_element == 0` or a map whose length is not a multiple of it
    /// ([`FormatError::InvalidParameter`]), matrices of the wrong total length
    /// ([`Error::DimensionMismatch`]), a node past the count ([`FormatError::LmaNodeOutOfRange`],
    /// naming the element and slot), and with [`Error::TooLarge`] before anything is allocated:
    /// counts over the kernels' 32-bit indices (the node count must stay below `u32::MAX`, which
    /// marks [`NO_NODE`]), `elements * m * m` past `usize`, and a node count past the limit of
    /// [`crate::formats::MAX_ROWS_WITHOUT_ENTRIES`] plus
    /// [`crate::formats::MAX_ROWS_PER_ENTRY`] per slot of the map (the per-node arrays of the
    /// colouring, the diagonal and `to_csr` are sized by it).
    ///
    /// Memory is linear in the input: the map and matrices once more (about half the matrices when
    /// they are symmetric), and a few words per node and per slot for the colouring.
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
        let too_many = || Error::TooLarge {
            what: "the element count for this many nodes per element (elements × m² entries)",
            value: elements,
            limit: usize::MAX / m / m,
        };
        // `elements * m` is the map's length; `m * m` may overflow where that does not.
        let expected = m.checked_mul(elements).and_then(|slots| slots.checked_mul(m)).ok_or_else(too_many)?;
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
        check_declared("the node count", node_count, element_nodes.len())?;
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

        // The packed triangles are fewer values than `expected`, which fits.
        let storage = if elements > 0 && all_symmetric(m, element_nodes, element_matrices) {
            LmaStorage::Symmetric
        } else {
            LmaStorage::Full
        };
        let per_element = storage.values_per_element(m).ok_or_else(too_many)?;
        let stored = per_element.checked_mul(elements).ok_or_else(too_many)?;
        let repeats_nodes = element_nodes.par_chunks(m).any(repeats_a_node);

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
        let mut values = vec![T::ZERO; stored];
        nodes.par_chunks_mut(m).zip(values.par_chunks_mut(per_element.max(1))).zip(&order).for_each(
            |((nodes, values), &e)| {
                let slots = &element_nodes[e * m..(e + 1) * m];
                for (k, &node) in slots.iter().enumerate() {
                    if node != NO_NODE {
                        // Below `node_count < u32::MAX` (checked above).
                        nodes[k] = u32::try_from(node).expect("node below u32::MAX");
                    }
                }
                for i in 0..m {
                    let first_column = if storage.is_symmetric() { i } else { 0 };
                    for j in first_column..m {
                        if slots[i] != NO_NODE && slots[j] != NO_NODE {
                            values[entry_index(storage, m, i, j)] = element_matrices[(e * m + i) * m + j];
                        }
                    }
                }
            },
        );
        Ok(Self {
            node_count,
            nodes_per_element: m,
            elements,
            order,
            colour_offsets,
            nodes,
            storage,
            per_element,
            repeats_nodes,
            values,
        })
    }

    /// The same operator with every element matrix stored whole ([`LmaStorage::Full`]): a copy for
    /// an operator stored so already, else the triangles unpacked. Its products, diagonal and
    /// assembly are this one's, bit for bit; it only moves more bytes.
    pub fn to_full_storage(&self) -> Self {
        if !self.storage.is_symmetric() {
            return self.clone();
        }
        let m = self.nodes_per_element;
        // `elements * m * m` fitted `usize` when the input was checked.
        let values = (0..self.elements)
            .into_par_iter()
            .flat_map_iter(|s| (0..m * m).map(move |k| self.value(k / m, k % m, s)))
            .collect();
        Self {
            node_count: self.node_count,
            nodes_per_element: m,
            elements: self.elements,
            order: self.order.clone(),
            colour_offsets: self.colour_offsets.clone(),
            nodes: self.nodes.clone(),
            storage: LmaStorage::Full,
            per_element: m * m,
            repeats_nodes: self.repeats_nodes,
            values,
        }
    }

    /// How the element matrices are stored: [`LmaStorage::Symmetric`] when every one was symmetric
    /// bit for bit (after its Dirichlet rows and columns were zeroed), else [`LmaStorage::Full`].
    pub fn storage(&self) -> LmaStorage {
        self.storage
    }

    /// Whether some element names a node in two of its slots (the coloured GPU kernel then adds
    /// that element's rows one after the other).
    pub fn repeats_nodes(&self) -> bool {
        self.repeats_nodes
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

    /// The `m * elements` map, element-major (slot `k` of stored element `s` at `s * m + k`);
    /// [`LMA_NO_NODE`] for a Dirichlet slot.
    pub fn nodes(&self) -> &[u32] {
        &self.nodes
    }

    /// The element matrices, element-major in stored order, each as [`Lma::storage`] says: `m * m`
    /// values row by row, or the upper triangle with the diagonal row by row; 0 in the rows and
    /// columns of Dirichlet slots.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The node of slot `k` of stored element `s`, if it has one.
    fn node(&self, k: usize, s: usize) -> Option<usize> {
        let node = self.nodes[s * self.nodes_per_element + k];
        (node != LMA_NO_NODE).then_some(node as usize)
    }

    /// Entry `(i, j)` of stored element `s`'s matrix, whichever the storage.
    fn value(&self, i: usize, j: usize, s: usize) -> T {
        self.values[s * self.per_element + entry_index(self.storage, self.nodes_per_element, i, j)]
    }

    /// `y = alpha * A * x + beta * y` on the CPU, under the GPU products' contract: `y` not read
    /// when `beta == 0`, and neither the element matrices nor `x` read when `alpha == 0` (a NaN in
    /// `x` does not reach `y` then). Elements in stored order, each row summed by `fma` from column
    /// 0 and added as `y = fma(alpha, sum, y)` after `y` was scaled as `spmv_scale_*` scales it: the
    /// operations of the coloured GPU kernel in the same order at every node, so its result is this
    /// one bit for bit.
    pub fn spmv(&self, alpha: T, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
        for (what, got) in [("x", x.len()), ("y", y.len())] {
            if got != self.node_count {
                return Err(Error::DimensionMismatch { what, expected: self.node_count, got });
            }
        }
        for v in y.iter_mut() {
            *v = if beta == T::ZERO { T::ZERO } else { T::ZERO.mul_add(T::ZERO, beta * *v) };
        }
        if alpha == T::ZERO {
            return Ok(());
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

    /// The diagonal of the assembled operator, as [`Lma::to_csr`] sums it: entry `(i, j)` of an
    /// element adds to the diagonal wherever slots `i` and `j` name the same node, so an element that
    /// repeats a node adds its off-diagonal entries between the two slots too. Summed in stored
    /// element order, then by `i`, then by `j`.
    pub fn diagonal(&self) -> Vec<T> {
        let m = self.nodes_per_element;
        let mut d = vec![T::ZERO; self.node_count];
        for s in 0..self.elements {
            for i in 0..m {
                let Some(node) = self.node(i, s) else { continue };
                for j in 0..m {
                    if self.node(j, s) == Some(node) {
                        d[node] = d[node] + self.value(i, j, s);
                    }
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

/// Whether every element matrix equals its transpose bit for bit, with the rows and columns of its
/// Dirichlet slots taken as zeros (as they are stored). `elements > 0`, so `m * m` fits `usize`.
fn all_symmetric<T: Scalar>(m: usize, element_nodes: &[usize], element_matrices: &[T]) -> bool {
    element_nodes.par_chunks(m).zip(element_matrices.par_chunks(m * m)).all(|(slots, k)| {
        (0..m).all(|i| {
            (i + 1..m).all(|j| {
                slots[i] == NO_NODE || slots[j] == NO_NODE || k[i * m + j].bits() == k[j * m + i].bits()
            })
        })
    })
}

/// Whether an element's slots name some node twice (Dirichlet slots aside).
fn repeats_a_node(slots: &[usize]) -> bool {
    slots.iter().enumerate().any(|(k, &node)| node != NO_NODE && slots[..k].contains(&node))
}

/// The greedy colouring of the elements in input order: each takes the smallest colour that no
/// element sharing one of its nodes took before it. Memory linear in the input, whatever the mesh
/// ([`TakenColours`], and one stamp per colour marking those of the element's neighbours).
fn greedy_colours(node_count: usize, m: usize, element_nodes: &[usize]) -> Vec<usize> {
    let mut taken = TakenColours::new(node_count, element_nodes);
    // `stamp[c] == e + 1`: a neighbour of element `e` has colour `c`.
    let mut stamp: Vec<usize> = Vec::new();
    let mut colours = Vec::with_capacity(element_nodes.len() / m);
    for (e, slots) in element_nodes.chunks(m).enumerate() {
        let first = nodes_of(slots).map(|v| taken.dense[v]).max().unwrap_or(0);
        for v in nodes_of(slots) {
            for &c in taken.listed(v).iter().filter(|&&c| c >= first) {
                stamp[c] = e + 1;
            }
        }
        let colour = (first..).find(|&c| stamp.get(c) != Some(&(e + 1))).unwrap_or(stamp.len());
        if colour >= stamp.len() {
            stamp.resize(colour + 1, 0);
        }
        for v in nodes_of(slots) {
            taken.take(v, colour);
        }
        colours.push(colour);
    }
    colours
}

/// The nodes of an element's slots, without the Dirichlet ones.
fn nodes_of(slots: &[usize]) -> impl Iterator<Item = usize> + '_ {
    slots.iter().copied().filter(|&n| n != NO_NODE)
}

/// The colours taken at each node, in memory linear in the map: the colours `0 .. dense[v]` are all
/// taken at node `v`, and a list holds those above it (at most one word per slot at the node, laid
/// out by node as CSR rows are). An element's search starts at the largest `dense` of its nodes and
/// reads only the listed colours above it: a few words per element on a mesh, none on a star, whose
/// centre's colours stay dense. (A bitset of colours per node would take nodes × colours bits: 12.5
/// GB for a star of 100,000 elements on 10^6 nodes.)
struct TakenColours {
    dense: Vec<usize>,
    /// `listed[starts[v] .. ends[v]]`: the colours above `dense[v]` taken at node `v`.
    starts: Vec<usize>,
    ends: Vec<usize>,
    listed: Vec<usize>,
}

impl TakenColours {
    fn new(node_count: usize, element_nodes: &[usize]) -> Self {
        let mut starts = vec![0usize; node_count + 1];
        for node in nodes_of(element_nodes) {
            starts[node + 1] += 1;
        }
        for v in 0..node_count {
            starts[v + 1] += starts[v];
        }
        let ends = starts[..node_count].to_vec();
        Self { dense: vec![0; node_count], listed: vec![0; starts[node_count]], starts, ends }
    }

    fn listed(&self, v: usize) -> &[usize] {
        &self.listed[self.starts[v]..self.ends[v]]
    }

    /// Marks `colour` taken at node `v` (again, for an element that repeats the node: a no-op).
    fn take(&mut self, v: usize, colour: usize) {
        if colour > self.dense[v] {
            if !self.listed(v).contains(&colour) {
                self.listed[self.ends[v]] = colour;
                self.ends[v] += 1;
            }
        } else if colour == self.dense[v] {
            self.dense[v] += 1;
            while let Some(k) = self.listed(v).iter().position(|&c| c == self.dense[v]) {
                self.ends[v] -= 1;
                self.listed[self.starts[v] + k] = self.listed[self.ends[v]];
                self.dense[v] += 1;
            }
        }
    }
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
    fn an_element_that_repeats_a_node_adds_its_coupling_to_the_diagonal() {
        // Element [0 0 1]: slots 0 and 1 are node 0, so (0, 0) gathers K[0][0] + K[0][1] + K[1][0] +
        // K[1][1] = 2 + 1 + 1 + 3 = 7.
        let k = [2.0, 1.0, -1.0, 1.0, 3.0, -1.0, -1.0, -1.0, 4.0];
        let a = Lma::try_new(2, 3, &[0, 0, 1], &k).unwrap();
        assert_eq!(a.diagonal(), [7.0, 4.0]);
        let csr = a.to_csr();
        let diagonal: Vec<f64> = (0..2).map(|r| csr.get_entry(r, r).unwrap().into_value()).collect();
        assert_eq!(diagonal, a.diagonal());
    }

    #[test]
    fn alpha_zero_reads_neither_the_matrices_nor_x() {
        let a = two_bars();
        let mut y = vec![1.0, 2.0, 3.0];
        a.spmv(0.0, &[f64::NAN; 3], 2.0, &mut y).unwrap();
        assert_eq!(y, [2.0, 4.0, 6.0]);
    }

    #[test]
    fn a_star_colours_in_linear_memory() {
        // 20,000 bars on 10^6 nodes, all at node 0: a colour each. A bitset per node would take
        // 10^6 × 313 words, 2.5 GB.
        let map: Vec<usize> = (1..=20_000).flat_map(|i| [0, i * 49]).collect();
        let a = Lma::try_new(1_000_000, 2, &map, &vec![1.0f32; 20_000 * 4]).unwrap();
        assert_eq!(a.colours(), 20_000);
    }

    #[test]
    fn colours_are_the_greedy_ones() {
        // A path of 4 bars and a bar repeating its node: greedy in input order gives 0 1 0 1, then
        // the bar [2 2], which meets colours 0 and 1 at node 2, takes 2.
        let map = [0, 1, 1, 2, 2, 3, 3, 4, 2, 2];
        let colours = greedy_colours(5, 2, &map);
        assert_eq!(colours, [0, 1, 0, 1, 2]);
        // Colours taken out of order at a node: 1 then 0 makes 0 and 1 dense there.
        let mut taken = TakenColours::new(1, &[0, 0, 0]);
        taken.take(0, 1);
        taken.take(0, 1);
        assert_eq!((taken.dense[0], taken.listed(0)), (0, &[1][..]));
        taken.take(0, 0);
        assert_eq!((taken.dense[0], taken.listed(0)), (2, &[][..]));
    }

    #[test]
    fn a_node_count_the_map_does_not_hold_is_refused_before_allocating() {
        let e = Lma::<f64>::try_new(4_294_967_294, 1, &[], &[]).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the node count", .. }), "{e}");
        let limit = crate::formats::MAX_ROWS_WITHOUT_ENTRIES + crate::formats::MAX_ROWS_PER_ENTRY * 2;
        let e = Lma::<f64>::try_new(limit + 1, 2, &[0, 1], &[1.0; 4]).unwrap_err();
        assert!(
            matches!(e, Error::TooLarge { what: "the node count", value, .. } if value == limit + 1),
            "{e}"
        );
        assert_eq!(Lma::<f64>::try_new(limit, 2, &[0, 1], &[1.0; 4]).unwrap().node_count(), limit);
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

    /// A strip of `n` Q1-like elements of 4 nodes (`[2i, 2i + 1, 2i + 2, 2i + 3]`, neighbours sharing
    /// two nodes), node 0 Dirichlet, with element matrices from `matrix(e, i, j)`.
    fn strip(n: usize, matrix: impl Fn(usize, usize, usize) -> f64) -> (usize, Vec<usize>, Vec<f64>) {
        let map: Vec<usize> = (0..n)
            .flat_map(|e| (0..4).map(move |k| if e == 0 && k == 0 { NO_NODE } else { 2 * e + k - 1 }))
            .collect();
        let values =
            (0..n).flat_map(|e| (0..16).map(move |k| (e, k / 4, k % 4))).map(|(e, i, j)| matrix(e, i, j));
        (2 * n + 1, map, values.collect())
    }

    /// Bits of a vector, to compare results exactly (NaN and signed zeros included).
    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn symmetric_elements_are_packed_and_give_the_same_bits() {
        // Entries with many significant bits, `K_ij = K_ji`, different in every element.
        let value =
            |e: usize, i: usize, j: usize| ((e * 31 + i.min(j) * 7 + i.max(j) * 3) as f64).sin() / 3.0;
        let (n, map, values) = strip(9, value);
        let a = Lma::try_new(n, 4, &map, &values).unwrap();
        assert_eq!(a.storage(), LmaStorage::Symmetric);
        assert_eq!(a.values().len(), 9 * 10);
        let full = a.to_full_storage();
        assert_eq!((full.storage(), full.values().len()), (LmaStorage::Full, 9 * 16));
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).cos()).collect();
        let y0: Vec<f64> = (0..n).map(|i| i as f64 - 3.5).collect();
        let (mut y, mut y_full) = (y0.clone(), y0.clone());
        a.spmv(1.5, &x, -0.25, &mut y).unwrap();
        full.spmv(1.5, &x, -0.25, &mut y_full).unwrap();
        assert_eq!(bits(&y), bits(&y_full));
        assert_eq!(bits(&a.diagonal()), bits(&full.diagonal()));
        assert_eq!(a.to_csr(), full.to_csr());
        // One entry off its mirror keeps the whole matrices.
        let mut unpacked = values.clone();
        unpacked[16 + 1] = -unpacked[16 + 1]; // element 1, (0, 1)
        let b = Lma::try_new(n, 4, &map, &unpacked).unwrap();
        assert_eq!(b.storage(), LmaStorage::Full);
        assert_eq!(b.values().len(), 9 * 16);
    }

    #[test]
    fn symmetry_is_checked_bit_for_bit_past_the_dirichlet_slots() {
        // `0.0` against `-0.0`: equal as numbers, not as bits.
        let (n, map, mut values) = strip(3, |_, i, j| if i == j { 2.0 } else { 0.0 });
        values[16 + 4 + 2] = -0.0; // element 1, (1, 2)
        assert_eq!(Lma::try_new(n, 4, &map, &values).unwrap().storage(), LmaStorage::Full);
        // Row and column 0 of element 0 are Dirichlet's, stored as zeros: their asymmetry does not count.
        let (n, map, mut values) = strip(3, |_, i, j| if i == j { 2.0 } else { -0.5 });
        values[1] = 7.0;
        values[4 * 3] = f64::NAN;
        let a = Lma::try_new(n, 4, &map, &values).unwrap();
        assert_eq!(a.storage(), LmaStorage::Symmetric);
        assert_eq!(a.value(0, 1, a.element_order().iter().position(|&e| e == 0).unwrap()), 0.0);
        // No elements: nothing to pack, nothing stored.
        let empty = Lma::<f32>::try_new(3, 25, &[], &[]).unwrap();
        assert_eq!((empty.storage(), empty.values().len()), (LmaStorage::Full, 0));
    }

    #[test]
    fn packed_rows_follow_the_upper_triangle() {
        let index = |i, j| entry_index(LmaStorage::Symmetric, 4, i, j);
        let rows: Vec<usize> =
            (0..4).flat_map(|i| (i..4).map(move |j| (i, j))).map(|(i, j)| index(i, j)).collect();
        assert_eq!(rows, (0..10).collect::<Vec<_>>());
        assert_eq!((index(3, 0), index(2, 1)), (index(0, 3), index(1, 2)));
        assert_eq!(entry_index(LmaStorage::Full, 4, 2, 1), 9);
        let per = |storage: LmaStorage, m| storage.values_per_element(m);
        assert_eq!((per(LmaStorage::Symmetric, 25), per(LmaStorage::Symmetric, 4)), (Some(325), Some(10)));
        assert_eq!((per(LmaStorage::Full, 25), per(LmaStorage::Symmetric, 1)), (Some(625), Some(1)));
        assert_eq!(per(LmaStorage::Symmetric, usize::MAX), None);
        assert_eq!(per(LmaStorage::Full, 1 << 33), None);
        // The kernels' count of packed values is the same.
        for m in kernels_gpu::abi::LMA_NODES_PER_ELEMENT {
            let packed = kernels_gpu::abi::lma_stored_values(m, true) as usize;
            assert_eq!(per(LmaStorage::Symmetric, m as usize), Some(packed));
        }
    }

    #[test]
    fn an_element_naming_a_node_twice_is_flagged() {
        assert!(!two_bars().repeats_nodes());
        let k = [2.0, 1.0, -1.0, 1.0, 3.0, -1.0, -1.0, -1.0, 4.0];
        assert!(Lma::try_new(2, 3, &[0, 0, 1], &k).unwrap().repeats_nodes());
        // Two Dirichlet slots are not a repeated node.
        assert!(!Lma::try_new(2, 3, &[NO_NODE, 1, NO_NODE], &k).unwrap().repeats_nodes());
    }
}
