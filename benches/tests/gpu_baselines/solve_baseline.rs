//! The solver study's baseline (cuSPARSE + cuBLAS, `spmv_bench::solve_baseline`) against the CPU
//! oracles it follows (`gpu_spmv::reference::{bicgstab, gmres}`) on small convection-diffusion
//! systems, diffusion- to convection-dominated, plain, Jacobi and ILU(0) (cuSPARSE's `csrilu02`
//! applied by SpSV, against the oracles preconditioned by the CPU factors, `IluFactors`), in f32 and
//! f64: the same end, the iteration counts within the study's tolerance, the true residual at the
//! tolerance, the same solution; a breakdown reported as the oracle names it; and the ILU(0)
//! baseline's refusals. Without a GPU the test says why it skips (see `skip.rs`).

use crate::skip;
use gpu_spmv::reference::bicgstab::{bicgstab, bicgstab_with_preconditioner};
use gpu_spmv::reference::gmres::{gmres, gmres_with_preconditioner};
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::reference::{LinearOperator, spmv_f64};
use gpu_spmv::solve::{Outcome, Preconditioner, SolverOptions, Stop};
use gpu_spmv::{CsrRef, DeviceCsr, DeviceVector, Gpu, Scalar};
use rand::{Rng, SeedableRng};
use spmv_bench::cublas::{BlasScalar, blas};
use spmv_bench::cusparse::{Algorithm, Handle, ZeroPivot};
use spmv_bench::solve_baseline::{BaselineBicgstab, BaselineGmres, BaselineIlu0, End, Method};
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

/// The baseline's end and solution preconditioned by cuSPARSE's ILU(0) of `a`.
fn baseline_ilu0<T: BlasScalar>(
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    method: Method,
    options: SolverOptions,
    b: &DeviceVector<T>,
) -> (End, Vec<T>) {
    let (sparse, blas) = (Handle::new(gpu).unwrap(), blas(gpu).unwrap());
    let x0 = gpu.zeros::<T>(a.nrows()).unwrap();
    let alg = Algorithm::CsrAlg1;
    let ilu = BaselineIlu0::new(gpu, &sparse, a).unwrap();
    match method {
        Method::Bicgstab => {
            let mut s = BaselineBicgstab::with_ilu0(gpu, &sparse, &blas, alg, a, options, ilu).unwrap();
            let end = s.solve(b, &x0).unwrap();
            (end, s.x().to_host(gpu).unwrap())
        }
        Method::Gmres(m) => {
            let mut s = BaselineGmres::with_ilu0(gpu, &sparse, &blas, alg, a, options, m, ilu).unwrap();
            let end = s.solve(b, &x0).unwrap();
            (end, s.x().to_host(gpu).unwrap())
        }
    }
}

/// Asserts that the baseline's `end` and `x` agree with the oracle's `cpu` and `x_cpu` on `view x =
/// b`: both converged, the iteration counts within the study's tolerance, the baseline's true
/// residual within 10 times `rel_tol` (or 100 epsilons), and the two solutions close. Returns both
/// counts.
#[allow(clippy::too_many_arguments)]
fn assert_agrees<T: Scalar>(
    what: &str,
    method: Method,
    rel_tol: f64,
    view: CsrRef<'_, T>,
    b: &[T],
    (cpu, x_cpu): (gpu_spmv::Result<Outcome>, &[T]),
    (end, x): (End, Vec<T>),
) -> (usize, usize) {
    let cpu = End::of(cpu).unwrap();
    let (End::Stopped(cpu), End::Stopped(out)) = (cpu, end) else {
        panic!("{what}: CPU {cpu:?}, baseline {end:?}");
    };
    assert_eq!((cpu.stop, out.stop), (Stop::Converged, Stop::Converged), "{what}: {cpu:?} {out:?}");
    let tolerance = iteration_tolerance(&method.name(), cpu.iterations);
    assert!(out.iterations.abs_diff(cpu.iterations) <= tolerance, "{what}: {out:?} vs CPU {cpu:?}");
    let truth = true_residual(view, b, &x);
    let bound = (10.0 * rel_tol).max(100.0 * T::EPSILON);
    assert!(truth <= bound, "{what}: true residual {truth:e} over {bound:e}");
    let norm = x_cpu.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt();
    let diff = x.iter().zip(x_cpu).map(|(u, v)| (u.to_f64() - v.to_f64()).powi(2)).sum::<f64>().sqrt();
    assert!(diff <= 1e3 * bound * norm, "{what}: |x - x_cpu| / |x_cpu| = {:e}", diff / norm);
    println!(
        "{what}: baseline {} CPU {} iterations, true residual {truth:.2e}",
        out.iterations, cpu.iterations
    );
    (out.iterations, cpu.iterations)
}

const METHODS: [Method; 3] = [Method::Bicgstab, Method::Gmres(30), Method::Gmres(7)];

fn agree<T: BlasScalar>(gpu: &Gpu, rng: &mut impl Rng, rel_tol: f64) {
    for peclet in [0.0, 100.0, 1000.0] {
        let a = convection_diffusion::<T>(23, 19, peclet).unwrap();
        let view = CsrRef::from(&a);
        let diagonal = view.diagonal();
        let b: Vec<T> = (0..a.nrows()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
        let (da, db) = (gpu.upload_csr(&a).unwrap(), gpu.upload_vector(&b).unwrap());
        for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
            for method in METHODS {
                let what = format!("{} Pe {peclet} {preconditioner:?} {}", T::NAME, method.name());
                let options = SolverOptions { rel_tol, max_iterations: 4000, preconditioner };
                let mut x_cpu = vec![T::ZERO; a.nrows()];
                let cpu = match method {
                    Method::Bicgstab => bicgstab(&view, &b, &mut x_cpu, &options),
                    Method::Gmres(m) => gmres(&view, &b, &mut x_cpu, &options, m),
                };
                let baseline = baseline(gpu, &da, method, options, &diagonal, &db);
                assert_agrees(&what, method, rel_tol, view, &b, (cpu, &x_cpu), baseline);
            }
        }
    }
}

/// The ILU(0) baseline against the oracles right-preconditioned by the CPU's ILU(0) factors of the
/// same matrix, on `grids` of sizes that are no multiple of anything; ILU(0) takes fewer iterations
/// than none wherever none converges or stops at the limit (the preconditioner is applied, not
/// skipped).
fn agree_ilu0<T: BlasScalar>(gpu: &Gpu, rng: &mut impl Rng, rel_tol: f64, grids: &[(usize, usize)]) {
    for &(nx, ny) in grids {
        for peclet in [0.0, 100.0, 1000.0] {
            let a = convection_diffusion::<T>(nx, ny, peclet).unwrap();
            let view = CsrRef::from(&a);
            let factors = IluFactors::new(view).unwrap();
            let b: Vec<T> = (0..a.nrows()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
            let (da, db) = (gpu.upload_csr(&a).unwrap(), gpu.upload_vector(&b).unwrap());
            for method in METHODS {
                let what = format!("{} {nx}x{ny} Pe {peclet} ILU(0) {}", T::NAME, method.name());
                let options =
                    SolverOptions { rel_tol, max_iterations: 4000, preconditioner: Preconditioner::None };
                let mut x_cpu = vec![T::ZERO; a.nrows()];
                let cpu = match method {
                    Method::Bicgstab => {
                        bicgstab_with_preconditioner(&view, &b, &mut x_cpu, &options, &factors)
                    }
                    Method::Gmres(m) => {
                        gmres_with_preconditioner(&view, &b, &mut x_cpu, &options, m, &factors)
                    }
                };
                let with_ilu = baseline_ilu0(gpu, &da, method, options, &db);
                let (ilu, _) = assert_agrees(&what, method, rel_tol, view, &b, (cpu, &x_cpu), with_ilu);
                if let (End::Stopped(plain), _) = baseline(gpu, &da, method, options, &view.diagonal(), &db) {
                    assert!(ilu < plain.iterations, "{what}: {ilu} iterations, {plain:?} without");
                }
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

#[test]
fn gpu_solve_baseline_ilu0_agrees_with_the_oracles() {
    let test = "gpu_solve_baseline_ilu0_agrees_with_the_oracles";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let seed = std::env::var("SPMV_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("{test}: seed {seed} (SPMV_TEST_SEED replays it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // f32 on the grid where the plain and Jacobi solves reach 1e-5 (above): a larger one's condition
    // number brings f32's attainable accuracy near that tolerance.
    agree_ilu0::<f32>(&gpu, &mut rng, 1e-5, &[(23, 19)]);
    agree_ilu0::<f64>(&gpu, &mut rng, 1e-10, &[(23, 19), (37, 41)]);
}

/// The ILU(0) baseline refuses options that name a preconditioner of their own and the factors of
/// another matrix, and reports csrilu02's zero pivot naming its row.
#[test]
fn gpu_solve_baseline_ilu0_refusals() {
    let test = "gpu_solve_baseline_ilu0_refusals";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let (sparse, blas) = (Handle::new(&gpu).unwrap(), blas(&gpu).unwrap());
    let alg = Algorithm::CsrAlg1;
    let a = gpu.upload_csr(&convection_diffusion::<f64>(5, 4, 10.0).unwrap()).unwrap();
    let other = gpu.upload_csr(&convection_diffusion::<f64>(5, 4, 10.0).unwrap()).unwrap();
    let jacobi = SolverOptions { rel_tol: 1e-8, max_iterations: 10, preconditioner: Preconditioner::Jacobi };
    let plain = SolverOptions { preconditioner: Preconditioner::None, ..jacobi };
    let message = |e: anyhow::Error| format!("{e:#}");
    let ilu = || BaselineIlu0::new(&gpu, &sparse, &a).unwrap();
    let e =
        BaselineBicgstab::with_ilu0(&gpu, &sparse, &blas, alg, &a, jacobi, ilu()).map(|_| ()).unwrap_err();
    assert!(message(e).contains("must name no preconditioner"));
    let e =
        BaselineGmres::with_ilu0(&gpu, &sparse, &blas, alg, &a, jacobi, 30, ilu()).map(|_| ()).unwrap_err();
    assert!(message(e).contains("must name no preconditioner"));
    let e =
        BaselineBicgstab::with_ilu0(&gpu, &sparse, &blas, alg, &other, plain, ilu()).map(|_| ()).unwrap_err();
    assert!(message(e).contains("another matrix"));
    let e = BaselineGmres::with_ilu0(&gpu, &sparse, &blas, alg, &other, plain, 30, ilu())
        .map(|_| ())
        .unwrap_err();
    assert!(message(e).contains("another matrix"));
    // [[1, 1], [1, 1]]: u_11 = 1 - 1·1 = 0.
    let singular = gpu.upload_csr_parts(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 1.0, 1.0, 1.0]).unwrap();
    let e = BaselineIlu0::new(&gpu, &sparse, &singular).unwrap_err();
    assert_eq!(e.downcast_ref::<ZeroPivot>().map(|z| z.row), Some(1), "{e:#}");
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
