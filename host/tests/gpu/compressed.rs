//! Compressed column indices and narrower values on the GPU: products against the f64 reference with
//! `y` poisoned where `beta == 0`, on the edge cases and on matrices with plain and compressed
//! segments; `y` bit-identical to the cooperative CSR kernels of the same width; the error of f16,
//! bf16 and f32 storage within the bound `CompressedCsr::error_bound` states. Without a GPU these
//! tests print why and pass, unless `SPMV_REQUIRE_GPU=1`, which makes them fail instead.

use crate::common::{Case, Csr, banded, edge_cases, five_point, gpu_or_skip, random_vector, rng, tolerance};
use gpu_spmv::formats::{CompressedCsr, ValueStorage};
use gpu_spmv::reference::{error_scale, spmv_f64};
use gpu_spmv::{CompressedKernel, DeviceCompressed, Error, Gpu, Kernel, Scalar};
use half::{bf16, f16};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The matrices: the shared edge cases, a stencil and a band (all segments compressed), and
/// matrices whose segments alternate between compressed and plain columns.
fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut all: Vec<(String, Csr<T>)> =
        edge_cases(rng).into_iter().map(|(n, a)| (n.to_string(), a)).collect();
    all.push(("5-point 157 x 157".into(), five_point(157, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))));
    all.push(("banded 5001 x 5013".into(), banded(rng, 5001, 5013, 48, 3)));
    let mut mixed = Csr::random(rng, 32 * 41 + 7, 300_001, false, |r| (r * 13) % 45);
    for r in 0..mixed.nrows {
        if (r / 32) % 3 != 0 {
            for k in mixed.offsets[r]..mixed.offsets[r + 1] {
                mixed.cols[k] = (r + 7 * (k - mixed.offsets[r])) % mixed.ncols;
            }
        }
    }
    all.push(("mixed plain and compressed segments".into(), mixed));
    all
}

fn upload<T: Scalar, V: ValueStorage<T>>(gpu: &Gpu, a: &Csr<T>) -> DeviceCompressed<T, V> {
    gpu.upload_compressed(&CompressedCsr::<T, V>::try_from_csr(a.view()).unwrap()).unwrap()
}

/// `beta = 0` on a NaN-poisoned `y` (an unwritten element shows), `beta != 0`, and `alpha = 0`.
fn cases<T: Scalar>(a: &Csr<T>, x: &[T], rng: &mut ChaCha8Rng) -> Vec<Case<T>> {
    let y0 = random_vector::<T>(rng, a.nrows);
    let poison = vec![T::from_f64(f64::NAN); a.nrows];
    [(1.0, 0.0, &poison), (-1.5, 0.75, &y0), (0.0, 3.0, &y0)]
        .into_iter()
        .map(|(alpha, beta, start)| Case::new(a, x, T::from_f64(alpha), T::from_f64(beta), start.clone()))
        .collect()
}

/// Every width and Auto, values in `T`, against the f64 reference.
fn against_reference<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let kernels = std::iter::once(CompressedKernel::Auto)
        .chain(CompressedKernel::COOPS.map(|coop| CompressedKernel::Coop { coop }));
    let kernels: Vec<CompressedKernel> = kernels.collect();
    for (name, a) in matrices::<T>(&mut rng) {
        let m = upload::<T, T>(&gpu, &a);
        let x = random_vector::<T>(&mut rng, a.ncols);
        let dx = gpu.upload_vector(&x).unwrap();
        let tol = tolerance::<T>(a.view().stats().max);
        for case in cases(&a, &x, &mut rng) {
            for &kernel in &kernels {
                let mut dy = gpu.upload_vector(&case.start).unwrap();
                gpu.spmv_with(kernel, case.alpha, &m, &dx, case.beta, &mut dy).unwrap();
                case.assert_close(&format!("{name}, {kernel:?}"), &dy.to_host(&gpu).unwrap(), tol);
            }
        }
    }
}

#[test]
fn gpu_compressed_f32() {
    against_reference::<f32>("gpu_compressed_f32");
}

#[test]
fn gpu_compressed_f64() {
    against_reference::<f64>("gpu_compressed_f64");
}

/// `y` of the compressed kernel, values in `T`, is bit for bit that of the parametrised CSR kernel
/// (one row per group, no split) and of the cooperative CSR kernel of the same width.
fn bit_identical<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        let csr = gpu.upload_csr_ref(a.view()).unwrap();
        let m = upload::<T, T>(&gpu, &a);
        let dx = gpu.upload_vector(&random_vector::<T>(&mut rng, a.ncols)).unwrap();
        let y0 = random_vector::<T>(&mut rng, a.nrows);
        let run = |f: &dyn Fn(&mut gpu_spmv::DeviceVector<T>) -> gpu_spmv::Result<()>| {
            let mut dy = gpu.upload_vector(&y0).unwrap();
            f(&mut dy).unwrap();
            dy.to_host(&gpu).unwrap().iter().map(|v| v.to_f64().to_bits()).collect::<Vec<u64>>()
        };
        let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
        for coop in CompressedKernel::COOPS {
            let ours = run(&|y| gpu.spmv_with(CompressedKernel::Coop { coop }, alpha, &m, &dx, beta, y));
            let param = Kernel::CsrParam { coop, repeat: 1, block_size: 128, split_long_rows: false };
            let theirs = run(&|y| gpu.spmv_with(param, alpha, &csr, &dx, beta, y));
            assert_eq!(ours, theirs, "{name}: coop {coop} against the parametrised CSR kernel");
            if Kernel::VECTOR_COOPS.contains(&coop) {
                let vector = Kernel::CsrVector { coop, block_size: 256 };
                let theirs = run(&|y| gpu.spmv_with(vector, alpha, &csr, &dx, beta, y));
                assert_eq!(ours, theirs, "{name}: coop {coop} against the cooperative CSR kernel");
            }
        }
    }
}

#[test]
fn gpu_compressed_bit_identical_f32() {
    bit_identical::<f32>("gpu_compressed_bit_identical_f32");
}

#[test]
fn gpu_compressed_bit_identical_f64() {
    bit_identical::<f64>("gpu_compressed_bit_identical_f64");
}

/// The measured error of every row of products with values stored as `V`, against the f64 reference
/// of the unrounded matrix, is within `CompressedCsr::error_bound` (plus the reference's own
/// rounding, `γ_n` in f64), on random matrices with rows up to 300 entries, for every width. Returns
/// the largest ratio of error to bound.
fn within_bound<T: Scalar, V: ValueStorage<T>>(gpu: &Gpu, rng: &mut ChaCha8Rng, what: &str) -> f64 {
    let mut worst: f64 = 0.0;
    for (name, a) in [
        ("random", Csr::<T>::random(rng, 4099, 3001, true, |r| (r * 7) % 300)),
        ("5-point", five_point::<T>(97, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))),
    ] {
        let c = CompressedCsr::<T, V>::try_from_csr(a.view()).unwrap();
        let m = gpu.upload_compressed(&c).unwrap();
        let x = random_vector::<T>(rng, a.ncols);
        let y0 = random_vector::<T>(rng, a.nrows);
        let dx = gpu.upload_vector(&x).unwrap();
        for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.5)] {
            let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
            let reference = spmv_f64(alpha, a.view(), &x, beta, &y0).unwrap();
            let scale = error_scale(alpha, a.view(), &x, beta, &y0).unwrap();
            for coop in CompressedKernel::COOPS {
                let mut dy = gpu.upload_vector(&vec![T::from_f64(f64::NAN); a.nrows]).unwrap();
                if beta != T::ZERO {
                    dy = gpu.upload_vector(&y0).unwrap();
                }
                gpu.spmv_with(CompressedKernel::Coop { coop }, alpha, &m, &dx, beta, &mut dy).unwrap();
                for (row, y) in dy.to_host(gpu).unwrap().iter().enumerate() {
                    let n = (a.offsets[row + 1] - a.offsets[row]) as f64;
                    let slack = 2.0 * n * f64::EPSILON * scale[row];
                    let bound = c.error_bound(row) * scale[row] + slack;
                    let err = (y.to_f64() - reference[row]).abs();
                    assert!(
                        err <= bound,
                        "{what}, {name}, coop {coop}, row {row}: error {err:e} over {bound:e}"
                    );
                    if bound > 0.0 {
                        worst = worst.max(err / bound);
                    }
                }
            }
        }
    }
    worst
}

#[test]
fn gpu_compressed_reduced_precision_within_the_stated_bound() {
    let Some(gpu) = gpu_or_skip("gpu_compressed_reduced_precision") else { return };
    let mut rng = rng("gpu_compressed_reduced_precision");
    let ratios = [
        ("bf16 values, f32 product", within_bound::<f32, bf16>(&gpu, &mut rng, "bf16/f32")),
        ("f16 values, f32 product", within_bound::<f32, f16>(&gpu, &mut rng, "f16/f32")),
        ("f32 values, f64 product", within_bound::<f64, f32>(&gpu, &mut rng, "f32/f64")),
        ("bf16 values, f64 product", within_bound::<f64, bf16>(&gpu, &mut rng, "bf16/f64")),
        ("f16 values, f64 product", within_bound::<f64, f16>(&gpu, &mut rng, "f16/f64")),
    ];
    for (what, ratio) in ratios {
        crate::common::say(&format!("{what}: largest error / bound = {ratio:.3}"));
    }
}

/// The planner's candidate and the typed errors: a width the kernel is not compiled for is refused
/// before anything runs, and `y` stays as it was.
#[test]
fn gpu_compressed_errors_leave_y_untouched() {
    let Some(gpu) = gpu_or_skip("gpu_compressed_errors") else { return };
    let a = Csr::<f32> { nrows: 2, ncols: 3, offsets: vec![0, 1, 2], cols: vec![0, 2], vals: vec![1.0, 2.0] };
    let m = upload::<f32, bf16>(&gpu, &a);
    let x = gpu.upload_vector(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = gpu.upload_vector(&[4.0f32, 5.0]).unwrap();
    let err = gpu.spmv_with(CompressedKernel::Coop { coop: 3 }, 1.0, &m, &x, 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::InvalidKernel(_)), "{err}");
    let x_short = gpu.upload_vector(&[1.0f32, 2.0]).unwrap();
    let err = gpu.spmv(1.0, &m, &x_short, 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "x", .. }), "{err}");
    assert_eq!(y.to_host(&gpu).unwrap(), [4.0, 5.0]);
    gpu.spmv(2.0, &m, &x, 0.0, &mut y).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), [2.0, 12.0]);
    let plan = gpu.plan(&m, CompressedKernel::Auto).unwrap();
    assert_eq!(plan.kernel(), CompressedKernel::Coop { coop: 1 });
}
