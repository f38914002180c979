//! The streaming engine's CSR product (`Kernel::CsrStream`) against the f64 reference, on the shapes
//! its windows of at most 1024 entries and 256 rows meet: rows ending on and around a window's
//! limits, runs of empty rows longer than a window holds, long rows (more than a window) between
//! short ones, one huge row, few wide rows over a million columns, entry counts off every multiple
//! of the 16-byte copy unit (so the arrays' tails are read around the copy engine), rectangular
//! matrices and the shared edge cases. Output is poisoned with NaN before each product with
//! `beta = 0`; results must be the same bits product after product, and in a CUDA graph; a NaN in
//! `x` must reach exactly the rows that read it. Without a GPU the tests print why and pass (see
//! `common::gpu_or_skip`); on a GPU older than Hopper they check that planning the engine is refused.

use crate::common::{
    Csr, check_deterministic_and_nan, check_kernels, edge_cases, gpu_or_skip, rng, skipped_without,
};
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

fn stream_products<T: Scalar>(test: &str) {
    let Some(gpu) = engine_or_skip(test) else { return };
    let mut rng = rng(test);
    let kernels = Kernel::STREAM_STAGES.map(|stages| Kernel::CsrStream { stages });
    for (name, a) in matrices::<T>(&mut rng) {
        check_kernels(&gpu, &name, &a, &kernels, &mut rng);
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
        check_deterministic_and_nan(&gpu, name, &a, Kernel::CsrStream { stages: 2 }, &mut rng);
    }
}
