//! BiCGSTAB on the CPU (van der Vorst 1992; right-preconditioned as in Saad, "Iterative Methods for
//! Sparse Linear Systems", 2nd ed., algorithm 7.7 with `M⁻¹` applied to `p` and `s`): the oracle of
//! the GPU solver, which follows this recurrence step for step.
//!
//! As in [`super::cg`]: every scalar in `T`, dot products summed in f64 and rounded to `T`, the
//! updates fused (`x = fma(alpha, p̂, x)`, `r = fma(-omega, t, s)`, ...), `M⁻¹` Jacobi's inverse
//! diagonal rounded to `T` or the identity, and the residual the recurrence carries, not a
//! recomputed `b - A x`. Preconditioning on the right leaves that residual the true one in exact
//! arithmetic, so the tolerance means the same with and without Jacobi.
//!
//! In floating point the carried residual drifts from `b - A x`, far when the iterates grew large
//! on the way (convection-dominated problems: a carried `1e-10` over a true `1e22` was measured).
//! So a convergence of the recurrence is only a reason to look: the solve restarts from its
//! iterate, with `r = b - A x` and the shadow residual `r̂ = r`, and stops there, converged, if that
//! true residual meets the tolerance; otherwise the recurrence goes on from the restart, counting on
//! toward the same limit. Every start needs an iteration before the recurrence can converge again,
//! so the restarts end. (Sleijpen & van der Vorst 1996 replace the carried residual by the true one
//! periodically instead, a cost every solve pays; this check costs a product per convergence.)
//!
//! An iteration is one pass of the loop, two products. It may stop half-way, at `s`, when the first
//! half-step already meets the tolerance. Two tests keep NaN out of the outcome: the first `rᵀr`
//! is tested for NaN and infinities before convergence (an infinite `b` would make the tolerance
//! infinite too), and the test of `r̂ᵀr` comes before the iteration limit, so that a NaN or infinity
//! born in the last iteration is a breakdown, never an outcome with a NaN residual.

use super::{
    CpuPrecondition, DiagonalNeed, LinearOperator, Precondition, axpy, check_system, dot, finite, negative,
    quotient, residual,
};
use crate::Result;
use crate::iterative::why::{NO_PROGRESS, NOT_FINITE, SHADOW_ORTHOGONAL, SHADOW_ORTHOGONAL_TO_V, SINGULAR};
use crate::iterative::{Outcome, SolveError, SolverOptions, Stop, relative_residual};
use crate::scalar::Scalar;

/// Solves `A x = b` by BiCGSTAB from the initial guess in `x`, overwriting it with the last iterate.
/// It reports convergence only of a true residual `b - A x` (see the module doc), and its
/// `relative_residual` is then that residual's.
///
/// Refused, with `x` untouched, in this order: options out of their ranges ([`SolverOptions`]), a
/// matrix that is not square ([`SolveError::NotSquare`]), vectors of the wrong length
/// ([`crate::Error::DimensionMismatch`]), and for Jacobi a diagonal entry that is zero or not finite
/// ([`SolveError::SingularDiagonal`]). A breakdown ([`SolveError::Breakdown`]: the first `rᵀr` not
/// finite, or `r̂ᵀr`, `r̂ᵀv`, `tᵀt` or `ω` zero or not finite; its `why` says which cause) leaves in `x` the last iterate the
/// recurrence made.
///
/// On a singular operator it stops at the iteration limit when `b` lies in the range of `A` but the
/// tolerance is not met, and otherwise, once the residual stops shrinking, with one of these
/// breakdowns (`tᵀt` when `A M⁻¹ s` is exactly 0); it never panics or loops past the limit.
pub fn bicgstab<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
) -> Result<Outcome> {
    bicgstab_impl(a, b, x, options, None)
}

/// [`bicgstab`] right-preconditioned by the caller's `m` (ILU(0), block-Jacobi), the oracle of
/// `solve::Bicgstab::with_preconditioner`. Refused as [`bicgstab`] refuses, and, with `x`
/// untouched, for `options.preconditioner` other than `None` ([`crate::Error::Unsupported`]) and
/// for `m` of another order ([`crate::Error::DimensionMismatch`], "the preconditioner").
pub fn bicgstab_with_preconditioner<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    m: &dyn CpuPrecondition<T>,
) -> Result<Outcome> {
    bicgstab_impl(a, b, x, options, Some(m))
}

/// [`bicgstab`] with Jacobi from the options or the caller's `custom` preconditioner.
fn bicgstab_impl<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    custom: Option<&dyn CpuPrecondition<T>>,
) -> Result<Outcome> {
    options.check()?;
    let n = check_system(a, b, x)?;
    let precondition = Precondition::new(a, options.preconditioner, custom, DiagonalNeed::NonZero)?;

    let bb = dot(b, b);
    let tol_rr = T::from_f64(options.rel_tol) * T::from_f64(options.rel_tol) * bb;
    let outcome = |iterations, rr: T, stop| Outcome {
        iterations,
        relative_residual: relative_residual(rr.to_f64(), bb.to_f64()),
        stop,
    };
    let breakdown = |iteration, what, value: T, zero_why| {
        let why = if finite(value) { zero_why } else { NOT_FINITE };
        Err(SolveError::Breakdown { iteration, what, value: value.to_f64(), why }.into())
    };
    let one = T::from_f64(1.0);
    let max = options.max_iterations;
    let [mut r, mut shadow, mut p, mut v, mut p_hat, mut s, mut s_hat, mut t] =
        std::array::from_fn(|_| vec![T::ZERO; n]);
    // Iterations done before the current (re)start.
    let mut done = 0;
    'start: loop {
        residual(a, b, x, &mut r)?;
        shadow.copy_from_slice(&r);
        let mut rho = dot(&shadow, &r);
        let mut rr = dot(&r, &r);
        // Before the test of convergence: an infinite `b` makes the tolerance infinite too.
        if !finite(rr) {
            return breakdown(done, "rᵀr", rr, NOT_FINITE);
        }
        if rr <= tol_rr {
            return Ok(outcome(done, rr, Stop::Converged));
        }
        let (mut alpha, mut omega, mut rho_prev) = (one, one, one);
        p.fill(T::ZERO);
        v.fill(T::ZERO);
        let first = done;
        for iteration in first..=max {
            if rho == T::ZERO || !finite(rho) {
                return breakdown(iteration, "r̂ᵀr", rho, SHADOW_ORTHOGONAL);
            }
            if iteration == max {
                break;
            }
            let beta = quotient(rho, rho_prev) * quotient(alpha, omega);
            let minus_omega = negative(omega);
            p.iter_mut()
                .zip(&v)
                .zip(&r)
                .for_each(|((p, &v), &r)| *p = beta.mul_add(minus_omega.mul_add(v, *p), r));
            precondition.apply(&p, &mut p_hat)?;
            a.apply(&p_hat, &mut v)?;
            let rv = dot(&shadow, &v);
            if rv == T::ZERO || !finite(rv) {
                return breakdown(iteration, "r̂ᵀv", rv, SHADOW_ORTHOGONAL_TO_V);
            }
            alpha = quotient(rho, rv);
            s.copy_from_slice(&r);
            axpy(negative(alpha), &v, &mut s);
            axpy(alpha, &p_hat, x);
            // The recurrence's word is checked against the true residual, at the restart.
            if dot(&s, &s) <= tol_rr {
                done = iteration + 1;
                continue 'start;
            }
            precondition.apply(&s, &mut s_hat)?;
            a.apply(&s_hat, &mut t)?;
            let ts = dot(&t, &s);
            let tt = dot(&t, &t);
            if tt == T::ZERO || !finite(tt) {
                return breakdown(iteration, "tᵀt", tt, SINGULAR);
            }
            omega = quotient(ts, tt);
            if omega == T::ZERO || !finite(omega) {
                return breakdown(iteration, "ω", omega, NO_PROGRESS);
            }
            axpy(omega, &s_hat, x);
            let minus_omega = negative(omega);
            r.iter_mut().zip(&t).zip(&s).for_each(|((r, &t), &s)| *r = minus_omega.mul_add(t, s));
            rho_prev = rho;
            rho = dot(&shadow, &r);
            rr = dot(&r, &r);
            if rr <= tol_rr {
                done = iteration + 1;
                continue 'start;
            }
        }
        return Ok(outcome(max, rr, Stop::MaxIterations));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::formats::csr::CsrRef;
    use crate::iterative::Preconditioner;
    use crate::reference::solver_checks::{
        check_agrees_with_cg, check_callers_preconditioner, check_convection_diffusion, check_refusals,
        seeded, true_residual,
    };
    use rand::Rng;

    fn options(max_iterations: usize) -> SolverOptions {
        SolverOptions { rel_tol: 1e-10, max_iterations, preconditioner: Preconditioner::None }
    }

    /// The breakdown of solving `a x = b` from `x = 0`, as (iteration, what, value, why).
    fn breakdown(
        a: CsrRef<'_, f64>,
        b: &[f64],
        max_iterations: usize,
    ) -> (usize, &'static str, f64, &'static str) {
        let mut x = vec![0.0; b.len()];
        match bicgstab(&a, b, &mut x, &options(max_iterations)) {
            Err(Error::Solve(SolveError::Breakdown { iteration, what, value, why })) => {
                (iteration, what, value, why)
            }
            other => panic!("not a breakdown: {other:?}"),
        }
    }

    #[test]
    fn converges_on_convection_diffusion() {
        let mut rng = seeded("bicgstab converges_on_convection_diffusion");
        let f64_counts = check_convection_diffusion::<f64>(
            &mut rng,
            16,
            |_| true,
            1e-10,
            2000,
            |a, b, x, o| bicgstab(&a, b, x, o),
        );
        let f32_counts = check_convection_diffusion::<f32>(
            &mut rng,
            16,
            |_| true,
            1e-4,
            2000,
            |a, b, x, o| bicgstab(&a, b, x, o),
        );
        eprintln!("iterations: f64 {f64_counts:?}, f32 {f32_counts:?}");
    }

    #[test]
    fn agrees_with_cg_on_an_spd_system() {
        check_agrees_with_cg(&mut seeded("bicgstab agrees_with_cg_on_an_spd_system"), |a, b, x, o| {
            bicgstab(&a, b, x, o)
        });
    }

    #[test]
    fn refuses_in_order_and_leaves_x() {
        check_refusals(|a, b, x, o| bicgstab(&a, b, x, o));
    }

    #[test]
    fn breaks_down_where_the_recurrence_cannot_go_on() {
        // Skew-symmetric: r̂ᵀA r̂ = 0 at once.
        let skew = CsrRef::try_new(2, 2, &[0, 1, 2], &[1, 0], &[1.0, -1.0]).unwrap();
        assert_eq!(breakdown(skew, &[1.0, 1.0], 10), (0, "r̂ᵀv", 0.0, SHADOW_ORTHOGONAL_TO_V));
        // r̂ = e1 and a first row orthogonal to the rest of the first column: r1 ⟂ r̂ after one
        // iteration (r1 = (0, -3/13, 2/13)).
        let o = [0, 3, 5, 7];
        let a =
            CsrRef::try_new(3, 3, &o, &[0, 1, 2, 0, 1, 0, 2], &[1.0, 1.0, -1.0, 1.0, 2.0, 1.0, 3.0]).unwrap();
        assert_eq!(breakdown(a, &[1.0, 0.0, 0.0], 10), (1, "r̂ᵀr", 0.0, SHADOW_ORTHOGONAL));
        // The test of r̂ᵀr comes before the limit: a solve of one iteration reports it too.
        assert_eq!(breakdown(a, &[1.0, 0.0, 0.0], 1), (1, "r̂ᵀr", 0.0, SHADOW_ORTHOGONAL));
        // A skew-symmetric lower block: s = (0, -1, -1) and t = A s = (0, -1, 1) are orthogonal.
        let a = CsrRef::try_new(3, 3, &[0, 1, 3, 5], &[0, 0, 2, 0, 1], &[1.0, 1.0, 1.0, 1.0, -1.0]).unwrap();
        assert_eq!(breakdown(a, &[1.0, 0.0, 0.0], 10), (0, "ω", 0.0, NO_PROGRESS));
    }

    #[test]
    fn a_singular_operator_breaks_down_or_stops_at_the_limit() {
        // Range span(e1), b = (1, 1) outside it: s = (-1, 1) is in the null space.
        let a = CsrRef::try_new(2, 2, &[0, 2, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        assert_eq!(breakdown(a, &[1.0, 1.0], 10), (0, "tᵀt", 0.0, SINGULAR));
        // b = (1, 0) in the range: solved in one half-step.
        let mut x = [0.0; 2];
        let out = bicgstab(&a, &[1.0, 0.0], &mut x, &options(10)).unwrap();
        assert_eq!((out.iterations, out.stop), (1, Stop::Converged));
        // diag(1, 0) with b = e1 + 1e-3 e2 outside the range: the residual stays at 1e-3 |b|.
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 0.0]).unwrap();
        let mut x = [0.0; 2];
        match bicgstab(&a, &[1.0, 1e-3], &mut x, &options(50)) {
            Ok(out) => assert_eq!((out.iterations, out.stop), (50, Stop::MaxIterations)),
            Err(e) => assert!(matches!(e, Error::Solve(SolveError::Breakdown { .. })), "{e}"),
        }
    }

    #[test]
    fn nan_and_infinity_break_down_never_reach_the_outcome() {
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[2.0, 3.0]).unwrap();
        for (b, limit) in [([f64::NAN, 1.0], 10), ([f64::INFINITY, 1.0], 10), ([f64::NAN, 1.0], 0)] {
            let (iteration, what, value, why) = breakdown(a, &b, limit);
            assert_eq!((iteration, what, why), (0, "rᵀr", NOT_FINITE), "{b:?}");
            assert!(!value.is_finite());
        }
        let nan = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[2.0, f64::NAN]).unwrap();
        assert_eq!(breakdown(nan, &[1.0, 1.0], 10).1, "rᵀr");
    }

    #[test]
    fn b_zero_takes_no_iteration_and_the_limit_stops_the_solve() {
        let a = CsrRef::try_new(2, 2, &[0, 2, 3], &[0, 1, 1], &[2.0, 1.0, 3.0]).unwrap();
        let out = bicgstab(&a, &[0.0; 2], &mut [0.0; 2], &options(10)).unwrap();
        assert_eq!((out.iterations, out.stop, out.relative_residual), (0, Stop::Converged, 0.0));
        let m = crate::reference::problems::convection_diffusion::<f64>(10, 10, 50.0).unwrap();
        let (o, c, v) = m.csr_data();
        let a = CsrRef::try_new(100, 100, o, c, v).unwrap();
        let out = bicgstab(&a, &[1.0; 100], &mut [0.0; 100], &options(3)).unwrap();
        assert_eq!((out.iterations, out.stop), (3, Stop::MaxIterations));
        assert!(out.relative_residual > 1e-3, "{out:?}");
    }

    #[test]
    fn converges_only_on_the_true_residual() {
        // In f32 the carried residual goes on shrinking below what `b - A x` can reach (about
        // 1e-7 here): at 1e-8 every solve must run to the limit rather than claim convergence.
        let mut rng = seeded("bicgstab converges_only_on_the_true_residual");
        for (nx, pe) in [(8, 0.0), (16, 0.0), (16, 1000.0)] {
            let m = crate::reference::problems::convection_diffusion::<f32>(nx, nx, pe).unwrap();
            let (o, c, v) = m.csr_data();
            let a = CsrRef::try_new(m.nrows(), m.ncols(), o, c, v).unwrap();
            let b: Vec<f32> = (0..a.nrows()).map(|_| rng.random_range(-1.0..1.0)).collect();
            for (rel_tol, attainable) in [(1e-6, true), (1e-8, false)] {
                let options =
                    SolverOptions { rel_tol, max_iterations: 400, preconditioner: Preconditioner::Jacobi };
                let mut x = vec![0.0; a.nrows()];
                let out = bicgstab(&a, &b, &mut x, &options).unwrap();
                let what = format!("nx {nx} Pe {pe} tol {rel_tol:e}: {out:?}");
                assert_eq!(out.stop == Stop::Converged, attainable, "{what}");
                if attainable {
                    // The outcome's residual is the f32 `b - A x` it stopped on; in f64 it differs
                    // by rounding only.
                    assert!(out.relative_residual <= rel_tol, "{what}");
                    assert!(true_residual(a, &b, &x) <= 1.5 * rel_tol, "{what}");
                }
            }
        }
    }

    #[test]
    fn a_callers_preconditioner() {
        check_callers_preconditioner(
            |a, b, x, o| bicgstab(&a, b, x, o),
            |a, b, x, o, m| bicgstab_with_preconditioner(&a, b, x, o, m),
        );
    }
}
