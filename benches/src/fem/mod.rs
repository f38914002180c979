//! The finite element problem of Reguly & Giles (2012), section 8: the Poisson equation `-Δu = f` on
//! the unit square with `u = 0` on the boundary, on a uniform mesh of `cells x cells` squares with
//! tensor-product Lagrange elements of degree 1 to 4 (Q1 to Q4; an interior node's row holds 9, 25,
//! 49 or 81 entries).
//!
//! The manufactured solution is `u = x (1 - x) y (1 - y) e^(x + y)`, so that
//! `f = e^(x + y) (x (x + 3) y (1 - y) + x (1 - x) y (y + 3))`. Not `sin(pi x) sin(pi y)`: its load
//! vector is an eigenvector of the Q1 matrix (the discrete sines are the grid Laplacian's
//! eigenvectors), so CG would converge in one iteration, and nearly so at the higher degrees; and not
//! a polynomial, which Q_k reproduces exactly from some degree on. Element stiffness
//! matrices and load vectors are computed by Gauss–Legendre quadrature on each element's own
//! geometry (the element matrices of this uniform mesh come out equal, but nothing assumes it):
//! `degree + 1` points per direction integrate the stiffness exactly (its integrand has degree `2k`
//! per direction), `degree + 2` the load, `degree + 3` the error.
//!
//! Nodes: the `(k n + 1)^2` points `(i, j) / (k n)` of the grid, `k` the degree and `n` the cells per
//! side; element `(ex, ey)` (numbered row by row) has local node `(a, b)`, `a, b in 0..=k`, at grid
//! point `(k ex + a, k ey + b)`, local index `a + (k + 1) b`. The boundary nodes are Dirichlet nodes:
//! not unknowns (see `gpu_spmv::formats::lma`), so the system is the stiffness matrix of the
//! `(k n - 1)^2` interior nodes, numbered row by row, symmetric positive definite.

pub mod quadrature;

use gpu_spmv::Scalar;
use gpu_spmv::formats::{Lma, NO_NODE};
use nalgebra_sparse::CsrMatrix;
use quadrature::{Lagrange1d, gauss_legendre};

/// Unknowns of the study's problems: Reguly & Giles' size, about 4 million at every degree.
pub const STUDY_UNKNOWNS: usize = 4_000_000;

/// Unknowns of the small problems: vectors of 0.8 MB in f64, a CSR matrix of 10 to 60 MB, resident in
/// the H100's 50 MB L2 at the low degrees, to measure the cost of an iteration beyond bandwidth.
pub const SMALL_UNKNOWNS: usize = 100_000;

/// The Poisson problem at one degree and mesh size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poisson {
    /// Polynomial degree `k` of the elements, 1 to 4.
    pub degree: usize,
    /// Cells per side of the square.
    pub cells: usize,
}

impl Poisson {
    pub fn new(degree: usize, cells: usize) -> Self {
        assert!((1..=4).contains(&degree), "the study's elements are Q1 to Q4, not Q{degree}");
        assert!(cells >= 1, "a mesh needs a cell");
        Self { degree, cells }
    }

    /// The mesh of about `unknowns` unknowns at `degree`: `(k n - 1)^2` is nearest `unknowns`.
    pub fn with_unknowns(degree: usize, unknowns: usize) -> Self {
        let side = (unknowns as f64).sqrt() + 1.0;
        Self::new(degree, ((side / degree as f64).round() as usize).max(1))
    }

    /// Grid points per side, boundary included: `k n + 1`.
    fn points(&self) -> usize {
        self.degree * self.cells + 1
    }

    /// The mesh size.
    pub fn h(&self) -> f64 {
        1.0 / self.cells as f64
    }

    /// Interior nodes, the unknowns: `(k n - 1)^2`.
    pub fn unknowns(&self) -> usize {
        (self.points() - 2).pow(2)
    }

    pub fn elements(&self) -> usize {
        self.cells * self.cells
    }

    /// `(k + 1)^2`.
    pub fn nodes_per_element(&self) -> usize {
        (self.degree + 1).pow(2)
    }

    /// The unknown at grid point `(i, j)`, or [`NO_NODE`] on the boundary.
    fn unknown(&self, i: usize, j: usize) -> usize {
        let last = self.points() - 1;
        if i == 0 || j == 0 || i == last || j == last { NO_NODE } else { (j - 1) * (last - 1) + (i - 1) }
    }

    /// The grid point of local node `l` of element `e`.
    fn grid_point(&self, e: usize, l: usize) -> (usize, usize) {
        let k = self.degree;
        let (ex, ey) = (e % self.cells, e / self.cells);
        (k * ex + l % (k + 1), k * ey + l / (k + 1))
    }

    /// The element-to-node map, element-major (element `e`'s nodes at `e * m ..`), [`NO_NODE`] on
    /// the boundary.
    pub fn element_nodes(&self) -> Vec<usize> {
        let m = self.nodes_per_element();
        (0..self.elements() * m)
            .map(|s| {
                let (i, j) = self.grid_point(s / m, s % m);
                self.unknown(i, j)
            })
            .collect()
    }

    /// The lower-left corner of element `e`.
    fn corner(&self, e: usize) -> (f64, f64) {
        ((e % self.cells) as f64 * self.h(), (e / self.cells) as f64 * self.h())
    }

    /// The stiffness matrix `K_ij = integral over the element of grad phi_i . grad phi_j` of an
    /// `hx x hy` rectangle, row-major: `m x m` with `m = (k + 1)^2`.
    pub fn element_stiffness(&self, hx: f64, hy: f64) -> Vec<f64> {
        let basis = Lagrange1d::new(self.degree);
        let (points, weights) = gauss_legendre(self.degree + 1);
        let m = self.nodes_per_element();
        let n1 = basis.len();
        let mut k = vec![0.0; m * m];
        for (&s, &ws) in points.iter().zip(&weights) {
            for (&t, &wt) in points.iter().zip(&weights) {
                // Gradients of every basis function at the point, in physical coordinates.
                let grads: Vec<(f64, f64)> = (0..m)
                    .map(|l| {
                        let (a, b) = (l % n1, l / n1);
                        (
                            basis.derivative(a, s) * basis.value(b, t) / hx,
                            basis.value(a, s) * basis.derivative(b, t) / hy,
                        )
                    })
                    .collect();
                let w = ws * wt * hx * hy;
                for (i, gi) in grads.iter().enumerate() {
                    for (j, gj) in grads.iter().enumerate() {
                        k[i * m + j] += w * (gi.0 * gj.0 + gi.1 * gj.1);
                    }
                }
            }
        }
        k
    }

    /// Every element's stiffness matrix, element-major: computed once per distinct element shape,
    /// which on this uniform mesh is one.
    fn element_matrices(&self) -> Vec<f64> {
        let one = self.element_stiffness(self.h(), self.h());
        one.repeat(self.elements())
    }

    /// The operator in the local matrix approach.
    pub fn lma<T: Scalar>(&self) -> Lma<T> {
        let values: Vec<T> = self.element_matrices().into_iter().map(T::from_f64).collect();
        Lma::try_new(self.unknowns(), self.nodes_per_element(), &self.element_nodes(), &values)
            .expect("the mesh's map names interior nodes only")
    }

    /// The assembled stiffness matrix: the element matrices summed into CSR.
    pub fn csr<T: Scalar>(&self) -> CsrMatrix<T> {
        self.lma::<T>().to_csr()
    }

    /// The load vector `b_i = integral of f phi_i`, by `degree + 2` Gauss points per direction.
    pub fn load(&self) -> Vec<f64> {
        let rule = Rule::new(self.degree, self.degree + 2);
        let (m, h) = (self.nodes_per_element(), self.h());
        let nodes = self.element_nodes();
        let mut b = vec![0.0; self.unknowns()];
        for e in 0..self.elements() {
            let (x0, y0) = self.corner(e);
            for (qs, (&s, &ws)) in rule.points.iter().zip(&rule.weights).enumerate() {
                for (qt, (&t, &wt)) in rule.points.iter().zip(&rule.weights).enumerate() {
                    let f = source(x0 + s * h, y0 + t * h) * ws * wt * h * h;
                    for l in 0..m {
                        let node = nodes[e * m + l];
                        if node != NO_NODE {
                            b[node] += f * rule.phi(l, qs, qt);
                        }
                    }
                }
            }
        }
        b
    }

    /// The L2 norm of `u_h - u` over the square, `u_h` the finite element function with the
    /// interior values `solution` (0 on the boundary), by `degree + 3` Gauss points per direction.
    pub fn l2_error(&self, solution: &[f64]) -> f64 {
        assert_eq!(solution.len(), self.unknowns(), "one value per unknown");
        let rule = Rule::new(self.degree, self.degree + 3);
        let (m, h) = (self.nodes_per_element(), self.h());
        let nodes = self.element_nodes();
        let mut sum = 0.0;
        for e in 0..self.elements() {
            let (x0, y0) = self.corner(e);
            for (qs, (&s, &ws)) in rule.points.iter().zip(&rule.weights).enumerate() {
                for (qt, (&t, &wt)) in rule.points.iter().zip(&rule.weights).enumerate() {
                    let uh: f64 = (0..m)
                        .filter(|&l| nodes[e * m + l] != NO_NODE)
                        .map(|l| solution[nodes[e * m + l]] * rule.phi(l, qs, qt))
                        .sum();
                    sum += ws * wt * h * h * (uh - exact(x0 + s * h, y0 + t * h)).powi(2);
                }
            }
        }
        sum.sqrt()
    }
}

/// A Gauss rule on the reference square with the 1D basis tabulated at its points, so that the loops
/// over millions of elements evaluate no polynomial.
struct Rule {
    points: Vec<f64>,
    weights: Vec<f64>,
    /// `values[a][q]`: basis function `a` at point `q`.
    values: Vec<Vec<f64>>,
}

impl Rule {
    fn new(degree: usize, points_per_direction: usize) -> Self {
        let basis = Lagrange1d::new(degree);
        let (points, weights) = gauss_legendre(points_per_direction);
        let values = (0..basis.len()).map(|a| points.iter().map(|&t| basis.value(a, t)).collect()).collect();
        Self { points, weights, values }
    }

    /// Basis function `l` of the element (local node `(l % (k + 1), l / (k + 1))`) at point
    /// `(qs, qt)`.
    fn phi(&self, l: usize, qs: usize, qt: usize) -> f64 {
        let n1 = self.values.len();
        self.values[l % n1][qs] * self.values[l / n1][qt]
    }
}

/// The manufactured solution `x (1 - x) y (1 - y) e^(x + y)`, 0 on the boundary.
pub fn exact(x: f64, y: f64) -> f64 {
    x * (1.0 - x) * y * (1.0 - y) * (x + y).exp()
}

/// `f = -Δu` for [`exact`]: with `u = X(x) Y(y)`, `X = x (1 - x) e^x`, `X'' = -x (x + 3) e^x`.
pub fn source(x: f64, y: f64) -> f64 {
    (x + y).exp() * (x * (x + 3.0) * y * (1.0 - y) + x * (1.0 - x) * y * (y + 3.0))
}

#[cfg(test)]
mod tests;
