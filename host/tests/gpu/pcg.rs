//! Preconditioned CG on the GPU (`solve::Pcg`, `solve::PipelinedCg`) and IC(0) (`solve::Ic0`):
//! IC(0)'s apply against its CPU oracle bit for bit in f32 and f64 (every element written, poisoned
//! first), plain and in a graph; both CGs without a preconditioner and with Jacobi against their CPU
//! oracles' iteration counts, the true residual and the residual history's ends; with IC(0),
//! block-Jacobi and Chebyshev converging to the true residual, IC(0) in fewer iterations than Jacobi;
//! a batch captured into a graph ending where the plain solve does; the breakdown on an indefinite
//! matrix and the refusals. Fresh random inputs (seed printed). Without a GPU these tests print why
//! and pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{Recurrence, assert_counts_agree, gpu_or_skip, random_vector, rng, true_residual};
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::cg::{cg, cg_with_preconditioner, pipelined_cg, pipelined_cg_with_preconditioner};
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{
    BlockJacobi, Chebyshev, Ic0, Pcg, PipelinedCg, Precondition, Preconditioner, SolveError, SolverOptions,
    Stop,
};
use gpu_spmv::{CsrRef, Error, Gpu, Kernel, Scalar};
use nalgebra_sparse::CsrMatrix;

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn ic0_apply<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (nx, ny) in [(1, 1), (37, 29), (5, 130), (129, 128)] {
        let a: CsrMatrix<T> = convection_diffusion(nx, ny, 0.0).unwrap();
        let view = CsrRef::from(&a);
        let factors = IluFactors::incomplete_cholesky(view).unwrap();
        let mut pre = Ic0::new(&gpu, view).unwrap();
        let n = a.nrows();
        let r = random_vector::<T>(&mut rng, n);
        let mut expected = vec![T::ZERO; n];
        factors.apply(&r, &mut expected).unwrap();
        let dr = gpu.upload_vector(&r).unwrap();
        let mut dz = gpu.upload_vector(&vec![T::from_f64(f64::NAN); n]).unwrap();
        pre.apply(&gpu, &dr, &mut dz).unwrap();
        assert_eq!(bits(&dz.to_host(&gpu).unwrap()), bits(&expected), "{} {nx} x {ny}", T::NAME);
        assert_eq!(pre.levels(), (factors.lower_levels().count(), factors.upper_levels().count()));
        let mut dz_graph = gpu.upload_vector(&vec![T::from_f64(f64::NAN); n]).unwrap();
        let graph = gpu.capture(|| pre.apply(&gpu, &dr, &mut dz_graph)).unwrap();
        graph.launch().unwrap();
        assert_eq!(bits(&dz_graph.to_host(&gpu).unwrap()), bits(&expected), "{} {nx} x {ny}: graph", T::NAME);
    }
}

#[test]
fn gpu_ic0_apply_against_oracle_f32() {
    ic0_apply::<f32>("gpu_ic0_apply_against_oracle_f32");
}

#[test]
fn gpu_ic0_apply_against_oracle_f64() {
    ic0_apply::<f64>("gpu_ic0_apply_against_oracle_f64");
}

/// Without a preconditioner and with Jacobi, `Pcg` is the oracle's recurrence: the same iteration
/// count to within the drift of the dot products' summation orders (and of `α` and `β`, which the
/// device rounds in `T`, the oracle in f64 then `T`), and the true residual at the tolerance.
#[test]
fn gpu_pcg_follows_the_oracle() {
    let test = "gpu_pcg_follows_the_oracle";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let rel_tol = 1e-10;
    let a: CsrMatrix<f64> = convection_diffusion(64, 48, 0.0).unwrap();
    let view = CsrRef::from(&a);
    let da = gpu.upload_csr(&a).unwrap();
    let b = random_vector::<f64>(&mut rng, a.nrows());
    let db = gpu.upload_vector(&b).unwrap();
    let diagonal = view.diagonal();
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let options = SolverOptions { rel_tol, max_iterations: 5_000, preconditioner };
        let mut x = vec![0.0; a.nrows()];
        let oracle = cg(&view, &b, &mut x, &options).unwrap();
        let plan = gpu.plan(&da, Kernel::Auto).unwrap();
        let mut solver = Pcg::new(plan, options, Some(&diagonal)).unwrap().with_history(10_000).unwrap();
        let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
        let out = solver.solve(&db, &mut dx).unwrap();
        let truth = true_residual(view, &b, &dx.to_host(&gpu).unwrap());
        println!("{preconditioner:?}: {out:?}, true residual {truth:.2e}; oracle {oracle:?}");
        assert_counts_agree::<f64>(Recurrence::Cg, &out, &oracle, &format!("{preconditioner:?}"));
        assert!(truth <= 10.0 * rel_tol, "true residual {truth:e}");
        // The history: the start's residual, |b| from x = 0, then one an iteration, the last the
        // outcome's.
        let history = solver.residual_history().unwrap();
        assert_eq!(history.len(), out.iterations + 1);
        assert!((history[0] - 1.0).abs() <= 1e-14, "{}", history[0]);
        assert_eq!(history[out.iterations], out.relative_residual);
    }
}

/// IC(0), block-Jacobi and Chebyshev make CG converge to the true residual; IC(0) in fewer iterations
/// than Jacobi. A solve whose batches are captured into a graph and replayed ends where the plain
/// one does.
#[test]
fn gpu_pcg_with_preconditioners() {
    let test = "gpu_pcg_with_preconditioners";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let rel_tol = 1e-9;
    let a: CsrMatrix<f64> = convection_diffusion(96, 80, 0.0).unwrap();
    let view = CsrRef::from(&a);
    let da = gpu.upload_csr(&a).unwrap();
    let b = random_vector::<f64>(&mut rng, a.nrows());
    let db = gpu.upload_vector(&b).unwrap();
    let plain = SolverOptions { rel_tol, max_iterations: 20_000, preconditioner: Preconditioner::None };
    let jacobi = SolverOptions { preconditioner: Preconditioner::Jacobi, ..plain };
    let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
    let point = Pcg::new(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, Some(&view.diagonal()))
        .unwrap()
        .solve(&db, &mut dx)
        .unwrap();
    let inner = gpu.plan(&da, Kernel::Auto).unwrap();
    let bounds = Chebyshev::estimate_bounds(&inner, 20, 30.0).unwrap();
    let preconditioners: [(&str, Box<dyn Precondition<f64> + '_>); 3] = [
        ("IC(0)", Box::new(Ic0::new(&gpu, view).unwrap())),
        ("block-Jacobi(8)", Box::new(BlockJacobi::new(&gpu, view, 8).unwrap())),
        ("Chebyshev(4)", Box::new(Chebyshev::new(inner, bounds, 4).unwrap())),
    ];
    for (name, pre) in preconditioners {
        let mut solver = Pcg::with_preconditioner(gpu.plan(&da, Kernel::Auto).unwrap(), plain, pre).unwrap();
        let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
        let out = solver.solve(&db, &mut dx).unwrap();
        let x = dx.to_host(&gpu).unwrap();
        let truth = true_residual(view, &b, &x);
        println!("{name}: {out:?}, true residual {truth:.2e}; Jacobi {point:?}");
        assert_eq!(out.stop, Stop::Converged, "{name}: {out:?}");
        assert!(truth <= 10.0 * rel_tol, "{name}: true residual {truth:e}");
        if name == "IC(0)" {
            assert!(out.iterations < point.iterations, "{out:?} against {point:?}");
            let mut x_cpu = vec![0.0; a.nrows()];
            let ic = IluFactors::incomplete_cholesky(view).unwrap();
            let oracle = cg_with_preconditioner(&view, &b, &mut x_cpu, &plain, &ic).unwrap();
            assert_counts_agree::<f64>(Recurrence::Cg, &out, &oracle, name);
            let mut dx_graph = gpu.zeros::<f64>(a.nrows()).unwrap();
            solver.start(&db, &dx_graph).unwrap();
            let graph = gpu.capture(|| solver.iterate(&mut dx_graph, 16)).unwrap();
            while solver.outcome().unwrap().is_none() {
                graph.launch().unwrap();
            }
            assert_eq!(solver.outcome().unwrap(), Some(out), "{name}: graph");
            assert_eq!(bits(&dx_graph.to_host(&gpu).unwrap()), bits(&x), "{name}: graph");
        }
    }
}

#[test]
fn gpu_pcg_breakdown_and_refusals() {
    let test = "gpu_pcg_breakdown_and_refusals";
    let Some(gpu) = gpu_or_skip(test) else { return };
    // A symmetric indefinite matrix: diagonal 1 and -1 alternating, no preconditioner.
    let n = 64;
    let (offsets, cols): (Vec<usize>, Vec<usize>) = ((0..=n).collect(), (0..n).collect());
    let values: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
    let a = CsrMatrix::try_from_csr_data(n, n, offsets, cols, values.clone()).unwrap();
    let da = gpu.upload_csr(&a).unwrap();
    let options = SolverOptions { rel_tol: 1e-10, max_iterations: 100, preconditioner: Preconditioner::None };
    let b = gpu.upload_vector(&vec![1.0; n]).unwrap();
    let mut x = gpu.zeros::<f64>(n).unwrap();
    let e = Pcg::new(gpu.plan(&da, Kernel::Auto).unwrap(), options, None).unwrap().solve(&b, &mut x);
    assert!(matches!(e, Err(Error::Solve(SolveError::Breakdown { what: "pᵀAp", .. }))), "{e:?}");
    // Jacobi needs a positive diagonal; a caller's preconditioner with Jacobi is refused.
    let jacobi = SolverOptions { preconditioner: Preconditioner::Jacobi, ..options };
    let e = Pcg::new(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, Some(&values)).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::NonPositiveDiagonal { row: 1, .. })), "{e:?}");
    let spd: CsrMatrix<f64> = convection_diffusion(6, 5, 0.0).unwrap();
    let view = CsrRef::from(&spd);
    let ds = gpu.upload_csr(&spd).unwrap();
    let pre = Box::new(Ic0::new(&gpu, view).unwrap());
    let e = Pcg::with_preconditioner(gpu.plan(&ds, Kernel::Auto).unwrap(), jacobi, pre).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    // A caller's preconditioner of another order is refused when the solver is made, not at its
    // first apply in the middle of a start (the oracle's refusal).
    let other_order = Box::new(Ic0::new(&gpu, view).unwrap());
    let e = Pcg::with_preconditioner(gpu.plan(&da, Kernel::Auto).unwrap(), options, other_order).unwrap_err();
    assert!(
        matches!(e, Error::DimensionMismatch { what: "the preconditioner", expected, got } if expected == n && got == 30),
        "{e:?}"
    );
    let indefinite = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 2.0, 2.0, 1.0]).unwrap();
    let e = Ic0::new(&gpu, indefinite).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::NonPositivePivot { row: 1, .. })), "{e:?}");
    // b = 0 from x = 0: converged at the start, x untouched; NaN in b, or a b whose bᵀb overflows:
    // the breakdown of a residual that is not finite at the start, for both CGs (the oracle's).
    let spd_plan = || gpu.plan(&ds, Kernel::Auto).unwrap();
    let (zero, mut x0) = (gpu.zeros::<f64>(30).unwrap(), gpu.zeros::<f64>(30).unwrap());
    let out = Pcg::new(spd_plan(), options, None).unwrap().solve(&zero, &mut x0).unwrap();
    assert_eq!((out.stop, out.iterations), (Stop::Converged, 0), "{out:?}");
    assert_eq!(x0.to_host(&gpu).unwrap(), [0.0; 30]);
    let mut nan_b = vec![1.0; 30];
    nan_b[7] = f64::NAN;
    let nan_b = gpu.upload_vector(&nan_b).unwrap();
    let mut x = gpu.zeros::<f64>(30).unwrap();
    let huge_b = gpu.upload_vector(&vec![1e200; 30]).unwrap();
    for b in [&nan_b, &huge_b] {
        let e = Pcg::new(spd_plan(), options, None).unwrap().solve(b, &mut x);
        assert!(
            matches!(e, Err(Error::Solve(SolveError::Breakdown { what: "rᵀr", iteration: 0, .. }))),
            "{e:?}"
        );
        let e = PipelinedCg::new(spd_plan(), options, None).unwrap().solve(b, &mut x);
        assert!(
            matches!(e, Err(Error::Solve(SolveError::Breakdown { what: "rᵀr", iteration: 0, .. }))),
            "{e:?}"
        );
    }
    let other = Gpu::new().unwrap();
    let (b2, mut x2) = (other.upload_vector(&vec![1.0; 30]).unwrap(), other.zeros::<f64>(30).unwrap());
    let mut solver = Pcg::new(gpu.plan(&ds, Kernel::Auto).unwrap(), options, None).unwrap();
    assert!(matches!(solver.solve(&b2, &mut x2), Err(Error::ForeignBuffer(_))));
}

/// Pipelined CG against its oracle (`reference::cg::pipelined_cg`) without a preconditioner and with
/// Jacobi: the same stop, the iteration counts within the summation orders' drift, the true residual
/// at the tolerance, the history's ends; with IC(0) fewer iterations than with Jacobi, and a batch
/// captured into a graph ending where the plain solve does; the indefinite matrix's breakdown.
#[test]
fn gpu_pipelined_cg() {
    let test = "gpu_pipelined_cg";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let rel_tol = 1e-10;
    let a: CsrMatrix<f64> = convection_diffusion(64, 48, 0.0).unwrap();
    let view = CsrRef::from(&a);
    let da = gpu.upload_csr(&a).unwrap();
    let b = random_vector::<f64>(&mut rng, a.nrows());
    let db = gpu.upload_vector(&b).unwrap();
    let diagonal = view.diagonal();
    let mut jacobi_iterations = 0;
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let options = SolverOptions { rel_tol, max_iterations: 5_000, preconditioner };
        let mut x = vec![0.0; a.nrows()];
        let oracle = pipelined_cg(&view, &b, &mut x, &options).unwrap();
        let plan = gpu.plan(&da, Kernel::Auto).unwrap();
        let mut solver =
            PipelinedCg::new(plan, options, Some(&diagonal)).unwrap().with_history(10_000).unwrap();
        let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
        let out = solver.solve(&db, &mut dx).unwrap();
        let truth = true_residual(view, &b, &dx.to_host(&gpu).unwrap());
        println!("pipelined {preconditioner:?}: {out:?}, true residual {truth:.2e}; oracle {oracle:?}");
        assert_counts_agree::<f64>(Recurrence::Cg, &out, &oracle, &format!("pipelined {preconditioner:?}"));
        // Pipelined CG's recursive residual drifts from b - A x a little faster than CG's.
        assert!(truth <= 100.0 * rel_tol, "true residual {truth:e}");
        let history = solver.residual_history().unwrap();
        assert_eq!(history.len(), out.iterations + 1);
        assert_eq!(history[out.iterations], out.relative_residual);
        if preconditioner == Preconditioner::Jacobi {
            jacobi_iterations = out.iterations;
        }
    }
    let plain = SolverOptions { rel_tol, max_iterations: 5_000, preconditioner: Preconditioner::None };
    let pre = Box::new(Ic0::new(&gpu, view).unwrap());
    let mut solver =
        PipelinedCg::with_preconditioner(gpu.plan(&da, Kernel::Auto).unwrap(), plain, pre).unwrap();
    let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
    let out = solver.solve(&db, &mut dx).unwrap();
    let x = dx.to_host(&gpu).unwrap();
    println!("pipelined IC(0): {out:?}, true residual {:.2e}", true_residual(view, &b, &x));
    assert_eq!(out.stop, Stop::Converged);
    let mut x_cpu = vec![0.0; a.nrows()];
    let ic = IluFactors::incomplete_cholesky(view).unwrap();
    let oracle = pipelined_cg_with_preconditioner(&view, &b, &mut x_cpu, &plain, &ic).unwrap();
    assert_counts_agree::<f64>(Recurrence::Cg, &out, &oracle, "pipelined IC(0)");
    assert!(out.iterations < jacobi_iterations, "{out:?} against Jacobi's {jacobi_iterations}");
    let mut dx_graph = gpu.zeros::<f64>(a.nrows()).unwrap();
    solver.start(&db, &dx_graph).unwrap();
    let graph = gpu.capture(|| solver.iterate(&mut dx_graph, 16)).unwrap();
    while solver.outcome().unwrap().is_none() {
        graph.launch().unwrap();
    }
    assert_eq!(solver.outcome().unwrap(), Some(out), "graph");
    assert_eq!(bits(&dx_graph.to_host(&gpu).unwrap()), bits(&x), "graph");

    // The alternating ±1 diagonal with b = 1: δ = wᵀu = 0 at the first iteration.
    let n = 64;
    let values: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
    let indefinite = CsrMatrix::try_from_csr_data(n, n, (0..=n).collect(), (0..n).collect(), values).unwrap();
    let di = gpu.upload_csr(&indefinite).unwrap();
    let (bi, mut xi) = (gpu.upload_vector(&vec![1.0; n]).unwrap(), gpu.zeros::<f64>(n).unwrap());
    let e = PipelinedCg::new(gpu.plan(&di, Kernel::Auto).unwrap(), plain, None).unwrap().solve(&bi, &mut xi);
    assert!(
        matches!(e, Err(Error::Solve(SolveError::Breakdown { what: "pᵀAp", iteration: 0, .. }))),
        "{e:?}"
    );
}
