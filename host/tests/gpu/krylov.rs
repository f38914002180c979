//! BiCGSTAB and GMRES(m) on the GPU against their CPU oracles (`reference::bicgstab`,
//! `reference::gmres`), on convection-diffusion problems from diffusion-dominated to
//! convection-dominated, plain and Jacobi-preconditioned, in f32 and f64: same stop, iteration counts
//! within a stated slack, the true residual recomputed in f64, solutions close. Then what a solver
//! must survive: iterations captured into a CUDA graph and replayed (the same outcome and bits),
//! determinism, NaN in `b`, `b = 0`, the iteration limit, a singular operator, a caller's operator and
//! preconditioner, stale values, and the refusals. Without a GPU these tests print why and pass,
//! unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{
    Recurrence, assert_counts_agree, gpu_or_skip, oracle_with_preconditioner, random_vector, rng,
    true_residual,
};
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::bicgstab::bicgstab;
use gpu_spmv::reference::block_jacobi::BlockInverse;
use gpu_spmv::reference::gmres::gmres;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{
    Bicgstab, BlockJacobi, Gmres, Jacobi, MAX_HISTORY, Operator, Outcome, Precondition, Preconditioner,
    SolveError, SolverOptions, Stop,
};
use gpu_spmv::{CsrRef, DeviceCsr, DeviceVector, Error, Gpu, Kernel, Plan, Scalar};
use nalgebra_sparse::CsrMatrix;

/// Which solver a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Bicgstab,
    Gmres(usize),
}

impl Method {
    fn recurrence(self) -> Recurrence {
        match self {
            Method::Bicgstab => Recurrence::Bicgstab,
            Method::Gmres(_) => Recurrence::Gmres,
        }
    }

    /// GMRES's restart length; `None` for BiCGSTAB.
    fn restart(self) -> Option<usize> {
        match self {
            Method::Bicgstab => None,
            Method::Gmres(m) => Some(m),
        }
    }
}

/// Solves on the GPU with `method`, from `x0`, returning the outcome and the solution.
fn gpu_solve<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    method: Method,
    options: SolverOptions,
    diagonal: &[T],
    b: &[T],
    x0: &[T],
) -> gpu_spmv::Result<(Outcome, Vec<T>)> {
    let plan = gpu.plan(a, Kernel::Auto)?;
    let db = gpu.upload_vector(b)?;
    let mut dx = gpu.upload_vector(x0)?;
    let outcome = match method {
        Method::Bicgstab => {
            let mut s = Bicgstab::new(plan, options, Some(diagonal))?;
            s.set_check_every(5);
            s.solve(&db, &mut dx)?
        }
        Method::Gmres(m) => Gmres::new(plan, options, m, Some(diagonal))?.solve(&db, &mut dx)?,
    };
    Ok((outcome, dx.to_host(gpu)?))
}

fn cpu_solve<T: Scalar>(
    a: CsrRef<'_, T>,
    method: Method,
    options: SolverOptions,
    b: &[T],
    x0: &[T],
) -> gpu_spmv::Result<(Outcome, Vec<T>)> {
    let mut x = x0.to_vec();
    let outcome = match method {
        Method::Bicgstab => bicgstab(&a, b, &mut x, &options)?,
        Method::Gmres(m) => gmres(&a, b, &mut x, &options, m)?,
    };
    Ok((outcome, x))
}

fn against_oracle<T: Scalar>(test: &str, rel_tol: f64) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for peclet in [0.0, 50.0, 1000.0] {
        let a: CsrMatrix<T> = convection_diffusion(37, 29, peclet).unwrap();
        let view = CsrRef::from(&a);
        let da = gpu.upload_csr(&a).unwrap();
        let diagonal = view.diagonal();
        let b = random_vector::<T>(&mut rng, a.nrows());
        let x0 = random_vector::<T>(&mut rng, a.nrows());
        for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
            for method in [Method::Bicgstab, Method::Gmres(30), Method::Gmres(7)] {
                let what = format!("Pe {peclet} {preconditioner:?} {method:?}");
                let options = SolverOptions { rel_tol, max_iterations: 4000, preconditioner };
                let (cpu, x_cpu) = cpu_solve(view, method, options, &b, &x0).unwrap();
                let (out, x) = gpu_solve(&gpu, &da, method, options, &diagonal, &b, &x0).unwrap();
                assert_counts_agree::<T>(method.recurrence(), &out, &cpu, &what);
                assert!(out.relative_residual <= rel_tol, "{what}: {out:?}");
                // The recurrence's residual drifts from the true one by rounding: within 100 ulps of
                // the solution's scale, or 10x the tolerance.
                let truth = true_residual(view, &b, &x);
                let bound = (10.0 * rel_tol).max(100.0 * T::EPSILON);
                assert!(truth <= bound, "{what}: true residual {truth:e} over {bound:e} ({out:?})");
                let norm = x_cpu.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt();
                let diff =
                    x.iter().zip(&x_cpu).map(|(a, b)| (a.to_f64() - b.to_f64()).powi(2)).sum::<f64>().sqrt();
                assert!(diff <= 1e3 * bound * norm, "{what}: |x - x_cpu| / |x_cpu| = {:e}", diff / norm);
                println!(
                    "{what}: GPU {} CPU {} iterations, true residual {truth:.2e}",
                    out.iterations, cpu.iterations
                );
            }
        }
    }
}

#[test]
fn gpu_krylov_against_oracle_f32() {
    against_oracle::<f32>("gpu_krylov_against_oracle_f32", 1e-5);
}

#[test]
fn gpu_krylov_against_oracle_f64() {
    against_oracle::<f64>("gpu_krylov_against_oracle_f64", 1e-10);
}

/// A batch of iterations captured into a graph and replayed until the solve stops: the same
/// outcome and the same bits as the plain solve; and a second plain solve is bit-identical too.
#[test]
fn gpu_krylov_in_a_graph_and_deterministic() {
    let test = "gpu_krylov_in_a_graph_and_deterministic";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a: CsrMatrix<f64> = convection_diffusion(31, 33, 200.0).unwrap();
    let da = gpu.upload_csr(&a).unwrap();
    let diagonal = CsrRef::from(&a).diagonal();
    let b = gpu.upload_vector(&random_vector::<f64>(&mut rng, a.nrows())).unwrap();
    let options =
        SolverOptions { rel_tol: 1e-9, max_iterations: 3000, preconditioner: Preconditioner::Jacobi };
    let bits =
        |v: &DeviceVector<f64>| v.to_host(&gpu).unwrap().into_iter().map(f64::to_bits).collect::<Vec<_>>();
    for method in [Method::Bicgstab, Method::Gmres(12)] {
        let plan = || gpu.plan(&da, Kernel::Auto).unwrap();
        let solve = || {
            let mut x = gpu.zeros::<f64>(a.nrows()).unwrap();
            let outcome = match method {
                Method::Bicgstab => {
                    Bicgstab::new(plan(), options, Some(&diagonal)).unwrap().solve(&b, &mut x)
                }
                Method::Gmres(m) => {
                    Gmres::new(plan(), options, m, Some(&diagonal)).unwrap().solve(&b, &mut x)
                }
            };
            (outcome.unwrap(), x)
        };
        let (expected, x_plain) = solve();
        let (again, x_again) = solve();
        assert_eq!(expected, again, "{method:?}: two solves differ");
        assert_eq!(bits(&x_plain), bits(&x_again), "{method:?}: two solves not bit-identical");
        let mut x = gpu.zeros::<f64>(a.nrows()).unwrap();
        let outcome = match method {
            Method::Bicgstab => {
                let mut s = Bicgstab::new(plan(), options, Some(&diagonal)).unwrap();
                s.start(&b, &x).unwrap();
                let graph = gpu.capture(|| s.iterate(&mut x, 9)).unwrap();
                loop {
                    graph.launch().unwrap();
                    if let Some(outcome) = s.outcome().unwrap() {
                        break outcome;
                    }
                }
            }
            Method::Gmres(m) => {
                let mut s = Gmres::new(plan(), options, m, Some(&diagonal)).unwrap();
                s.start(&b, &x).unwrap();
                let graph = gpu.capture(|| s.iterate(&mut x, 2)).unwrap();
                loop {
                    graph.launch().unwrap();
                    if let Some(outcome) = s.outcome().unwrap() {
                        break outcome;
                    }
                }
            }
        };
        assert_eq!(outcome, expected, "{method:?}: the graph's solve differs from the plain one");
        assert_eq!(bits(&x), bits(&x_plain), "{method:?}: the graph's solution is not bit-identical");
    }
}

/// BiCGSTAB believes only a true residual: in f32 its carried residual shrinks below what `b - A x`
/// can reach (about 1e-7 here), so at 1e-8 it must run to the limit, restarting at every false
/// convergence, as its oracle does, and the same in a graph; at 1e-6 it converges, truly.
#[test]
fn gpu_bicgstab_converges_only_on_the_true_residual() {
    let test = "gpu_bicgstab_converges_only_on_the_true_residual";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for peclet in [0.0, 1000.0] {
        let a: CsrMatrix<f32> = convection_diffusion(16, 16, peclet).unwrap();
        let view = CsrRef::from(&a);
        let da = gpu.upload_csr(&a).unwrap();
        let diagonal = view.diagonal();
        let b = random_vector::<f32>(&mut rng, a.nrows());
        let x0 = vec![0.0; a.nrows()];
        for (rel_tol, attainable) in [(1e-6, true), (1e-8, false)] {
            let what = format!("Pe {peclet} tol {rel_tol:e}");
            let options =
                SolverOptions { rel_tol, max_iterations: 300, preconditioner: Preconditioner::Jacobi };
            let (cpu, _) = cpu_solve(view, Method::Bicgstab, options, &b, &x0).unwrap();
            let (out, x) = gpu_solve(&gpu, &da, Method::Bicgstab, options, &diagonal, &b, &x0).unwrap();
            assert_eq!(cpu.stop == Stop::Converged, attainable, "{what}: CPU {cpu:?}");
            assert_eq!(out.stop, cpu.stop, "{what}: GPU {out:?}, CPU {cpu:?}");
            let truth = true_residual(view, &b, &x);
            if attainable {
                assert!(
                    out.relative_residual <= rel_tol && truth <= 1.5 * rel_tol,
                    "{what}: {truth:e} {out:?}"
                );
            } else {
                assert_eq!(out.iterations, 300, "{what}: {out:?}");
                let db = gpu.upload_vector(&b).unwrap();
                let mut dx = gpu.zeros::<f32>(a.nrows()).unwrap();
                let mut s =
                    Bicgstab::new(gpu.plan(&da, Kernel::Auto).unwrap(), options, Some(&diagonal)).unwrap();
                s.start(&db, &dx).unwrap();
                let graph = gpu.capture(|| s.iterate(&mut dx, 7)).unwrap();
                let in_graph = loop {
                    graph.launch().unwrap();
                    if let Some(outcome) = s.outcome().unwrap() {
                        break outcome;
                    }
                };
                assert_eq!(in_graph, out, "{what}: the graph's solve differs from the plain one");
            }
            println!("{what}: GPU {out:?}, CPU {cpu:?}, true residual {truth:.2e}");
        }
    }
}

/// NaN in `b` is a breakdown, never a NaN outcome or a hang; `b = 0` from `x = 0` converges at
/// once; the limit stops at exactly `max_iterations`; a singular operator stops with a typed outcome.
#[test]
fn gpu_krylov_edge_cases() {
    let test = "gpu_krylov_edge_cases";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a: CsrMatrix<f64> = convection_diffusion(20, 20, 10.0).unwrap();
    let n = a.nrows();
    let view = CsrRef::from(&a);
    let da = gpu.upload_csr(&a).unwrap();
    let diagonal = view.diagonal();
    let options =
        SolverOptions { rel_tol: 1e-12, max_iterations: 1000, preconditioner: Preconditioner::None };
    for method in [Method::Bicgstab, Method::Gmres(10)] {
        let mut b = random_vector::<f64>(&mut rng, n);
        b[n / 3] = f64::NAN;
        let e = gpu_solve(&gpu, &da, method, options, &diagonal, &b, &vec![0.0; n]).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::Breakdown { .. })), "{method:?} NaN b: {e}");
        let (out, x) =
            gpu_solve(&gpu, &da, method, options, &diagonal, &vec![0.0; n], &vec![0.0; n]).unwrap();
        assert_eq!(
            (out.iterations, out.stop, out.relative_residual),
            (0, Stop::Converged, 0.0),
            "{method:?}"
        );
        assert!(x.iter().all(|&v| v == 0.0));
        let b = random_vector::<f64>(&mut rng, n);
        let limited = SolverOptions { max_iterations: 13, ..options };
        let (out, _) = gpu_solve(&gpu, &da, method, limited, &diagonal, &b, &vec![0.0; n]).unwrap();
        let (cpu, _) = cpu_solve(view, method, limited, &b, &vec![0.0; n]).unwrap();
        assert_eq!((out.iterations, out.stop), (13, Stop::MaxIterations), "{method:?}: {out:?}");
        assert_eq!((cpu.iterations, cpu.stop), (13, Stop::MaxIterations), "{method:?}: CPU {cpu:?}");
    }
    // A singular operator: a zero row, and b with a component there. Neither solver can reach the
    // tolerance; each stops with an outcome or a typed breakdown, as its oracle does.
    let mut singular = a.clone();
    let row = n / 2;
    let (start, end) = (singular.row_offsets()[row], singular.row_offsets()[row + 1]);
    singular.values_mut()[start..end].iter_mut().for_each(|v| *v = 0.0);
    let ds = gpu.upload_csr(&singular).unwrap();
    let b = random_vector::<f64>(&mut rng, n);
    let options = SolverOptions { max_iterations: 300, ..options };
    for method in [Method::Bicgstab, Method::Gmres(10)] {
        let gpu_result = gpu_solve(&gpu, &ds, method, options, &diagonal, &b, &vec![0.0; n]);
        let cpu_result = cpu_solve(CsrRef::from(&singular), method, options, &b, &vec![0.0; n]);
        match (&gpu_result, &cpu_result) {
            (Ok((g, _)), Ok((c, _))) => {
                assert_ne!(g.stop, Stop::Converged, "{method:?}: {g:?}");
                assert_eq!(g.stop, c.stop, "{method:?}");
            }
            (
                Err(Error::Solve(SolveError::Breakdown { what: g, .. })),
                Err(Error::Solve(SolveError::Breakdown { what: c, .. })),
            ) => {
                assert_eq!(g, c, "{method:?}");
            }
            _ => panic!("{method:?}: GPU {gpu_result:?}, CPU {cpu_result:?}"),
        }
        println!("{method:?} on a singular operator: {gpu_result:?}");
    }
}

/// Block-Jacobi: the GPU's apply gives the bits of the CPU's (the same inverses, the same `fma`
/// order) for block sizes off every multiple, every row written; BiCGSTAB and GMRES(30) preconditioned
/// by it converge to the true residual, in fewer iterations than with point Jacobi on a convection
/// along the blocks' grid lines; new values through `set`; the refusals.
#[test]
fn gpu_krylov_block_jacobi() {
    let test = "gpu_krylov_block_jacobi";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    fn apply_matches<T: Scalar>(
        gpu: &Gpu,
        rng: &mut rand_chacha::ChaCha8Rng,
        a: &CsrMatrix<T>,
        block: usize,
    ) {
        let view = CsrRef::from(a);
        let cpu = BlockInverse::new(view, block).unwrap();
        let mut pre = BlockJacobi::new(gpu, view, block).unwrap();
        let r = random_vector::<T>(rng, a.nrows());
        let mut z_cpu = vec![T::ZERO; a.nrows()];
        cpu.apply(&r, &mut z_cpu);
        let dr = gpu.upload_vector(&r).unwrap();
        let mut dz = gpu.upload_vector(&vec![T::from_f64(f64::NAN); a.nrows()]).unwrap();
        pre.apply(gpu, &dr, &mut dz).unwrap();
        let z = dz.to_host(gpu).unwrap();
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&z), bits(&z_cpu), "{} n {} block {block}", T::NAME, a.nrows());
    }
    for block in [1, 3, 4, 7, 8, 16, 31, 32] {
        apply_matches::<f64>(&gpu, &mut rng, &convection_diffusion(37, 29, 50.0).unwrap(), block);
        apply_matches::<f32>(&gpu, &mut rng, &convection_diffusion(33, 5, 1000.0).unwrap(), block);
    }

    let a: CsrMatrix<f64> = convection_diffusion(64, 48, 1000.0).unwrap();
    let view = CsrRef::from(&a);
    let da = gpu.upload_csr(&a).unwrap();
    let b = random_vector::<f64>(&mut rng, a.nrows());
    let x0 = vec![0.0; a.nrows()];
    let rel_tol = 1e-10;
    for method in [Method::Bicgstab, Method::Gmres(30)] {
        let jacobi = SolverOptions { rel_tol, max_iterations: 4000, preconditioner: Preconditioner::Jacobi };
        let (point, _) = gpu_solve(&gpu, &da, method, jacobi, &view.diagonal(), &b, &x0).unwrap();
        let options = SolverOptions { preconditioner: Preconditioner::None, ..jacobi };
        let pre = Box::new(BlockJacobi::new(&gpu, view, 16).unwrap());
        let plan = gpu.plan(&da, Kernel::Auto).unwrap();
        let db = gpu.upload_vector(&b).unwrap();
        let mut dx = gpu.upload_vector(&x0).unwrap();
        let out = match method {
            Method::Bicgstab => {
                Bicgstab::with_preconditioner(plan, options, pre).unwrap().solve(&db, &mut dx)
            }
            Method::Gmres(m) => {
                Gmres::with_preconditioner(plan, options, m, pre).unwrap().solve(&db, &mut dx)
            }
        }
        .unwrap();
        let truth = true_residual(view, &b, &dx.to_host(&gpu).unwrap());
        println!("{method:?}: block-Jacobi(16) {out:?}, true residual {truth:.2e}; Jacobi {point:?}");
        assert_eq!(out.stop, Stop::Converged, "{method:?}: {out:?}");
        assert!(truth <= 10.0 * rel_tol, "{method:?}: true residual {truth:e}");
        assert!(out.iterations < point.iterations, "{method:?}: block {out:?}, point {point:?}");
        // Against the oracle with the same inverses (from x = 0, as here).
        let inverses = BlockInverse::new(view, 16).unwrap();
        let oracle = oracle_with_preconditioner(view, &b, &options, method.restart(), &inverses);
        assert_counts_agree::<f64>(method.recurrence(), &out, &oracle, &format!("{method:?}"));
    }

    // New values: the inverses of the new matrix, bit for bit; a matrix of another order and a
    // vector of another length are refused.
    let mut scaled = a.clone();
    scaled.values_mut().iter_mut().for_each(|v| *v *= 3.0);
    let mut pre = BlockJacobi::new(&gpu, view, 8).unwrap();
    pre.set(&gpu, CsrRef::from(&scaled)).unwrap();
    let r = random_vector::<f64>(&mut rng, a.nrows());
    let mut z_cpu = vec![0.0; a.nrows()];
    BlockInverse::new(CsrRef::from(&scaled), 8).unwrap().apply(&r, &mut z_cpu);
    let mut dz = gpu.zeros::<f64>(a.nrows()).unwrap();
    pre.apply(&gpu, &gpu.upload_vector(&r).unwrap(), &mut dz).unwrap();
    assert_eq!(dz.to_host(&gpu).unwrap(), z_cpu);
    let small: CsrMatrix<f64> = convection_diffusion(4, 4, 0.0).unwrap();
    assert!(matches!(pre.set(&gpu, CsrRef::from(&small)), Err(Error::DimensionMismatch { .. })));
    let short = gpu.zeros::<f64>(a.nrows() - 1).unwrap();
    let err = pre.apply(&gpu, &short, &mut dz).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "r", .. }), "{err}");
}

/// `y = s A x`: a caller's operator over a plan.
struct Scaled<'a> {
    plan: Plan<'a, f64, DeviceCsr<f64>>,
    s: f64,
}

impl Operator<f64> for Scaled<'_> {
    fn gpu(&self) -> &Gpu {
        self.plan.gpu()
    }
    fn nrows(&self) -> usize {
        self.plan.matrix().nrows()
    }
    fn ncols(&self) -> usize {
        self.plan.matrix().ncols()
    }
    fn apply(&self, x: &DeviceVector<f64>, y: &mut DeviceVector<f64>) -> gpu_spmv::Result<()> {
        self.plan.spmv(self.s, x, 0.0, y)
    }
}

/// A caller's operator and preconditioner: `2A x = 2b` has the solution of `A x = b`, and the public
/// `Jacobi` given as a caller's preconditioner gives the bits of the built-in one.
#[test]
fn gpu_krylov_callers_operator_and_preconditioner() {
    let test = "gpu_krylov_callers_operator_and_preconditioner";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a: CsrMatrix<f64> = convection_diffusion(25, 19, 80.0).unwrap();
    let n = a.nrows();
    let da = gpu.upload_csr(&a).unwrap();
    let diagonal = CsrRef::from(&a).diagonal();
    let b = random_vector::<f64>(&mut rng, n);
    let db = gpu.upload_vector(&b).unwrap();
    let jacobi =
        SolverOptions { rel_tol: 1e-10, max_iterations: 2000, preconditioner: Preconditioner::Jacobi };
    let plain = SolverOptions { preconditioner: Preconditioner::None, ..jacobi };
    let mut x_built = gpu.zeros::<f64>(n).unwrap();
    let built = Gmres::new(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, 20, Some(&diagonal))
        .unwrap()
        .solve(&db, &mut x_built)
        .unwrap();
    let own = Box::new(Jacobi::new(&gpu, &diagonal).unwrap());
    let mut x_own = gpu.zeros::<f64>(n).unwrap();
    let mine = Gmres::with_preconditioner(gpu.plan(&da, Kernel::Auto).unwrap(), plain, 20, own)
        .unwrap()
        .solve(&db, &mut x_own)
        .unwrap();
    assert_eq!(built, mine);
    assert_eq!(x_built.to_host(&gpu).unwrap(), x_own.to_host(&gpu).unwrap());
    let own = Box::new(Jacobi::new(&gpu, &diagonal).unwrap());
    let refused =
        Gmres::with_preconditioner(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, 20, own).unwrap_err();
    assert!(matches!(refused, Error::Unsupported(_)), "{refused}");

    let twice = Scaled { plan: gpu.plan(&da, Kernel::Auto).unwrap(), s: 2.0 };
    let b2: Vec<f64> = b.iter().map(|v| 2.0 * v).collect();
    let db2 = gpu.upload_vector(&b2).unwrap();
    let mut x = gpu.zeros::<f64>(n).unwrap();
    let out = Bicgstab::new(twice, plain, None).unwrap().solve(&db2, &mut x).unwrap();
    assert_eq!(out.stop, Stop::Converged);
    let truth = true_residual(CsrRef::from(&a), &b, &x.to_host(&gpu).unwrap());
    assert!(truth <= 1e-8, "{truth:e}");
}

/// Refusals come before anything is enqueued or allocated, and leave `x` as it was; a Jacobi solver
/// refuses to run on values updated after its diagonal until it is given the new one.
#[test]
fn gpu_krylov_refusals_and_stale_values() {
    let test = "gpu_krylov_refusals_and_stale_values";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a: CsrMatrix<f64> = convection_diffusion(9, 11, 5.0).unwrap();
    let n = a.nrows();
    let da = gpu.upload_csr(&a).unwrap();
    let diagonal = CsrRef::from(&a).diagonal();
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 500, preconditioner: Preconditioner::Jacobi };
    let plan = || gpu.plan(&da, Kernel::Auto).unwrap();
    for restart in [0, 1025, usize::MAX] {
        let e = Gmres::new(plan(), options, restart, Some(&diagonal)).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::InvalidRestart { limit: 1024, .. })), "{restart}: {e}");
    }
    let e = Bicgstab::new(plan(), options, None).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "the diagonal", .. }), "{e}");
    let mut zero = diagonal.clone();
    zero[3] = 0.0;
    let e = Bicgstab::new(plan(), options, Some(&zero)).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::SingularDiagonal { row: 3, .. })), "{e}");
    let e =
        Bicgstab::new(plan(), SolverOptions { rel_tol: f64::NAN, ..options }, Some(&diagonal)).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::InvalidTolerance { .. })), "{e}");
    let wide = CsrMatrix::try_from_csr_data(2, 3, vec![0, 1, 2], vec![0, 2], vec![1.0, 1.0]).unwrap();
    let dw = gpu.upload_csr(&wide).unwrap();
    let e = Gmres::new(gpu.plan(&dw, Kernel::Auto).unwrap(), options, 5, Some(&[1.0, 1.0])).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::NotSquare { rows: 2, cols: 3 })), "{e}");

    let mut solver = Bicgstab::new(plan(), options, Some(&diagonal)).unwrap();
    let x0 = random_vector::<f64>(&mut rng, n);
    let mut x = gpu.upload_vector(&x0).unwrap();
    let short = gpu.zeros::<f64>(n - 1).unwrap();
    let e = solver.solve(&short, &mut x).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "b", .. }), "{e}");
    assert_eq!(x.to_host(&gpu).unwrap(), x0, "x changed by a refused solve");

    let b = gpu.upload_vector(&random_vector::<f64>(&mut rng, n)).unwrap();
    let mut values = a.values().to_vec();
    values.iter_mut().for_each(|v| *v *= 2.0);
    da.update_values(&gpu, &values).unwrap();
    let e = solver.solve(&b, &mut x).unwrap_err();
    assert!(matches!(e, Error::StaleValues { .. }), "{e}");
    let doubled: Vec<f64> = diagonal.iter().map(|d| 2.0 * d).collect();
    solver.set_diagonal(&doubled).unwrap();
    let out = solver.solve(&b, &mut x).unwrap();
    assert_eq!(out.stop, Stop::Converged, "{out:?}");
}

/// The residual histories: an entry for the start and one an iteration (BiCGSTAB's restarts from
/// its iterate included), the first `|b| / |b|` from `x = 0`, the last the outcome's; a capacity
/// below the iterations keeps the first entries; past `MAX_HISTORY`, refused.
#[test]
fn gpu_krylov_residual_histories() {
    let test = "gpu_krylov_residual_histories";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a: CsrMatrix<f64> = convection_diffusion(40, 30, 50.0).unwrap();
    let da = gpu.upload_csr(&a).unwrap();
    let b = random_vector::<f64>(&mut rng, a.nrows());
    let db = gpu.upload_vector(&b).unwrap();
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 5_000, preconditioner: Preconditioner::None };
    for (gmres, capacity) in [(false, 10_000), (true, 10_000), (false, 5), (true, 5)] {
        let plan = gpu.plan(&da, Kernel::Auto).unwrap();
        let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
        let (out, history) = if gmres {
            let mut solver = Gmres::new(plan, options, 20, None).unwrap().with_history(capacity).unwrap();
            (solver.solve(&db, &mut dx).unwrap(), solver.residual_history().unwrap())
        } else {
            let mut solver = Bicgstab::new(plan, options, None).unwrap().with_history(capacity).unwrap();
            (solver.solve(&db, &mut dx).unwrap(), solver.residual_history().unwrap())
        };
        println!("GMRES {gmres}, capacity {capacity}: {out:?}, {} entries", history.len());
        assert_eq!(out.stop, Stop::Converged);
        assert_eq!(history.len(), (out.iterations + 1).min(capacity), "GMRES {gmres}");
        assert!((history[0] - 1.0).abs() <= 1e-14, "GMRES {gmres}: x = 0 starts at |b|, not {}", history[0]);
        assert!(history.iter().all(|h| h.is_finite()), "GMRES {gmres}: {history:?}");
        if capacity > out.iterations {
            let last = history[history.len() - 1];
            assert!(
                (last - out.relative_residual).abs() <= 1e-12 * out.relative_residual,
                "GMRES {gmres}: last entry {last:e} against {out:?}"
            );
        }
    }
    let plan = gpu.plan(&da, Kernel::Auto).unwrap();
    let e = Bicgstab::new(plan, options, None).unwrap().with_history(MAX_HISTORY + 1).unwrap_err();
    assert!(matches!(e, Error::TooLarge { what: "the residual history", .. }), "{e:?}");
}
