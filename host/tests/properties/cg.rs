//! CG's options and operator (`reference::cg`, classical and pipelined, with Jacobi from the options
//! or IC(0) given by the caller): options outside their documented ranges refused before anything
//! else, the others giving a solve that stops as they say.

use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::cg::{cg, cg_with_preconditioner, pipelined_cg, pipelined_cg_with_preconditioner};
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::solve::{Outcome, Preconditioner, SolveError, SolverOptions, Stop};
use gpu_spmv::{CsrRef, Error};

/// A CPU CG: [`cg`] or [`pipelined_cg`] on a CSR matrix.
type Solver = fn(&CsrRef<'_, f64>, &[f64], &mut [f64], &SolverOptions) -> gpu_spmv::Result<Outcome>;

/// CG and pipelined CG on the SPD tridiagonal `tridiag(-1, 3, -1)` of order `n` with `b = 1`, under
/// `options`.
pub fn check_cg_options(n: usize, options: SolverOptions) {
    let classic: Solver = |a, b, x, o| cg(a, b, x, o);
    let pipelined: Solver = |a, b, x, o| pipelined_cg(a, b, x, o);
    check_solver(classic, false, n, options);
    check_solver(pipelined, true, n, options);
    // IC(0) of a tridiagonal matrix is its Cholesky factorisation: the first iteration solves to
    // rounding, after which both CGs' `pᵀAp` and `rᵀz` are rounding noise of either sign.
    let ic_classic: Solver = |a, b, x, o| {
        let o = SolverOptions { preconditioner: Preconditioner::None, ..*o };
        cg_with_preconditioner(a, b, x, &o, &IluFactors::incomplete_cholesky(*a)?)
    };
    let ic_pipelined: Solver = |a, b, x, o| {
        let o = SolverOptions { preconditioner: Preconditioner::None, ..*o };
        pipelined_cg_with_preconditioner(a, b, x, &o, &IluFactors::incomplete_cholesky(*a)?)
    };
    check_solver(ic_classic, true, n, options);
    check_solver(ic_pipelined, true, n, options);
}

/// `noisy`: the solver's `pᵀAp` is a difference that rounding leaves of either sign once it iterates
/// below what f64 attains (pipelined CG), not a product that underflows to 0 (CG).
fn check_solver(solve: Solver, noisy: bool, n: usize, options: SolverOptions) {
    let (mut offsets, mut cols, mut vals) = (vec![0], vec![], vec![]);
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            cols.push(j);
            vals.push(if i == j { 3.0 } else { -1.0 });
        }
        offsets.push(cols.len());
    }
    let a = CsrRef::try_new(n, n, &offsets, &cols, &vals).unwrap();
    let b = vec![1.0; n];
    let mut x = vec![0.0; n];
    let result = solve(&a, &b, &mut x, &options);
    let tolerance_ok = (0.0..=1.0).contains(&options.rel_tol);
    match result {
        Ok(out) => {
            assert!(tolerance_ok && options.max_iterations <= u32::MAX as usize);
            assert!(out.iterations <= options.max_iterations);
            match out.stop {
                // The recurrence stops at `rr <= rel_tol² bb`, rounded: within a few ulps, where
                // `rel_tol²` is a normal number (below, `rr` is subnormal and keeps few digits).
                Stop::Converged => {
                    let normal = options.rel_tol * options.rel_tol >= f64::MIN_POSITIVE;
                    assert!(!normal || out.relative_residual <= options.rel_tol * (1.0 + 1e-12), "{out:?}")
                }
                Stop::MaxIterations => assert_eq!(out.iterations, options.max_iterations),
            }
        }
        Err(Error::Solve(SolveError::InvalidTolerance { value })) => {
            assert!(!tolerance_ok && (value == options.rel_tol || value.is_nan()));
            assert!(x.iter().all(|&v| v == 0.0), "x written by a refused solve");
        }
        // Iterating past the solution toward a tolerance near 0, CG's residual underflows: `rᵀz`
        // (Jacobi scales it down) or `pᵀAp` is 0 while `rᵀr` is not yet. Pipelined CG's `pᵀAp`, a
        // difference, is rounding noise of either sign as soon as it iterates below what f64 attains
        // (about 1e-15 here: -5e-34 at order 3, -2e-29 at 185 for a tolerance of 3e-24). A
        // breakdown, not an options fault.
        Err(Error::Solve(SolveError::Breakdown { what: "rᵀz" | "pᵀAp", value, .. }))
            if value == 0.0 || (noisy && value.abs() < 1e-20) =>
        {
            let below = if noisy { 1e-12 } else { 1e-150 };
            assert!(tolerance_ok && options.rel_tol < below, "{options:?}: {value}");
        }
        Err(Error::TooLarge { what: "the iteration limit", .. }) => {
            assert!(tolerance_ok && options.max_iterations > u32::MAX as usize);
        }
        Err(e) => panic!("unexpected refusal {e}"),
    }
    let mut y = vec![7.0; n + 1];
    assert!(matches!(a.apply(&x, &mut y), Err(Error::DimensionMismatch { what: "y", .. })));
    assert!(y.iter().all(|&v| v == 7.0));
}
