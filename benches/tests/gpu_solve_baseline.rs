//! The solver study's baseline (cuSPARSE + cuBLAS, `spmv_bench::solve_baseline`) against the CPU
//! oracles it follows (`gpu_spmv::reference::{bicgstab, gmres}`) on small convection-diffusion
//! systems, diffusion- to convection-dominated, plain and Jacobi, in f32 and f64: the same end, the
//! iteration counts within the study's tolerance, the true residual at the tolerance, the same
//! solution; and a breakdown reported as the oracle names it. Without a GPU the test says why it
//! skips (see `skip.rs`).

#[path = "../../host/tests/common/skip.rs"]
#[allow(dead_code)] // the helpers of every GPU test; this one uses a part
mod skip;

use gpu_spmv::reference::bicgstab::bicgstab;
use gpu_spmv::reference::gmres::gmres;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::reference::{LinearOperator, spmv_f64};
use gpu_spmv::solve::{Preconditioner, SolverOptions, Stop};
use gpu_spmv::{CsrRef, DeviceVector, Gpu, Scalar};
use rand::{Rng, SeedableRng};
use spmv_bench::cublas::{BlasScalar, blas};
use spmv_bench::cusparse::{Algorithm, Handle};
use spmv_bench::solve_baseline::{BaselineBicgstab, BaselineGmres, End, Method};
use spmv_bench::solve_study::iteration_tolerance;

/// `|b - A x| / |b|` in f64.
fn true_residual<T: Scalar>(a: CsrRef<'_, T>, b: &[T], x: &[T]) -> f64 {
    let ax = spmv_f64(T::from_f64(1.0), a, x, T::ZERO, &vec![T::ZERO; x.len()]).unwrap();
    let (rr, bb) = ax
        .iter()
        .zip(b)
        .fold((0.0, 0.0), |(rr, bb), (&ax, b)| (rr + (b.to_f64() - ax).powi(2), bb + b.to_f64().powi(2)));
    (rr / bb).sqrt()
}

/// The baseline's end and solution.
fn baseline<T: BlasScalar>(
    gpu: &Gpu,
    a: &gpu_spmv::DeviceCsr<T>,
    method: Method,
    options: SolverOptions,
    diagonal: &[T],
    b: &DeviceVector<T>,
) -> (End, Vec<T>) {
    let (sparse, blas) = (Handle::new(gpu).unwrap(), blas(gpu).unwrap());
    let x0 = gpu.zeros::<T>(a.nrows()).unwrap();
    let alg = Algorithm::CsrAlg1;
    match method {
        Method::Bicgstab => {
            let mut s = BaselineBicgstab::new(gpu, &sparse, &blas, alg, a, options, diagonal).unwrap();
            let end = s.solve(b, &x0).unwrap();
            (end, s.x().to_host(gpu).unwrap())
        }
        Method::Gmres(m) => {
            let mut s = BaselineGmres::new(gpu, &sparse, &blas, alg, a, options, m, diagonal).unwrap();
            let end = s.solve(b, &x0).unwrap();
            (end, s.x().to_host(gpu).unwrap())
        }
    }
}

fn agree<T: BlasScalar>(gpu: &Gpu, rng: &mut impl Rng, rel_tol: f64) {
    for peclet in [0.0, 100.0, 1000.0] {
        let a = convection_diffusion::<T>(23, 19, peclet).unwrap();
        let view = CsrRef::from(&a);
        let diagonal = view.diagonal();
        let b: Vec<T> = (0..a.nrows()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
        let (da, db) = (gpu.upload_csr(&a).unwrap(), gpu.upload_vector(&b).unwrap());
        for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
            for method in [Method::Bicgstab, Method::Gmres(30), Method::Gmres(7)] {
                let what = format!("{} Pe {peclet} {preconditioner:?} {}", T::NAME, method.name());
                let options = SolverOptions { rel_tol, max_iterations: 4000, preconditioner };
                let mut x_cpu = vec![T::ZERO; a.nrows()];
                let cpu = match method {
                    Method::Bicgstab => bicgstab(&view, &b, &mut x_cpu, &options),
                    Method::Gmres(m) => gmres(&view, &b, &mut x_cpu, &options, m),
                };
                let cpu = End::of(cpu).unwrap();
                let (end, x) = baseline(gpu, &da, method, options, &diagonal, &db);
                let (End::Stopped(cpu), End::Stopped(out)) = (cpu, end) else {
                    panic!("{what}: CPU {cpu:?}, baseline {end:?}");
                };
                assert_eq!(
                    (cpu.stop, out.stop),
                    (Stop::Converged, Stop::Converged),
                    "{what}: {cpu:?} {out:?}"
                );
                let tolerance = iteration_tolerance(&method.name(), cpu.iterations);
                assert!(
                    out.iterations.abs_diff(cpu.iterations) <= tolerance,
                    "{what}: {out:?} vs CPU {cpu:?}"
                );
                let truth = true_residual(view, &b, &x);
                let bound = (10.0 * rel_tol).max(100.0 * T::EPSILON);
                assert!(truth <= bound, "{what}: true residual {truth:e} over {bound:e}");
                let norm = x_cpu.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt();
                let diff =
                    x.iter().zip(&x_cpu).map(|(u, v)| (u.to_f64() - v.to_f64()).powi(2)).sum::<f64>().sqrt();
                assert!(diff <= 1e3 * bound * norm, "{what}: |x - x_cpu| / |x_cpu| = {:e}", diff / norm);
                println!(
                    "{what}: baseline {} CPU {} iterations, true residual {truth:.2e}",
                    out.iterations, cpu.iterations
                );
            }
        }
    }
}

#[test]
fn gpu_solve_baseline_agrees_with_the_oracles() {
    let test = "gpu_solve_baseline_agrees_with_the_oracles";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let seed = std::env::var("SPMV_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("{test}: seed {seed} (SPMV_TEST_SEED replays it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    agree::<f32>(&gpu, &mut rng, 1e-5);
    agree::<f64>(&gpu, &mut rng, 1e-10);
}

/// Breakdowns end a solve as the oracles name them: BiCGSTAB on a skew-symmetric matrix (`r̂ᵀA r̂ =
/// 0` at once), GMRES with `b` in the null space of a singular diagonal.
#[test]
fn gpu_solve_baseline_breaks_down_as_the_oracles() {
    let test = "gpu_solve_baseline_breaks_down_as_the_oracles";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let options = SolverOptions { rel_tol: 1e-10, max_iterations: 10, preconditioner: Preconditioner::None };
    let cases = [
        (Method::Bicgstab, [0usize, 1, 2], [1u32, 0], [1.0f64, -1.0], "r̂ᵀv"),
        (Method::Gmres(5), [0, 1, 2], [0, 1], [0.0, 1.0], "H[j][j]"),
    ];
    for (method, offsets, cols, values, what) in cases {
        let a = nalgebra_sparse::CsrMatrix::try_from_csr_data(
            2,
            2,
            offsets.to_vec(),
            cols.iter().map(|&c| c as usize).collect(),
            values.to_vec(),
        )
        .unwrap();
        let b = [1.0, if method == Method::Bicgstab { 1.0 } else { 0.0 }];
        let mut x = [0.0; 2];
        let view = CsrRef::from(&a);
        let cpu = match method {
            Method::Bicgstab => bicgstab(&view, &b, &mut x, &options),
            Method::Gmres(m) => gmres(&view, &b, &mut x, &options, m),
        };
        let cpu = End::of(cpu).unwrap();
        let (da, db) = (gpu.upload_csr(&a).unwrap(), gpu.upload_vector(&b).unwrap());
        let (end, _) = baseline(&gpu, &da, method, options, &[1.0; 2], &db);
        assert!(matches!(end, End::Breakdown { what: w, iteration: 0, .. } if w == what), "{end:?}");
        assert_eq!(end, cpu, "{}", method.name());
    }
}
