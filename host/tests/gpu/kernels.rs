//! Every GPU kernel against the f64 reference, on fresh random and edge-case matrices, with the output
//! poisoned before each launch. Without a GPU these tests print why and pass, unless
//! `SPMV_REQUIRE_GPU=1`, which makes them fail instead.

use crate::common::{Csr, check, edge_cases, gpu_or_skip, random_vector, rng};
use gpu_spmv::{Error, Gpu, Kernel, Scalar};
use std::num::NonZeroU32;

/// Every kernel and launch shape the library offers.
fn kernels() -> Vec<Kernel> {
    let mut all = vec![Kernel::Auto];
    for block_size in [32, 128, 1024] {
        all.push(Kernel::CsrScalar { block_size });
        all.extend(Kernel::VECTOR_COOPS.map(|coop| Kernel::CsrVector { coop, block_size }));
        all.push(Kernel::CsrBalanced { block_size: block_size.min(Kernel::BALANCED_MAX_BLOCK_SIZE) });
        all.push(Kernel::CsrMerge { block_size: block_size.min(Kernel::MERGE_MAX_BLOCK_SIZE) });
    }
    all
}

/// Runs `kernel` on `a` for `beta = 0` with `y` poisoned by NaN (so an unwritten element shows), for
/// `beta != 0`, and for `alpha = 0`, checking each result against the f64 reference.
fn check_kernel<T: Scalar>(
    gpu: &Gpu,
    name: &str,
    kernel: Kernel,
    a: &Csr<T>,
    rng: &mut rand_chacha::ChaCha8Rng,
) {
    let da = gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap();
    let x = random_vector::<T>(rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let y0 = random_vector::<T>(rng, a.nrows);
    let poison = vec![T::from_f64(f64::NAN); a.nrows];
    let cases = [
        (T::from_f64(1.0), T::ZERO, &poison),
        (T::from_f64(-1.5), T::from_f64(0.75), &y0),
        (T::ZERO, T::from_f64(3.0), &y0),
    ];
    for (alpha, beta, start) in cases {
        let mut dy = gpu.upload_vector(start).unwrap();
        gpu.spmv_with(kernel, alpha, &da, &dx, beta, &mut dy).unwrap();
        let y = dy.to_host(gpu).unwrap();
        let y_in: Vec<T> = if beta == T::ZERO { vec![T::ZERO; a.nrows] } else { start.clone() };
        check(&format!("{name}, {kernel:?}, alpha {alpha}, beta {beta}"), a, alpha, &x, beta, &y_in, &y);
    }
}

fn all_kernels<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut matrices = edge_cases::<T>(&mut rng);
    matrices.push(("random 20011 x 20011, 0..64 per row", {
        let lens: Vec<usize> = (0..20_011).map(|_| rand::Rng::random_range(&mut rng, 0..64)).collect();
        Csr::random(&mut rng, 20_011, 20_011, true, |r| lens[r])
    }));
    for kernel in kernels() {
        for (name, a) in &matrices {
            check_kernel(&gpu, name, kernel, a, &mut rng);
        }
    }
}

#[test]
fn gpu_kernels_f32() {
    all_kernels::<f32>("gpu_kernels_f32");
}

#[test]
fn gpu_kernels_f64() {
    all_kernels::<f64>("gpu_kernels_f64");
}

/// More threads than a 32-bit index holds (67M rows x 32 lanes > 2^31) and more blocks than the old
/// 65535 limit: the grid-stride mapping must still reach every row exactly once.
#[test]
fn gpu_grid_beyond_32_bit_thread_ids() {
    let Some(gpu) = gpu_or_skip("gpu_grid_beyond_32_bit_thread_ids") else { return };
    let rows = (1usize << 26) + 3;
    let offsets: Vec<usize> = (0..=rows).map(|r| r.div_ceil(1000)).collect();
    let nnz = offsets[rows];
    let a = Csr::<f32> {
        nrows: rows,
        ncols: 7,
        offsets,
        cols: (0..nnz).map(|k| k % 7).collect(),
        vals: vec![1.0; nnz],
    };
    let da = gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap();
    let x: Vec<f32> = (1..=7).map(|v| v as f32).collect();
    let dx = gpu.upload_vector(&x).unwrap();
    for kernel in [
        Kernel::CsrScalar { block_size: 32 },
        Kernel::CsrVector { coop: 32, block_size: 128 },
        Kernel::CsrBalanced { block_size: 32 },
    ] {
        let mut dy = gpu.upload_vector(&vec![f32::NAN; rows]).unwrap();
        gpu.spmv_with(kernel, 1.0, &da, &dx, 0.0, &mut dy).unwrap();
        let y = dy.to_host(&gpu).unwrap();
        for (r, v) in y.iter().enumerate() {
            // Row r holds one entry (index r / 1000, column (r / 1000) % 7) exactly when r % 1000 == 0.
            let expected = if r % 1000 == 0 { x[(r / 1000) % 7] } else { 0.0 };
            assert_eq!(*v, expected, "{kernel:?}, row {r}");
        }
    }
}

#[test]
fn gpu_nan_reaches_exactly_the_rows_that_read_it() {
    let Some(gpu) = gpu_or_skip("gpu_nan") else { return };
    let mut rng = rng("gpu_nan");
    let a = Csr::<f64>::random(&mut rng, 3000, 2000, true, |r| r % 40);
    let mut x = random_vector::<f64>(&mut rng, 2000);
    x[777] = f64::NAN;
    let view = a.view();
    let da = gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap();
    let dx = gpu.upload_vector(&x).unwrap();
    for kernel in kernels() {
        let mut dy = gpu.zeros::<f64>(3000).unwrap();
        gpu.spmv_with(kernel, 1.0, &da, &dx, 0.0, &mut dy).unwrap();
        for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
            assert_eq!(v.is_nan(), view.row(r).0.contains(&777), "{kernel:?}, row {r}");
        }
    }
}

#[test]
fn gpu_errors_leave_y_untouched() {
    let Some(gpu) = gpu_or_skip("gpu_errors") else { return };
    let a = gpu.upload_csr_parts(2, 3, &[0, 1, 2], &[0, 2], &[1.0f32, 2.0]).unwrap();
    let x_short = gpu.upload_vector(&[1.0f32, 2.0]).unwrap();
    let x = gpu.upload_vector(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = gpu.upload_vector(&[4.0f32, 5.0]).unwrap();
    let err = gpu.spmv(1.0, &a, &x_short, 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "x", .. }), "{err}");
    for kernel in [Kernel::CsrVector { coop: 3, block_size: 128 }, Kernel::CsrBalanced { block_size: 48 }] {
        let err = gpu.spmv_with(kernel, 1.0, &a, &x, 0.0, &mut y).unwrap_err();
        assert!(matches!(err, Error::InvalidKernel(_)), "{kernel:?}: {err}");
    }
    let err = gpu.upload_csr_parts(2, 3, &[0, 1, 2], &[0, 3], &[1.0f32, 2.0]).unwrap_err();
    assert!(matches!(err, Error::InvalidCsr(_)), "{err}");
    assert_eq!(y.to_host(&gpu).unwrap(), [4.0, 5.0]);
}

/// The two memory probes: they read, leave the sink alone (their sums never meet the sentinel), and
/// the row-run probe reads whole runs only; an empty sink is refused.
#[test]
fn gpu_probes_read_without_writing() {
    let Some(gpu) = gpu_or_skip("gpu_probes_read_without_writing") else { return };
    let data = gpu.upload_vector(&vec![1.0f32; 1_001]).unwrap();
    let mut sink = gpu.upload_vector(&[7.0f32]).unwrap();
    gpu_spmv::probe::stream_read(&gpu, &data, &mut sink).unwrap();
    for (run, bytes) in [(1, 8 * 500), (3, 8 * 498), (32, 8 * 480), (501, 0)] {
        let run = NonZeroU32::new(run).unwrap();
        assert_eq!(gpu_spmv::probe::row_runs(&gpu, &data, run, &mut sink).unwrap(), bytes, "run {run}");
    }
    assert_eq!(sink.to_host(&gpu).unwrap(), [7.0]);
    let mut empty = gpu.zeros::<f32>(0).unwrap();
    let empty_sink = |e| matches!(e, Error::DimensionMismatch { what: "the probe's sink", .. });
    assert!(gpu_spmv::probe::stream_read(&gpu, &data, &mut empty).is_err_and(empty_sink));
    assert!(gpu_spmv::probe::row_runs(&gpu, &data, NonZeroU32::MIN, &mut empty).is_err_and(empty_sink));
}
