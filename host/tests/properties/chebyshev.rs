//! The Chebyshev preconditioner's CPU oracle (`reference::chebyshev`) on any input: refused as
//! documented and in the documented order, else `z = p(A) r` of `r`'s length; where `A` is symmetric
//! and its Gershgorin discs lie in the interval, `‖r - A z‖ ≤ ‖r‖ / T_{degree+1}(σ)` (the Chebyshev
//! bound, with room for rounding); the power iteration's radius within `A`'s 2-norm bound.

use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::chebyshev::{apply, spectral_radius};
use gpu_spmv::solve::{EigenBounds, MAX_CHEBYSHEV_DEGREE, MAX_POWER_STEPS, SolveError};
use gpu_spmv::{CsrRef, Error, Scalar};

/// The CSR arrays of a dense `nrows × ncols` matrix (row-major), its zeros left out.
pub fn dense_to_csr(nrows: usize, ncols: usize, dense: &[f64]) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
    for r in 0..nrows {
        for (c, &v) in dense[r * ncols..(r + 1) * ncols].iter().enumerate().filter(|&(_, &v)| v != 0.0) {
            cols.push(c);
            values.push(v);
        }
        offsets.push(cols.len());
    }
    (offsets, cols, values)
}

/// The interval the Gershgorin discs of `a` cover on the real line, when `a` is symmetric (so its
/// eigenvalues are real and inside it); `None` otherwise.
pub fn symmetric_gershgorin<T: Scalar>(a: CsrRef<'_, T>) -> Option<(f64, f64)> {
    let n = a.nrows();
    if a.ncols() != n {
        return None;
    }
    let mut dense = vec![0.0; n * n];
    for r in 0..n {
        let (cols, values) = a.row(r);
        for (&c, v) in cols.iter().zip(values) {
            dense[r * n + c] += v.to_f64();
        }
    }
    let symmetric = (0..n).all(|r| (0..n).all(|c| dense[r * n + c] == dense[c * n + r]));
    let discs = (0..n).map(|r| {
        let radius: f64 = (0..n).filter(|&c| c != r).map(|c| dense[r * n + c].abs()).sum();
        (dense[r * n + r] - radius, dense[r * n + r] + radius)
    });
    let (lo, hi) = discs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
    (symmetric && n > 0).then_some((lo, hi))
}

/// `apply` on any input: its documented refusal, or a `z` of the order, bounded as the module says
/// where the bound applies.
pub fn check_chebyshev<T: Scalar>(a: CsrRef<'_, T>, bounds: EigenBounds, degree: usize, r: &[T]) {
    let bounds_ok =
        bounds.min.is_finite() && bounds.max.is_finite() && bounds.min > 0.0 && bounds.max > bounds.min;
    let result = apply(&a, bounds, degree, r);
    match result {
        Err(Error::Solve(SolveError::InvalidDegree { value, limit })) => {
            assert!(degree > MAX_CHEBYSHEV_DEGREE && value == degree && limit == MAX_CHEBYSHEV_DEGREE);
        }
        Err(Error::InvalidNumber { what, value, .. }) => {
            assert!(degree <= MAX_CHEBYSHEV_DEGREE);
            // A valid interval is refused only for a constant that `T` cannot hold.
            let unrepresentable = what == "a Chebyshev constant" && !T::from_f64(value).to_f64().is_finite();
            assert!(!bounds_ok || unrepresentable, "{bounds:?}: {what} {value}");
        }
        Err(Error::Solve(SolveError::NotSquare { .. })) => {
            assert!(degree <= MAX_CHEBYSHEV_DEGREE && bounds_ok && a.nrows() != a.ncols());
        }
        Err(Error::DimensionMismatch { what: "r", expected, got }) => {
            assert!(degree <= MAX_CHEBYSHEV_DEGREE && bounds_ok && a.nrows() == a.ncols());
            assert!(expected == a.nrows() && got == r.len() && got != expected);
        }
        Err(e) => panic!("unexpected refusal: {e}"),
        Ok(z) => {
            assert!(
                degree <= MAX_CHEBYSHEV_DEGREE && bounds_ok && a.nrows() == a.ncols() && r.len() == a.nrows()
            );
            assert_eq!(z.len(), r.len());
            let inside = symmetric_gershgorin(a).is_some_and(|(lo, hi)| bounds.min <= lo && hi <= bounds.max);
            let finite = r.iter().chain(a.values()).all(|v| v.to_f64().is_finite());
            if inside && finite {
                let mut az = vec![T::ZERO; z.len()];
                a.apply(&z, &mut az).unwrap();
                let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
                let left = norm(&mut r.iter().zip(&az).map(|(r, az)| r.to_f64() - az.to_f64()));
                let right = norm(&mut r.iter().map(|r| r.to_f64()));
                let sigma = (bounds.max + bounds.min) / (bounds.max - bounds.min);
                let bound = 1.0 / ((degree + 1) as f64 * sigma.acosh()).cosh();
                // Each step's rounding, amplified at most by the steps' coefficients.
                let slack = 1e3 * (degree + 1) as f64 * T::EPSILON * (1.0 + bounds.max / bounds.min);
                // `r = 0` gives `z = 0` exactly, whatever the slack.
                let allowed = if right == 0.0 { 0.0 } else { (bound + slack) * right };
                assert!(left <= allowed, "{left} > ({bound} + {slack}) {right}, degree {degree}");
            }
        }
    }
}

/// `spectral_radius` on any input: its documented refusal, or a radius at most `A`'s 2-norm bound
/// `√(‖A‖₁ ‖A‖∞)`.
pub fn check_spectral_radius<T: Scalar>(a: CsrRef<'_, T>, steps: usize) {
    match spectral_radius(&a, steps) {
        Err(Error::Solve(SolveError::InvalidPowerSteps { value, .. })) => {
            assert!(value == steps && !(1..=MAX_POWER_STEPS).contains(&steps));
        }
        Err(Error::Solve(SolveError::NotSquare { .. })) => {
            assert!((1..=MAX_POWER_STEPS).contains(&steps) && a.nrows() != a.ncols());
        }
        Err(Error::InvalidNumber { value, .. }) => {
            assert!((1..=MAX_POWER_STEPS).contains(&steps) && a.nrows() == a.ncols());
            assert!(value == 0.0 || !value.is_finite());
        }
        Err(e) => panic!("unexpected refusal: {e}"),
        Ok(radius) => {
            let mut rows = vec![0.0; a.nrows()];
            let mut cols = vec![0.0; a.ncols()];
            for (r, sum) in rows.iter_mut().enumerate() {
                let (c, v) = a.row(r);
                for (&c, v) in c.iter().zip(v) {
                    *sum += v.to_f64().abs();
                    cols[c] += v.to_f64().abs();
                }
            }
            let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
            let bound = (max(&rows) * max(&cols)).sqrt();
            assert!(radius > 0.0 && radius <= bound * (1.0 + 1e-6) + 1e-30, "{radius} > {bound}");
        }
    }
}
