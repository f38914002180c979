//! The merge-path CSR kernel (Merrill & Garland, SC16) against the f64 reference, on the shapes its
//! tiles of 256 merge items meet: rows ending on, before and after a tile boundary, runs of empty
//! rows longer than a tile, rows crossing many tiles (short and wide), one huge row. Output is
//! poisoned with NaN before each product with `beta = 0`; results must be the same bits product
//! after product; a NaN in `x` must reach exactly the rows that read it. Without a GPU the tests
//! print why and pass (see `common::gpu_or_skip`).

use crate::common::{Csr, check_deterministic_and_nan, check_kernels, gpu_or_skip, rng};
use gpu_spmv::{Kernel, Scalar};
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

fn merge_products<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let kernels = BLOCK_SIZES.map(|block_size| Kernel::CsrMerge { block_size });
    for (name, a) in matrices::<T>(&mut rng) {
        check_kernels(&gpu, name, &a, &kernels, &mut rng);
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

/// Every product of a plan gives the same bits (no atomics, sums in a fixed order), also replayed in
/// a graph, and a NaN in `x` at a column of the longest row (split) and of a short row reaches
/// exactly the rows that read it.
#[test]
fn gpu_csr_merge_is_deterministic_and_keeps_nan_in_its_rows() {
    let test = "gpu_csr_merge_is_deterministic";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<f64>(&mut rng) {
        check_deterministic_and_nan(&gpu, name, &a, Kernel::CsrMerge { block_size: 128 }, &mut rng);
    }
}
