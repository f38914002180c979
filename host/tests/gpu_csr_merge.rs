//! The merge-path CSR kernel (Merrill & Garland, SC16) against the f64 reference, on the shapes its
//! tiles of 256 merge items meet: rows ending on, before and after a tile boundary, runs of empty
//! rows longer than a tile, rows crossing many tiles (short and wide), one huge row. Output is
//! poisoned with NaN before each product with `beta = 0`; results must be the same bits product
//! after product; a NaN in `x` must reach exactly the rows that read it. Without a GPU the tests
//! print why and pass (see `common::gpu_or_skip`).

mod common;

use common::{Case, Csr, gpu_or_skip, random_vector, rng, tolerance};
use gpu_spmv::{Gpu, Kernel, Scalar};
use rand_chacha::ChaCha8Rng;

const BLOCK_SIZES: [u32; 3] = [32, 128, 512];

/// Row lengths around a tile (256 items, one of which is a row end), runs of 300 empty rows, and
/// rows of a few entries, in blocks of 40 rows so that rows start on every offset of a tile.
fn tile_shapes<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    const LENS: [usize; 12] = [0, 1, 7, 8, 9, 254, 255, 256, 257, 511, 512, 1000];
    let lens: Vec<usize> = (0..12_007)
        .map(|r| match r / 40 % 4 {
            0 => LENS[r / 160 % LENS.len()],
            1 => LENS[(r * 7919) % LENS.len()],
            2 if r / 160 % 2 == 0 => 0,
            _ => r % 5,
        })
        .collect();
    Csr::random(rng, lens.len(), 5_003, false, |r| lens[r])
}

/// Few rows of thousands of entries over a million columns, like the suite's short-wide matrix:
/// every row crosses ten tiles.
fn short_wide<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 301, 1_090_000, true, |r| 2_400 + (r * 37) % 400)
}

/// One row of 700,000 entries (2,700 tiles: the fix-up's longest run) among rows of 0 to 3.
fn huge_row<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 5_001, 800_000, false, |r| if r == 2_500 { 700_000 } else { r % 4 })
}

fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Csr<T>)> {
    vec![("tile shapes", tile_shapes(rng)), ("short-wide", short_wide(rng)), ("huge row", huge_row(rng))]
}

/// `alpha A x + beta y` for the three cases (beta 0 on poison, both non-zero, alpha 0) at every
/// block size, each checked against the reference.
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
        for block_size in BLOCK_SIZES {
            let kernel = Kernel::CsrMerge { block_size };
            dy.copy_from_host(gpu, &case.start).unwrap();
            gpu.spmv_with(kernel, alpha, &da, &dx, beta, &mut dy).unwrap();
            let err = case.assert_close(&format!("{name}, {kernel}"), &dy.to_host(gpu).unwrap(), tol);
            eprintln!("{name}, {kernel}, alpha {alpha}, beta {beta}: relative error {err:e}");
        }
    }
}

fn merge_products<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        products(&gpu, name, &a, &mut rng);
    }
}

#[test]
fn gpu_csr_merge_f32() {
    merge_products::<f32>("gpu_csr_merge_f32");
}

#[test]
fn gpu_csr_merge_f64() {
    merge_products::<f64>("gpu_csr_merge_f64");
}

/// Every product of a plan gives the same bits (no atomics, sums in a fixed order), and a NaN in `x`
/// at a column of the longest row (split) and of a short row reaches exactly the rows that read it.
#[test]
fn gpu_csr_merge_is_deterministic_and_keeps_nan_in_its_rows() {
    let test = "gpu_csr_merge_is_deterministic";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<f32>(&mut rng) {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        let plan = gpu.plan(&da, Kernel::CsrMerge { block_size: 128 }).unwrap();
        let mut x = random_vector::<f32>(&mut rng, a.ncols);
        let dx = gpu.upload_vector(&x).unwrap();
        let mut dy = gpu.zeros::<f32>(a.nrows).unwrap();
        plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        let first = dy.to_host(&gpu).unwrap();
        for run in 1..5 {
            plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
            let again = dy.to_host(&gpu).unwrap();
            let same = first.iter().zip(&again).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "{name}: product {run} differs from the first");
        }

        let view = a.view();
        let longest = (0..a.nrows).max_by_key(|&r| view.row(r).0.len()).expect("rows");
        let short = (0..a.nrows).find(|&r| (1..=4).contains(&view.row(r).0.len()));
        let row = view.row(longest).0;
        let nan_cols: Vec<usize> =
            [Some(row[row.len() / 2]), short.map(|r| view.row(r).0[0])].into_iter().flatten().collect();
        for &c in &nan_cols {
            x[c] = f32::NAN;
        }
        let dx = gpu.upload_vector(&x).unwrap();
        plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
            let reads = view.row(r).0.iter().any(|c| nan_cols.contains(c));
            assert_eq!(v.is_nan(), reads, "{name}, row {r}");
        }
    }
}
