//! Conjugate gradients on the CPU (Hestenes & Stiefel 1952; with the Jacobi preconditioner as in
//! Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed., algorithm 9.1): the oracle the GPU
//! solver is compared to, for its iteration counts and its solution; and pipelined CG
//! ([`pipelined_cg`]), its rearrangement with one reduction an iteration. Each takes Jacobi from its
//! options or, in its `_with_preconditioner` form, any [`CpuPrecondition`] (IC(0), block-Jacobi),
//! the oracles of `solve::Pcg` and `solve::PipelinedCg` with a caller's preconditioner.
//!
//! It follows the GPU recurrence (`kernels-gpu/src/cg.rs`) step for step, in the element type `T`:
//! the same fused updates (`r = fma(-alpha, q, r)`, `x = fma(alpha, p, x)`, `p = fma(beta, p, z)`),
//! `z = D⁻¹ r` with `D⁻¹` rounded to `T`, the same stopping tests in the same order, and the residual
//! of the recurrence, not a recomputed `b - A x`. Only the dot products differ: summed here in f64 and
//! rounded to `T`, on the GPU in `T` by a fixed tree, so the two agree to a rounding of `T` per dot
//! product, and their iteration counts agree within a few iterations.

use super::{
    CpuPrecondition, DiagonalNeed, LinearOperator, Precondition, check_system, dot, negative, positive,
    quotient, residual,
};
use crate::Result;
use crate::iterative::why::NOT_FINITE;
use crate::iterative::{NOT_SPD, Outcome, SolveError, SolverOptions, Stop, relative_residual};
use crate::scalar::Scalar;

/// The breakdown of a residual `rᵀr` that is not finite at `iteration`: NaN or infinities in the
/// matrix, the preconditioner or `b`, or `bᵀb` past the type's range. The GPU CGs test it first too.
fn not_finite<T: Scalar>(iteration: usize, rr: T) -> crate::Error {
    SolveError::Breakdown { iteration, what: "rᵀr", value: rr.to_f64(), why: NOT_FINITE }.into()
}

/// Solves `A x = b` by CG from the initial guess in `x`, overwriting it with the last iterate.
///
/// Refused, with `x` untouched: options out of their ranges ([`SolverOptions`]), a matrix that is not
/// square ([`SolveError::NotSquare`]), vectors of the wrong length ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch)),
/// and for Jacobi a diagonal entry that is not positive ([`SolveError::NonPositiveDiagonal`]). A breakdown ([`SolveError::Breakdown`]: `pᵀAp` or
/// `rᵀz` not positive and finite) leaves in `x` the last iterate before it.
pub fn cg<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
) -> Result<Outcome> {
    classic(a, b, x, options, None)
}

/// [`cg`] preconditioned by the caller's `m` (symmetric positive definite: IC(0), block-Jacobi), the
/// oracle of `solve::Pcg::with_preconditioner`. Refused as [`cg`] refuses, and, with `x` untouched,
/// for `options.preconditioner` other than `None` ([`Error::Unsupported`](crate::Error::Unsupported))
/// and for `m` of another order ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch), "the
/// preconditioner").
pub fn cg_with_preconditioner<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    m: &dyn CpuPrecondition<T>,
) -> Result<Outcome> {
    classic(a, b, x, options, Some(m))
}

/// CG, with Jacobi from `options` or the caller's `custom` preconditioner.
fn classic<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    custom: Option<&dyn CpuPrecondition<T>>,
) -> Result<Outcome> {
    let Start { n, precondition, mut r, bb, tol_rr } = Start::new(a, b, x, options, custom)?;
    let mut p = vec![T::ZERO; n];
    precondition.apply(&r, &mut p)?;
    let mut rz = dot(&r, &p);
    let mut rr = dot(&r, &r);
    let outcome = |iterations, rr: T, stop| Start::<T>::outcome(bb, iterations, rr, stop);
    // A residual that is not finite breaks down before the convergence test: where `bᵀb` overflowed
    // (or `b` holds infinities), the tolerance is infinite too and would pass it.
    if !rr.to_f64().is_finite() {
        return Err(not_finite(0, rr));
    }
    if rr <= tol_rr {
        return Ok(outcome(0, rr, Stop::Converged));
    }
    if !positive(rz) {
        return Err(
            SolveError::Breakdown { iteration: 0, what: "rᵀz", value: rz.to_f64(), why: NOT_SPD }.into()
        );
    }

    let (mut q, mut z) = (vec![T::ZERO; n], vec![T::ZERO; n]);
    for iteration in 0..options.max_iterations {
        a.apply(&p, &mut q)?;
        let pq = dot(&p, &q);
        let alpha = T::from_f64(rz.to_f64() / pq.to_f64());
        if !positive(pq) || !alpha.to_f64().is_finite() {
            return Err(SolveError::Breakdown {
                iteration, what: "pᵀAp", value: pq.to_f64(), why: NOT_SPD
            }
            .into());
        }
        let minus_alpha = T::from_f64(-alpha.to_f64());
        r.iter_mut().zip(&q).for_each(|(r, &q)| *r = minus_alpha.mul_add(q, *r));
        precondition.apply(&r, &mut z)?;
        let rz_new = dot(&r, &z);
        rr = dot(&r, &r);
        let beta = T::from_f64(rz_new.to_f64() / rz.to_f64());
        rz = rz_new;
        x.iter_mut().zip(&p).for_each(|(x, &p)| *x = alpha.mul_add(p, *x));
        p.iter_mut().zip(&z).for_each(|(p, &z)| *p = beta.mul_add(*p, z));
        if !rr.to_f64().is_finite() {
            return Err(not_finite(iteration + 1, rr));
        }
        if rr <= tol_rr {
            return Ok(outcome(iteration + 1, rr, Stop::Converged));
        }
        if !positive(rz) {
            return Err(SolveError::Breakdown {
                iteration: iteration + 1,
                what: "rᵀz",
                value: rz.to_f64(),
                why: NOT_SPD,
            }
            .into());
        }
    }
    Ok(outcome(options.max_iterations, rr, Stop::MaxIterations))
}

/// Solves `A x = b` by pipelined CG (Ghysels & Vanroose, "Hiding global synchronization latency in
/// the preconditioned Conjugate Gradient algorithm", Parallel Computing 40, 2014, Algorithm 4), from
/// the initial guess in `x`: the same iterates as [`cg`] in exact arithmetic, rearranged so that an
/// iteration's three dot products (`γ = rᵀu`, `δ = wᵀu`, `rᵀr`) are one reduction that the next
/// product `n = A M⁻¹ w` and the preconditioner can overlap. Several GPUs pay a global reduction per
/// dot product; this pays one an iteration, at the price of four more vector recurrences
/// (`w = A u`, `z`, `q`, `s`), whose rounding lets the recursive residual drift from `b - A x` a little
/// faster than CG's. The oracle of a GPU pipelined CG; in `T`, with fused updates and the dot
/// products summed in f64, as [`cg`].
///
/// Refused as [`cg`] refuses, with `x` untouched. A breakdown is named as [`cg`] names it: `rᵀz`
/// (here `γ = rᵀu`, `u = M⁻¹ r`) or `pᵀAp` (here `δ - β γ / α_prev`, the same number) not positive
/// and finite.
pub fn pipelined_cg<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
) -> Result<Outcome> {
    pipelined(a, b, x, options, None)
}

/// [`pipelined_cg`] preconditioned by the caller's `m`, the oracle of
/// `solve::PipelinedCg::with_preconditioner`; refused as [`cg_with_preconditioner`] refuses.
pub fn pipelined_cg_with_preconditioner<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    m: &dyn CpuPrecondition<T>,
) -> Result<Outcome> {
    pipelined(a, b, x, options, Some(m))
}

/// Pipelined CG, with Jacobi from `options` or the caller's `custom` preconditioner.
fn pipelined<T: Scalar>(
    a: &impl LinearOperator<T>,
    b: &[T],
    x: &mut [T],
    options: &SolverOptions,
    custom: Option<&dyn CpuPrecondition<T>>,
) -> Result<Outcome> {
    let Start { n, precondition, mut r, bb, tol_rr } = Start::new(a, b, x, options, custom)?;
    let (mut u, mut w) = (vec![T::ZERO; n], vec![T::ZERO; n]);
    precondition.apply(&r, &mut u)?;
    a.apply(&u, &mut w)?;
    let (mut m, mut nn) = (vec![T::ZERO; n], vec![T::ZERO; n]);
    let (mut z, mut q, mut s, mut p) =
        (vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n]);
    let outcome = |iterations, rr: T, stop| Start::<T>::outcome(bb, iterations, rr, stop);
    let breakdown = |iteration, what, value: T| -> crate::Error {
        SolveError::Breakdown { iteration, what, value: value.to_f64(), why: NOT_SPD }.into()
    };
    let (mut gamma_prev, mut alpha_prev) = (T::ZERO, T::ZERO);
    let mut rr = T::ZERO;
    for iteration in 0..=options.max_iterations {
        // The one reduction: γ = rᵀu, δ = wᵀu, rᵀr.
        let (gamma, delta) = (dot(&r, &u), dot(&w, &u));
        rr = dot(&r, &r);
        if !rr.to_f64().is_finite() {
            return Err(not_finite(iteration, rr));
        }
        if rr <= tol_rr {
            return Ok(outcome(iteration, rr, Stop::Converged));
        }
        if !positive(gamma) {
            return Err(breakdown(iteration, "rᵀz", gamma));
        }
        if iteration == options.max_iterations {
            break;
        }
        // Overlapping the reduction on a GPU: m = M⁻¹ w, n = A m.
        precondition.apply(&w, &mut m)?;
        a.apply(&m, &mut nn)?;
        let (beta, denominator) = if iteration == 0 {
            (T::ZERO, delta)
        } else {
            let beta = quotient(gamma, gamma_prev);
            (beta, T::from_f64(delta.to_f64() - beta.to_f64() * gamma.to_f64() / alpha_prev.to_f64()))
        };
        let alpha = quotient(gamma, denominator);
        if !positive(denominator) || !alpha.to_f64().is_finite() {
            return Err(breakdown(iteration, "pᵀAp", denominator));
        }
        let minus_alpha = negative(alpha);
        for i in 0..n {
            z[i] = beta.mul_add(z[i], nn[i]);
            q[i] = beta.mul_add(q[i], m[i]);
            s[i] = beta.mul_add(s[i], w[i]);
            p[i] = beta.mul_add(p[i], u[i]);
            x[i] = alpha.mul_add(p[i], x[i]);
            r[i] = minus_alpha.mul_add(s[i], r[i]);
            u[i] = minus_alpha.mul_add(q[i], u[i]);
            w[i] = minus_alpha.mul_add(z[i], w[i]);
        }
        (gamma_prev, alpha_prev) = (gamma, alpha);
    }
    Ok(outcome(options.max_iterations, rr, Stop::MaxIterations))
}

/// What both CGs set up before their first iteration, in this order: the options, the system's
/// shape, the preconditioner (each refusal before `x` is read or written), `r = b - A x`, `bᵀb`, and
/// the squared tolerance on `rᵀr`.
struct Start<'p, T> {
    n: usize,
    precondition: Precondition<'p, T>,
    r: Vec<T>,
    bb: T,
    tol_rr: T,
}

impl<'p, T: Scalar> Start<'p, T> {
    fn new(
        a: &impl LinearOperator<T>,
        b: &[T],
        x: &[T],
        options: &SolverOptions,
        custom: Option<&'p dyn CpuPrecondition<T>>,
    ) -> Result<Self> {
        options.check()?;
        let n = check_system(a, b, x)?;
        let precondition = Precondition::new(a, options.preconditioner, custom, DiagonalNeed::Positive)?;
        let mut r = vec![T::ZERO; n];
        residual(a, b, x, &mut r)?;
        let bb = dot(b, b);
        let tol_rr = T::from_f64(options.rel_tol) * T::from_f64(options.rel_tol) * bb;
        Ok(Self { n, precondition, r, bb, tol_rr })
    }

    /// The outcome of a solve that stopped with `rᵀr = rr` after `iterations`.
    fn outcome(bb: T, iterations: usize, rr: T, stop: Stop) -> Outcome {
        Outcome { iterations, relative_residual: relative_residual(rr.to_f64(), bb.to_f64()), stop }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::formats::csr::CsrRef;
    use crate::iterative::Preconditioner;

    /// The 1D Laplacian `tridiag(-1, 2, -1)` of order `n`, scaled row and column by `scale(i)`:
    /// symmetric positive definite, with a diagonal that varies as `scale(i)^2`.
    fn laplacian(n: usize, scale: impl Fn(usize) -> f64) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        let (mut offsets, mut cols, mut vals) = (vec![0], vec![], vec![]);
        for i in 0..n {
            for j in i.saturating_sub(1)..(i + 2).min(n) {
                cols.push(j);
                vals.push(if i == j { 2.0 } else { -1.0 } * scale(i) * scale(j));
            }
            offsets.push(cols.len());
        }
        (offsets, cols, vals)
    }

    fn options(preconditioner: Preconditioner) -> SolverOptions {
        SolverOptions { rel_tol: 1e-10, max_iterations: 1000, preconditioner }
    }

    #[test]
    fn solves_a_laplacian_with_and_without_jacobi() {
        let n = 77;
        let scale = |i: usize| 1.0 + (i % 7) as f64;
        let (o, c, v) = laplacian(n, scale);
        let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
        let exact: Vec<f64> = (0..n).map(|i| (i as f64 * 0.1).sin()).collect();
        let mut b = vec![0.0; n];
        a.apply(&exact, &mut b).unwrap();
        let mut iterations = vec![];
        for pre in [Preconditioner::None, Preconditioner::Jacobi] {
            let mut x = vec![0.0; n];
            let out = cg(&a, &b, &mut x, &options(pre)).unwrap();
            assert_eq!(out.stop, Stop::Converged);
            assert!(out.relative_residual <= 1e-10, "{out:?}");
            let err = x.iter().zip(&exact).map(|(x, e)| (x - e).abs()).fold(0.0, f64::max);
            assert!(err < 1e-6, "{pre:?}: error {err}");
            iterations.push(out.iterations);
        }
        // Jacobi undoes the scaling: what is left is the Laplacian, which CG solves in n / 2 + 1
        // iterations (its eigenvalues come in that many distinct pairs for a symmetric b).
        assert!(iterations[1] < iterations[0], "{iterations:?}");
    }

    /// With a caller's preconditioner: IC(0) of a tridiagonal matrix is its Cholesky factorisation,
    /// so both CGs converge in one iteration; block-Jacobi of blocks of 1 is Jacobi (equal values: the
    /// blocks' `fma(e, r, +0)` and Jacobi's `e * r` differ only in the sign of a zero).
    #[test]
    fn a_callers_preconditioner() {
        use crate::reference::block_jacobi::BlockInverse;
        use crate::reference::ilu::IluFactors;
        let n = 60;
        let (o, c, v) = laplacian(n, |i| 1.0 + (i % 5) as f64);
        let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
        let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).cos()).collect();
        let plain = options(Preconditioner::None);
        let ic = IluFactors::incomplete_cholesky(a).unwrap();
        type Plain = fn(&CsrRef<'_, f64>, &[f64], &mut [f64], &SolverOptions) -> Result<Outcome>;
        type With = fn(
            &CsrRef<'_, f64>,
            &[f64],
            &mut [f64],
            &SolverOptions,
            &dyn CpuPrecondition<f64>,
        ) -> Result<Outcome>;
        let solvers: [(Plain, With); 2] = [
            (|a, b, x, o| cg(a, b, x, o), |a, b, x, o, m| cg_with_preconditioner(a, b, x, o, m)),
            (
                |a, b, x, o| pipelined_cg(a, b, x, o),
                |a, b, x, o, m| pipelined_cg_with_preconditioner(a, b, x, o, m),
            ),
        ];
        let blocks = BlockInverse::new(a, 1).unwrap();
        for (jacobi, with) in solvers {
            let mut x = vec![0.0; n];
            let out = with(&a, &b, &mut x, &plain, &ic).unwrap();
            assert_eq!((out.stop, out.iterations), (Stop::Converged, 1), "{out:?}");
            let (mut x1, mut x2) = (vec![0.0; n], vec![0.0; n]);
            let out1 = jacobi(&a, &b, &mut x1, &options(Preconditioner::Jacobi)).unwrap();
            let out2 = with(&a, &b, &mut x2, &plain, &blocks).unwrap();
            assert_eq!(out1, out2);
            assert_eq!(x1, x2);
        }
        // Refused with `x` untouched: the caller's preconditioner with Jacobi, or of another order.
        let mut x = vec![5.0; n];
        let e = cg_with_preconditioner(&a, &b, &mut x, &options(Preconditioner::Jacobi), &ic).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
        let (o2, c2, v2) = laplacian(n - 1, |_| 1.0);
        let small =
            IluFactors::incomplete_cholesky(CsrRef::try_new(n - 1, n - 1, &o2, &c2, &v2).unwrap()).unwrap();
        let e = pipelined_cg_with_preconditioner(&a, &b, &mut x, &plain, &small).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { what: "the preconditioner", .. }), "{e:?}");
        assert_eq!(x, vec![5.0; n]);
    }

    /// Pipelined CG makes CG's iterates in exact arithmetic: in f64 on these well-conditioned
    /// systems the iteration counts agree within two, and so do the solutions; it breaks down where
    /// CG does, naming the same scalar.
    #[test]
    fn pipelined_cg_follows_cg() {
        for (n, scale) in [(77, 7usize), (200, 1), (31, 3)] {
            let (o, c, v) = laplacian(n, |i| 1.0 + (i % scale) as f64);
            let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).cos()).collect();
            for pre in [Preconditioner::None, Preconditioner::Jacobi] {
                let opts = options(pre);
                let (mut x, mut y) = (vec![0.0; n], vec![0.0; n]);
                let classic = cg(&a, &b, &mut x, &opts).unwrap();
                let pipelined = pipelined_cg(&a, &b, &mut y, &opts).unwrap();
                assert_eq!(pipelined.stop, Stop::Converged, "{n} {pre:?}: {pipelined:?}");
                assert!(classic.iterations.abs_diff(pipelined.iterations) <= 2, "{classic:?} {pipelined:?}");
                let norm = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let err = x.iter().zip(&y).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(err <= 1e-7 * norm, "{n} {pre:?}: {err} against {norm}");
            }
        }
        let indefinite = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, -1.0]).unwrap();
        let e = pipelined_cg(&indefinite, &[1.0, 1.0], &mut [0.0; 2], &options(Preconditioner::None))
            .unwrap_err();
        assert!(
            matches!(e, Error::Solve(SolveError::Breakdown { iteration: 0, what: "pᵀAp", value: 0.0, .. })),
            "{e}"
        );
        let nan = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, f64::NAN]).unwrap();
        let e = pipelined_cg(&nan, &[1.0, 1.0], &mut [0.0; 2], &options(Preconditioner::None)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Solve(SolveError::Breakdown { iteration: 0, what: "rᵀr", why: NOT_FINITE, .. })
            ),
            "{e}"
        );
        let mut x = [7.0; 3];
        let wide = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        assert!(pipelined_cg(&wide, &[1.0; 2], &mut x[..2], &options(Preconditioner::None)).is_err());
        assert_eq!(x, [7.0; 3]);
    }

    #[test]
    fn f32_follows_f64() {
        let n = 40;
        let (o, c, v) = laplacian(n, |_| 1.0);
        let v32: Vec<f32> = v.iter().map(|&v| f32::from_f64(v)).collect();
        let a64 = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
        let a32 = CsrRef::try_new(n, n, &o, &c, &v32).unwrap();
        let b: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / n as f64).collect();
        let b32: Vec<f32> = b.iter().map(|&v| f32::from_f64(v)).collect();
        let opts = SolverOptions { rel_tol: 1e-5, ..options(Preconditioner::None) };
        let (mut x64, mut x32) = (vec![0.0; n], vec![0.0f32; n]);
        let o64 = cg(&a64, &b, &mut x64, &opts).unwrap();
        let o32 = cg(&a32, &b32, &mut x32, &opts).unwrap();
        assert!(o64.iterations.abs_diff(o32.iterations) <= 2, "{o64:?} {o32:?}");
        let norm = x64.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = x32.iter().zip(&x64).map(|(&a, b)| (a as f64 - b).abs()).fold(0.0, f64::max);
        assert!(err <= 1e-3 * norm, "{err} vs {norm}");
    }

    #[test]
    fn refuses_bad_shapes_and_leaves_x() {
        let (o, c, v) = laplacian(5, |_| 1.0);
        let a = CsrRef::try_new(5, 5, &o, &c, &v).unwrap();
        let mut x = vec![7.0; 5];
        let e = cg(&a, &[1.0; 4], &mut x, &options(Preconditioner::None)).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { what: "b", expected: 5, got: 4 }), "{e}");
        let e = cg(&a, &[1.0; 5], &mut x[..3], &options(Preconditioner::None)).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { what: "x", expected: 5, got: 3 }), "{e}");
        let wide = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        let e = cg(&wide, &[1.0; 2], &mut [0.0; 2], &options(Preconditioner::None)).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::NotSquare { rows: 2, cols: 3 })), "{e}");
        // Row 1 has no diagonal entry.
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0, 1.0]).unwrap();
        let e = cg(&a, &[1.0; 2], &mut x[..2], &options(Preconditioner::Jacobi)).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::NonPositiveDiagonal { row: 1, .. })), "{e}");
        assert_eq!(x, [7.0; 5]);
    }

    #[test]
    fn options_out_of_range_are_refused_first() {
        let (o, c, v) = laplacian(5, |_| 1.0);
        let a = CsrRef::try_new(5, 5, &o, &c, &v).unwrap();
        let mut x = vec![7.0; 5];
        for rel_tol in [f64::NAN, -1e-6, 1.5, f64::INFINITY] {
            let bad = SolverOptions { rel_tol, ..options(Preconditioner::None) };
            // Refused even with a wrong `b`: the options come first.
            let e = cg(&a, &[1.0; 4], &mut x, &bad).unwrap_err();
            assert!(matches!(e, Error::Solve(SolveError::InvalidTolerance { .. })), "{rel_tol}: {e}");
        }
        let endless = SolverOptions { max_iterations: usize::MAX, ..options(Preconditioner::None) };
        let e = cg(&a, &[1.0; 5], &mut x, &endless).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the iteration limit", .. }), "{e}");
        assert_eq!(x, [7.0; 5]);
        for rel_tol in [0.0, 1.0] {
            cg(&a, &[1.0; 5], &mut x, &SolverOptions { rel_tol, ..options(Preconditioner::Jacobi) }).unwrap();
        }
    }

    #[test]
    fn apply_refuses_vectors_of_the_wrong_length() {
        let (o, c, v) = laplacian(5, |_| 1.0);
        let a = CsrRef::try_new(5, 5, &o, &c, &v).unwrap();
        let mut y = [3.0; 4];
        let e = a.apply(&[1.0; 5], &mut y).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { what: "y", expected: 5, got: 4 }), "{e}");
        assert_eq!(y, [3.0; 4]);
    }

    #[test]
    fn an_indefinite_matrix_breaks_down() {
        // diag(1, -1): pᵀAp = 0 for p = r0 = (1, 1).
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, -1.0]).unwrap();
        let e = cg(&a, &[1.0, 1.0], &mut [0.0; 2], &options(Preconditioner::None)).unwrap_err();
        assert!(
            matches!(e, Error::Solve(SolveError::Breakdown { iteration: 0, what: "pᵀAp", value: 0.0, .. })),
            "{e}"
        );
        // NaN * 0 = NaN: the first residual already is NaN.
        let nan = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, f64::NAN]).unwrap();
        let e = cg(&nan, &[1.0, 1.0], &mut [0.0; 2], &options(Preconditioner::None)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Solve(SolveError::Breakdown { iteration: 0, what: "rᵀr", why: NOT_FINITE, .. })
            ),
            "{e}"
        );
    }

    /// A positive diagonal entry whose inverse overflows (subnormal in f64, below about 2.9e-39 in
    /// f32) is refused before Jacobi multiplies by infinity.
    #[test]
    fn jacobi_refuses_a_diagonal_whose_inverse_overflows() {
        let jacobi = options(Preconditioner::Jacobi);
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 1e-310]).unwrap();
        for e in [
            cg(&a, &[1.0, 1.0], &mut [0.0; 2], &jacobi).unwrap_err(),
            pipelined_cg(&a, &[1.0, 1.0], &mut [0.0; 2], &jacobi).unwrap_err(),
        ] {
            assert!(matches!(e, Error::Solve(SolveError::SingularDiagonal { row: 1, .. })), "{e}");
        }
        let a32 = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[2e-39f32, 1.0]).unwrap();
        let e = cg(&a32, &[1.0f32, 1.0], &mut [0.0; 2], &options(Preconditioner::Jacobi)).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::SingularDiagonal { row: 0, .. })), "{e}");
    }

    /// An infinite `b`, or one whose `bᵀb` overflows, makes the tolerance infinite: both CGs must
    /// break down on the residual that is not finite, not report a converged solve of residual NaN.
    #[test]
    fn a_b_past_the_range_breaks_down_instead_of_converging() {
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        let opts = options(Preconditioner::None);
        for b in [[1e200, 1e200], [f64::INFINITY, 0.0]] {
            for e in [
                cg(&a, &b, &mut [0.0; 2], &opts).unwrap_err(),
                pipelined_cg(&a, &b, &mut [0.0; 2], &opts).unwrap_err(),
            ] {
                assert!(
                    matches!(
                        e,
                        Error::Solve(SolveError::Breakdown {
                            iteration: 0,
                            what: "rᵀr",
                            why: NOT_FINITE,
                            ..
                        })
                    ),
                    "{b:?}: {e}"
                );
            }
        }
        let a32 = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0f32, 1.0]).unwrap();
        let opts32 = options(Preconditioner::None);
        for e in [
            cg(&a32, &[1e20f32, 1e20], &mut [0.0; 2], &opts32).unwrap_err(),
            pipelined_cg(&a32, &[1e20f32, 1e20], &mut [0.0; 2], &opts32).unwrap_err(),
        ] {
            assert!(matches!(e, Error::Solve(SolveError::Breakdown { what: "rᵀr", .. })), "{e}");
        }
    }

    #[test]
    fn stops_at_the_iteration_limit_and_at_once_for_b_zero() {
        let n = 50;
        let (o, c, v) = laplacian(n, |_| 1.0);
        let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
        let limited = SolverOptions { max_iterations: 3, ..options(Preconditioner::None) };
        let out = cg(&a, &vec![1.0; n], &mut vec![0.0; n], &limited).unwrap();
        assert_eq!((out.iterations, out.stop), (3, Stop::MaxIterations));
        assert!(out.relative_residual > 1e-3);
        let out = cg(&a, &vec![0.0; n], &mut vec![0.0; n], &options(Preconditioner::Jacobi)).unwrap();
        assert_eq!((out.iterations, out.stop, out.relative_residual), (0, Stop::Converged, 0.0));
    }
}
