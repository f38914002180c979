//! The Chebyshev polynomial preconditioner (`solve::Chebyshev`) on the GPU against its CPU oracle
//! (`reference::chebyshev`): the apply for degrees 0 to 32 on symmetric and nonsymmetric problems in
//! f32 and f64 (every element written, poisoned first), the power iteration's interval, the apply
//! captured into a graph (the same bits), BiCGSTAB and GMRES(30) preconditioned by it converging to
//! the true residual in fewer iterations than without and in the CPU oracles' counts, and the
//! refusals. Fresh random inputs (seed
//! printed). Without a GPU these tests print why and pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{
    Recurrence, assert_counts_agree, gpu_or_skip, oracle_with_preconditioner, random_vector, rng,
    true_residual,
};
use gpu_spmv::reference::chebyshev::{Polynomial, apply, spectral_radius};
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{
    Bicgstab, Chebyshev, EigenBounds, Gmres, Precondition, Preconditioner, SolveError, SolverOptions, Stop,
};
use gpu_spmv::{CsrRef, Error, Gpu, Kernel, Scalar};
use nalgebra_sparse::CsrMatrix;

/// `‖u - v‖ / ‖v‖` in f64.
fn relative_difference<T: Scalar>(u: &[T], v: &[T]) -> f64 {
    let norm = |w: &mut dyn Iterator<Item = f64>| w.map(|x| x * x).sum::<f64>().sqrt();
    norm(&mut u.iter().zip(v).map(|(a, b)| a.to_f64() - b.to_f64())) / norm(&mut v.iter().map(|b| b.to_f64()))
}

fn apply_matches_the_oracle<T: Scalar>(test: &str, tolerance: f64) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for peclet in [0.0, 50.0] {
        let a: CsrMatrix<T> = convection_diffusion(37, 29, peclet).unwrap();
        let view = CsrRef::from(&a);
        let n = a.nrows();
        let da = gpu.upload_csr(&a).unwrap();
        let plan = gpu.plan(&da, Kernel::Auto).unwrap();
        let bounds = Chebyshev::estimate_bounds(&plan, 20, 30.0).unwrap();
        let cpu_bounds = EigenBounds::from_radius(spectral_radius(&view, 20).unwrap(), 30.0).unwrap();
        let gap = (bounds.max - cpu_bounds.max).abs() / cpu_bounds.max;
        assert!(gap <= tolerance, "{} Pe {peclet}: bounds {bounds:?} against {cpu_bounds:?}", T::NAME);
        let mut pre = Chebyshev::new(plan, bounds, 0).unwrap();
        for degree in [0, 1, 2, 5, 16, 32] {
            if degree > 0 {
                pre = Chebyshev::new(gpu.plan(&da, Kernel::Auto).unwrap(), bounds, degree).unwrap();
            }
            let r = random_vector::<T>(&mut rng, n);
            let expected = apply(&view, bounds, degree, &r).unwrap();
            let dr = gpu.upload_vector(&r).unwrap();
            let mut dz = gpu.upload_vector(&vec![T::from_f64(f64::NAN); n]).unwrap();
            pre.apply(&gpu, &dr, &mut dz).unwrap();
            let z = dz.to_host(&gpu).unwrap();
            assert!(
                z.iter().all(|v| v.to_f64().is_finite()),
                "{} Pe {peclet} degree {degree}: unwritten",
                T::NAME
            );
            let error = relative_difference(&z, &expected);
            assert!(error <= tolerance, "{} Pe {peclet} degree {degree}: {error:e}", T::NAME);
            assert_eq!(pre.degree(), degree);

            // Captured into a graph: the same bits at every replay.
            let mut dz_graph = gpu.zeros::<T>(n).unwrap();
            let graph = gpu.capture(|| pre.apply(&gpu, &dr, &mut dz_graph)).unwrap();
            graph.launch().unwrap();
            graph.launch().unwrap();
            let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&dz_graph.to_host(&gpu).unwrap()),
                bits(&z),
                "{} degree {degree}: graph",
                T::NAME
            );
        }
    }
}

#[test]
fn gpu_chebyshev_apply_against_oracle_f32() {
    apply_matches_the_oracle::<f32>("gpu_chebyshev_apply_against_oracle_f32", 1e-4);
}

#[test]
fn gpu_chebyshev_apply_against_oracle_f64() {
    apply_matches_the_oracle::<f64>("gpu_chebyshev_apply_against_oracle_f64", 1e-12);
}

/// BiCGSTAB and GMRES(30) on a 2-D Poisson problem and a mildly convective one: preconditioned by a
/// Chebyshev polynomial of degree 4 they converge to the true residual in fewer iterations than
/// without.
#[test]
fn gpu_chebyshev_preconditions_the_nonsymmetric_solvers() {
    let test = "gpu_chebyshev_preconditions_the_nonsymmetric_solvers";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let rel_tol = 1e-10;
    for peclet in [0.0, 20.0] {
        let a: CsrMatrix<f64> = convection_diffusion(96, 80, peclet).unwrap();
        let view = CsrRef::from(&a);
        let da = gpu.upload_csr(&a).unwrap();
        let b = random_vector::<f64>(&mut rng, a.nrows());
        let db = gpu.upload_vector(&b).unwrap();
        let options = SolverOptions { rel_tol, max_iterations: 20_000, preconditioner: Preconditioner::None };
        for gmres in [false, true] {
            let solve = |pre: Option<Box<dyn Precondition<f64> + '_>>| {
                let plan = gpu.plan(&da, Kernel::Auto).unwrap();
                let mut dx = gpu.zeros::<f64>(a.nrows()).unwrap();
                let out = match (gmres, pre) {
                    (false, None) => Bicgstab::new(plan, options, None).unwrap().solve(&db, &mut dx),
                    (false, Some(pre)) => {
                        Bicgstab::with_preconditioner(plan, options, pre).unwrap().solve(&db, &mut dx)
                    }
                    (true, None) => Gmres::new(plan, options, 30, None).unwrap().solve(&db, &mut dx),
                    (true, Some(pre)) => {
                        Gmres::with_preconditioner(plan, options, 30, pre).unwrap().solve(&db, &mut dx)
                    }
                }
                .unwrap();
                (out, true_residual(view, &b, &dx.to_host(&gpu).unwrap()))
            };
            let (plain, _) = solve(None);
            let inner = gpu.plan(&da, Kernel::Auto).unwrap();
            let bounds = Chebyshev::estimate_bounds(&inner, 20, 30.0).unwrap();
            let (out, truth) = solve(Some(Box::new(Chebyshev::new(inner, bounds, 4).unwrap())));
            println!(
                "Pe {peclet}, GMRES {gmres}: Chebyshev(4) {out:?}, true residual {truth:.2e}; none {plain:?}"
            );
            assert_eq!(out.stop, Stop::Converged, "Pe {peclet}, GMRES {gmres}: {out:?}");
            assert!(truth <= 10.0 * rel_tol, "Pe {peclet}, GMRES {gmres}: true residual {truth:e}");
            assert!(
                out.iterations < plain.iterations,
                "Pe {peclet}, GMRES {gmres}: {out:?} against {plain:?}"
            );
            // Against the oracles with the same interval and degree.
            let polynomial = Polynomial { a: &view, bounds, degree: 4 };
            let oracle = oracle_with_preconditioner(view, &b, &options, gmres.then_some(30), &polynomial);
            let recurrence = if gmres { Recurrence::Gmres } else { Recurrence::Bicgstab };
            assert_counts_agree::<f64>(recurrence, &out, &oracle, &format!("Pe {peclet}, GMRES {gmres}"));
        }
    }
}

#[test]
fn gpu_chebyshev_refusals() {
    let test = "gpu_chebyshev_refusals";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let a: CsrMatrix<f64> = convection_diffusion(6, 5, 0.0).unwrap();
    let da = gpu.upload_csr(&a).unwrap();
    let plan = || gpu.plan(&da, Kernel::Auto).unwrap();
    let ok = EigenBounds { min: 0.1, max: 8.0 };
    let e = Chebyshev::new(plan(), ok, 65).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::InvalidDegree { value: 65, .. })), "{e}");
    let e = Chebyshev::new(plan(), EigenBounds { min: 0.0, max: 8.0 }, 3).unwrap_err();
    assert!(matches!(e, Error::InvalidNumber { .. }), "{e}");
    let e = Chebyshev::estimate_bounds(&plan(), 0, 30.0).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::InvalidPowerSteps { value: 0, .. })), "{e}");
    let e = Chebyshev::estimate_bounds(&plan(), 5, 1.0).unwrap_err();
    assert!(matches!(e, Error::InvalidNumber { .. }), "{e}");
    let wide = gpu.upload_csr_u32((2, 3), &[0, 1, 2], &[0, 2], &[1.0f64, 1.0]).unwrap();
    let e = Chebyshev::new(gpu.plan(&wide, Kernel::Auto).unwrap(), ok, 2).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::NotSquare { rows: 2, cols: 3 })), "{e}");

    let mut pre = Chebyshev::new(plan(), ok, 2).unwrap();
    let (r, mut z) = (gpu.upload_vector(&[1.0; 30]).unwrap(), gpu.zeros::<f64>(30).unwrap());
    let short = gpu.zeros::<f64>(29).unwrap();
    assert!(matches!(pre.apply(&gpu, &short, &mut z), Err(Error::DimensionMismatch { what: "r", .. })));
    // Both of one length, not the operator's: refused before `z` is written.
    let mut short_z = gpu.upload_vector(&[7.0; 29]).unwrap();
    let e = pre.apply(&gpu, &short, &mut short_z).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "r", expected: 30, got: 29 }), "{e}");
    assert_eq!(short_z.to_host(&gpu).unwrap(), [7.0; 29]);
    // A solver on another stream: its launches would not be ordered with the operator's.
    let other = Gpu::new().unwrap();
    let (r2, mut z2) = (other.upload_vector(&[1.0; 30]).unwrap(), other.zeros::<f64>(30).unwrap());
    assert!(matches!(pre.apply(&other, &r2, &mut z2), Err(Error::Unsupported(_))));
    pre.apply(&gpu, &r, &mut z).unwrap();
}
