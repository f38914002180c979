//! Gauss–Legendre quadrature and the Lagrange basis on equispaced nodes, on the reference interval
//! [0, 1]: the one-dimensional factors of the tensor-product elements.

use std::f64::consts::PI;

/// The `n`-point Gauss–Legendre rule on [0, 1]: points and weights, exact for polynomials of degree
/// up to `2n - 1`. The points are the roots of the Legendre polynomial `P_n`, found by Newton's method
/// from the asymptotic guesses `cos(pi (i + 3/4) / (n + 1/2))` (Abramowitz & Stegun 22.16.6), the
/// weights `2 / ((1 - t^2) P_n'(t)^2)` (A&S 25.4.29), both mapped from [-1, 1].
pub fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    assert!(n >= 1, "a quadrature rule needs a point");
    let (mut points, mut weights) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let mut t = (PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        // Newton converges quadratically from these guesses; the bound only guards the loop.
        for _ in 0..100 {
            let (p, dp) = legendre(n, t);
            let step = p / dp;
            t -= step;
            if step.abs() <= 1e-16 {
                break;
            }
        }
        let (_, dp) = legendre(n, t);
        points.push((1.0 + t) / 2.0);
        weights.push(1.0 / ((1.0 - t * t) * dp * dp));
    }
    (points, weights)
}

/// `P_n(t)` and `P_n'(t)` for `n >= 1` and `|t| < 1`, by Bonnet's recurrence `(j + 1) P_{j+1} = (2j + 1) t P_j - j P_{j-1}`.
fn legendre(n: usize, t: f64) -> (f64, f64) {
    let (mut prev, mut p) = (1.0, t);
    for j in 1..n {
        let j = j as f64;
        (prev, p) = (p, ((2.0 * j + 1.0) * t * p - j * prev) / (j + 1.0));
    }
    (p, n as f64 * (t * p - prev) / (t * t - 1.0))
}

/// The Lagrange basis of degree `degree` on the equispaced nodes `a / degree` of [0, 1]: basis function
/// `a` is 1 at node `a` and 0 at the others.
#[derive(Debug, Clone)]
pub struct Lagrange1d {
    nodes: Vec<f64>,
}

impl Lagrange1d {
    pub fn new(degree: usize) -> Self {
        assert!(degree >= 1, "Lagrange elements start at degree 1");
        Self { nodes: (0..=degree).map(|a| a as f64 / degree as f64).collect() }
    }

    /// Basis functions: `degree + 1`.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never empty (degree >= 1); here for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// `phi_a(t)`.
    pub fn value(&self, a: usize, t: f64) -> f64 {
        let ta = self.nodes[a];
        self.nodes.iter().enumerate().filter(|&(b, _)| b != a).map(|(_, &tb)| (t - tb) / (ta - tb)).product()
    }

    /// `phi_a'(t)`: the product rule over the factors of `phi_a`.
    pub fn derivative(&self, a: usize, t: f64) -> f64 {
        let ta = self.nodes[a];
        let mut sum = 0.0;
        for (c, &tc) in self.nodes.iter().enumerate().filter(|&(c, _)| c != a) {
            let rest: f64 = self
                .nodes
                .iter()
                .enumerate()
                .filter(|&(b, _)| b != a && b != c)
                .map(|(_, &tb)| (t - tb) / (ta - tb))
                .product();
            sum += rest / (ta - tc);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_rules_are_exact_to_degree_2n_minus_1() {
        for n in 1..=8 {
            let (points, weights) = gauss_legendre(n);
            for degree in 0..2 * n {
                let q: f64 = points.iter().zip(&weights).map(|(&t, &w)| w * t.powi(degree as i32)).sum();
                let exact = 1.0 / (degree as f64 + 1.0);
                assert!((q - exact).abs() < 1e-14, "n {n}, degree {degree}: {q} vs {exact}");
            }
            // ... and not beyond (t^2n is where the rule first errs).
            let q: f64 = points.iter().zip(&weights).map(|(&t, &w)| w * t.powi(2 * n as i32)).sum();
            assert!((q - 1.0 / (2.0 * n as f64 + 1.0)).abs() > 1e-10, "n {n}");
        }
    }

    #[test]
    fn lagrange_basis_interpolates_and_differentiates() {
        for degree in 1..=4 {
            let basis = Lagrange1d::new(degree);
            for a in 0..basis.len() {
                for b in 0..basis.len() {
                    let expected = if a == b { 1.0 } else { 0.0 };
                    assert!((basis.value(a, b as f64 / degree as f64) - expected).abs() < 1e-13);
                }
            }
            // The basis reproduces t^degree, and its derivatives degree * t^(degree - 1).
            let t = 0.37;
            let (mut f, mut df) = (0.0, 0.0);
            for a in 0..basis.len() {
                let ta = a as f64 / degree as f64;
                f += ta.powi(degree as i32) * basis.value(a, t);
                df += ta.powi(degree as i32) * basis.derivative(a, t);
            }
            assert!((f - t.powi(degree as i32)).abs() < 1e-13, "degree {degree}");
            assert!((df - degree as f64 * t.powi(degree as i32 - 1)).abs() < 1e-12, "degree {degree}");
        }
    }
}
