//! Restarted GMRES on the CPU (Saad & Schultz 1986; right-preconditioned as in Saad, "Iterative
//! Methods for Sparse Linear Systems", 2nd ed., algorithms 6.9 and 9.5): the oracle of the GPU
//! solver, which follows this recurrence step for step.
//!
//! A cycle starts from the true residual `r = b - A x`, builds an orthonormal basis `v_0, v_1, ...`
//! of the Krylov space of `A M⁻¹` by Arnoldi steps, keeps the Hessenberg matrix `H` in upper
//! triangular form by Givens rotations applied as each column arrives (so `|g_{j+1}|`, the last
//! entry of the rotated right-hand side, is the residual norm of the best iterate of the space at
//! no cost), and at its end adds `M⁻¹ V y` to `x`, `y` solving the triangular system. `M⁻¹` is
//! Jacobi's inverse diagonal rounded to `T`, or the identity; on the right, so the residual is the
//! true one and the tolerance means the same with and without Jacobi.
//!
//! Orthogonalisation is classical Gram–Schmidt done twice (CGS2): each pass takes every `h_i =
//! v_iᵀw` from the same `w`, so on the GPU a pass is one grid-wide reduction of `j + 1` dot products,
//! where modified Gram–Schmidt needs `j + 1` reductions one after the other; and the second pass
//! makes it as stable as MGS, keeping the basis orthogonal to machine precision (Giraud, Langou &
//! Rozložník 2005). Every scalar is in `T`, dot products summed in f64 and rounded to `T`, with these
//! fused operations, which the GPU solver makes the same way:
//!
//! - the passes: `w = fma(-h_i, v_i, w)` for `i = 0, 1, ..., j` in that order, then `h_i = h_i + h2_i`;
//! - an earlier rotation on a column: `h_i' = fma(c, h_i, s * h_{i+1})` and
//!   `h_{i+1}' = fma(-s, h_i, c * h_{i+1})`;
//! - the back-substitution: `acc = fma(-H[i][l], y_l, acc)` for `l = i + 1, ...` in increasing
//!   order from `acc = g_i`, then `y_i = acc / H[i][i]`;
//! - the update: `u = fma(y_i, v_i, u)` for `i = 0, 1, ...` from `u = 0`, then `x = x + M⁻¹ u`.
//!
//! The new diagonal entry of the triangular factor, `H[j][j] = hypot(h_j, h_{j+1,j})` after the
//! earlier rotations, is the part of `A M⁻¹ v_j` outside the span of the earlier columns. It is
//! computed with an error of a few roundings of that column's norm (`|A M⁻¹ v_j|`, the norm of
//! `(h_0, ..., h_j, h_{j+1,j})`), so one of at most `(j + 1) ε` times it (`ε` of `T`) is rounding
//! noise: the Hessenberg matrix is singular to working precision and the solve breaks down. Were it
//! taken as it comes, its rotation would be noise too, and the residual of the recurrence could
//! claim convergence for an `x` of size `1/ε` whose true residual is large (a singular operator
//! with `b` outside its range does this at the second step).
//!
//! An iteration is one Arnoldi step, one product; [`SolverOptions::max_iterations`] counts them over
//! all cycles.

use super::{
    CpuPrecondition, DiagonalNeed, LinearOperator, Precondition, axpy, check_system, dot, finite, negative,
    quotient, residual, sqrt,
};
use crate::iterative::why::{self, NOT_FINITE};
use crate::iterative::{Outcome, SolveError, SolverOptions, Stop, relative_residual};
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::KRYLOV_MAX_RESTART;

/// The longest restart length GMRES takes, on the GPU as here: 1024 basis vectors, 1025 times the
/// memory of `b`, and a triangular factor of half a million entries. Longer cycles cost more in
/// orthogonalisation (quadratic in the length) than restarting loses; usual lengths are 20 to 100.
pub const MAX_RESTART: usize = KRYLOV_MAX_RESTART as usize;

/// Solves `A x = b` by GMRES(`restart`) from the initial guess in `x`, overwriting it with the last
/// iterate.
///
/// Refused, with `x` untouched, in this order: options out of their ranges ([`SolverOptions`]), a
/// matrix that is not square ([`SolveError::NotSquare`]), vectors of the wrong length
/// ([`Error::DimensionMismatch`]), a restart length of 0 or over [`MAX_RESTART`]
/// ([`SolveError::InvalidRestart`]; a basis whose size overflows is [`Error::TooLarge`]), before
/// anything is allocated, and for Jacobi a diagonal
/// entry that is zero or not finite ([`SolveError::SingularDiagonal`]).
///
/// Converged with the residual of the recurrence, `|g_columns| / |b|`, when a cycle meets the
/// tolerance (or the Krylov space turns out invariant, `h_{j+1,j} = 0`, where that residual is 0),
/// or at the start of a cycle, with the true residual, when `x` already meets it. A breakdown
/// ([`SolveError::Breakdown`]) leaves in `x` the iterate the cycle started from: `rᵀr` or `‖w‖²` not
/// finite (NaN or infinities in the matrix, `b` or `x`), or `H[j][j]` zero to working precision,
/// which only an operator singular to working precision gives. On a singular operator with `b` outside its range GMRES minimises the residual
/// over each Krylov space, stagnates at the least-squares residual, and stops at the iteration
/// limit or with that breakdown; it never panics or loops past the limit.
pub fn gmres<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    restart: usize,
) -> Result<Outcome> {
    gmres_impl(a, b, x, options, restart, None)
}

/// [`gmres`] right-preconditioned by the caller's `m` (ILU(0), block-Jacobi), the oracle of
/// `solve::Gmres::with_preconditioner`. Refused as [`gmres`] refuses, and, with `x` untouched, for
/// `options.preconditioner` other than `None` ([`Error::Unsupported`]) and for `m` of another
/// order ([`Error::DimensionMismatch`], "the preconditioner").
pub fn gmres_with_preconditioner<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    restart: usize,
    m: &dyn CpuPrecondition<T>,
) -> Result<Outcome> {
    gmres_impl(a, b, x, options, restart, Some(m))
}

/// [`gmres`] with Jacobi from the options or the caller's `custom` preconditioner.
fn gmres_impl<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    restart: usize,
    custom: Option<&dyn CpuPrecondition<T>>,
) -> Result<Outcome> {
    options.check()?;
    let n = check_system(a, b, x)?;
    check_restart(restart, n)?;
    let precondition = Precondition::new(a, options.preconditioner, custom, DiagonalNeed::NonZero)?;

    let bb = dot(b, b);
    let tol_rr = T::from_f64(options.rel_tol) * T::from_f64(options.rel_tol) * bb;
    let outcome = |iterations, rr: T, stop| Outcome {
        iterations,
        relative_residual: relative_residual(rr.to_f64(), bb.to_f64()),
        stop,
    };
    let one = T::from_f64(1.0);
    let (mut r, mut z, mut w) = (vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n]);
    // Grown as the first cycle needs them, then reused: never more than a cycle's steps.
    let mut basis: Vec<Vec<T>> = Vec::new();
    let mut k = 0;
    loop {
        residual(a, b, x, &mut r)?;
        let rr = dot(&r, &r);
        // Before the test of convergence: an infinite `b` makes the tolerance infinite too.
        if !finite(rr) {
            let value = rr.to_f64();
            return Err(SolveError::Breakdown { iteration: k, what: "rᵀr", value, why: NOT_FINITE }.into());
        }
        if rr <= tol_rr {
            return Ok(outcome(k, rr, Stop::Converged));
        }
        if k == options.max_iterations {
            return Ok(outcome(k, rr, Stop::MaxIterations));
        }
        let beta = sqrt(rr);
        let inverse_beta = quotient(one, beta);
        scaled_into(&mut basis, 0, &r, inverse_beta);
        let mut g = vec![beta];
        // Column j of the rotated H: its j + 1 entries on and above the diagonal.
        let mut h: Vec<Vec<T>> = Vec::new();
        let mut rotations: Vec<(T, T)> = Vec::new();
        let mut converged = false;
        for j in 0..restart {
            if k == options.max_iterations {
                break;
            }
            precondition.apply(&basis[j], &mut z)?;
            a.apply(&z, &mut w)?;
            let mut column = gram_schmidt(&basis[..=j], &mut w);
            for (second, first) in gram_schmidt(&basis[..=j], &mut w).into_iter().zip(&mut column) {
                *first = *first + second;
            }
            let hh = dot(&w, &w);
            if !finite(hh) {
                let value = hh.to_f64();
                return Err(SolveError::Breakdown {
                    iteration: k, what: "‖w‖²", value, why: NOT_FINITE
                }
                .into());
            }
            let below = sqrt(hh);
            // The column's norm before the rotations, summed as the device sums it.
            let norm2 = column.iter().fold(below * below, |acc, &h| h.mul_add(h, acc));
            for (i, &(c, s)) in rotations.iter().enumerate() {
                let (upper, lower) = (column[i], column[i + 1]);
                column[i] = c.mul_add(upper, s * lower);
                column[i + 1] = negative(s).mul_add(upper, c * lower);
            }
            let d = sqrt(column[j].mul_add(column[j], below * below));
            let threshold = T::from_f64((j + 1) as f64) * T::from_f64(T::EPSILON) * sqrt(norm2);
            // A NaN `d` breaks down too.
            if d.partial_cmp(&threshold) != Some(std::cmp::Ordering::Greater) {
                let (value, why) = (d.to_f64(), why::SINGULAR_HESSENBERG);
                return Err(SolveError::Breakdown { iteration: k, what: "H[j][j]", value, why }.into());
            }
            let (c, s) = (quotient(column[j], d), quotient(below, d));
            column[j] = d;
            rotations.push((c, s));
            h.push(column);
            g.push(negative(s) * g[j]);
            g[j] = c * g[j];
            k += 1;
            if below == T::ZERO || g[j + 1] * g[j + 1] <= tol_rr {
                converged = true;
                break;
            }
            scaled_into(&mut basis, j + 1, &w, quotient(one, below));
        }
        let columns = h.len();
        let y = back_substitute(&h, &g[..columns]);
        let mut u = vec![T::ZERO; n];
        for (&yi, v) in y.iter().zip(&basis) {
            axpy(yi, v, &mut u);
        }
        precondition.apply(&u, &mut z)?;
        x.iter_mut().zip(&z).for_each(|(x, &z)| *x = *x + z);
        if converged {
            let last = g[columns];
            return Ok(outcome(k, last * last, Stop::Converged));
        }
    }
}

/// Refuses a restart length of 0, one over [`MAX_RESTART`], and one whose basis of `restart + 1`
/// vectors of `n` elements would not fit `usize`.
fn check_restart(restart: usize, n: usize) -> Result<()> {
    if restart == 0 || restart > MAX_RESTART {
        return Err(SolveError::InvalidRestart { value: restart, limit: MAX_RESTART }.into());
    }
    match restart.checked_add(1).and_then(|vectors| vectors.checked_mul(n)) {
        Some(_) => Ok(()),
        None => Err(Error::TooLarge { what: "the GMRES basis", value: restart, limit: usize::MAX / n - 1 }),
    }
}

/// Basis vector `j` = `v * scale`, allocating it on the first cycle that reaches it.
fn scaled_into<T: Scalar>(basis: &mut Vec<Vec<T>>, j: usize, v: &[T], scale: T) {
    if basis.len() == j {
        basis.push(vec![T::ZERO; v.len()]);
    }
    basis[j].iter_mut().zip(v).for_each(|(b, &v)| *b = v * scale);
}

/// One classical Gram–Schmidt pass: every `h_i = v_iᵀw` from the `w` given, then
/// `w = fma(-h_i, v_i, w)` in the order of `basis`. Returns the `h_i`.
fn gram_schmidt<T: Scalar>(basis: &[Vec<T>], w: &mut [T]) -> Vec<T> {
    let h: Vec<T> = basis.iter().map(|v| dot(v, w)).collect();
    for (&hi, v) in h.iter().zip(basis) {
        axpy(negative(hi), v, w);
    }
    h
}

/// `y` solving `R y = g`, `R` upper triangular given by columns (`columns[l][i] = R[i][l]`, `i <= l`)
/// with a non-zero diagonal.
fn back_substitute<T: Scalar>(columns: &[Vec<T>], g: &[T]) -> Vec<T> {
    let m = g.len();
    let mut y = vec![T::ZERO; m];
    for i in (0..m).rev() {
        let mut acc = g[i];
        for l in i + 1..m {
            acc = negative(columns[l][i]).mul_add(y[l], acc);
        }
        y[i] = quotient(acc, columns[i][i]);
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::csr::CsrRef;
    use crate::iterative::Preconditioner;
    use crate::reference::problems::convection_diffusion;
    use crate::reference::solver_checks::{
        check_agrees_with_cg, check_callers_preconditioner, check_convection_diffusion, check_refusals,
        seeded, true_residual,
    };
    use rand::Rng;

    fn options(max_iterations: usize) -> SolverOptions {
        SolverOptions { rel_tol: 1e-10, max_iterations, preconditioner: Preconditioner::None }
    }

    /// The breakdown of solving `a x = b` by GMRES(`restart`) from `x = 0`, as (iteration, what, why).
    fn breakdown<T: Scalar>(
        a: CsrRef<'_, T>,
        b: &[T],
        restart: usize,
    ) -> (usize, &'static str, &'static str) {
        let mut x = vec![T::ZERO; b.len()];
        match gmres(&a, b, &mut x, &options(10), restart) {
            Err(Error::Solve(SolveError::Breakdown { iteration, what, why, .. })) => (iteration, what, why),
            other => panic!("not a breakdown: {other:?}"),
        }
    }

    #[test]
    fn converges_on_convection_diffusion_at_every_restart_length() {
        let mut rng = seeded("gmres converges_on_convection_diffusion_at_every_restart_length");
        for restart in [5, 30] {
            let f64_counts = check_convection_diffusion::<f64>(
                &mut rng,
                16,
                |_| true,
                1e-10,
                20_000,
                |a, b, x, o| gmres(&a, b, x, o, restart),
            );
            let f32_counts = check_convection_diffusion::<f32>(
                &mut rng,
                16,
                |_| true,
                1e-4,
                20_000,
                |a, b, x, o| gmres(&a, b, x, o, restart),
            );
            eprintln!("GMRES({restart}) iterations: f64 {f64_counts:?}, f32 {f32_counts:?}");
        }
        // GMRES(1), the minimal residual iteration, converges where the symmetric part of A is
        // positive definite (every Pe here), at a rate that falls with the condition number: a
        // smaller grid.
        let counts = check_convection_diffusion::<f64>(
            &mut rng,
            6,
            |_| true,
            1e-8,
            50_000,
            |a, b, x, o| gmres(&a, b, x, o, 1),
        );
        eprintln!("GMRES(1) iterations: {counts:?}");
    }

    #[test]
    fn a_full_cycle_converges_within_the_order() {
        let mut rng = seeded("gmres a_full_cycle_converges_within_the_order");
        for pe in [0.0, 100.0] {
            let m = convection_diffusion::<f64>(5, 4, pe).unwrap();
            let (o, c, v) = m.csr_data();
            let a = CsrRef::try_new(20, 20, o, c, v).unwrap();
            let b: Vec<f64> = (0..20).map(|_| rng.random_range(-1.0..1.0)).collect();
            for restart in [20, 25] {
                let mut x = vec![0.0; 20];
                let out = gmres(&a, &b, &mut x, &options(1000), restart).unwrap();
                assert_eq!(out.stop, Stop::Converged, "{out:?}");
                assert!(out.iterations <= 20, "Pe {pe}, GMRES({restart}): {out:?}");
                assert!(true_residual(a, &b, &x) <= 1e-9, "Pe {pe}: {}", true_residual(a, &b, &x));
            }
        }
    }

    #[test]
    fn agrees_with_cg_on_an_spd_system() {
        check_agrees_with_cg(&mut seeded("gmres agrees_with_cg_on_an_spd_system"), |a, b, x, o| {
            gmres(&a, b, x, o, 30)
        });
    }

    #[test]
    fn refuses_in_order_and_leaves_x() {
        check_refusals(|a, b, x, o| gmres(&a, b, x, o, 10));
        let wide = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        let square = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0, 1.0]).unwrap();
        let jacobi = SolverOptions { preconditioner: Preconditioner::Jacobi, ..options(10) };
        let mut x = [7.0; 2];
        // After the shape, before Jacobi's diagonal.
        let e = gmres(&wide, &[1.0; 2], &mut x, &jacobi, 0).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::NotSquare { .. })), "{e}");
        let e = gmres(&square, &[1.0; 2], &mut x, &jacobi, 0).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::InvalidRestart { value: 0, .. })), "{e}");
        for restart in [MAX_RESTART + 1, usize::MAX] {
            let e = gmres(&square, &[1.0; 2], &mut x, &jacobi, restart).unwrap_err();
            assert!(matches!(e, Error::Solve(SolveError::InvalidRestart { limit: MAX_RESTART, .. })), "{e}");
        }
        assert_eq!(x, [7.0; 2]);
        assert!(check_restart(MAX_RESTART, usize::MAX / (MAX_RESTART + 1)).is_ok());
        let e = check_restart(MAX_RESTART, usize::MAX / (MAX_RESTART + 1) + 1).unwrap_err();
        assert!(matches!(e, Error::TooLarge { limit, .. } if limit < MAX_RESTART), "{e}");
    }

    #[test]
    fn an_invariant_krylov_space_ends_the_cycle() {
        // A = 2 I: w = 2 v_0 exactly, the Krylov space is invariant after one step.
        let a = CsrRef::try_new(3, 3, &[0, 1, 2, 3], &[0, 1, 2], &[2.0, 2.0, 2.0]).unwrap();
        let mut x = [0.0; 3];
        let out = gmres(&a, &[1.0, -2.0, 4.0], &mut x, &options(10), 5).unwrap();
        assert_eq!((out.iterations, out.stop, out.relative_residual), (1, Stop::Converged, 0.0));
        assert_eq!(x, [0.5, -1.0, 2.0]);
    }

    #[test]
    fn a_singular_operator_breaks_down_or_stagnates() {
        // diag(0, 1) and b = e1 in its null space: A v_0 = 0, H[0][0] = 0.
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[0.0, 1.0]).unwrap();
        assert_eq!(breakdown(a, &[1.0, 0.0], 5), (0, "H[j][j]", why::SINGULAR_HESSENBERG));
        // b = e1 + e2, half outside the range. GMRES(1) moves to the best x in span(b), (1, 1), in
        // one step, and a later cycle starts from r = e1 (up to rounding), in the null space. A
        // longer cycle finds A v_1 in the span of v_0 at its second step: H[1][1] is rounding noise
        // (about 1e-17), which taken as it came would claim convergence with x near 1e16.
        for restart in [1, 5] {
            let mut x = [0.0f64; 2];
            let e = gmres(&a, &[1.0, 1.0], &mut x, &options(40), restart).unwrap_err();
            assert!(
                matches!(e, Error::Solve(SolveError::Breakdown { what: "H[j][j]", iteration: 1..=2, .. })),
                "GMRES({restart}): {e}"
            );
            // GMRES(1) may also move x along the null space e1, by |b| or so: never by 1/ε.
            assert!(x.iter().all(|x| x.abs() <= 4.0), "GMRES({restart}): {x:?}");
        }
    }

    #[test]
    fn nan_and_overflow_break_down_never_reach_the_outcome() {
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[2.0, 3.0]).unwrap();
        for b in [[f64::NAN, 1.0], [f64::INFINITY, 1.0], [1.0, f64::NEG_INFINITY]] {
            assert_eq!(breakdown(a, &b, 5), (0, "rᵀr", NOT_FINITE), "{b:?}");
        }
        let nan = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[2.0, f64::NAN]).unwrap();
        assert_eq!(breakdown(nan, &[1.0, 1.0], 5), (0, "rᵀr", NOT_FINITE));
        // In f32, ‖A v_0‖² = 2e60 overflows where b and r do not.
        let huge = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1e30f32, 0.0, 1e30, 1.0]).unwrap();
        assert_eq!(breakdown(huge, &[1.0f32, 0.0], 5), (0, "‖w‖²", NOT_FINITE));
    }

    #[test]
    fn b_zero_takes_no_iteration_and_the_limit_counts_arnoldi_steps() {
        let m = convection_diffusion::<f64>(10, 10, 50.0).unwrap();
        let (o, c, v) = m.csr_data();
        let a = CsrRef::try_new(100, 100, o, c, v).unwrap();
        let out = gmres(&a, &[0.0; 100], &mut [0.0; 100], &options(10), 5).unwrap();
        assert_eq!((out.iterations, out.stop, out.relative_residual), (0, Stop::Converged, 0.0));
        for (limit, restart) in [(7, 3), (7, 30), (0, 4)] {
            let out = gmres(&a, &[1.0; 100], &mut [0.0; 100], &options(limit), restart).unwrap();
            assert_eq!((out.iterations, out.stop), (limit, Stop::MaxIterations));
            assert!(out.relative_residual > 1e-3, "{out:?}");
        }
    }

    #[test]
    fn a_callers_preconditioner() {
        check_callers_preconditioner(
            |a, b, x, o| gmres(&a, b, x, o, 20),
            |a, b, x, o, m| gmres_with_preconditioner(&a, b, x, o, 20, m),
        );
    }
}
