//! The CG study's baseline (cuSPARSE + cuBLAS, `spmv_bench::cg_baseline`) against the library's
//! solver on a small FEM problem: the same iteration count within the study's tolerance, and the same
//! solution. Without a GPU the test says why it skips (see `skip.rs`).

use crate::skip;
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::solve::Cg;
use gpu_spmv::solve::{Preconditioner, SolverOptions, Stop};
use gpu_spmv::{CsrRef, Gpu, Kernel};
use spmv_bench::cg_baseline::BaselineCg;
use spmv_bench::cg_study::iteration_tolerance;
use spmv_bench::cublas::{BlasScalar, blas};
use spmv_bench::cusparse::{Algorithm, Handle};
use spmv_bench::fem::Poisson;
use spmv_bench::precision::Precision;

fn agree<T: BlasScalar>(gpu: &Gpu, preconditioner: Preconditioner) {
    let problem = Poisson::new(2, 20);
    let a = problem.csr::<T>();
    let b: Vec<T> = problem.load().into_iter().map(T::from_f64).collect();
    let diagonal = CsrRef::from(&a).diagonal();
    let options = SolverOptions { rel_tol: 1e-5, max_iterations: 5000, preconditioner };
    let (da, db) = (gpu.upload_csr(&a).unwrap(), gpu.upload_vector(&b).unwrap());

    let mut ours = Cg::new(gpu.plan(&da, Kernel::Auto).unwrap(), options, Some(&diagonal)).unwrap();
    let mut x = gpu.zeros::<T>(a.nrows()).unwrap();
    let expected = ours.solve(&db, &mut x).unwrap();

    let (sparse, blas) = (Handle::new(gpu).unwrap(), blas(gpu).unwrap());
    for alg in [Algorithm::CsrAlg1, Algorithm::CsrAlg2] {
        let mut baseline = BaselineCg::new(gpu, &sparse, &blas, alg, &da, options, &diagonal).unwrap();
        let outcome = baseline.solve(&db, &vec![T::ZERO; a.nrows()]).unwrap();
        let tolerance = iteration_tolerance(Precision::of::<T>(), expected.iterations);
        eprintln!("{} {preconditioner:?} {}: ours {expected:?}, baseline {outcome:?}", T::NAME, alg.name());
        assert_eq!(outcome.stop, Stop::Converged);
        assert!(outcome.iterations.abs_diff(expected.iterations) <= tolerance, "{outcome:?} vs {expected:?}");
        let (ours_x, base_x) = (x.to_host(gpu).unwrap(), baseline.x().to_host(gpu).unwrap());
        let scale = ours_x.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
        let diff =
            ours_x.iter().zip(&base_x).fold(0.0f64, |m, (u, v)| m.max((u.to_f64() - v.to_f64()).abs()));
        // Both stop at a relative residual of 1e-5 after nearly the same iterations; on this matrix
        // (condition number ~1e3) their errors, and so their difference, stay below 1e-3.
        assert!(
            diff <= 1e-3 * scale,
            "{} {preconditioner:?}: solutions differ by {diff} (scale {scale})",
            T::NAME
        );
    }
}

#[test]
fn gpu_baseline_cg_agrees_with_ours() {
    let Some(gpu) = skip::gpu_or_skip("gpu_baseline_cg_agrees_with_ours") else { return };
    for preconditioner in [Preconditioner::Jacobi, Preconditioner::None] {
        agree::<f32>(&gpu, preconditioner);
        agree::<f64>(&gpu, preconditioner);
    }
}
