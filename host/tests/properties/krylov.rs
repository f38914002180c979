//! The nonsymmetric solvers' CPU oracles (`reference::bicgstab`, `reference::gmres`) and the
//! convection–diffusion generator (`reference::problems`) on any input: refused as documented, in
//! the documented order, with `x` untouched; otherwise a solve that stops within its limit, never
//! with a NaN residual, converged only below its tolerance and with a finite `x`, or a breakdown
//! that names a scalar of the recurrence. Their `_with_preconditioner` forms, given block-Jacobi of
//! blocks of 1, solve as Jacobi does, bit for bit.

use super::min_normal;
use gpu_spmv::reference::bicgstab::{bicgstab, bicgstab_with_preconditioner};
use gpu_spmv::reference::block_jacobi::BlockInverse;
use gpu_spmv::reference::gmres::{MAX_RESTART, gmres, gmres_with_preconditioner};
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::reference::{CpuPrecondition, LinearOperator};
use gpu_spmv::solve::{Outcome, Preconditioner, SolveError, SolverOptions, Stop};
use gpu_spmv::{CsrRef, Error, Result, Scalar};

/// Which solver a property runs.
#[derive(Debug, Clone, Copy)]
pub enum Krylov {
    Bicgstab,
    Gmres { restart: usize },
}

impl Krylov {
    pub fn solve<T: Scalar>(
        self,
        a: CsrRef<'_, T>,
        b: &[T],
        x: &mut [T],
        options: &SolverOptions,
    ) -> Result<Outcome> {
        match self {
            Krylov::Bicgstab => bicgstab(&a, b, x, options),
            Krylov::Gmres { restart } => gmres(&a, b, x, options, restart),
        }
    }

    /// The solver's `_with_preconditioner` form.
    pub fn solve_with<T: Scalar>(
        self,
        a: CsrRef<'_, T>,
        b: &[T],
        x: &mut [T],
        options: &SolverOptions,
        m: &dyn CpuPrecondition<T>,
    ) -> Result<Outcome> {
        match self {
            Krylov::Bicgstab => bicgstab_with_preconditioner(&a, b, x, options, m),
            Krylov::Gmres { restart } => gmres_with_preconditioner(&a, b, x, options, restart, m),
        }
    }

    /// The scalars whose breakdown the solver reports.
    fn breakdowns(self) -> &'static [&'static str] {
        match self {
            Krylov::Bicgstab => &["rᵀr", "r̂ᵀr", "r̂ᵀv", "tᵀt", "ω"],
            Krylov::Gmres { .. } => &["rᵀr", "‖w‖²", "H[j][j]"],
        }
    }
}

/// The refusal the documentation promises for these inputs, in its order: options, shape, lengths,
/// GMRES's restart length, Jacobi's diagonal. `None` for inputs a solve must accept.
fn expected_refusal<T: Scalar>(
    solver: Krylov,
    a: CsrRef<'_, T>,
    b: usize,
    x: usize,
    options: &SolverOptions,
) -> Option<String> {
    if !(0.0..=1.0).contains(&options.rel_tol) {
        return Some("InvalidTolerance".into());
    }
    if options.max_iterations > u32::MAX as usize {
        return Some("TooLarge the iteration limit".into());
    }
    let n = a.nrows();
    if a.ncols() != n {
        return Some("NotSquare".into());
    }
    if b != n {
        return Some("DimensionMismatch b".into());
    }
    if x != n {
        return Some("DimensionMismatch x".into());
    }
    if let Krylov::Gmres { restart } = solver
        && (restart == 0 || restart > MAX_RESTART)
    {
        return Some("InvalidRestart".into());
    }
    if options.preconditioner == Preconditioner::Jacobi {
        let diagonal = LinearOperator::diagonal(&a);
        if let Some(row) = diagonal.iter().position(|d| d.to_f64() == 0.0 || !d.to_f64().is_finite()) {
            return Some(format!("SingularDiagonal {row}"));
        }
    }
    None
}

/// The same words for the error a solve returned.
fn refusal(e: &Error) -> Option<String> {
    Some(match e {
        Error::Solve(SolveError::InvalidTolerance { .. }) => "InvalidTolerance".into(),
        Error::TooLarge { what, .. } => format!("TooLarge {what}"),
        Error::Solve(SolveError::NotSquare { .. }) => "NotSquare".into(),
        Error::DimensionMismatch { what, .. } => format!("DimensionMismatch {what}"),
        Error::Solve(SolveError::InvalidRestart { .. }) => "InvalidRestart".into(),
        Error::Solve(SolveError::SingularDiagonal { row, .. }) => format!("SingularDiagonal {row}"),
        _ => return None,
    })
}

/// Solves `a x = b` from `x0` and asserts what every input must give: the documented refusal with
/// `x` untouched, or an outcome within the iteration limit whose residual is a number, below the
/// tolerance (where `rel_tol² |b|²` is a normal number of `T`) with a finite `x` when converged, or a
/// breakdown of a scalar the solver names, with a reason.
pub fn check_krylov<T: Scalar>(solver: Krylov, a: CsrRef<'_, T>, b: &[T], x0: &[T], options: SolverOptions) {
    let mut x = x0.to_vec();
    let expected = expected_refusal(solver, a, b.len(), x.len(), &options);
    let result = solver.solve(a, b, &mut x, &options);
    // Block-Jacobi of blocks of 1 is Jacobi: `1 / d` rounded once, applied by one rounding; where
    // the blocks can be inverted, and the diagonal's repeated entries sum alike in `T` (Jacobi's
    // sum) and in f64 (the blocks'), the caller's-preconditioner form solves as Jacobi does, up to
    // the sign of zero (the blocks' apply is `fma(e, r, +0)`, Jacobi's `e * r`).
    if let (Preconditioner::Jacobi, Ok(blocks)) = (options.preconditioner, BlockInverse::new(a, 1))
        && diagonal_sums_agree(a)
    {
        let plain = SolverOptions { preconditioner: Preconditioner::None, ..options };
        let mut x_with = x0.to_vec();
        let with = solver.solve_with(a, b, &mut x_with, &plain, &blocks);
        assert!(same_result(&with, &result), "{solver:?}: {with:?} against {result:?}");
        let same = |p: &T, q: &T| p.to_f64().to_bits() == q.to_f64().to_bits() || p.to_f64() == q.to_f64();
        assert!(x_with.iter().zip(&x).all(|(p, q)| same(p, q)), "{solver:?}: {x_with:?} against {x:?}");
    }
    match result {
        Ok(out) => {
            assert_eq!(expected, None, "{solver:?} accepted a refused input: {out:?}");
            assert!(out.iterations <= options.max_iterations, "{solver:?}: {out:?} past {options:?}");
            assert!(!out.relative_residual.is_nan(), "{solver:?}: {out:?}");
            match out.stop {
                Stop::Converged => {
                    let bb: f64 = b.iter().map(|v| v.to_f64().powi(2)).sum();
                    let tol_rr = options.rel_tol * options.rel_tol * bb;
                    let normal = tol_rr >= 4.0 * min_normal::<T>();
                    assert!(
                        !normal || out.relative_residual <= options.rel_tol * (1.0 + 8.0 * T::EPSILON),
                        "{solver:?}: {out:?} under {options:?}"
                    );
                    assert!(x.iter().all(|v| v.to_f64().is_finite()), "{solver:?} converged to {x:?}");
                }
                Stop::MaxIterations => assert_eq!(out.iterations, options.max_iterations, "{solver:?}"),
            }
        }
        Err(Error::Solve(SolveError::Breakdown { iteration, what, why, .. })) => {
            assert_eq!(expected, None, "{solver:?} broke down on a refused input");
            assert!(solver.breakdowns().contains(&what), "{solver:?}: breakdown of {what}");
            assert!(
                iteration <= options.max_iterations && !why.is_empty(),
                "{solver:?}: {what} at {iteration}"
            );
        }
        Err(e) => {
            assert_eq!(refusal(&e), expected, "{solver:?}: {e}");
            assert!(
                x.iter().zip(x0).all(|(x, x0)| x.to_f64().to_bits() == x0.to_f64().to_bits()),
                "x written"
            );
        }
    }
}

/// Whether every row's diagonal entries sum in `T` to their f64 sum rounded to `T`.
fn diagonal_sums_agree<T: Scalar>(a: CsrRef<'_, T>) -> bool {
    let in_t = a.diagonal();
    (0..a.nrows()).all(|r| {
        let (cols, values) = a.row(r);
        let exact: f64 = cols.iter().zip(values).filter(|&(&c, _)| c == r).map(|(_, v)| v.to_f64()).sum();
        T::from_f64(exact).to_f64().to_bits() == in_t[r].to_f64().to_bits()
    })
}

/// Two solves' results alike up to the sign of zero: the same outcome, or the same refusal or
/// breakdown (its value equal as a number, or both NaN).
fn same_result(p: &Result<Outcome>, q: &Result<Outcome>) -> bool {
    match (p, q) {
        (Ok(p), Ok(q)) => p == q,
        (
            Err(Error::Solve(SolveError::Breakdown { iteration: i, what: w, value: v, why: y })),
            Err(Error::Solve(SolveError::Breakdown { iteration: j, what: x, value: u, why: z })),
        ) => (i, w, y) == (j, x, z) && (v == u || (v.is_nan() && u.is_nan())),
        (Err(p), Err(q)) => format!("{p:?}") == format!("{q:?}"),
        _ => false,
    }
}

/// The convection–diffusion generator on any grid and Péclet number: refused with
/// `InvalidNumber` for a Péclet number negative, not finite or too large for `T`, with `TooLarge`
/// for a grid past 32-bit indices, else an M-matrix with the documented pattern, which both solvers
/// solve when it is small (at most 400 unknowns, no grid line over 100) and `Pe <= 1000`. The caller keeps accepted grids small (a grid is
/// allocated as asked).
pub fn check_convection_diffusion<T: Scalar>(nx: usize, ny: usize, peclet: f64) {
    let unknowns = nx.checked_mul(ny).filter(|&n| n <= u32::MAX as usize);
    let entries = unknowns.and_then(|n| {
        let edges =
            2 * (nx.saturating_sub(1) as u128 * ny as u128 + ny.saturating_sub(1) as u128 * nx as u128);
        u32::try_from(n as u128 + edges).ok().map(|_| (n as u128 + edges) as usize)
    });
    match convection_diffusion::<T>(nx, ny, peclet) {
        Ok(m) => {
            assert!(peclet >= 0.0 && peclet.is_finite(), "Pe {peclet} accepted");
            let n = unknowns.expect("an accepted grid fits 32 bits");
            assert_eq!((m.nrows(), m.ncols(), m.nnz()), (n, n, entries.expect("its entries too")));
            for (r, row) in m.row_iter().enumerate() {
                assert!(row.col_indices().is_sorted(), "row {r}");
                let (mut diagonal, mut off) = (0.0, 0.0);
                for (&c, v) in row.col_indices().iter().zip(row.values()) {
                    let v = v.to_f64();
                    assert!(v.is_finite(), "({r}, {c}) = {v}");
                    if c == r {
                        diagonal = v;
                    } else {
                        assert!(v <= 0.0 && (c.abs_diff(r) == 1 || c.abs_diff(r) == nx), "({r}, {c}) = {v}");
                        off -= v;
                    }
                }
                assert!(
                    diagonal > 0.0 && diagonal >= off * (1.0 - 4.0 * T::EPSILON),
                    "row {r}: {diagonal} < {off}"
                );
            }
            // The diffusion part's condition number grows as the square of the longest grid line,
            // (2 (L + 1) / π)² for a line of L unknowns, and so do the iterations a solve takes:
            // GMRES(20) on a 1 × 400 line is at 0.9% after 4000 iterations. Convergence is claimed
            // for lines of up to 100 unknowns.
            let longest = nx.max(ny);
            if n > 0 && n <= 400 && longest <= 100 && peclet <= 1000.0 {
                let (o, c, v) = m.csr_data();
                let a = CsrRef::try_new(n, n, o, c, v).unwrap();
                let b: Vec<T> = (0..n).map(|i| T::from_f64(1.0 + (i % 7) as f64)).collect();
                // A converged solve is judged on its true residual, which rounding keeps above about
                // κ ε: f32 on a 1 × 238 line stalls at 1.5e-4 (found by the `krylov` fuzz target).
                // (L + 1)² ε bounds it with room to spare.
                let longest = longest as f64 + 1.0;
                let options = SolverOptions {
                    rel_tol: (longest * longest * T::EPSILON).max(1e-4),
                    max_iterations: 4000,
                    preconditioner: Preconditioner::Jacobi,
                };
                for solver in [Krylov::Bicgstab, Krylov::Gmres { restart: 20 }] {
                    let out = solver.solve(a, &b, &mut vec![T::ZERO; n], &options).unwrap();
                    assert_eq!(out.stop, Stop::Converged, "{solver:?} on {nx} x {ny}, Pe {peclet}: {out:?}");
                }
            }
        }
        Err(Error::InvalidNumber { what: "the Péclet number", value, .. }) => {
            let diagonal_overflows = T::from_f64(peclet * 2.0).to_f64().is_infinite();
            assert!(!(peclet >= 0.0 && peclet.is_finite()) || diagonal_overflows, "Pe {peclet} refused");
            assert!(value.to_bits() == peclet.to_bits());
        }
        Err(Error::TooLarge { .. }) => {
            assert!(peclet >= 0.0 && peclet.is_finite() && entries.is_none(), "{nx} x {ny} refused");
        }
        Err(e) => panic!("unexpected refusal {e}"),
    }
}
