//! New values for an uploaded CSR matrix (`DeviceCsr::update_values`, `update_values_from`), on the
//! GPU against the f64 reference: plans made before an update (every CSR kernel family, the ELL
//! copy, the transposed product both ways, SpMM) compute with the new values after it; the explicit
//! transpose is refreshed; a Jacobi solver refuses until it has the new diagonal (on a `DeviceCsr` and on the
//! planner's `AutoMatrix` holding one), a plain one goes on; the
//! update from a device buffer captured into a graph takes the buffer's contents at every replay;
//! refused updates leave the values as they were; the formats converted on the host from the same
//! matrix are copies of their own, untouched. Fresh random values each time (seed printed). Without a
//! GPU these tests print why and pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{
    Case, Csr, edge_cases, five_point, gpu_or_skip, random_vector, rng, stencil_past_twice_the_l2, tolerance,
};
use gpu_spmv::formats::Ell;
use gpu_spmv::reference::{
    DenseRef, error_scale_transposed, max_relative_error, spmm_f64, spmv_transpose_f64,
};
use gpu_spmv::solve::Cg;
use gpu_spmv::solve::{Preconditioner, SolverOptions};
use gpu_spmv::spmm::{Layout, SpmmKernel};
use gpu_spmv::transpose::TransposeKernel;
use gpu_spmv::{DeviceCsr, Error, Gpu, Kernel, Scalar};
use rand_chacha::ChaCha8Rng;

/// One kernel of each CSR family: the plain row walks read the values in place, the split and
/// balanced ones too, beside their pattern-only data.
const KERNELS: [Kernel; 6] = [
    Kernel::Auto,
    Kernel::CsrVector { coop: 8, block_size: 128 },
    Kernel::CsrAligned { group: 16, cached_x: true, block_size: 128 },
    Kernel::CsrParam { coop: 4, repeat: 1, block_size: 128, split_long_rows: true },
    Kernel::CsrBalanced { block_size: 128 },
    Kernel::CsrMerge { block_size: 128 },
];

/// `a` with fresh values in `[-1, 1)`, the same pattern.
fn renewed<T: Scalar>(rng: &mut ChaCha8Rng, a: &Csr<T>) -> Csr<T> {
    Csr { vals: random_vector(rng, a.vals.len()), ..a.clone() }
}

/// Every plan of `da` made before an update checked against `a`, the values the matrix holds now.
fn check_plans<T: Scalar>(gpu: &Gpu, what: &str, rng: &mut ChaCha8Rng, da: &DeviceCsr<T>, a: &Csr<T>) {
    let x = random_vector::<T>(rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let start = random_vector::<T>(rng, a.nrows);
    let (alpha, beta) = (T::from_f64(0.75), T::from_f64(-1.25));
    let case = Case::new(a, &x, alpha, beta, start.clone());
    let tol = tolerance::<T>(a.view().stats().max);
    for kernel in KERNELS {
        let mut dy = gpu.upload_vector(&start).unwrap();
        gpu.plan(da, kernel).unwrap().spmv(alpha, &dx, beta, &mut dy).unwrap();
        case.assert_close(&format!("{what}, {kernel:?}"), &dy.to_host(gpu).unwrap(), tol);
    }
    // The ELL copy, where the host's ELL takes the matrix (its values follow the updates too);
    // refused with the same padding error where it does not.
    match (gpu.plan(da, Kernel::CsrEllCopy), Ell::try_from_csr(a.view())) {
        (Ok(plan), Ok(_)) => {
            let mut dy = gpu.upload_vector(&start).unwrap();
            plan.spmv(alpha, &dx, beta, &mut dy).unwrap();
            case.assert_close(&format!("{what}, the ELL copy"), &dy.to_host(gpu).unwrap(), tol);
        }
        (Err(device), Err(host)) => assert_eq!(device.to_string(), host.to_string(), "{what}"),
        (device, host) => panic!("{what}: the ELL copy {:?}, the host's ELL {:?}", device.err(), host.err()),
    }

    let xt = random_vector::<T>(rng, a.nrows);
    let dxt = gpu.upload_vector(&xt).unwrap();
    let yt = random_vector::<T>(rng, a.ncols);
    let reference = spmv_transpose_f64(alpha, a.view(), &xt, beta, &yt).unwrap();
    let scale = error_scale_transposed(alpha, a.view(), &xt, beta, &yt).unwrap();
    let tol_t = tolerance::<T>(a.nrows);
    for kernel in [TransposeKernel::Explicit, TransposeKernel::Atomic] {
        let mut dy = gpu.upload_vector(&yt).unwrap();
        gpu.plan(da.transposed(), kernel).unwrap().spmv(alpha, &dxt, beta, &mut dy).unwrap();
        let err = max_relative_error(&dy.to_host(gpu).unwrap(), &reference, &scale);
        assert!(err <= tol_t, "{what}, transposed {kernel:?}: relative error {err:e} over {tol_t:e}");
    }

    // Column-major with `ld` = rows: what comes back is packed as the reference's columns.
    let k = 3;
    let xs = random_vector::<T>(rng, a.ncols * k);
    let ys = random_vector::<T>(rng, a.nrows * k);
    let dxs = gpu.upload_dense(a.ncols, k, Layout::ColMajor, a.ncols, &xs).unwrap();
    let mut dys = gpu.upload_dense(a.nrows, k, Layout::ColMajor, a.nrows, &ys).unwrap();
    let spmm = gpu.plan_spmm(da, Layout::ColMajor, k, SpmmKernel::Auto).unwrap();
    spmm.spmm(alpha, &dxs, beta, &mut dys).unwrap();
    let dense = |data, rows| DenseRef::try_new(data, rows, k, 1, rows).unwrap();
    let (reference, scale) =
        spmm_f64(alpha, a.view(), dense(&xs, a.ncols), beta, dense(&ys, a.nrows)).unwrap();
    let err = max_relative_error(&dys.to_host(gpu).unwrap(), &reference, &scale);
    assert!(err <= tol, "{what}, SpMM: relative error {err:e} over {tol:e}");
}

fn plans_follow_updates<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut matrices = edge_cases::<T>(&mut rng);
    matrices.push(("random 3000 x 700", Csr::random(&mut rng, 3000, 700, true, |r| r % 23)));
    for (name, a) in matrices {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        // Plans first, so that every strategy's data and the transpose exist before the updates.
        check_plans(&gpu, &format!("{name}, as uploaded"), &mut rng, &da, &a);

        let host = renewed(&mut rng, &a);
        da.update_values(&gpu, &host.vals).unwrap();
        check_plans(&gpu, &format!("{name}, values from the host"), &mut rng, &da, &host);
        assert_eq!(da.values_generation(), 1, "{name}");

        let device = renewed(&mut rng, &a);
        let source = gpu.upload_vector(&device.vals).unwrap();
        da.update_values_from(&gpu, &source).unwrap();
        check_plans(&gpu, &format!("{name}, values from the device"), &mut rng, &da, &device);

        // Its own values, and a caller's CudaSlice.
        da.update_values_from(&gpu, da.values()).unwrap();
        da.update_values_from(&gpu, source.as_slice()).unwrap();
        check_plans(&gpu, &format!("{name}, values from itself"), &mut rng, &da, &device);
        assert_eq!(da.values_generation(), 4, "{name}");
    }
}

#[test]
fn gpu_plans_follow_updates_f32() {
    plans_follow_updates::<f32>("gpu_plans_follow_updates_f32");
}

#[test]
fn gpu_plans_follow_updates_f64() {
    plans_follow_updates::<f64>("gpu_plans_follow_updates_f64");
}

/// A matrix past twice the L2 whose transpose Auto multiplies by its own ELL copy (a 5-point
/// stencil's transpose is one): an update reaches the transpose's copy as the matrix's.
#[test]
fn gpu_updates_reach_the_ell_copies() {
    let test = "gpu_updates_reach_the_ell_copies";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = stencil_past_twice_the_l2(&gpu, &mut rng);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    check_copies(&gpu, "as uploaded", &mut rng, &da, &a);
    let host = renewed(&mut rng, &a);
    da.update_values(&gpu, &host.vals).unwrap();
    check_copies(&gpu, "after an update", &mut rng, &da, &host);
}

/// The products of Auto's plans of `da` (its ELL copy) and of its transpose (the transpose's ELL
/// copy) checked against `a`, the values `da` holds now.
fn check_copies(gpu: &Gpu, what: &str, rng: &mut ChaCha8Rng, da: &DeviceCsr<f32>, a: &Csr<f32>) {
    let (x, xt) = (random_vector::<f32>(rng, a.ncols), random_vector::<f32>(rng, a.nrows));
    let (dx, dxt) = (gpu.upload_vector(&x).unwrap(), gpu.upload_vector(&xt).unwrap());
    let plan = gpu.plan(da, Kernel::Auto).unwrap();
    assert_eq!(plan.kernel(), Kernel::CsrEllCopy, "{what}: Auto's kernel");
    let mut dy = gpu.zeros::<f32>(a.nrows).unwrap();
    plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
    let case = Case::new(a, &x, 1.0, 0.0, vec![0.0; a.nrows]);
    case.assert_close(&format!("{what}, the ELL copy"), &dy.to_host(gpu).unwrap(), tolerance::<f32>(5));
    let transposed = gpu.plan(da.transposed(), TransposeKernel::Explicit).unwrap();
    let mut dyt = gpu.zeros::<f32>(a.ncols).unwrap();
    transposed.spmv(1.0, &dxt, 0.0, &mut dyt).unwrap();
    let zeros = vec![0.0; a.ncols];
    let reference = spmv_transpose_f64(1.0, a.view(), &xt, 0.0, &zeros).unwrap();
    let scale = error_scale_transposed(1.0, a.view(), &xt, 0.0, &zeros).unwrap();
    let err = max_relative_error(&dyt.to_host(gpu).unwrap(), &reference, &scale);
    assert!(err <= tolerance::<f32>(5), "{what}, transposed: relative error {err:e}");
}

#[test]
fn gpu_refused_updates_change_nothing() {
    let test = "gpu_refused_updates_change_nothing";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 500, 400, true, |r| 1 + r % 9);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let short = random_vector::<f64>(&mut rng, a.vals.len() - 1);
    assert!(matches!(da.update_values(&gpu, &short), Err(Error::DimensionMismatch { .. })));
    let dshort = gpu.upload_vector(&short).unwrap();
    assert!(matches!(da.update_values_from(&gpu, &dshort), Err(Error::DimensionMismatch { .. })));

    let other = Gpu::new().unwrap();
    let foreign = other.upload_vector(&a.vals).unwrap();
    assert!(matches!(da.update_values_from(&gpu, &foreign), Err(Error::ForeignBuffer(_))));
    assert!(matches!(da.update_values(&other, &a.vals), Err(Error::ForeignBuffer(_))));

    // From the host, not while capturing: the replay would read host memory again.
    let captured = gpu.capture(|| da.update_values(&gpu, &a.vals));
    assert!(matches!(captured, Err(Error::Unsupported(_))), "{captured:?}");

    assert_eq!(da.values_generation(), 0);
    assert_eq!(gpu.stream().clone_dtoh(da.values()).unwrap(), a.vals);
}

/// The update from a device buffer and a product, captured once: each replay takes what the buffer
/// holds then.
#[test]
fn gpu_captured_update_reads_the_buffer_at_replay() {
    let test = "gpu_captured_update_reads_the_buffer_at_replay";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 2000, 1500, true, |r| r % 31);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let plan = gpu.plan(&da, Kernel::Auto).unwrap();
    let transposed = gpu.plan(da.transposed(), TransposeKernel::Explicit).unwrap();
    let x = random_vector::<f32>(&mut rng, a.ncols);
    let xt = random_vector::<f32>(&mut rng, a.nrows);
    let (dx, dxt) = (gpu.upload_vector(&x).unwrap(), gpu.upload_vector(&xt).unwrap());
    let (mut dy, mut dyt) = (gpu.zeros::<f32>(a.nrows).unwrap(), gpu.zeros::<f32>(a.ncols).unwrap());
    let mut source = gpu.upload_vector(&a.vals).unwrap();
    let graph = gpu
        .capture(|| {
            da.update_values_from(&gpu, &source)?;
            plan.spmv(1.0, &dx, 0.0, &mut dy)?;
            transposed.spmv(1.0, &dxt, 0.0, &mut dyt)
        })
        .unwrap();
    for replay in 0..3 {
        let b = renewed(&mut rng, &a);
        source.copy_from_host(&gpu, &b.vals).unwrap();
        graph.launch().unwrap();
        let what = format!("replay {replay}");
        Case::new(&b, &x, 1.0, 0.0, vec![f32::NAN; a.nrows]).assert_close(
            &what,
            &dy.to_host(&gpu).unwrap(),
            tolerance::<f32>(a.view().stats().max),
        );
        let reference = spmv_transpose_f64(1.0, b.view(), &xt, 0.0, &vec![0.0; a.ncols]).unwrap();
        let scale = error_scale_transposed(1.0, b.view(), &xt, 0.0, &vec![0.0; a.ncols]).unwrap();
        let err = max_relative_error(&dyt.to_host(&gpu).unwrap(), &reference, &scale);
        assert!(err <= tolerance::<f32>(a.nrows), "{what}, transposed: relative error {err:e}");
    }
}

/// A Jacobi solver refuses to run once the values changed under its diagonal, and solves the new
/// system once given the new one; a plain solver follows the values by itself.
#[test]
fn gpu_stale_jacobi_diagonal_is_refused() {
    let test = "gpu_stale_jacobi_diagonal_is_refused";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let n = 40;
    let a = five_point::<f64>(n, |r, c| if r == c { 4.5 } else { -1.0 });
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let jacobi =
        SolverOptions { rel_tol: 1e-10, max_iterations: 2000, preconditioner: Preconditioner::Jacobi };
    let plain = SolverOptions { preconditioner: Preconditioner::None, ..jacobi };
    let diagonal = vec![4.5; n * n];
    let mut cg = Cg::new(gpu.plan(&da, Kernel::Auto).unwrap(), jacobi, Some(&diagonal)).unwrap();
    let mut cg_plain = Cg::new(gpu.plan(&da, Kernel::Auto).unwrap(), plain, None).unwrap();
    let b = random_vector::<f64>(&mut rng, n * n);
    let db = gpu.upload_vector(&b).unwrap();
    let mut dx = gpu.zeros::<f64>(n * n).unwrap();
    cg.solve(&db, &mut dx).unwrap();

    // A new diagonal (and a diagonally dominant, symmetric matrix still).
    let shift: Vec<f64> = (0..n * n).map(|r| 4.5 + (r % 7) as f64).collect();
    let b_vals: Vec<f64> = (0..n * n)
        .flat_map(|r| {
            let view = a.view();
            let (cols, _) = view.row(r);
            cols.iter().map(|&c| if c == r { shift[r] } else { -1.0 }).collect::<Vec<_>>()
        })
        .collect();
    da.update_values(&gpu, &b_vals).unwrap();
    let before = dx.to_host(&gpu).unwrap();
    assert!(matches!(cg.solve(&db, &mut dx), Err(Error::StaleValues { .. })));
    assert!(matches!(cg.iterate(&mut dx, 1), Err(Error::StaleValues { .. })));
    assert_eq!(dx.to_host(&gpu).unwrap(), before, "a refused solve wrote x");

    let updated = Csr { vals: b_vals, ..a.clone() };
    let check_solution = |what: &str, x: &[f64]| {
        let ax = gpu_spmv::reference::spmv_f64(1.0, updated.view(), x, 0.0, &vec![0.0; n * n]).unwrap();
        let residual = ax.iter().zip(&b).map(|(l, r)| (l - r).powi(2)).sum::<f64>().sqrt();
        let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(residual <= 1e-8 * norm, "{what}: residual {residual:e} of {norm:e}");
    };
    cg.set_diagonal(&shift).unwrap();
    cg.solve(&db, &mut dx).unwrap();
    check_solution("Jacobi", &dx.to_host(&gpu).unwrap());
    let mut dx_plain = gpu.zeros::<f64>(n * n).unwrap();
    cg_plain.solve(&db, &mut dx_plain).unwrap();
    check_solution("plain", &dx_plain.to_host(&gpu).unwrap());
    assert!(matches!(cg_plain.set_diagonal(&shift), Err(Error::Unsupported(_))));
}

/// A matrix the planner keeps in CSR (`AutoMatrix::Csr`) may have its values updated: a Jacobi
/// solver on a plan of the `AutoMatrix` refuses until it has the new diagonal, as on the `DeviceCsr`.
#[test]
fn gpu_stale_jacobi_diagonal_of_an_auto_matrix_is_refused() {
    use gpu_spmv::select::AutoMatrix;
    let test = "gpu_stale_jacobi_diagonal_of_an_auto_matrix_is_refused";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let n = 30;
    let a = five_point::<f64>(n, |r, c| if r == c { 4.5 } else { -1.0 });
    // One product: no conversion pays off, so the planner keeps CSR.
    let (auto, _) = gpu.upload_for_products(a.view(), 1).unwrap();
    let AutoMatrix::Csr(inner) = &auto else {
        panic!("one product kept another format: {:?}", auto.format())
    };
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 2000, preconditioner: Preconditioner::Jacobi };
    let mut cg = Cg::new(gpu.plan(&auto, ()).unwrap(), options, Some(&vec![4.5; n * n])).unwrap();
    let db = gpu.upload_vector(&random_vector::<f64>(&mut rng, n * n)).unwrap();
    let mut dx = gpu.zeros::<f64>(n * n).unwrap();
    cg.solve(&db, &mut dx).unwrap();
    let doubled: Vec<f64> = a.vals.iter().map(|v| 2.0 * v).collect();
    inner.update_values(&gpu, &doubled).unwrap();
    assert!(matches!(cg.solve(&db, &mut dx), Err(Error::StaleValues { .. })));
    cg.set_diagonal(&vec![9.0; n * n]).unwrap();
    assert_eq!(cg.solve(&db, &mut dx).unwrap().stop, gpu_spmv::solve::Stop::Converged);
}

/// ELL, SELL, HYB, BRC and compressed columns are converted on the host from the caller's matrix:
/// copies of their own, which an update of the `DeviceCsr` uploaded from the same matrix does not
/// reach.
#[test]
fn gpu_host_converted_formats_are_copies() {
    use gpu_spmv::formats::{Brc, Ell, Hyb, Sell, brc_model_b2};
    let test = "gpu_host_converted_formats_are_copies";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 1000, 800, true, |r| 1 + r % 11);
    let view = a.view();
    let da = gpu.upload_csr_ref(view).unwrap();
    let ell = gpu.upload_ell(&Ell::try_from_csr(view).unwrap()).unwrap();
    let sell = gpu.upload_sell(&Sell::try_from_csr(view).unwrap()).unwrap();
    let hyb = gpu.upload_hyb(&Hyb::try_from_csr(view).unwrap()).unwrap();
    let brc = gpu
        .upload_brc(&Brc::try_from_csr(view, brc_model_b2(&view.stats(), gpu.sm_count())).unwrap())
        .unwrap();
    da.update_values(&gpu, &renewed(&mut rng, &a).vals).unwrap();
    let x = random_vector::<f64>(&mut rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let case = Case::new(&a, &x, 1.0, 0.0, vec![f64::NAN; a.nrows]);
    let tol = tolerance::<f64>(view.stats().max);
    let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
    gpu.spmv(1.0, &ell, &dx, 0.0, &mut dy).unwrap();
    case.assert_close("ELL", &dy.to_host(&gpu).unwrap(), tol);
    gpu.spmv(1.0, &sell, &dx, 0.0, &mut dy).unwrap();
    case.assert_close("SELL", &dy.to_host(&gpu).unwrap(), tol);
    gpu.spmv(1.0, &hyb, &dx, 0.0, &mut dy).unwrap();
    case.assert_close("HYB", &dy.to_host(&gpu).unwrap(), tol);
    gpu.spmv(1.0, &brc, &dx, 0.0, &mut dy).unwrap();
    case.assert_close("BRC", &dy.to_host(&gpu).unwrap(), tol);
}
