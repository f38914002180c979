//! The transposed product (both strategies) and SpMM (both layouts) on the GPU against the f64 CPU
//! references of `reference`: random and edge-case matrices (empty rows, rectangular shapes), `k`
//! from 1 past 64 and not a multiple of 32, padded leading dimensions, poisoned outputs, errors that
//! leave the output untouched, the deterministic transpose bit-identical from run to run, SpMM on
//! irregular rows (a row of 60,001 entries among rows of a few, a heavy tail, long rows among empty
//! ones: the long-row split of both layouts, every element written, the same bits on every run), and
//! products captured into a CUDA graph and replayed. Without a GPU these tests print why and pass,
//! unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{Csr, edge_cases, gpu_or_skip, random_vector, rng, tolerance};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use gpu_spmv::reference::{
    DenseRef, error_scale_transposed, max_relative_error, spmm_f64, spmv_transpose_f64,
};
use gpu_spmv::spmm::{DeviceDense, Layout, SpmmKernel};
use gpu_spmv::transpose::TransposeKernel;
use gpu_spmv::{Error, Gpu, Scalar};
use rand_chacha::ChaCha8Rng;

/// The longest column of `a`: the length of the longest sum of the transposed product.
fn max_col_len<T: Scalar>(a: &Csr<T>) -> usize {
    let mut counts = vec![0usize; a.ncols];
    for &c in &a.cols {
        counts[c] += 1;
    }
    counts.into_iter().max().unwrap_or(0)
}

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|e| e.to_f64().to_bits()).collect()
}

/// Every matrix the transposed product is checked on: the common edge cases and random ones.
fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Csr<T>)> {
    let mut all = edge_cases::<T>(rng);
    all.push(("random 3000 x 700", Csr::random(rng, 3000, 700, true, |r| r % 23)));
    all.push(("random 500 x 70000", Csr::random(rng, 500, 70_000, true, |r| 50 + r % 300)));
    all
}

fn transposed_products<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        let x = random_vector::<T>(&mut rng, a.nrows);
        let dx = gpu.upload_vector(&x).unwrap();
        let tol = tolerance::<T>(max_col_len(&a));
        for kernel in [TransposeKernel::Explicit, TransposeKernel::Atomic] {
            let plan = gpu.plan(da.transposed(), kernel).unwrap();
            for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.5), (0.0, 2.0), (2.0, 1.0)] {
                let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
                // With beta == 0, y starts as NaN: every element must be written, none read.
                let start: Vec<T> = if beta == T::ZERO {
                    vec![T::from_f64(f64::NAN); a.ncols]
                } else {
                    random_vector(&mut rng, a.ncols)
                };
                let mut dy = gpu.upload_vector(&start).unwrap();
                plan.spmv(alpha, &dx, beta, &mut dy).unwrap();
                let y = dy.to_host(&gpu).unwrap();
                let reference = spmv_transpose_f64(alpha, a.view(), &x, beta, &start).unwrap();
                let scale = error_scale_transposed(alpha, a.view(), &x, beta, &start).unwrap();
                let err = max_relative_error(&y, &reference, &scale);
                assert!(
                    err <= tol,
                    "{name}, {kernel:?}, alpha {alpha}, beta {beta}: error {err:e} over {tol:e}"
                );
            }
        }
    }
}

#[test]
fn gpu_transposed_products_f32() {
    transposed_products::<f32>("gpu_transposed_products_f32");
}

#[test]
fn gpu_transposed_products_f64() {
    transposed_products::<f64>("gpu_transposed_products_f64");
}

/// The explicit transpose gives the same bits on every product and from a second plan (which
/// reuses the transpose kept with the matrix), and `gpu.spmv` with the default is that strategy.
#[test]
fn gpu_explicit_transpose_is_bit_identical() {
    let test = "gpu_explicit_transpose_is_bit_identical";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // Columns of thousands of entries, whose sums an atomic scatter would order differently.
    let a = Csr::<f32>::random(&mut rng, 20_000, 50, false, |r| 10 + r % 40);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let bytes_before = da.device_bytes();
    let x = random_vector::<f32>(&mut rng, a.nrows);
    let dx = gpu.upload_vector(&x).unwrap();
    let run = |plan: &gpu_spmv::Plan<'_, f32, _>| {
        let mut dy = gpu.zeros::<f32>(a.ncols).unwrap();
        plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        bits(&dy.to_host(&gpu).unwrap())
    };
    let first = run(&gpu.plan(da.transposed(), TransposeKernel::Explicit).unwrap());
    assert!(da.device_bytes() > bytes_before, "the transpose is kept with the matrix");
    let again = gpu.plan(da.transposed(), TransposeKernel::Explicit).unwrap();
    for _ in 0..5 {
        assert_eq!(run(&again), first, "the explicit transpose is not deterministic");
    }
    let mut dy = gpu.zeros::<f32>(a.ncols).unwrap();
    gpu.spmv(1.0, da.transposed(), &dx, 0.0, &mut dy).unwrap();
    assert_eq!(bits(&dy.to_host(&gpu).unwrap()), first, "the default is the explicit transpose");
}

/// Refused operands leave `y` as it was, and name what is wrong.
#[test]
fn gpu_transposed_errors_leave_y() {
    let test = "gpu_transposed_errors_leave_y";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 40, 30, true, |r| r % 7);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let start = random_vector::<f64>(&mut rng, 30);
    for kernel in [TransposeKernel::Explicit, TransposeKernel::Atomic] {
        let plan = gpu.plan(da.transposed(), kernel).unwrap();
        let mut dy = gpu.upload_vector(&start).unwrap();
        let wrong_x = gpu.zeros::<f64>(30).unwrap();
        let err = plan.spmv(1.0, &wrong_x, 0.0, &mut dy).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "x", expected: 40, got: 30 }), "{err}");
        let x = gpu.zeros::<f64>(40).unwrap();
        let mut wrong_y = gpu.upload_vector(&start[..29]).unwrap();
        let err = plan.spmv(1.0, &x, 0.0, &mut wrong_y).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "y", expected: 30, got: 29 }), "{err}");
        assert_eq!(bits(&dy.to_host(&gpu).unwrap()), bits(&start), "{kernel:?}: y changed on error");
    }
}

/// `X` and `Y` for a product with `a`: `k` columns in `layout` with `pad` elements of padding per
/// row or column, `Y` poisoned with NaN when `beta == 0` (padding always NaN: never written).
struct Operands<T> {
    x: Vec<T>,
    y: Vec<T>,
    ldx: usize,
    ldy: usize,
}

fn strides(layout: Layout, ld: usize) -> (usize, usize) {
    match layout {
        Layout::RowMajor => (ld, 1),
        Layout::ColMajor => (1, ld),
    }
}

fn dense_operands<T: Scalar>(
    rng: &mut ChaCha8Rng,
    a: &Csr<T>,
    k: usize,
    layout: Layout,
    pad: usize,
    poison_y: bool,
) -> Operands<T> {
    let inner = |rows: usize| match layout {
        Layout::RowMajor => (k + pad, rows),
        Layout::ColMajor => (rows + pad, k),
    };
    let nan = T::from_f64(f64::NAN);
    let fill = |rng: &mut ChaCha8Rng, rows: usize, poison: bool| {
        let (ld, outer) = inner(rows);
        let mut data = vec![nan; ld * outer];
        let (rs, cs) = strides(layout, ld);
        for r in 0..rows {
            for c in 0..k {
                data[r * rs + c * cs] = if poison { nan } else { random_vector::<T>(rng, 1)[0] };
            }
        }
        (data, ld)
    };
    let (x, ldx) = fill(rng, a.ncols, false);
    let (y, ldy) = fill(rng, a.nrows, poison_y);
    Operands { x, y, ldx, ldy }
}

fn spmm_products<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut cases = edge_cases::<T>(&mut rng);
    // The wide matrix's `X` (200,000 rows of up to 75 columns per product) makes the CPU side slow.
    cases.retain(|(name, _)| !name.starts_with("wide"));
    cases.push(("random 2000 x 1500", Csr::random(&mut rng, 2000, 1500, true, |r| r % 40)));
    for (name, a) in cases {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        let tol = tolerance::<T>(a.view().stats().max);
        for layout in [Layout::RowMajor, Layout::ColMajor] {
            for (k, pad) in [(1, 0), (3, 2), (4, 0), (8, 1), (17, 0), (32, 3), (33, 0), (64, 0), (70, 5)] {
                for (alpha, beta) in [(1.0, 0.0), (-0.5, 1.25), (0.0, 3.0)] {
                    let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
                    let ops = dense_operands(&mut rng, &a, k, layout, pad, beta == T::ZERO);
                    let dx = gpu.upload_dense(a.ncols, k, layout, ops.ldx, &ops.x).unwrap();
                    let mut dy = gpu.upload_dense(a.nrows, k, layout, ops.ldy, &ops.y).unwrap();
                    gpu.spmm(alpha, &da, &dx, beta, &mut dy).unwrap();
                    let y = dy.to_host(&gpu).unwrap();
                    let (xs, ys) = (strides(layout, ops.ldx), strides(layout, ops.ldy));
                    let xr = DenseRef::try_new(&ops.x, a.ncols, k, xs.0, xs.1).unwrap();
                    let yr = DenseRef::try_new(&ops.y, a.nrows, k, ys.0, ys.1).unwrap();
                    let (reference, scale) = spmm_f64(alpha, a.view(), xr, beta, yr).unwrap();
                    let got = DenseRef::try_new(&y, a.nrows, k, ys.0, ys.1).unwrap();
                    let packed: Vec<T> = (0..k)
                        .flat_map(|c| (0..a.nrows).map(move |r| (r, c)))
                        .map(|(r, c)| got.at(r, c))
                        .collect();
                    let err = max_relative_error(&packed, &reference, &scale);
                    let what = format!("{name}, {layout:?}, k {k}, pad {pad}, alpha {alpha}, beta {beta}");
                    assert!(err <= tol, "{what}: error {err:e} over {tol:e}");
                    // Padding is not part of Y: it stays as it was (NaN).
                    let written = a.nrows * k;
                    let padding_nan = y.iter().filter(|v| v.to_f64().is_nan()).count();
                    assert_eq!(padding_nan, y.len() - written, "{what}: padding written or an element left");
                }
            }
        }
    }
}

#[test]
fn gpu_spmm_f32() {
    spmm_products::<f32>("gpu_spmm_f32");
}

#[test]
fn gpu_spmm_f64() {
    spmm_products::<f64>("gpu_spmm_f64");
}

/// Every kernel of both layouts, not only the rule's choice, on one matrix.
#[test]
fn gpu_spmm_every_kernel() {
    let test = "gpu_spmm_every_kernel";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 1234, 999, true, |r| (r * 7919) % 61);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let tol = tolerance::<f64>(a.view().stats().max);
    let kernels = SpmmKernel::ROW_MAJOR_WIDTHS
        .map(|width| (Layout::RowMajor, SpmmKernel::RowMajor { width, split_long_rows: false }))
        .into_iter()
        .chain(
            SpmmKernel::COL_MAJOR_COOPS
                .map(|coop| (Layout::ColMajor, SpmmKernel::ColMajor { coop, split_long_rows: false })),
        );
    for (layout, kernel) in kernels {
        for k in [1, 5, 40] {
            let ops = dense_operands(&mut rng, &a, k, layout, 1, false);
            let dx = gpu.upload_dense(a.ncols, k, layout, ops.ldx, &ops.x).unwrap();
            let mut dy = gpu.upload_dense(a.nrows, k, layout, ops.ldy, &ops.y).unwrap();
            let plan = gpu.plan_spmm(&da, layout, k, kernel).unwrap();
            assert_eq!(plan.kernel(), kernel);
            plan.spmm(0.5, &dx, -1.0, &mut dy).unwrap();
            let y = dy.to_host(&gpu).unwrap();
            let (xs, ys) = (strides(layout, ops.ldx), strides(layout, ops.ldy));
            let xr = DenseRef::try_new(&ops.x, a.ncols, k, xs.0, xs.1).unwrap();
            let yr = DenseRef::try_new(&ops.y, a.nrows, k, ys.0, ys.1).unwrap();
            let (reference, scale) = spmm_f64(0.5, a.view(), xr, -1.0, yr).unwrap();
            let got = DenseRef::try_new(&y, a.nrows, k, ys.0, ys.1).unwrap();
            let packed: Vec<f64> = (0..k).flat_map(|c| (0..a.nrows).map(move |r| got.at(r, c))).collect();
            let err = max_relative_error(&packed, &reference, &scale);
            assert!(err <= tol, "{kernel:?}, k {k}: error {err:e} over {tol:e}");
        }
    }
}

/// One product `Y = alpha A X + beta Y` by `plan` on fresh operands (`Y` poisoned with NaN when
/// `beta == 0`, padding always NaN), checked against the f64 reference, every element of `Y`
/// written and no padding; returns the bits of `Y`.
#[allow(clippy::too_many_arguments)]
fn checked_spmm<T: Scalar>(
    gpu: &Gpu,
    rng: &mut ChaCha8Rng,
    a: &Csr<T>,
    plan: &gpu_spmv::spmm::SpmmPlan<'_, T>,
    pad: usize,
    alpha: f64,
    beta: f64,
    what: &str,
) -> Vec<u64> {
    let (layout, k) = (plan.layout(), plan.k());
    let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
    let ops = dense_operands(rng, a, k, layout, pad, beta == T::ZERO);
    let dx = gpu.upload_dense(a.ncols, k, layout, ops.ldx, &ops.x).unwrap();
    let mut dy = gpu.upload_dense(a.nrows, k, layout, ops.ldy, &ops.y).unwrap();
    plan.spmm(alpha, &dx, beta, &mut dy).unwrap();
    let y = dy.to_host(gpu).unwrap();
    let (xs, ys) = (strides(layout, ops.ldx), strides(layout, ops.ldy));
    let xr = DenseRef::try_new(&ops.x, a.ncols, k, xs.0, xs.1).unwrap();
    let yr = DenseRef::try_new(&ops.y, a.nrows, k, ys.0, ys.1).unwrap();
    let (reference, scale) = spmm_f64(alpha, a.view(), xr, beta, yr).unwrap();
    let got = DenseRef::try_new(&y, a.nrows, k, ys.0, ys.1).unwrap();
    let packed: Vec<T> =
        (0..k).flat_map(|c| (0..a.nrows).map(move |r| (r, c))).map(|(r, c)| got.at(r, c)).collect();
    let what =
        format!("{what}, {:?}, {layout:?}, k {k}, pad {pad}, alpha {alpha}, beta {beta}", plan.kernel());
    let unwritten = packed.iter().filter(|v| v.to_f64().is_nan()).count();
    assert_eq!(unwritten, 0, "{what}: {unwritten} elements of Y left as they were (NaN)");
    let err = max_relative_error(&packed, &reference, &scale);
    let tol = tolerance::<T>(a.view().stats().max);
    assert!(err <= tol, "{what}: error {err:e} over {tol:e}");
    let padding_nan = y.iter().filter(|v| v.to_f64().is_nan()).count();
    assert_eq!(padding_nan, y.len() - a.nrows * k, "{what}: padding written");
    bits(&y)
}

/// Matrices whose rows vary as the circuit and the power-law graph of the bench suite do: one or two
/// rows of tens of thousands of entries among rows of a few (dc1-like; lengths off every multiple
/// of the 256-entry chunk), a heavy tail of row lengths, long rows among empty ones.
fn irregular<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Csr<T>)> {
    vec![
        (
            "dc1-like: rows of 60001 and 257 among rows of 1 to 6",
            Csr::random(rng, 20_011, 70_000, true, |r| match r {
                777 => 60_001,
                15_000 => 257,
                _ => 1 + r % 6,
            }),
        ),
        (
            "power-law-like rows",
            Csr::random(rng, 30_000, 25_000, false, |r| 1 + 6000 / (1 + (r * 7919) % 6000)),
        ),
        (
            "long rows among empty ones",
            Csr::random(rng, 5003, 9000, true, |r| match r % 5 {
                0 => 0,
                1 if r % 1000 == 1 => 4096 + r,
                _ => r % 3,
            }),
        ),
    ]
}

/// SpMM on irregular rows: the rule splits the long rows in both layouts, and the products match
/// the reference at k = 1, 7, 33 and 64 with beta = 0 (poisoned `Y`) and beta != 0, in the same bits
/// on every run (the partial sums are added in a fixed order).
fn spmm_irregular<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in irregular::<T>(&mut rng) {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        for layout in [Layout::RowMajor, Layout::ColMajor] {
            for (k, pad) in [(1, 0), (7, 1), (33, 0), (64, 3)] {
                let plan = gpu.plan_spmm(&da, layout, k, SpmmKernel::Auto).unwrap();
                assert!(
                    plan.split_rows() > 0,
                    "{name}, {layout:?}, k {k}: {:?} splits no row",
                    plan.kernel()
                );
                for (alpha, beta) in [(1.0, 0.0), (-0.5, 1.25)] {
                    checked_spmm(&gpu, &mut rng, &a, &plan, pad, alpha, beta, name);
                }
            }
            // The same operands twice: the same bits.
            let plan = gpu.plan_spmm(&da, layout, 9, SpmmKernel::Auto).unwrap();
            let seed = rand::Rng::random::<u64>(&mut rng);
            let run = || {
                let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
                checked_spmm(&gpu, &mut rng, &a, &plan, 0, 1.5, 0.0, name)
            };
            assert_eq!(run(), run(), "{name}, {layout:?}: two runs differ");
        }
    }
}

#[test]
fn gpu_spmm_irregular_f32() {
    spmm_irregular::<f32>("gpu_spmm_irregular_f32");
}

#[test]
fn gpu_spmm_irregular_f64() {
    spmm_irregular::<f64>("gpu_spmm_irregular_f64");
}

/// Every kernel of both layouts with the split and without, on the dc1-like matrix, and the split
/// on a regular matrix, where no row is long and the plan keeps one launch and no scratch.
#[test]
fn gpu_spmm_every_kernel_splits() {
    let test = "gpu_spmm_every_kernel_splits";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let (name, a) = irregular::<f64>(&mut rng).swap_remove(0);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    for split_long_rows in [true, false] {
        let kernels = SpmmKernel::ROW_MAJOR_WIDTHS
            .map(|width| SpmmKernel::RowMajor { width, split_long_rows })
            .into_iter()
            .chain(SpmmKernel::COL_MAJOR_COOPS.map(|coop| SpmmKernel::ColMajor { coop, split_long_rows }));
        for kernel in kernels {
            let layout = match kernel {
                SpmmKernel::RowMajor { .. } => Layout::RowMajor,
                _ => Layout::ColMajor,
            };
            // Without the split a group walks the row of 60,001 entries once per panel: fewer `k`.
            let ks: &[usize] = if split_long_rows { &[1, 5, 40, 70] } else { &[5, 70] };
            for &k in ks {
                let plan = gpu.plan_spmm(&da, layout, k, kernel).unwrap();
                assert_eq!(plan.kernel(), kernel);
                assert_eq!(plan.split_rows() > 0, split_long_rows, "{kernel:?}");
                assert_eq!(plan.scratch_bytes() > 0, split_long_rows, "{kernel:?}");
                checked_spmm(&gpu, &mut rng, &a, &plan, 1, 0.5, -1.0, name);
            }
        }
    }
    let regular = Csr::<f64>::random(&mut rng, 3000, 3000, true, |_| 9);
    let dr = gpu.upload_csr_ref(regular.view()).unwrap();
    let plan =
        gpu.plan_spmm(&dr, Layout::RowMajor, 8, SpmmKernel::RowMajor { width: 8, split_long_rows: true });
    let plan = plan.unwrap();
    assert_eq!((plan.split_rows(), plan.scratch_bytes()), (0, 0));
    checked_spmm(&gpu, &mut rng, &regular, &plan, 0, 1.0, 0.0, "regular rows");
}

/// A product that splits long rows, captured into a CUDA graph and replayed, gives the plain
/// product's bits (both launches are captured).
#[test]
fn gpu_spmm_split_in_a_graph() {
    let test = "gpu_spmm_split_in_a_graph";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let (_, a) = irregular::<f32>(&mut rng).swap_remove(1);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    for layout in [Layout::RowMajor, Layout::ColMajor] {
        let k = 20;
        let plan = gpu.plan_spmm(&da, layout, k, SpmmKernel::Auto).unwrap();
        assert!(plan.split_rows() > 0);
        let ld = match layout {
            Layout::RowMajor => k,
            Layout::ColMajor => a.ncols,
        };
        let dx =
            gpu.upload_dense(a.ncols, k, layout, ld, &random_vector::<f32>(&mut rng, a.ncols * k)).unwrap();
        let start = random_vector::<f32>(&mut rng, a.nrows * k);
        let ldy = if layout == Layout::RowMajor { k } else { a.nrows };
        let mut dy = gpu.upload_dense(a.nrows, k, layout, ldy, &start).unwrap();
        plan.spmm(2.0, &dx, 0.5, &mut dy).unwrap();
        let expected = bits(&dy.to_host(&gpu).unwrap());
        let mut dy = gpu.upload_dense(a.nrows, k, layout, ldy, &start).unwrap();
        let graph = gpu.capture(|| plan.spmm(2.0, &dx, 0.5, &mut dy)).unwrap();
        graph.launch().unwrap();
        assert_eq!(bits(&dy.to_host(&gpu).unwrap()), expected, "{layout:?}: the graph's product differs");
    }
}

/// Refused operands leave `Y` as it was: wrong layouts, shapes and kernels.
#[test]
fn gpu_spmm_errors_leave_y() {
    let test = "gpu_spmm_errors_leave_y";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 50, 40, true, |r| r % 9);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let start = random_vector::<f32>(&mut rng, 50 * 4);
    let mut dy = gpu.upload_dense(50, 4, Layout::ColMajor, 50, &start).unwrap();
    let x_rows = gpu.dense_zeros::<f32>(40, 4, Layout::RowMajor).unwrap();
    let err = gpu.spmm(1.0, &da, &x_rows, 0.0, &mut dy).unwrap_err();
    assert!(matches!(err, Error::LayoutMismatch(_)), "{err}");
    let x_short = gpu.dense_zeros::<f32>(39, 4, Layout::ColMajor).unwrap();
    let err = gpu.spmm(1.0, &da, &x_short, 0.0, &mut dy).unwrap_err();
    assert!(
        matches!(err, Error::DimensionMismatch { what: "the rows of X", expected: 40, got: 39 }),
        "{err}"
    );
    let x_wide = gpu.dense_zeros::<f32>(40, 5, Layout::ColMajor).unwrap();
    let err = gpu.spmm(1.0, &da, &x_wide, 0.0, &mut dy).unwrap_err();
    assert!(
        matches!(err, Error::DimensionMismatch { what: "the columns of Y", expected: 5, got: 4 }),
        "{err}"
    );
    let err = gpu
        .plan_spmm(&da, Layout::ColMajor, 4, SpmmKernel::RowMajor { width: 8, split_long_rows: true })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidKernel(_)), "{err}");
    let err = gpu
        .plan_spmm(&da, Layout::ColMajor, 4, SpmmKernel::ColMajor { coop: 3, split_long_rows: true })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidKernel(_)), "{err}");
    assert!(gpu.upload_dense(40, 4, Layout::ColMajor, 39, &start).is_err(), "ld below the column length");
    assert!(gpu.upload_dense(50, 5, Layout::ColMajor, 50, &start).is_err(), "buffer too short");
    assert_eq!(dy.to_host(&gpu).unwrap(), start, "Y changed on error");
    // k == 0 and a matrix without rows are nothing to do.
    let x0 = gpu.dense_zeros::<f32>(40, 0, Layout::ColMajor).unwrap();
    let mut y0 = gpu.dense_zeros::<f32>(50, 0, Layout::ColMajor).unwrap();
    gpu.spmm(1.0, &da, &x0, 0.0, &mut y0).unwrap();
}

/// A transposed product and an SpMM captured into one CUDA graph and replayed give the results of
/// the plain products, bit for bit.
#[test]
fn gpu_transpose_and_spmm_in_a_graph() {
    let test = "gpu_transpose_and_spmm_in_a_graph";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 3000, 2000, true, |r| 1 + r % 30);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let x = gpu.upload_vector(&random_vector::<f64>(&mut rng, a.nrows)).unwrap();
    let k = 12;
    let xs = random_vector::<f64>(&mut rng, a.ncols * k);
    let dx = gpu.upload_dense(a.ncols, k, Layout::RowMajor, k, &xs).unwrap();
    let transposed = gpu.plan(da.transposed(), TransposeKernel::Explicit).unwrap();
    let spmm = gpu.plan_spmm(&da, Layout::RowMajor, k, SpmmKernel::Auto).unwrap();
    let plain = |gpu: &Gpu| {
        let mut y = gpu.zeros::<f64>(a.ncols).unwrap();
        transposed.spmv(2.0, &x, 0.0, &mut y).unwrap();
        let mut dy = gpu.dense_zeros::<f64>(a.nrows, k, Layout::RowMajor).unwrap();
        spmm.spmm(2.0, &dx, 0.0, &mut dy).unwrap();
        (bits(&y.to_host(gpu).unwrap()), bits(&dy.to_host(gpu).unwrap()))
    };
    let expected = plain(&gpu);
    let mut y = gpu.zeros::<f64>(a.ncols).unwrap();
    let mut dy = gpu.dense_zeros::<f64>(a.nrows, k, Layout::RowMajor).unwrap();
    let stream = gpu.stream();
    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    transposed.spmv(2.0, &x, 0.0, &mut y).unwrap();
    spmm.spmm(2.0, &dx, 0.0, &mut dy).unwrap();
    let graph = stream.end_capture(CUgraphInstantiate_flags(0)).unwrap().expect("a captured graph");
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    let got = (bits(&y.to_host(&gpu).unwrap()), bits(&dy.to_host(&gpu).unwrap()));
    assert_eq!(got, expected, "the graph's products differ from the plain ones");
}

/// Uploading a dense matrix checks its shape against its buffer without a product.
#[test]
fn gpu_dense_from_a_callers_buffer() {
    let test = "gpu_dense_from_a_callers_buffer";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let buffer = gpu.stream().clone_htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let dense = DeviceDense::from_slice(buffer, 2, 2, Layout::RowMajor, 3).unwrap();
    assert_eq!((dense.rows(), dense.cols(), dense.ld(), dense.layout()), (2, 2, 3, Layout::RowMajor));
    assert_eq!(dense.to_host(&gpu).unwrap().len(), 6);
}
