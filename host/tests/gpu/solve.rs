//! The local matrix approach and conjugate gradients on the GPU against the CPU: LMA products
//! (atomic and coloured, Q1 to Q4 elements) against the assembled CSR product and the CPU LMA
//! product, CG and Jacobi CG against the CPU CG of `reference::cg` (iterations and solution) on
//! every device format the study uses, a non-SPD matrix refused with the typed breakdown, and
//! iterations captured into a CUDA graph and replayed. Without a GPU these tests print why and pass,
//! unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{
    Csr, Recurrence, assert_counts_agree, five_point, gpu_or_skip, random_vector, rng, tolerance,
};
use gpu_spmv::formats::{Ell, Lma, NO_NODE, Sell};
use gpu_spmv::reference::{LinearOperator, cg::cg};
use gpu_spmv::reference::{error_scale, max_relative_error, spmv_f64};
use gpu_spmv::solve::Cg;
use gpu_spmv::solve::{Preconditioner, SolveError, SolverOptions, Stop};
use gpu_spmv::{CsrRef, DeviceMatrix, Error, Gpu, Kernel, LmaKernel, Scalar};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A mesh of `nx` x `ny` quadrilaterals of degree `k` (`(k + 1)^2` nodes each) on a grid of
/// `(k nx + 1) x (k ny + 1)` nodes, the boundary nodes Dirichlet ([`NO_NODE`]), with random
/// symmetric positive definite element matrices `G Gᵀ + I / 10`: an SPD operator on the interior.
fn mesh<T: Scalar>(rng: &mut ChaCha8Rng, nx: usize, ny: usize, k: usize) -> Lma<T> {
    let (gx, gy) = (k * nx + 1, k * ny + 1);
    let interior = |i: usize, j: usize| i > 0 && j > 0 && i + 1 < gx && j + 1 < gy;
    let number = |i: usize, j: usize| if interior(i, j) { (j - 1) * (gx - 2) + (i - 1) } else { NO_NODE };
    let m = (k + 1) * (k + 1);
    let (mut nodes, mut values) = (Vec::new(), Vec::new());
    for ey in 0..ny {
        for ex in 0..nx {
            for b in 0..=k {
                for a in 0..=k {
                    nodes.push(number(k * ex + a, k * ey + b));
                }
            }
            let g: Vec<f64> = (0..m * m).map(|_| rng.random_range(-1.0..1.0)).collect();
            for i in 0..m {
                for j in 0..m {
                    let ggt: f64 = (0..m).map(|l| g[i * m + l] * g[j * m + l]).sum();
                    values.push(T::from_f64(ggt / m as f64 + if i == j { 0.1 } else { 0.0 }));
                }
            }
        }
    }
    Lma::try_new((gx - 2) * (gy - 2), m, &nodes, &values).unwrap()
}

/// The LMA product, both kernels, against the CPU's LMA product and the assembled matrix's f64
/// product, for every element size the kernels exist for.
fn lma_products<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for k in 1..=4 {
        let lma = mesh::<T>(&mut rng, 37, 23, k);
        let csr = lma.to_csr();
        let da = gpu.upload_lma(&lma).unwrap();
        assert_eq!((da.nrows(), da.ncols()), (lma.node_count(), lma.node_count()));
        let x = random_vector::<T>(&mut rng, lma.node_count());
        let y0 = random_vector::<T>(&mut rng, lma.node_count());
        let dx = gpu.upload_vector(&x).unwrap();
        let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
        let view = CsrRef::from(&csr);
        let reference = spmv_f64(alpha, view, &x, beta, &y0).unwrap();
        let scale = error_scale(alpha, view, &x, beta, &y0).unwrap();
        let mut cpu = y0.clone();
        lma.spmv(alpha, &x, beta, &mut cpu).unwrap();
        for kernel in [LmaKernel::Atomic, LmaKernel::Coloured] {
            let mut dy = gpu.upload_vector(&y0).unwrap();
            gpu.spmv_with(kernel, alpha, &da, &dx, beta, &mut dy).unwrap();
            let y = dy.to_host(&gpu).unwrap();
            let err = max_relative_error(&y, &reference, &scale);
            let tol = tolerance::<T>(csr.row_offsets().windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0));
            assert!(err <= tol, "Q{k} {kernel:?}: error {err:e} over {tol:e}");
            if kernel == LmaKernel::Coloured {
                let bits = |v: &[T]| v.iter().map(|e| e.to_f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&y), bits(&cpu), "Q{k}: coloured LMA differs from the CPU's bits");
            }
        }
    }
}

#[test]
fn gpu_lma_f32() {
    lma_products::<f32>("gpu_lma_f32");
}

#[test]
fn gpu_lma_f64() {
    lma_products::<f64>("gpu_lma_f64");
}

/// The 2D 5-point Laplacian of an `n` x `n` grid with Dirichlet boundary, row and column `r` scaled
/// by `1 + r % 7` so that Jacobi matters: SPD.
fn laplacian<T: Scalar>(n: usize) -> Csr<T> {
    let s = |r: usize| 1.0 + (r % 7) as f64;
    five_point(n, |r, c| T::from_f64(if c == r { 4.0 * s(r) * s(r) } else { -s(r) * s(c) }))
}

/// Solves with `matrix` on the GPU and compares with the CPU CG on `cpu_a`: same stop, iterations
/// within a few, solutions close.
fn check_solve<T: Scalar, A: DeviceMatrix<T>>(
    gpu: &Gpu,
    what: &str,
    matrix: &A,
    kernel: A::Kernel,
    cpu_a: &impl LinearOperator<T>,
    b: &[T],
    options: SolverOptions,
) {
    let n = b.len();
    let mut x_cpu = vec![T::ZERO; n];
    let cpu = cg(cpu_a, b, &mut x_cpu, &options).unwrap();
    let diagonal = cpu_a.diagonal();
    let mut solver = Cg::new(gpu.plan(matrix, kernel).unwrap(), options, Some(&diagonal)).unwrap();
    solver.set_check_every(7);
    let db = gpu.upload_vector(b).unwrap();
    let mut dx = gpu.zeros::<T>(n).unwrap();
    let outcome = solver.solve(&db, &mut dx).unwrap();
    assert_counts_agree::<T>(Recurrence::Cg, &outcome, &cpu, what);
    assert!(outcome.relative_residual <= options.rel_tol, "{what}: {outcome:?}");
    let x = dx.to_host(gpu).unwrap();
    let norm = x_cpu.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt();
    let diff = x.iter().zip(&x_cpu).map(|(a, b)| (a.to_f64() - b.to_f64()).powi(2)).sum::<f64>().sqrt();
    let bound = 50.0 * options.rel_tol.max(T::EPSILON * 100.0);
    assert!(diff <= bound * norm, "{what}: |x - x_cpu| / |x_cpu| = {:e}", diff / norm);
}

fn solves<T: Scalar>(test: &str, rel_tol: f64) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = laplacian::<T>(61);
    let view = a.view();
    let b = random_vector::<T>(&mut rng, a.nrows);
    let csr = gpu.upload_csr_ref(view).unwrap();
    let ell = gpu.upload_ell(&Ell::try_from_csr(view).unwrap()).unwrap();
    let sell = gpu.upload_sell(&Sell::try_from_csr(view).unwrap()).unwrap();
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let options = SolverOptions { rel_tol, max_iterations: 5000, preconditioner };
        check_solve(&gpu, &format!("CSR Auto, {preconditioner:?}"), &csr, Kernel::Auto, &view, &b, options);
        let vector = Kernel::CsrVector { coop: 4, block_size: 128 };
        check_solve(&gpu, &format!("CSR vector, {preconditioner:?}"), &csr, vector, &view, &b, options);
        check_solve(&gpu, &format!("ELL, {preconditioner:?}"), &ell, (), &view, &b, options);
        check_solve(&gpu, &format!("SELL, {preconditioner:?}"), &sell, (), &view, &b, options);
    }
    let lma = mesh::<T>(&mut rng, 20, 17, 2);
    let dl = gpu.upload_lma(&lma).unwrap();
    let b = random_vector::<T>(&mut rng, lma.node_count());
    for kernel in [LmaKernel::Coloured, LmaKernel::Atomic] {
        let options = SolverOptions { rel_tol, max_iterations: 5000, preconditioner: Preconditioner::Jacobi };
        check_solve(&gpu, &format!("LMA {kernel:?}"), &dl, kernel, &lma, &b, options);
    }
}

/// A problem larger than one wave of the CG kernels: 1.1 M unknowns make `cg_blocks(n)` = 1024
/// blocks of elements, each thread taking four, and on a GPU that keeps fewer of the iteration's
/// blocks resident each block takes several. A well-conditioned symmetric 5-point operator (diagonal
/// 12, off-diagonals from -1 to -1.5):
/// a few tens of iterations, the same as the CPU's.
fn solves_beyond_one_wave<T: Scalar>(test: &str, rel_tol: f64) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = five_point::<T>(1050, |r, c| {
        T::from_f64(if r == c { 12.0 } else { -1.0 - ((r + c) % 3) as f64 / 4.0 })
    });
    let view = a.view();
    let b = random_vector::<T>(&mut rng, a.nrows);
    let csr = gpu.upload_csr_ref(view).unwrap();
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let options = SolverOptions { rel_tol, max_iterations: 500, preconditioner };
        check_solve(
            &gpu,
            &format!("1.1 M unknowns, {preconditioner:?}"),
            &csr,
            Kernel::Auto,
            &view,
            &b,
            options,
        );
    }
}

#[test]
fn gpu_cg_beyond_one_wave_f32() {
    solves_beyond_one_wave::<f32>("gpu_cg_beyond_one_wave_f32", 1e-5);
}

#[test]
fn gpu_cg_beyond_one_wave_f64() {
    solves_beyond_one_wave::<f64>("gpu_cg_beyond_one_wave_f64", 1e-10);
}

#[test]
fn gpu_cg_f32() {
    solves::<f32>("gpu_cg_f32", 1e-4);
}

#[test]
fn gpu_cg_f64() {
    solves::<f64>("gpu_cg_f64", 1e-10);
}

/// Refusals before anything runs, with `x` untouched, and a breakdown on a matrix that is not SPD.
#[test]
fn gpu_cg_errors() {
    let Some(gpu) = gpu_or_skip("gpu_cg_errors") else { return };
    let options = SolverOptions { rel_tol: 1e-8, max_iterations: 100, preconditioner: Preconditioner::None };
    let rect =
        Csr::<f64> { nrows: 2, ncols: 3, offsets: vec![0, 1, 2], cols: vec![0, 2], vals: vec![1.0, 2.0] };
    let rect = gpu.upload_csr_parts(2, 3, &rect.offsets, &rect.cols, &rect.vals).unwrap();
    let err = Cg::new(gpu.plan(&rect, Kernel::Auto).unwrap(), options, None).unwrap_err();
    assert!(matches!(err, Error::Solve(SolveError::NotSquare { rows: 2, cols: 3 })), "{err}");

    // diag(1, -1): pᵀAp = 0 for b = (1, 1).
    let indefinite = gpu.upload_csr_parts(2, 2, &[0, 1, 2], &[0, 1], &[1.0, -1.0]).unwrap();
    let jacobi = SolverOptions { preconditioner: Preconditioner::Jacobi, ..options };
    let err = Cg::new(gpu.plan(&indefinite, Kernel::Auto).unwrap(), jacobi, Some(&[1.0, -1.0])).unwrap_err();
    assert!(matches!(err, Error::Solve(SolveError::NonPositiveDiagonal { row: 1, .. })), "{err}");
    let err = Cg::new(gpu.plan(&indefinite, Kernel::Auto).unwrap(), jacobi, None).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "the diagonal", .. }), "{err}");

    let mut solver = Cg::new(gpu.plan(&indefinite, Kernel::Auto).unwrap(), options, None).unwrap();
    let b = gpu.upload_vector(&[1.0, 1.0]).unwrap();
    let mut x = gpu.upload_vector(&[0.5, 0.25]).unwrap();
    let short = gpu.upload_vector(&[1.0]).unwrap();
    let err = solver.solve(&short, &mut x).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "b", .. }), "{err}");
    assert_eq!(x.to_host(&gpu).unwrap(), [0.5, 0.25], "x touched by a refused solve");
    let mut zero = gpu.zeros::<f64>(2).unwrap();
    let err = solver.solve(&b, &mut zero).unwrap_err();
    assert!(matches!(err, Error::Solve(SolveError::Breakdown { what: "pᵀAp", .. })), "{err}");
    let x = zero.to_host(&gpu).unwrap();
    assert!(x.iter().all(|v| v.is_finite()), "a breakdown left NaN in x: {x:?}");

    // A b whose bᵀb overflows, or that holds an infinity, makes the tolerance infinite: the fused CG
    // breaks down on the residual that is not finite, as the oracle does, instead of converging.
    let identity = gpu.upload_csr_parts(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
    let mut solver = Cg::new(gpu.plan(&identity, Kernel::Auto).unwrap(), options, None).unwrap();
    for b in [[1e200, 1e200], [f64::INFINITY, 0.0]] {
        let b = gpu.upload_vector(&b).unwrap();
        let mut x = gpu.zeros::<f64>(2).unwrap();
        let err = solver.solve(&b, &mut x).unwrap_err();
        assert!(
            matches!(err, Error::Solve(SolveError::Breakdown { iteration: 0, what: "rᵀr", .. })),
            "{err}"
        );
    }

    // Order 0: converged at once, as the oracle and the other CGs have it (not "not started").
    let empty = gpu.upload_csr_parts::<f64>(0, 0, &[0], &[], &[]).unwrap();
    let mut solver = Cg::new(gpu.plan(&empty, Kernel::Auto).unwrap(), options, None).unwrap();
    let (b, mut x) = (gpu.zeros::<f64>(0).unwrap(), gpu.zeros::<f64>(0).unwrap());
    let out = solver.solve(&b, &mut x).unwrap();
    assert_eq!((out.stop, out.iterations, out.relative_residual), (Stop::Converged, 0, 0.0), "{out:?}");
}

/// Iterations captured into a CUDA graph and replayed until the solve stops give the solution and
/// the exact iteration count of the uncaptured solve.
#[test]
fn gpu_cg_in_a_graph() {
    let test = "gpu_cg_in_a_graph";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = laplacian::<f64>(45);
    let b = random_vector::<f64>(&mut rng, a.nrows);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let options =
        SolverOptions { rel_tol: 1e-9, max_iterations: 3000, preconditioner: Preconditioner::Jacobi };
    let diagonal = a.view().diagonal();
    let db = gpu.upload_vector(&b).unwrap();

    let mut plain = Cg::new(gpu.plan(&da, Kernel::Auto).unwrap(), options, Some(&diagonal)).unwrap();
    let mut x_plain = gpu.zeros::<f64>(a.nrows).unwrap();
    let expected = plain.solve(&db, &mut x_plain).unwrap();

    let mut solver = Cg::new(gpu.plan(&da, Kernel::Auto).unwrap(), options, Some(&diagonal)).unwrap();
    let mut x = gpu.zeros::<f64>(a.nrows).unwrap();
    solver.start(&db, &mut x).unwrap();
    let graph = gpu.capture(|| solver.iterate(&mut x, 16)).unwrap();
    let outcome = loop {
        graph.launch().unwrap();
        if let Some(outcome) = solver.outcome().unwrap() {
            break outcome;
        }
    };
    assert_eq!(outcome, expected, "the graph's solve differs from the plain one");
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    assert_eq!(bits(x.to_host(&gpu).unwrap()), bits(x_plain.to_host(&gpu).unwrap()), "not bit-identical");
}

/// The fused CG's residual history: the start's `|b| / |b|` from `x = 0`, then one entry an
/// iteration, the last the outcome's; a capacity below the iterations keeps the first entries.
#[test]
fn gpu_cg_residual_history() {
    let test = "gpu_cg_residual_history";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = laplacian::<f64>(40);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let b = random_vector::<f64>(&mut rng, a.nrows);
    let db = gpu.upload_vector(&b).unwrap();
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 5_000, preconditioner: Preconditioner::None };
    for capacity in [10_000, 5] {
        let plan = gpu.plan(&da, Kernel::Auto).unwrap();
        let mut solver = Cg::new(plan, options, None).unwrap().with_history(capacity).unwrap();
        let mut dx = gpu.zeros::<f64>(b.len()).unwrap();
        let out = solver.solve(&db, &mut dx).unwrap();
        let history = solver.residual_history().unwrap();
        assert_eq!(history.len(), (out.iterations + 1).min(capacity), "{out:?}");
        assert!((history[0] - 1.0).abs() <= 1e-14, "{}", history[0]);
        if capacity > out.iterations {
            assert_eq!(history[out.iterations], out.relative_residual, "{out:?}");
        }
    }
}
