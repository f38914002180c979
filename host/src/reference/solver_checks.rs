//! What the unit tests of the nonsymmetric solvers check alike: convergence on the
//! convection–diffusion problem judged by the true residual, agreement with CG on an SPD system, the
//! refusals every solver makes in the same order, with `x` untouched, and a caller's preconditioner.

use super::CpuPrecondition;
use super::block_jacobi::BlockInverse;
use super::cg::cg;
use super::ilu::IluFactors;
use super::problems::convection_diffusion;
use super::spmv_f64;
use crate::formats::csr::CsrRef;
use crate::iterative::{Outcome, Preconditioner, SolveError, SolverOptions, Stop};
use crate::scalar::Scalar;
use crate::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The Péclet numbers of the sweep: the Poisson matrix, then convection a little, much and far
/// stronger than diffusion at the grid's scale (`Pe h` from 0.6 to 60).
pub(crate) const PECLETS: [f64; 4] = [0.0, 10.0, 100.0, 1000.0];

/// A random generator whose seed is printed, for a failure to be replayed.
pub(crate) fn seeded(test: &str) -> ChaCha8Rng {
    let seed: u64 = rand::rng().random();
    eprintln!("{test}: seed {seed}");
    ChaCha8Rng::seed_from_u64(seed)
}

/// `|b - A x| / |b|`, all in f64.
pub(crate) fn true_residual<T: Scalar>(a: CsrRef<'_, T>, b: &[T], x: &[T]) -> f64 {
    let ax = spmv_f64(T::from_f64(1.0), a, x, T::ZERO, b).unwrap();
    let rr: f64 = ax.iter().zip(b).map(|(ax, b)| (b.to_f64() - ax).powi(2)).sum();
    let bb: f64 = b.iter().map(|b| b.to_f64().powi(2)).sum();
    (rr / bb).sqrt()
}

/// Solves the `nx × nx` convection–diffusion system for every Péclet number of [`PECLETS`] (or those
/// `peclets` keeps) and both preconditioners, from `x = 0` with a random `b`, and asserts that it
/// converges within `max_iterations` with a true residual within 10 times `rel_tol`. Returns the
/// iteration counts.
pub(crate) fn check_convection_diffusion<T: Scalar>(
    rng: &mut impl Rng,
    nx: usize,
    peclets: impl Fn(f64) -> bool,
    rel_tol: f64,
    max_iterations: usize,
    solve: impl Fn(CsrRef<'_, T>, &[T], &mut [T], &SolverOptions) -> Result<Outcome>,
) -> Vec<usize> {
    let mut counts = vec![];
    for pe in PECLETS.into_iter().filter(|&pe| peclets(pe)) {
        let m = convection_diffusion::<T>(nx, nx, pe).unwrap();
        let (o, c, v) = m.csr_data();
        let a = CsrRef::try_new(m.nrows(), m.ncols(), o, c, v).unwrap();
        let b: Vec<T> = (0..a.nrows()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
        for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
            let options = SolverOptions { rel_tol, max_iterations, preconditioner };
            let mut x = vec![T::ZERO; a.nrows()];
            let out = solve(a, &b, &mut x, &options).unwrap();
            let what = format!("{} Pe {pe} {preconditioner:?}", T::NAME);
            assert_eq!(out.stop, Stop::Converged, "{what}: {out:?}");
            assert!(out.relative_residual <= rel_tol * (1.0 + 1e-6), "{what}: {out:?}");
            let true_residual = true_residual(a, &b, &x);
            assert!(true_residual <= 10.0 * rel_tol, "{what}: true residual {true_residual}, {out:?}");
            counts.push(out.iterations);
        }
    }
    counts
}

/// `solve` and CG find the same solution of a Poisson system (SPD) with a random `b`, in f64 to a
/// relative residual of 1e-12: within the 1e-12 times the condition number (about 50) the two
/// tolerances allow.
pub(crate) fn check_agrees_with_cg(
    rng: &mut impl Rng,
    solve: impl Fn(CsrRef<'_, f64>, &[f64], &mut [f64], &SolverOptions) -> Result<Outcome>,
) {
    let m = convection_diffusion::<f64>(12, 9, 0.0).unwrap();
    let (o, c, v) = m.csr_data();
    let a = CsrRef::try_new(m.nrows(), m.ncols(), o, c, v).unwrap();
    let b: Vec<f64> = (0..a.nrows()).map(|_| rng.random_range(-1.0..1.0)).collect();
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let options = SolverOptions { rel_tol: 1e-12, max_iterations: 2000, preconditioner };
        let (mut x, mut x_cg) = (vec![0.0; a.nrows()], vec![0.0; a.nrows()]);
        assert_eq!(solve(a, &b, &mut x, &options).unwrap().stop, Stop::Converged);
        assert_eq!(cg(&a, &b, &mut x_cg, &options).unwrap().stop, Stop::Converged);
        let norm = x_cg.iter().map(|v| v * v).sum::<f64>().sqrt();
        let diff = x.iter().zip(&x_cg).map(|(x, y)| (x - y).powi(2)).sum::<f64>().sqrt();
        assert!(diff <= 1e-10 * norm, "{preconditioner:?}: |x - x_cg| = {diff}, |x_cg| = {norm}");
    }
}

/// The refusals of a solver, in their order (options, a square matrix, the lengths of `b` and `x`,
/// Jacobi's diagonal), each leaving `x` as it was.
pub(crate) fn check_refusals(
    solve: impl Fn(CsrRef<'_, f64>, &[f64], &mut [f64], &SolverOptions) -> Result<Outcome>,
) {
    let square = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0, 1.0]).unwrap();
    let wide = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
    let good = SolverOptions { rel_tol: 1e-8, max_iterations: 10, preconditioner: Preconditioner::None };
    let mut x = [7.0; 3];
    for rel_tol in [f64::NAN, -1e-6, 1.5] {
        // On a matrix that is not square and a wrong b: the options come first.
        let e = solve(wide, &[1.0; 1], &mut x, &SolverOptions { rel_tol, ..good }).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::InvalidTolerance { .. })), "{rel_tol}: {e}");
    }
    let endless = SolverOptions { max_iterations: usize::MAX, ..good };
    let e = solve(wide, &[1.0; 1], &mut x, &endless).unwrap_err();
    assert!(matches!(e, Error::TooLarge { what: "the iteration limit", .. }), "{e}");
    let e = solve(wide, &[1.0; 1], &mut x, &good).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::NotSquare { rows: 2, cols: 3 })), "{e}");
    let e = solve(square, &[1.0; 1], &mut x[..2], &good).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "b", expected: 2, got: 1 }), "{e}");
    let e = solve(square, &[1.0; 2], &mut x, &good).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "x", expected: 2, got: 3 }), "{e}");
    // Row 1 has no diagonal entry.
    let jacobi = SolverOptions { preconditioner: Preconditioner::Jacobi, ..good };
    let e = solve(square, &[1.0; 2], &mut x[..2], &jacobi).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::SingularDiagonal { row: 1, value: 0.0 })), "{e}");
    // A subnormal diagonal entry: non-zero and finite, but its inverse is not.
    let tiny = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1e-310, 1.0]).unwrap();
    let e = solve(tiny, &[1.0; 2], &mut x[..2], &jacobi).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::SingularDiagonal { row: 0, .. })), "{e}");
    assert_eq!(x, [7.0; 3]);
}

/// A solver's `_with_preconditioner` form (`with`) against its Jacobi form (`jacobi`, options with
/// `Preconditioner::Jacobi`): block-Jacobi of blocks of 1 is Jacobi, so the two solves agree (equal
/// values, up to the sign of a zero); ILU(0), on a convection–diffusion problem, converges to the true residual in fewer
/// iterations than Jacobi; refused with `x` untouched for the caller's preconditioner with Jacobi
/// in the options and for one of another order.
pub(crate) fn check_callers_preconditioner(
    jacobi: impl Fn(CsrRef<'_, f64>, &[f64], &mut [f64], &SolverOptions) -> Result<Outcome>,
    with: impl Fn(
        CsrRef<'_, f64>,
        &[f64],
        &mut [f64],
        &SolverOptions,
        &dyn CpuPrecondition<f64>,
    ) -> Result<Outcome>,
) {
    let matrix = convection_diffusion::<f64>(24, 20, 50.0).unwrap();
    let a = CsrRef::from(&matrix);
    let n = a.nrows();
    let b: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
    let plain = SolverOptions { rel_tol: 1e-10, max_iterations: 5_000, preconditioner: Preconditioner::None };
    let with_jacobi = SolverOptions { preconditioner: Preconditioner::Jacobi, ..plain };
    let (mut x1, mut x2) = (vec![0.0; n], vec![0.0; n]);
    let point = jacobi(a, &b, &mut x1, &with_jacobi).unwrap();
    let blocks = BlockInverse::new(a, 1).unwrap();
    assert_eq!(with(a, &b, &mut x2, &plain, &blocks).unwrap(), point);
    assert_eq!(x1, x2);
    let ilu = IluFactors::new(a).unwrap();
    let mut x = vec![0.0; n];
    let out = with(a, &b, &mut x, &plain, &ilu).unwrap();
    assert_eq!(out.stop, Stop::Converged, "{out:?}");
    assert!(out.iterations < point.iterations, "ILU(0) {out:?} against Jacobi {point:?}");
    assert!(true_residual(a, &b, &x) <= 1e-9, "{}", true_residual(a, &b, &x));
    let mut untouched = vec![5.0; n];
    let e = with(a, &b, &mut untouched, &with_jacobi, &ilu).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    let smaller = convection_diffusion::<f64>(24, 19, 50.0).unwrap();
    let other = IluFactors::new(CsrRef::from(&smaller)).unwrap();
    let e = with(a, &b, &mut untouched, &plain, &other).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "the preconditioner", .. }), "{e:?}");
    assert_eq!(untouched, vec![5.0; n]);
}
