//! ILU(0) on the GPU (`solve::Ilu0`) against its CPU oracle (`reference::ilu::IluFactors`): the apply
//! bit for bit in f32 and f64 on grids of several shapes, from diffusion- to convection-dominated,
//! and on a nonsymmetric matrix with unsorted and repeated entries (every element written, poisoned
//! first); the apply captured into a graph; BiCGSTAB and GMRES(30) preconditioned by it converging to
//! the true residual in fewer iterations than with Jacobi and in the CPU oracles' counts; the
//! refusals. Fresh random inputs (seed printed). Without a GPU these tests print why and pass,
//! unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{
    Recurrence, assert_counts_agree, dominant_irregular, gpu_or_skip, oracle_with_preconditioner,
    random_vector, rng, true_residual,
};
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{Bicgstab, Gmres, Ilu0, Precondition, Preconditioner, SolveError, SolverOptions, Stop};
use gpu_spmv::{CsrRef, Error, Gpu, Kernel, Scalar};
use kernels_gpu::abi::ILU_RUN_ROWS;
use nalgebra_sparse::CsrMatrix;
use rand_chacha::ChaCha8Rng;

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn apply_matches<T: Scalar>(gpu: &Gpu, rng: &mut ChaCha8Rng, name: &str, a: CsrRef<'_, T>) {
    let factors = IluFactors::new(a).unwrap();
    let mut pre = Ilu0::new(gpu, a).unwrap();
    let n = a.nrows();
    let r = random_vector::<T>(rng, n);
    let mut expected = vec![T::ZERO; n];
    factors.apply(&r, &mut expected).unwrap();
    let dr = gpu.upload_vector(&r).unwrap();
    let mut dz = gpu.upload_vector(&vec![T::from_f64(f64::NAN); n]).unwrap();
    pre.apply(gpu, &dr, &mut dz).unwrap();
    let z = dz.to_host(gpu).unwrap();
    assert_eq!(bits(&z), bits(&expected), "{} {name}", T::NAME);
    let (lower, upper) = (factors.lower_levels(), factors.upper_levels());
    assert_eq!(pre.levels(), (lower.count(), upper.count()));
    // Narrow levels share a launch: one a solve where no level is wider than a run's block.
    let narrow = |starts: &[usize]| starts.windows(2).all(|w| w[1] - w[0] <= ILU_RUN_ROWS as usize);
    let (lower_launches, upper_launches) = pre.launches();
    assert!(lower_launches <= lower.count() && upper_launches <= upper.count(), "{name}");
    if narrow(&lower.starts) && narrow(&upper.starts) && n > 0 {
        assert_eq!(pre.launches(), (1, 1), "{name}");
    }

    let mut dz_graph = gpu.upload_vector(&vec![T::from_f64(f64::NAN); n]).unwrap();
    let graph = gpu.capture(|| pre.apply(gpu, &dr, &mut dz_graph)).unwrap();
    graph.launch().unwrap();
    graph.launch().unwrap();
    assert_eq!(bits(&dz_graph.to_host(gpu).unwrap()), bits(&expected), "{} {name}: graph", T::NAME);
}

fn apply_against_oracle<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (nx, ny, pe) in [(1, 1, 0.0), (37, 29, 0.0), (64, 3, 50.0), (5, 130, 1000.0), (129, 128, 100.0)] {
        let a: CsrMatrix<T> = convection_diffusion(nx, ny, pe).unwrap();
        apply_matches(&gpu, &mut rng, &format!("{nx} x {ny}, Pe {pe}"), CsrRef::from(&a));
    }
    for n in [1, 2, 300, 4099] {
        let (o, c, v) = dominant_irregular::<T>(&mut rng, n);
        apply_matches(&gpu, &mut rng, &format!("irregular {n}"), CsrRef::try_new(n, n, &o, &c, &v).unwrap());
    }
}

#[test]
fn gpu_ilu0_apply_against_oracle_f32() {
    apply_against_oracle::<f32>("gpu_ilu0_apply_against_oracle_f32");
}

#[test]
fn gpu_ilu0_apply_against_oracle_f64() {
    apply_against_oracle::<f64>("gpu_ilu0_apply_against_oracle_f64");
}

/// BiCGSTAB and GMRES(30) on convection-diffusion from mild to dominant convection: preconditioned
/// by ILU(0) they converge to the true residual in fewer iterations than with Jacobi.
#[test]
fn gpu_ilu0_preconditions_the_nonsymmetric_solvers() {
    let test = "gpu_ilu0_preconditions_the_nonsymmetric_solvers";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let rel_tol = 1e-10;
    for peclet in [10.0, 1000.0] {
        let a: CsrMatrix<f64> = convection_diffusion(96, 80, peclet).unwrap();
        let view = CsrRef::from(&a);
        let da = gpu.upload_csr(&a).unwrap();
        let b = random_vector::<f64>(&mut rng, a.nrows());
        let db = gpu.upload_vector(&b).unwrap();
        let diagonal = view.diagonal();
        for gmres in [false, true] {
            let jacobi =
                SolverOptions { rel_tol, max_iterations: 20_000, preconditioner: Preconditioner::Jacobi };
            let plain = SolverOptions { preconditioner: Preconditioner::None, ..jacobi };
            let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
            let point = if gmres {
                Gmres::new(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, 30, Some(&diagonal))
                    .unwrap()
                    .solve(&db, &mut dx)
            } else {
                Bicgstab::new(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, Some(&diagonal))
                    .unwrap()
                    .solve(&db, &mut dx)
            }
            .unwrap();
            let pre = Box::new(Ilu0::new(&gpu, view).unwrap());
            let plan = gpu.plan(&da, Kernel::Auto).unwrap();
            let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
            let out = if gmres {
                Gmres::with_preconditioner(plan, plain, 30, pre).unwrap().solve(&db, &mut dx)
            } else {
                Bicgstab::with_preconditioner(plan, plain, pre).unwrap().solve(&db, &mut dx)
            }
            .unwrap();
            let truth = true_residual(view, &b, &dx.to_host(&gpu).unwrap());
            println!(
                "Pe {peclet}, GMRES {gmres}: ILU(0) {out:?}, true residual {truth:.2e}; Jacobi {point:?}"
            );
            assert_eq!(out.stop, Stop::Converged, "Pe {peclet}, GMRES {gmres}: {out:?}");
            assert!(truth <= 10.0 * rel_tol, "Pe {peclet}, GMRES {gmres}: true residual {truth:e}");
            assert!(
                out.iterations < point.iterations,
                "Pe {peclet}, GMRES {gmres}: {out:?} against {point:?}"
            );
            // Against the oracles with the same factors.
            let factors = IluFactors::new(view).unwrap();
            let oracle = oracle_with_preconditioner(view, &b, &plain, gmres.then_some(30), &factors);
            let recurrence = if gmres { Recurrence::Gmres } else { Recurrence::Bicgstab };
            assert_counts_agree::<f64>(recurrence, &out, &oracle, &format!("Pe {peclet}, GMRES {gmres}"));
        }
    }
}

#[test]
fn gpu_ilu0_refusals() {
    let test = "gpu_ilu0_refusals";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let wide = CsrRef::try_new(1, 2, &[0, 1], &[0], &[1.0f64]).unwrap();
    assert!(matches!(Ilu0::new(&gpu, wide), Err(Error::Solve(SolveError::NotSquare { .. }))));
    let singular = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 1.0, 1.0, 1.0]).unwrap();
    assert!(matches!(Ilu0::new(&gpu, singular), Err(Error::Solve(SolveError::ZeroPivot { row: 1, .. }))));
    let a: CsrMatrix<f64> = convection_diffusion(6, 5, 0.0).unwrap();
    let mut pre = Ilu0::new(&gpu, CsrRef::from(&a)).unwrap();
    assert_eq!(pre.n(), 30);
    let (short, mut z) = (gpu.zeros::<f64>(29).unwrap(), gpu.upload_vector(&[7.0; 30]).unwrap());
    assert!(matches!(pre.apply(&gpu, &short, &mut z), Err(Error::DimensionMismatch { what: "r", .. })));
    assert_eq!(z.to_host(&gpu).unwrap(), [7.0; 30]);
    let other = Gpu::new().unwrap();
    let (r2, mut z2) = (other.upload_vector(&[1.0; 30]).unwrap(), other.zeros::<f64>(30).unwrap());
    assert!(matches!(pre.apply(&other, &r2, &mut z2), Err(Error::ForeignBuffer(_))));
}
