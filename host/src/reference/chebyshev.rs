//! The Chebyshev polynomial preconditioner's CPU oracle: its apply, `z = p(A) r`, in the element
//! type and in the order of the GPU's launches ([`crate::solve::Chebyshev`]), and the power
//! iteration that estimates the spectral radius its interval is built from.

use super::operator::axpy;
use super::{CpuPrecondition, LinearOperator};
use crate::iterative::{ChebyshevSteps, EigenBounds, power, square_order};
use crate::scalar::Scalar;
use crate::{Error, Result};

/// `z = p(A) r`: `degree` steps of the Chebyshev iteration for `A z = r` from `z = 0` on the interval
/// `bounds` (Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed., Algorithm 12.1), so `p`
/// is the polynomial of degree `degree` for which `1 - λ p(λ)` is smallest on the interval. Each
/// step is one product and four elementwise passes, each rounded as the GPU's `krylov_vector`
/// rounds it (a scaling, or a fused multiply-add).
///
/// Refused, in this order: a degree past [`MAX_CHEBYSHEV_DEGREE`](crate::solve::MAX_CHEBYSHEV_DEGREE)
/// ([`SolveError::InvalidDegree`](crate::solve::SolveError::InvalidDegree)), an interval that is not `0 < min < max` with both ends finite,
/// or whose constants are not finite in `T` ([`Error::InvalidNumber`]), an operator that is not square ([`SolveError::NotSquare`](crate::solve::SolveError::NotSquare)), `r` of
/// another length than its order ([`Error::DimensionMismatch`]).
pub fn apply<T: Scalar>(
    a: &impl LinearOperator<T>,
    bounds: EigenBounds,
    degree: usize,
    r: &[T],
) -> Result<Vec<T>> {
    let steps = ChebyshevSteps::new::<T>(bounds, degree)?;
    let n = square_order(a.nrows(), a.ncols())?;
    if r.len() != n {
        return Err(Error::DimensionMismatch { what: "r", expected: n, got: r.len() });
    }
    let first = T::from_f64(steps.first);
    let mut z: Vec<T> = r.iter().map(|&v| first * v).collect();
    if steps.steps.is_empty() {
        return Ok(z);
    }
    let mut d = z.clone();
    let (mut w, mut res) = (vec![T::ZERO; n], r.to_vec());
    for &(keep, add) in &steps.steps {
        a.apply(&d, &mut w)?;
        axpy(T::from_f64(-1.0), &w, &mut res);
        let keep = T::from_f64(keep);
        d.iter_mut().for_each(|d| *d = keep * *d);
        axpy(T::from_f64(add), &res, &mut d);
        axpy(T::from_f64(1.0), &d, &mut z);
    }
    Ok(z)
}

/// The Chebyshev preconditioner as a [`CpuPrecondition`] of the CPU solvers: [`apply`] with `a`,
/// `bounds` and `degree`, the oracle of `solve::Chebyshev` given to a solver's
/// `with_preconditioner`.
#[derive(Debug, Clone, Copy)]
pub struct Polynomial<'a, A> {
    pub a: &'a A,
    pub bounds: EigenBounds,
    pub degree: usize,
}

impl<T: Scalar, A: LinearOperator<T>> CpuPrecondition<T> for Polynomial<'_, A> {
    fn order(&self) -> usize {
        self.a.nrows()
    }

    /// Refused as [`apply`] refuses, and for `z` of another length than `r`.
    fn apply(&self, r: &[T], z: &mut [T]) -> Result<()> {
        super::check_lengths(r.len(), r, z)?;
        z.copy_from_slice(&apply(self.a, self.bounds, self.degree, r)?);
        Ok(())
    }
}

/// An estimate of the spectral radius of `A`, `‖A v‖` after `steps` steps of the power iteration
/// `v ← A v / ‖A v‖` (norms in f64, each `v` rounded to `T`) from the start the GPU's estimate
/// starts from. For a symmetric `A` it approaches the largest eigenvalue's modulus from below as the
/// steps grow; for another it lies between the spectral radius's neighbourhood and `‖A‖₂`.
/// [`EigenBounds::from_radius`] widens it. Refused: no steps, or more than
/// [`MAX_POWER_STEPS`](crate::solve::MAX_POWER_STEPS) ([`SolveError::InvalidPowerSteps`](crate::solve::SolveError::InvalidPowerSteps)), an
/// operator that is not square ([`SolveError::NotSquare`](crate::solve::SolveError::NotSquare)), and a product that vanishes or is not
/// finite ([`Error::InvalidNumber`]: `A v = 0`, an operator without rows included).
pub fn spectral_radius<T: Scalar>(a: &impl LinearOperator<T>, steps: usize) -> Result<f64> {
    ChebyshevSteps::check_power_steps(steps)?;
    let n = square_order(a.nrows(), a.ncols())?;
    let mut v: Vec<T> = power::start(n);
    let mut w = vec![T::ZERO; n];
    let mut radius = 0.0;
    for _ in 0..steps {
        a.apply(&v, &mut w)?;
        (radius, v) = power::step(&w)?;
    }
    Ok(radius)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::csr::CsrRef;
    use crate::iterative::SolveError;
    use crate::reference::problems::convection_diffusion;

    fn norm(v: &[f64]) -> f64 {
        v.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    /// `‖r - A p(A) r‖ / ‖r‖` for the 2-D Laplacian.
    fn reduction(degree: usize, bounds: EigenBounds) -> f64 {
        let a = convection_diffusion::<f64>(20, 20, 0.0).unwrap();
        let a = CsrRef::from(&a);
        let r: Vec<f64> = (0..400).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
        let z = apply(&a, bounds, degree, &r).unwrap();
        let mut az = vec![0.0; 400];
        a.apply(&z, &mut az).unwrap();
        norm(&r.iter().zip(&az).map(|(r, az)| r - az).collect::<Vec<_>>()) / norm(&r)
    }

    /// For a symmetric `A` with its spectrum in the interval, `r - A p(A) r` is
    /// `T_m((θ - A) / δ) r / T_m(σ)` with `m = degree + 1`, so its norm is at most `1 / T_m(σ)`.
    #[test]
    fn on_an_interval_holding_the_spectrum_the_residual_falls_under_the_chebyshev_bound() {
        // The 5-point Laplacian's eigenvalues lie in (0, 8), its smallest 8 sin²(π / 42) > 0.022.
        let bounds = EigenBounds { min: 0.022, max: 8.0 };
        let sigma = (bounds.max + bounds.min) / (bounds.max - bounds.min);
        for degree in [0, 1, 2, 4, 8, 16, 32, 64] {
            let bound = 1.0 / ((degree + 1) as f64 * sigma.acosh()).cosh();
            let got = reduction(degree, bounds);
            assert!(got <= bound * (1.0 + 1e-9) + 1e-13, "degree {degree}: {got} > {bound}");
        }
    }

    /// For any `A`, `r - A p(A) r = T_m(B) r / T_m(σ)` with `B = (θ I - A) / δ` and `m = degree + 1`:
    /// the residual polynomial of the Chebyshev iteration, checked on a nonsymmetric matrix by the
    /// three-term recurrence `T_{k+1}(B) r = 2 B T_k(B) r - T_{k-1}(B) r` in f64.
    #[test]
    fn the_residual_is_the_chebyshev_polynomial_of_a_for_a_nonsymmetric_matrix() {
        let a = convection_diffusion::<f64>(12, 9, 50.0).unwrap();
        let a = CsrRef::from(&a);
        let n = a.nrows();
        // Gershgorin's discs of this matrix reach about 14 on the real line.
        let bounds = EigenBounds { min: 0.5, max: 16.0 };
        let (theta, delta) = ((bounds.max + bounds.min) / 2.0, (bounds.max - bounds.min) / 2.0);
        let sigma = theta / delta;
        let r: Vec<f64> = (0..n).map(|i| ((i * 13) % 17) as f64 - 8.0).collect();
        let b_of = |v: &[f64]| {
            let mut av = vec![0.0; n];
            a.apply(v, &mut av).unwrap();
            v.iter().zip(&av).map(|(v, av)| (theta * v - av) / delta).collect::<Vec<_>>()
        };
        for degree in [0, 1, 3, 8] {
            let m = degree + 1;
            let (mut previous, mut current) = (r.clone(), b_of(&r));
            for _ in 1..m {
                let next: Vec<f64> =
                    b_of(&current).iter().zip(&previous).map(|(bc, p)| 2.0 * bc - p).collect();
                (previous, current) = (current, next);
            }
            let t_m = (m as f64 * sigma.acosh()).cosh();
            let z = apply(&a, bounds, degree, &r).unwrap();
            let mut az = vec![0.0; n];
            a.apply(&z, &mut az).unwrap();
            let scale = norm(&r);
            for i in 0..n {
                let (got, want) = (r[i] - az[i], current[i] / t_m);
                assert!(
                    (got - want).abs() <= 1e-11 * scale,
                    "degree {degree}, row {i}: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn degree_zero_is_the_scaled_identity_and_a_multiple_of_the_identity_is_inverted() {
        let a = CsrRef::try_new(3, 3, &[0, 1, 2, 3], &[0, 1, 2], &[4.0f64, 4.0, 4.0]).unwrap();
        let bounds = EigenBounds { min: 2.0, max: 6.0 };
        assert_eq!(apply(&a, bounds, 0, &[4.0, 8.0, -4.0]).unwrap(), [1.0, 2.0, -1.0]);
        // 4 is the interval's centre θ, where the residual polynomial T_m((θ - λ) / δ) / T_m(σ)
        // vanishes for odd m = degree + 1.
        let z = apply(&a, bounds, 4, &[4.0, 8.0, -4.0]).unwrap();
        assert!(z.iter().zip([1.0, 2.0, -1.0]).all(|(z, e)| (z - e).abs() < 1e-12), "{z:?}");
    }

    #[test]
    fn the_power_iteration_finds_the_laplacians_top_from_below() {
        let a = convection_diffusion::<f64>(20, 20, 0.0).unwrap();
        let a = CsrRef::from(&a);
        let top = 8.0 * (20.0 * std::f64::consts::PI / 42.0).sin().powi(2);
        let radius = spectral_radius(&a, 30).unwrap();
        assert!(radius <= top * (1.0 + 1e-12) && radius > 0.9 * top, "{radius} against {top}");
        let bounds = EigenBounds::from_radius(radius, 30.0).unwrap();
        assert!(bounds.max > top && (bounds.max / bounds.min - 30.0).abs() < 1e-9, "{bounds:?}");
    }

    #[test]
    fn refusals_name_their_cause_in_order() {
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0f32, 1.0]).unwrap();
        let ok = EigenBounds { min: 0.5, max: 2.0 };
        let refuse = |bounds, degree, r: &[f32]| apply(&a, bounds, degree, r).unwrap_err();
        assert!(matches!(
            refuse(EigenBounds { min: -1.0, max: 1.0 }, 65, &[1.0]),
            Error::Solve(SolveError::InvalidDegree { value: 65, .. })
        ));
        for (min, max) in [(0.0, 1.0), (2.0, 1.0), (f64::NAN, 1.0), (1.0, f64::INFINITY), (1.0, 1.0)] {
            let e = refuse(EigenBounds { min, max }, 3, &[1.0, 1.0]);
            assert!(matches!(e, Error::InvalidNumber { .. }), "{min} {max}: {e}");
        }
        assert!(matches!(refuse(ok, 3, &[1.0]), Error::DimensionMismatch { what: "r", expected: 2, got: 1 }));
        let wide = CsrRef::try_new(1, 2, &[0, 1], &[1], &[1.0f32]).unwrap();
        assert!(matches!(apply(&wide, ok, 1, &[1.0]), Err(Error::Solve(SolveError::NotSquare { .. }))));
        assert!(matches!(spectral_radius(&a, 0), Err(Error::Solve(SolveError::InvalidPowerSteps { .. }))));
        let zero = CsrRef::try_new(2, 2, &[0, 0, 0], &[], &[] as &[f32]).unwrap();
        assert!(matches!(spectral_radius(&zero, 3), Err(Error::InvalidNumber { .. })));
    }

    /// As the CPU solvers' preconditioner: BiCGSTAB on the Poisson matrix converges in fewer
    /// iterations with the polynomial of degree 4 than without one.
    #[test]
    fn a_polynomial_preconditions_the_cpu_solvers() {
        use crate::iterative::{Preconditioner, SolverOptions, Stop};
        use crate::reference::bicgstab::{bicgstab, bicgstab_with_preconditioner};
        let matrix = convection_diffusion::<f64>(30, 30, 0.0).unwrap();
        let a = CsrRef::from(&matrix);
        let b: Vec<f64> = (0..a.nrows()).map(|i| 1.0 + (i % 3) as f64).collect();
        let options =
            SolverOptions { rel_tol: 1e-10, max_iterations: 2000, preconditioner: Preconditioner::None };
        let bounds = EigenBounds::from_radius(spectral_radius(&a, 20).unwrap(), 30.0).unwrap();
        let polynomial = Polynomial { a: &a, bounds, degree: 4 };
        let (mut x, mut y) = (vec![0.0; a.nrows()], vec![0.0; a.nrows()]);
        let plain = bicgstab(&a, &b, &mut x, &options).unwrap();
        let out = bicgstab_with_preconditioner(&a, &b, &mut y, &options, &polynomial).unwrap();
        assert_eq!(out.stop, Stop::Converged, "{out:?}");
        assert!(out.iterations < plain.iterations, "{out:?} against {plain:?}");
        let mut z = vec![0.0; 3];
        assert!(matches!(
            CpuPrecondition::apply(&polynomial, &b, &mut z),
            Err(Error::DimensionMismatch { what: "z", .. })
        ));
    }
}
