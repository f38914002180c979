//! Compressed ELL (16-bit column offsets from the row, values in the matrix's type or narrower) on the
//! GPU: products against the f64 reference of the unrounded matrix, every row within
//! `CompressedEll::error_bound` for every storage type, on fresh random bands and stencils and on the
//! layout's edges (no rows, empty rows, rows ending inside the walk's batches of 8 slots, row counts
//! off the warp and block sizes, more columns than rows, offsets of exactly ±`MAX_ROW_DELTA`), with
//! `y` poisoned wherever it is not read; `y` bit for bit that of the ELL and thread-per-row CSR
//! kernels when the values keep their type; NaN and infinities where the reference puts them and
//! nowhere else (not from `y` when `beta == 0`, not through a padding slot); a CUDA graph's replays.
//! Without a GPU these tests print why and pass, unless `SPMV_REQUIRE_GPU=1`, which makes them fail
//! instead; the refusal of a column too far from its row is the conversion's, before any upload, and
//! runs everywhere.

use crate::common::{
    Case, Csr, banded, five_point, gpu_or_skip, random_vector, rng, say, seven_point, tolerance,
};
use gpu_spmv::formats::{CompressedEll, Ell, ValueStorage, bf16, f16};
use gpu_spmv::{
    DeviceCompressedEll, DeviceMatrix, DeviceVector, Error, FormatError, Gpu, Kernel, Plan, Scalar,
};
use kernels_gpu::abi::{MAX_ROW_DELTA, PAD_DELTA};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// `MAX_ROW_DELTA` as a column distance.
const LIMIT: usize = MAX_ROW_DELTA as usize;

/// A matrix whose row `r` holds `lens(r)` columns drawn from `r + lo ..= r + hi` (clipped to the
/// columns; sorted and distinct when `sorted`, else in draw order and possibly repeated), values
/// uniform in [-1, 1): every offset from the row within `lo ..= hi`, since the format takes no other
/// matrix (`common::Csr::random` draws columns from the whole row).
fn near_diagonal<T: Scalar>(
    rng: &mut ChaCha8Rng,
    (nrows, ncols): (usize, usize),
    (lo, hi): (isize, isize),
    sorted: bool,
    lens: impl Fn(usize) -> usize,
) -> Csr<T> {
    let (mut offsets, mut cols) = (vec![0], Vec::new());
    for r in 0..nrows {
        let first = r.saturating_add_signed(lo);
        let last = r.saturating_add_signed(hi).min(ncols.saturating_sub(1));
        if ncols > 0 && r.checked_add_signed(hi).is_some() && first <= last {
            let mut row: Vec<usize> = (0..lens(r)).map(|_| rng.random_range(first..=last)).collect();
            if sorted {
                row.sort_unstable();
                row.dedup();
            }
            cols.extend(row);
        }
        offsets.push(cols.len());
    }
    let vals = (0..cols.len()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    Csr { nrows, ncols, offsets, cols, vals }
}

/// Rows `r` holding `r - MAX_ROW_DELTA`, `r` and `r + MAX_ROW_DELTA` where those exist: offsets of
/// exactly the limit on both sides, and two slots per row, which most rows pad.
fn at_the_limit<T: Scalar>(rng: &mut ChaCha8Rng, n: usize) -> Csr<T> {
    let (mut offsets, mut cols) = (vec![0], Vec::new());
    for r in 0..n {
        cols.extend(
            [r.checked_sub(LIMIT), Some(r), Some(r + LIMIT).filter(|&c| c < n)].into_iter().flatten(),
        );
        offsets.push(cols.len());
    }
    let vals = (0..cols.len()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    Csr { nrows: n, ncols: n, offsets, cols, vals }
}

/// `a` with its values converted to `U` (rounded to nearest), so that both product types see the
/// same pattern and the same non-finite values.
fn converted<T: Scalar, U: Scalar>(a: &Csr<T>) -> Csr<U> {
    let vals = a.vals.iter().map(|v| U::from_f64(v.to_f64())).collect();
    Csr { nrows: a.nrows, ncols: a.ncols, offsets: a.offsets.clone(), cols: a.cols.clone(), vals }
}

/// The matrices every storage type is checked on: the layout's edges, bands and stencils. All of
/// them keep their columns within `MAX_ROW_DELTA` of the row and their padding within ELL's limit.
fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut all: Vec<(String, Csr<T>)> = vec![
        ("no rows".into(), Csr::random(rng, 0, 5, true, |_| 0)),
        ("all rows empty".into(), Csr::random(rng, 1000, 300, true, |_| 0)),
        ("one row, one entry".into(), Csr::random(rng, 1, 1, true, |_| 1)),
        ("5-point 157 x 157".into(), five_point(157, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))),
        ("7-point 29^3".into(), seven_point(29, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))),
        ("banded 5001 x 5013".into(), banded(rng, 5001, 5013, 48, 3)),
        (
            "unsorted, repeated columns".into(),
            near_diagonal(rng, (3001, 3001), (-700, 700), false, |r| r % 23),
        ),
        (
            "more columns than rows, offsets up to the limit".into(),
            near_diagonal(rng, (2003, 2003 + LIMIT), (0, MAX_ROW_DELTA as isize), true, |r| 1 + r % 6),
        ),
        ("offsets of exactly -32767 and +32767".into(), at_the_limit(rng, LIMIT + 1200)),
    ];
    // Rows of 0 to `width` entries: a row's padding starts at every slot of a batch, and the widths
    // end one short of a batch, on one, one past one, and one past two.
    for width in [1, 7, 8, 9, 17] {
        let a = near_diagonal(rng, (2000 + width, 2000 + width), (-30, 30), false, |r| r % (width + 1));
        all.push((format!("rows of 0 to {width} entries, unsorted"), a));
    }
    for nrows in [31, 33, 127, 129, 255, 257, 4097] {
        all.push((format!("{nrows} rows"), near_diagonal(rng, (nrows, nrows), (-9, 9), true, |r| 1 + r % 9)));
    }
    all
}

/// Uploads `c` and checks that the device holds what the host converted, slot for slot, so that a
/// wrong product is the kernel's and not the upload's.
fn upload<T: Scalar, V: ValueStorage<T>>(
    gpu: &Gpu,
    what: &str,
    c: &CompressedEll<T, V>,
) -> DeviceCompressedEll<T, V> {
    let m = gpu.upload_compressed_ell(c).unwrap();
    assert_eq!((m.shape(), m.width()), (c.shape(), c.width()), "{what}");
    assert_eq!((m.device_bytes(), m.max_rounding()), (c.device_bytes(), c.max_rounding()), "{what}");
    if !c.deltas().is_empty() {
        let s = gpu.stream();
        assert_eq!(s.clone_dtoh(m.deltas()).unwrap(), c.deltas(), "{what}: offsets on the device");
        let widened = |v: &[V]| v.iter().map(|v| v.widen().to_bits()).collect::<Vec<_>>();
        assert_eq!(widened(&s.clone_dtoh(m.values()).unwrap()), widened(c.values()), "{what}: values");
    }
    m
}

/// Asserts that every row of `y` is within `c.error_bound(row)` of the f64 reference, relative to
/// the row's error scale, plus the reference's own rounding (`γ_n` in f64); where the reference is
/// not finite, `y` must be the same NaN or infinity. A NaN in `y` where the reference is finite
/// fails. Returns the largest ratio of error to bound.
fn assert_rows_within_bound<T: Scalar, V: ValueStorage<T>>(
    what: &str,
    a: &Csr<T>,
    c: &CompressedEll<T, V>,
    case: &Case<T>,
    y: &[T],
) -> f64 {
    assert_eq!(y.len(), a.nrows, "{what}");
    let mut worst: f64 = 0.0;
    for (row, (&got, (&reference, &scale))) in
        y.iter().zip(case.reference.iter().zip(&case.scale)).enumerate()
    {
        let got = got.to_f64();
        let place = format!("{what}, alpha {}, beta {}, row {row}", case.alpha, case.beta);
        if !reference.is_finite() {
            let same = got.to_bits() == reference.to_bits() || (got.is_nan() && reference.is_nan());
            assert!(same, "{place}: {got}, not {reference}");
            continue;
        }
        let n = (a.offsets[row + 1] - a.offsets[row]) as f64;
        let bound = c.error_bound(row) * scale + 2.0 * n * f64::EPSILON * scale;
        let err = (got - reference).abs();
        assert!(err <= bound, "{place}: {got} against {reference}, error {err:e} over {bound:e}");
        if bound > 0.0 {
            worst = worst.max(err / bound);
        }
    }
    worst
}

/// `alpha A x + beta y` with `a` stored as `V`, for the three cases every kernel must get right
/// (`beta = 0` on `y` poisoned with NaN, so that an unwritten or leaked element shows; both
/// non-zero; `alpha = 0`), each row checked by [`assert_rows_within_bound`]; with values in `T`,
/// also the whole `y` against the tests' usual tolerance. Returns the largest ratio of error to
/// bound.
fn products<T: Scalar, V: ValueStorage<T>>(
    gpu: &Gpu,
    what: &str,
    a: &Csr<T>,
    x: &[T],
    rng: &mut ChaCha8Rng,
) -> f64 {
    let what = format!("{what}, {} stored as {}", T::NAME, V::STORAGE.name());
    let c = CompressedEll::<T, V>::try_from_csr(a.view()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let m = upload(gpu, &what, &c);
    let dx = gpu.upload_vector(x).unwrap();
    let y0 = random_vector::<T>(rng, a.nrows);
    let poison = vec![T::from_f64(f64::NAN); a.nrows];
    let mut worst: f64 = 0.0;
    for (alpha, beta, start) in [(1.0, 0.0, &poison), (-1.5, 0.75, &y0), (0.0, 3.0, &y0)] {
        let case = Case::new(a, x, T::from_f64(alpha), T::from_f64(beta), start.clone());
        let mut dy = gpu.upload_vector(&case.start).unwrap();
        gpu.spmv(case.alpha, &m, &dx, case.beta, &mut dy).unwrap();
        let y = dy.to_host(gpu).unwrap();
        worst = worst.max(assert_rows_within_bound(&what, a, &c, &case, &y));
        if V::STORAGE == <T as ValueStorage<T>>::STORAGE && case.reference.iter().all(|r| r.is_finite()) {
            case.assert_close(&what, &y, tolerance::<T>(a.view().stats().max));
        }
    }
    worst
}

/// [`products`] of one storage type.
type ProductsOf<T> = fn(&Gpu, &str, &Csr<T>, &[T], &mut ChaCha8Rng) -> f64;

/// Every matrix of [`matrices`] in every storage type of `T`, against the reference. Prints each
/// storage's largest ratio of error to bound: well below 1 in `T`; about 1 in a narrower type, where a
/// row whose value rounds by the largest `ρ` meets the bound's first term.
fn against_reference<T: Scalar>(test: &str, storages: &[(&str, ProductsOf<T>)]) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut worst = vec![0.0f64; storages.len()];
    for (name, a) in matrices::<T>(&mut rng) {
        let x = random_vector::<T>(&mut rng, a.ncols);
        for ((_, products), worst) in storages.iter().zip(&mut worst) {
            *worst = worst.max(products(&gpu, &name, &a, &x, &mut rng));
        }
    }
    for ((storage, _), worst) in storages.iter().zip(worst) {
        say(&format!("{test}: values stored as {storage}: largest error / bound = {worst:.3}"));
    }
}

#[test]
fn gpu_compressed_ell_f32() {
    against_reference::<f32>(
        "gpu_compressed_ell_f32",
        &[("f32", products::<f32, f32>), ("bf16", products::<f32, bf16>), ("f16", products::<f32, f16>)],
    );
}

#[test]
fn gpu_compressed_ell_f64() {
    against_reference::<f64>(
        "gpu_compressed_ell_f64",
        &[
            ("f64", products::<f64, f64>),
            ("f32", products::<f64, f32>),
            ("bf16", products::<f64, bf16>),
            ("f16", products::<f64, f16>),
        ],
    );
}

/// `y` of the compressed ELL kernel, values in `T`, is bit for bit that of the ELL kernel and of the
/// thread-per-row CSR kernel on the same matrix (the same walk, order and `fma`s, as
/// `kernels_gpu::abi::CompressedEllParams` promises; only the columns' encoding differs), `y` read
/// and not.
fn bit_identical<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let scalar = Kernel::CsrScalar { block_size: 128 };
    for (name, a) in matrices::<T>(&mut rng) {
        let ell = gpu.upload_ell(&Ell::try_from_csr(a.view()).unwrap()).unwrap();
        let csr = gpu.upload_csr_ref(a.view()).unwrap();
        let m = upload(&gpu, &name, &CompressedEll::<T>::try_from_csr(a.view()).unwrap());
        let dx = gpu.upload_vector(&random_vector::<T>(&mut rng, a.ncols)).unwrap();
        let y0 = random_vector::<T>(&mut rng, a.nrows);
        let poison = vec![T::from_f64(f64::NAN); a.nrows];
        for (alpha, beta, start) in [(1.25, -0.5, &y0), (1.0, 0.0, &poison)] {
            let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
            let run = |f: &dyn Fn(&mut DeviceVector<T>) -> gpu_spmv::Result<()>| {
                let mut dy = gpu.upload_vector(start).unwrap();
                f(&mut dy).unwrap();
                dy.to_host(&gpu).unwrap().iter().map(|v| v.to_f64().to_bits()).collect::<Vec<u64>>()
            };
            let ours = run(&|y| gpu.spmv(alpha, &m, &dx, beta, y));
            let theirs = run(&|y| gpu.spmv(alpha, &ell, &dx, beta, y));
            assert_eq!(ours, theirs, "{name}, beta {beta}: against the ELL kernel");
            let theirs = run(&|y| gpu.spmv_with(scalar, alpha, &csr, &dx, beta, y));
            assert_eq!(ours, theirs, "{name}, beta {beta}: against the thread-per-row CSR kernel");
        }
    }
}

#[test]
fn gpu_compressed_ell_bit_identical_f32() {
    bit_identical::<f32>("gpu_compressed_ell_bit_identical_f32");
}

#[test]
fn gpu_compressed_ell_bit_identical_f64() {
    bit_identical::<f64>("gpu_compressed_ell_bit_identical_f64");
}

/// A padding slot reads no `x`. Past `2^15` rows a padding slot's `PAD_DELTA`, taken for an offset,
/// would name column `row - 32768`, and a masked load's address is column 0: NaN and infinities in
/// `x` at column 0 and at `row - 32768` for every fourth row past `2^15` that has padding reach
/// exactly the rows the reference says (those that hold such a column), in every storage type, with
/// `y` poisoned where it is not read.
#[test]
fn gpu_compressed_ell_padding_reads_no_x() {
    let test = "gpu_compressed_ell_padding_reads_no_x";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let n = LIMIT + 1 + 3001;
    let a = near_diagonal::<f64>(&mut rng, (n, n), (-4, 4), true, |r| r % 11);
    let a32 = converted::<f64, f32>(&a);
    let width = (0..n).map(|r| a.offsets[r + 1] - a.offsets[r]).max().unwrap();
    let mut x = random_vector::<f64>(&mut rng, n);
    x[0] = f64::NAN;
    for (k, r) in (LIMIT + 1..n).filter(|&r| a.offsets[r + 1] - a.offsets[r] < width).step_by(4).enumerate() {
        x[r - (LIMIT + 1)] = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN][k % 3];
    }
    let reads = |r: usize| a.cols[a.offsets[r]..a.offsets[r + 1]].iter().any(|&c| !x[c].is_finite());
    let readers = (0..n).filter(|&r| reads(r)).count();
    say(&format!("{test}: {readers} of {n} rows read a non-finite x"));
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    products::<f64, f64>(&gpu, test, &a, &x, &mut rng);
    products::<f64, f32>(&gpu, test, &a, &x, &mut rng);
    products::<f64, bf16>(&gpu, test, &a, &x, &mut rng);
    products::<f64, f16>(&gpu, test, &a, &x, &mut rng);
    products::<f32, f32>(&gpu, test, &a32, &x32, &mut rng);
    products::<f32, bf16>(&gpu, test, &a32, &x32, &mut rng);
    products::<f32, f16>(&gpu, test, &a32, &x32, &mut rng);
}

/// NaN and infinities among the values propagate to exactly the rows the reference says, with the
/// same sign, in every storage type (f16 and bf16 hold them too); with `alpha = 0` the matrix is not
/// read and `y` stays finite.
#[test]
fn gpu_compressed_ell_non_finite_values() {
    let test = "gpu_compressed_ell_non_finite_values";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut a = banded::<f32>(&mut rng, 3001, 3001, 6, 2);
    for (k, v) in a.vals.iter_mut().enumerate().filter(|(k, _)| k % 97 == 5) {
        *v = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][k % 3];
    }
    let a64 = converted::<f32, f64>(&a);
    let x = random_vector::<f32>(&mut rng, a.ncols);
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    products::<f32, f32>(&gpu, test, &a, &x, &mut rng);
    products::<f32, bf16>(&gpu, test, &a, &x, &mut rng);
    products::<f32, f16>(&gpu, test, &a, &x, &mut rng);
    products::<f64, f64>(&gpu, test, &a64, &x64, &mut rng);
    products::<f64, f32>(&gpu, test, &a64, &x64, &mut rng);
    products::<f64, bf16>(&gpu, test, &a64, &x64, &mut rng);
    products::<f64, f16>(&gpu, test, &a64, &x64, &mut rng);
}

/// Products `y = A x + y` by `plan`: `2 * per_replay` launched one by one, and `per_replay` captured
/// into a CUDA graph (the capture runs none) replayed twice, from the same `y0`: `y` bit for bit the
/// same. Returns that `y`.
fn replayed<A: DeviceMatrix<f64>>(
    gpu: &Gpu,
    plan: &Plan<'_, f64, A>,
    per_replay: usize,
    x: &DeviceVector<f64>,
    y0: &[f64],
) -> Vec<f64> {
    let mut one_by_one = gpu.upload_vector(y0).unwrap();
    for _ in 0..2 * per_replay {
        plan.spmv(1.0, x, 1.0, &mut one_by_one).unwrap();
    }
    let mut dy = gpu.upload_vector(y0).unwrap();
    let graph = gpu
        .capture(|| {
            for _ in 0..per_replay {
                plan.spmv(1.0, x, 1.0, &mut dy)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(dy.to_host(gpu).unwrap(), y0, "the capture ran the products");
    graph.launch().unwrap();
    graph.launch().unwrap();
    let (replays, products) = (dy.to_host(gpu).unwrap(), one_by_one.to_host(gpu).unwrap());
    let bits = |y: &[f64]| y.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&replays), bits(&products), "the replays against the products");
    replays
}

/// A plan's products captured into a CUDA graph and replayed ([`replayed`]), values in `T` and in
/// bf16; with values in `T`, `y` is also within tolerance of the reference.
#[test]
fn gpu_compressed_ell_graph_replays() {
    const PER_REPLAY: usize = 5;
    let test = "gpu_compressed_ell_graph_replays";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = seven_point::<f64>(23, |_, _| rng.random_range(-1.0..1.0));
    let x = random_vector::<f64>(&mut rng, a.ncols);
    let y0 = random_vector::<f64>(&mut rng, a.nrows);
    let dx = gpu.upload_vector(&x).unwrap();
    let exact = upload(&gpu, test, &CompressedEll::<f64>::try_from_csr(a.view()).unwrap());
    let y = replayed(&gpu, &gpu.plan(&exact, ()).unwrap(), PER_REPLAY, &dx, &y0);
    crate::common::check(test, &a, (2 * PER_REPLAY) as f64, &x, 1.0, &y0, &y);
    let narrow = upload(&gpu, test, &CompressedEll::<f64, bf16>::try_from_csr(a.view()).unwrap());
    replayed(&gpu, &gpu.plan(&narrow, ()).unwrap(), PER_REPLAY, &dx, &y0);
}

/// The conversion refuses a column farther than `MAX_ROW_DELTA` from its row, on either side, naming the
/// first (by row, then entry) whatever the storage type: `row - 32768` would store `PAD_DELTA` itself and
/// vanish as padding, `row + 32768` would wrap to it. The same matrices one column nearer convert, with
/// offsets of exactly ±32767, and give their entries back. No GPU needed: no such matrix reaches an
/// upload.
#[test]
fn compressed_ell_refuses_a_column_far_from_its_row() {
    // Left: row 32768 holds columns 1 (offset -32767), 0 (-32768) and itself; row 32769, column 0.
    let n = LIMIT + 3;
    let mut left = Csr::<f32> { nrows: n, ncols: n, offsets: vec![0], cols: vec![], vals: vec![] };
    for r in 0..n {
        left.cols.extend(match r {
            r if r == LIMIT + 1 => vec![1, 0, r],
            r if r == LIMIT + 2 => vec![0, r],
            r => vec![r],
        });
        left.offsets.push(left.cols.len());
    }
    left.vals = (0..left.cols.len()).map(|k| 1.0 + k as f32).collect();
    let first_left = left.offsets[LIMIT + 1] + 1;
    // Right: row 1 holds columns 32768 (offset +32767) and 32769 (+32768); row 2, column 39999.
    let right = Csr::<f32> {
        nrows: 3,
        ncols: 40_000,
        offsets: vec![0, 2, 4, 5],
        cols: vec![0, LIMIT, LIMIT + 1, LIMIT + 2, 39_999],
        vals: vec![1.0, 2.0, 3.0, 4.0, 5.0],
    };
    for (what, a, (row, entry)) in [("left", &left, (LIMIT + 1, first_left)), ("right", &right, (1, 3))] {
        let expected = FormatError::ColumnFarFromRow { row, entry, col: a.cols[entry], limit: LIMIT };
        for got in [
            CompressedEll::<f32>::try_from_csr(a.view()).map(|_| ()),
            CompressedEll::<f32, bf16>::try_from_csr(a.view()).map(|_| ()),
            CompressedEll::<f32, f16>::try_from_csr(a.view()).map(|_| ()),
        ] {
            match got {
                Err(Error::Format(e)) => assert_eq!(e, expected, "{what}"),
                other => panic!("{what}: {other:?}, expected {expected:?}"),
            }
        }
    }
    // One column nearer: left's row 32768 takes column 1 twice, its row 32769 column 2; right's row 1
    // column 32768 twice, its row 2 column 32769.
    left.cols[first_left] = 1;
    left.cols[left.offsets[LIMIT + 2]] = 2;
    let right = Csr { cols: vec![0, LIMIT, LIMIT + 1, LIMIT + 1, LIMIT + 2], ..right };
    for (what, a, limit) in [("left", &left, -MAX_ROW_DELTA), ("right", &right, MAX_ROW_DELTA)] {
        let c = CompressedEll::<f32, bf16>::try_from_csr(a.view()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(c.deltas().contains(&limit), "{what}: no offset of {limit}");
        let width = c.width();
        let mut entries = Vec::new();
        for k in 0..width {
            for r in (0..a.nrows).filter(|&r| a.offsets[r] + k < a.offsets[r + 1]) {
                entries.push((r, a.cols[a.offsets[r] + k]));
            }
        }
        assert_eq!(c.entries(), entries, "{what}: the entries, slot-major");
        let padding = c.deltas().iter().filter(|&&d| d == PAD_DELTA).count();
        assert_eq!(padding, a.nrows * width - a.cols.len(), "{what}: padding slots");
    }
}
