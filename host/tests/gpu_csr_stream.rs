//! The streaming engine's CSR product (`Kernel::CsrStream`) against the f64 reference, on the shapes
//! its windows of at most 1024 entries and 256 rows meet: rows ending on and around a window's
//! limits, runs of empty rows longer than a window holds, long rows (more than a window) between
//! short ones, one huge row, few wide rows over a million columns, entry counts off every multiple
//! of the 16-byte copy unit (so the arrays' tails are read around the copy engine), rectangular
//! matrices and the shared edge cases. Output is poisoned with NaN before each product with
//! `beta = 0`; results must be the same bits product after product, and in a CUDA graph; a NaN in
//! `x` must reach exactly the rows that read it. Without a GPU the tests print why and pass (see
//! `common::gpu_or_skip`); on a GPU older than Hopper they check that planning the engine is refused.

mod common;

use common::{Case, Csr, edge_cases, gpu_or_skip, random_vector, rng, skipped_without, tolerance};
use gpu_spmv::{Error, Gpu, Kernel, Scalar};
use rand_chacha::ChaCha8Rng;

/// Row lengths around a window's limits (1024 entries, 256 rows; 1025 is the shortest long row),
/// runs of 300 empty rows, and short rows, in blocks of 40 rows so that rows start everywhere in a
/// window and in a copy unit.
fn window_shapes<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    const LENS: [usize; 13] = [0, 1, 3, 4, 5, 255, 256, 511, 1023, 1024, 1025, 2049, 4100];
    let lens: Vec<usize> = (0..9_001)
        .map(|r| match r / 40 % 4 {
            0 => LENS[r / 160 % LENS.len()],
            1 => LENS[(r * 7919) % LENS.len()],
            2 if r / 160 % 2 == 0 => 0,
            _ => r % 7,
        })
        .collect();
    Csr::random(rng, lens.len(), 20_011, false, |r| lens[r])
}

/// A 27-point-like band: regular rows of 27 entries, what the engine is for.
fn band<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 200_003, 200_003, true, |_| 27)
}

/// Few rows of thousands of entries over a million columns (each row long: chunks only).
fn short_wide<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 301, 1_090_000, true, |r| 2_400 + (r * 37) % 400)
}

/// One row of 700,000 entries among rows of 0 to 3.
fn huge_row<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 5_001, 800_000, false, |r| if r == 2_500 { 700_000 } else { r % 4 })
}

/// Power-law-like rows: mostly 1 to 8 entries, every 97th row hundreds, every 1001st a long row.
fn heavy_tail<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 50_021, 50_021, true, |r| match (r % 1001, r % 97) {
        (0, _) => 1_500 + r % 700,
        (_, 0) => 100 + r % 600,
        _ => 1 + r % 8,
    })
}

fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut all: Vec<(String, Csr<T>)> = vec![
        ("window shapes".into(), window_shapes(rng)),
        ("band of 27".into(), band(rng)),
        ("short-wide".into(), short_wide(rng)),
        ("huge row".into(), huge_row(rng)),
        ("heavy tail".into(), heavy_tail(rng)),
    ];
    // Entry counts 1 to 7 past a multiple of the copy unit (4 u32, 2 f64), on a matrix of one
    // window and one of many.
    for extra in 1..8 {
        let rows = 1_000 + extra;
        all.push((format!("{rows} rows of 3"), Csr::random(rng, rows, 777, true, |_| 3)));
        all.push((format!("1 row of {}", 16 + extra), Csr::random(rng, 1, 100, true, |_| 16 + extra)));
    }
    all.extend(edge_cases(rng).into_iter().map(|(name, a)| (name.to_owned(), a)));
    all
}

/// The GPU, if it has the engine; on one without, checks that planning the engine is refused.
fn engine_or_skip(test: &str) -> Option<Gpu> {
    let gpu = gpu_or_skip(test)?;
    if gpu.has_stream_engine() {
        return Some(gpu);
    }
    let a = gpu.upload_csr_parts::<f32>(1, 1, &[0, 1], &[0], &[1.0]).unwrap();
    assert!(matches!(gpu.plan(&a, Kernel::CsrStream { stages: 4 }), Err(Error::Unsupported(_))));
    skipped_without(test, "sm_90", &format!("{} has no streaming engine; refusal checked", gpu.name()));
    None
}

/// `alpha A x + beta y` for the three cases (beta 0 on poison, both non-zero, alpha 0), each
/// checked against the reference.
fn products<T: Scalar>(gpu: &Gpu, name: &str, a: &Csr<T>, rng: &mut ChaCha8Rng) {
    let x = random_vector::<T>(rng, a.ncols);
    let y0 = random_vector::<T>(rng, a.nrows);
    let poison = vec![T::from_f64(f64::NAN); a.nrows];
    let da = gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap();
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.zeros::<T>(a.nrows).unwrap();
    let tol = tolerance::<T>(a.view().stats().max);
    for (alpha, beta, start) in [
        (T::from_f64(1.0), T::ZERO, poison),
        (T::from_f64(-1.5), T::from_f64(0.75), y0.clone()),
        (T::ZERO, T::from_f64(3.0), y0),
    ] {
        let case = Case::new(a, &x, alpha, beta, start);
        for stages in Kernel::STREAM_STAGES {
            let kernel = Kernel::CsrStream { stages };
            dy.copy_from_host(gpu, &case.start).unwrap();
            gpu.spmv_with(kernel, alpha, &da, &dx, beta, &mut dy).unwrap();
            let err = case.assert_close(&format!("{name}, {kernel}"), &dy.to_host(gpu).unwrap(), tol);
            eprintln!("{name}, {kernel}, alpha {alpha}, beta {beta}: relative error {err:e}");
        }
    }
}

fn stream_products<T: Scalar>(test: &str) {
    let Some(gpu) = engine_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        products(&gpu, &name, &a, &mut rng);
    }
}

#[test]
fn gpu_csr_stream_f32() {
    stream_products::<f32>("gpu_csr_stream_f32");
}

#[test]
fn gpu_csr_stream_f64() {
    stream_products::<f64>("gpu_csr_stream_f64");
}

/// Every product of a plan gives the same bits, also replayed in a graph; a NaN in `x` at a column
/// of the longest row (chunked) and of a short row reaches exactly the rows that read it.
#[test]
fn gpu_csr_stream_is_deterministic_and_keeps_nan_in_its_rows() {
    let test = "gpu_csr_stream_is_deterministic";
    let Some(gpu) = engine_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in [("heavy tail", heavy_tail::<f64>(&mut rng)), ("window shapes", window_shapes(&mut rng))]
    {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        let plan = gpu.plan(&da, Kernel::CsrStream { stages: 2 }).unwrap();
        let mut x = random_vector::<f64>(&mut rng, a.ncols);
        let dx = gpu.upload_vector(&x).unwrap();
        let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
        plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        let first = dy.to_host(&gpu).unwrap();
        for run in 1..4 {
            plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
            let again = dy.to_host(&gpu).unwrap();
            let same = first.iter().zip(&again).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "{name}: product {run} differs from the first");
        }
        dy.copy_from_host(&gpu, &vec![f64::NAN; a.nrows]).unwrap();
        let graph = gpu.capture(|| plan.spmv(1.0, &dx, 0.0, &mut dy)).unwrap();
        graph.launch().unwrap();
        let replayed = dy.to_host(&gpu).unwrap();
        assert!(first.iter().zip(&replayed).all(|(p, q)| p.to_bits() == q.to_bits()), "{name}: graph");

        let view = a.view();
        let longest = (0..a.nrows).max_by_key(|&r| view.row(r).0.len()).expect("rows");
        let short = (0..a.nrows).find(|&r| (1..=4).contains(&view.row(r).0.len()));
        let row = view.row(longest).0;
        let nan_cols: Vec<usize> =
            [Some(row[row.len() / 2]), short.map(|r| view.row(r).0[0])].into_iter().flatten().collect();
        for &c in &nan_cols {
            x[c] = f64::NAN;
        }
        let dx = gpu.upload_vector(&x).unwrap();
        plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
            let reads = view.row(r).0.iter().any(|c| nan_cols.contains(c));
            assert_eq!(v.is_nan(), reads, "{name}, row {r}");
        }
    }
}
