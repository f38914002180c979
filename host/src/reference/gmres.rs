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
//! An iteration is one Arnoldi step, one product; [`SolverOptions::max_iterations`] counts them over
//! all cycles.

use super::{
    DiagonalNeed, InverseDiagonal, LinearOperator, NOT_FINITE, axpy, check_system, dot, finite, negative,
    quotient, residual, sqrt,
};
use crate::iterative::{Outcome, SolveError, SolverOptions, Stop, relative_residual};
use crate::scalar::Scalar;
use crate::{Error, Result};

/// The longest restart length GMRES takes: 1024 basis vectors, 1025 times the memory of `b`, and a
/// triangular factor of half a million entries. Longer cycles cost more in orthogonalisation
/// (quadratic in the length) than restarting loses; usual lengths are 20 to 100.
pub const MAX_RESTART: usize = 1 << 10;

/// Why `H[j][j] = 0` after the rotations stops the solve.
pub(crate) const SINGULAR_HESSENBERG: &str = "A M⁻¹ maps the Krylov space into a smaller one (the Hessenberg matrix is singular): the matrix is singular";

/// Solves `A x = b` by GMRES(`restart`) from the initial guess in `x`, overwriting it with the last
/// iterate.
///
/// Refused, with `x` untouched, in this order: options out of their ranges ([`SolverOptions`]), a
/// matrix that is not square ([`SolveError::NotSquare`]), vectors of the wrong length
/// ([`Error::DimensionMismatch`]), a restart length of 0 ([`SolveError::InvalidRestart`]) or over
/// [`MAX_RESTART`] ([`Error::TooLarge`], before anything is allocated), and for Jacobi a diagonal
/// entry that is zero or not finite ([`SolveError::SingularDiagonal`]).
///
/// Converged with the residual of the recurrence, `|g_columns| / |b|`, when a cycle meets the
/// tolerance (or the Krylov space turns out invariant, `h_{j+1,j} = 0`, where that residual is 0),
/// or at the start of a cycle, with the true residual, when `x` already meets it. A breakdown
/// ([`SolveError::Breakdown`]) leaves in `x` the iterate the cycle started from: `rᵀr` or `‖w‖²` not
/// finite (NaN or infinities in the matrix, `b` or `x`), or `H[j][j] = 0`, which only a singular
/// operator gives. On a singular operator with `b` outside its range GMRES minimises the residual
/// over each Krylov space, stagnates at the least-squares residual, and stops at the iteration
/// limit or with that breakdown; it never panics or loops past the limit.
pub fn gmres<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    restart: usize,
) -> Result<Outcome> {
    options.check()?;
    let n = check_system(a, b, x)?;
    check_restart(restart, n)?;
    let precondition = InverseDiagonal::new(a, options.preconditioner, DiagonalNeed::NonZero)?;

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
        if rr <= tol_rr {
            return Ok(outcome(k, rr, Stop::Converged));
        }
        if !finite(rr) {
            let value = rr.to_f64();
            return Err(SolveError::Breakdown { iteration: k, what: "rᵀr", value, why: NOT_FINITE }.into());
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
            precondition.apply(&basis[j], &mut z);
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
            for (i, &(c, s)) in rotations.iter().enumerate() {
                let (upper, lower) = (column[i], column[i + 1]);
                column[i] = c.mul_add(upper, s * lower);
                column[i + 1] = negative(s).mul_add(upper, c * lower);
            }
            let d = T::from_f64(column[j].to_f64().hypot(below.to_f64()));
            if d == T::ZERO {
                let why = SINGULAR_HESSENBERG;
                return Err(SolveError::Breakdown { iteration: k, what: "H[j][j]", value: 0.0, why }.into());
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
        precondition.apply(&u, &mut z);
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
    if restart == 0 {
        return Err(SolveError::InvalidRestart { value: restart }.into());
    }
    let too_large = |limit| Error::TooLarge { what: "the GMRES restart length", value: restart, limit };
    if restart > MAX_RESTART {
        return Err(too_large(MAX_RESTART));
    }
    match restart.checked_add(1).and_then(|vectors| vectors.checked_mul(n)) {
        Some(_) => Ok(()),
        None => Err(too_large(usize::MAX / n - 1)),
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
