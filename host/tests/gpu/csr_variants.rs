//! The aligned (Baskaran & Bordawekar), parametrised (Reguly & Giles) and balanced (CSR-Adaptive's
//! row blocks) CSR kernels, the ELL copy, and the run-time tuner against the f64 reference: a
//! representative set of parameters on every edge case, every configuration the tuner can reach on
//! three matrices, the long-row split on a dc1-like matrix, the balanced kernel's task shapes, and
//! products run through `TunedSpmv` while it tunes. Output is poisoned with NaN before each product
//! with `beta = 0`. Without a GPU the tests print why and pass (see `common::gpu_or_skip`).

use crate::common::{
    Case, Csr, banded, edge_cases, gpu_or_skip, random_vector, rng, slice_edges, stencil_past_twice_the_l2,
    tolerance,
};
use gpu_spmv::formats::{CompressedCsr, Ell};
use gpu_spmv::tune::TunedSpmv;
use gpu_spmv::{DeviceCsr, DeviceVector, Error, Gpu, Kernel, Regime, Scalar};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A matrix on the GPU with `x` and the reference results of three products, computed once and
/// compared with the output of many kernels.
struct Fixture<T> {
    name: String,
    da: DeviceCsr<T>,
    dx: DeviceVector<T>,
    dy: DeviceVector<T>,
    cases: Vec<Case<T>>,
    tolerance: f64,
}

impl<T: Scalar> Fixture<T> {
    fn new(gpu: &Gpu, name: &str, a: &Csr<T>, rng: &mut ChaCha8Rng) -> Self {
        let x = random_vector::<T>(rng, a.ncols);
        let y0 = random_vector::<T>(rng, a.nrows);
        let poison = vec![T::from_f64(f64::NAN); a.nrows];
        let cases = [
            (T::from_f64(1.0), T::ZERO, poison),
            (T::from_f64(-1.5), T::from_f64(0.75), y0.clone()),
            (T::ZERO, T::from_f64(3.0), y0),
        ]
        .into_iter()
        .map(|(alpha, beta, start)| Case::new(a, &x, alpha, beta, start))
        .collect();
        Self {
            name: name.to_owned(),
            da: gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap(),
            dx: gpu.upload_vector(&x).unwrap(),
            dy: gpu.zeros(a.nrows).unwrap(),
            cases,
            tolerance: tolerance::<T>(a.view().stats().max),
        }
    }

    /// Runs `kernel` for each of the first `cases` cases and checks the results.
    fn check(&mut self, gpu: &Gpu, kernel: Kernel, cases: usize) {
        for case in &self.cases[..cases] {
            self.dy.copy_from_host(gpu, &case.start).unwrap();
            gpu.spmv_with(kernel, case.alpha, &self.da, &self.dx, case.beta, &mut self.dy).unwrap();
            let y = self.dy.to_host(gpu).unwrap();
            case.assert_close(&format!("{}, {kernel:?}", self.name), &y, self.tolerance);
        }
    }
}

/// A matrix like dc1 (Reguly & Giles' cliff): 116,835 rows of 1 to 11 entries, but for two rows of
/// 114,200 and 47,190 entries. Columns unsorted and repeated, so the lengths are exact.
fn dc1_like<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    let n = 116_835;
    Csr::random(rng, n, n, false, |r| match r {
        1000 => 114_200,
        80_000 => 47_190,
        _ => 1 + (r * 7919) % 11,
    })
}

/// Many long rows of uneven lengths (none a multiple of a chunk) among short ones.
fn many_long_rows<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    Csr::random(rng, 2003, 5000, false, |r| if r % 7 == 0 { 100 + (r * 131) % 3000 } else { r % 5 })
}

/// A web graph's rows (webbase-like): lengths from a Pareto law of tail 1.4, mostly 1 to 3 entries,
/// a few in the hundreds or thousands, one of 3,000 for sure; every 50th row empty.
fn web_graph_like<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    let lens: Vec<usize> = (0..30_011)
        .map(|r| {
            let u: f64 = rand::Rng::random(&mut *rng);
            match r {
                7777 => 3000,
                _ if r % 50 == 0 => 0,
                _ => ((1.0 - u).powf(-1.0 / 1.4) as usize).min(6000),
            }
        })
        .collect();
    Csr::random(rng, 30_011, 30_011, false, |r| lens[r])
}

/// Rows whose lengths sit on the balanced kernel's boundaries: runs of 150 rows of each length of
/// `LENS` (tasks of exactly 128 and 256 entries and one more, 64 rows of one entry, single rows of
/// one and two spans, rows just below, at and above the split length), blocks of mixed lengths,
/// blocks of alternating empty and one-entry rows, and blocks of `FEW`'s tasks of a few rows; rows
/// start on and off the 32-entry steps.
fn task_shapes<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    const LENS: [usize; 20] =
        [0, 1, 2, 3, 4, 31, 32, 33, 64, 100, 127, 128, 129, 255, 256, 257, 511, 512, 513, 2049];
    // Cut into tasks (`row_tasks`) as [257] [0, 0] [257] [0, 200, 0, 50] [100, 0, 100, 3]
    // [60, 60, 60, 60, 0] [130, 126, 0]: tasks of 2 to 4 rows, summed without the scan, with no
    // entries, with empty first, middle and last rows, and of 256 entries; and one of 5 rows.
    const FEW: [usize; 20] = [257, 0, 0, 257, 0, 200, 0, 50, 100, 0, 100, 3, 60, 60, 60, 60, 0, 130, 126, 0];
    let rows = 12_001;
    let lens: Vec<usize> = (0..rows)
        .map(|r| {
            let block = r / 150;
            match block % 4 {
                0 => LENS[block / 4 % LENS.len()],
                1 => LENS[(r * 7919) % LENS.len()],
                2 => r % 2,
                _ => FEW[r % FEW.len()],
            }
        })
        .collect();
    Csr::random(rng, rows, 3_001, false, |r| lens[r])
}

/// Rows of 0 to 63 entries, sorted columns.
fn random_rows<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    let lens: Vec<usize> = (0..20_011).map(|_| rand::Rng::random_range(&mut *rng, 0..64)).collect();
    Csr::random(rng, 20_011, 20_011, true, |r| lens[r])
}

/// A representative set of the new kernels: every group, x path and coop, with block sizes and
/// repeats from the smallest allowed to the largest, long rows split or not.
fn representative_kernels() -> Vec<Kernel> {
    let mut all = vec![Kernel::Auto];
    for group in Kernel::ALIGNED_GROUPS {
        for cached_x in [true, false] {
            for block_size in [32, 256] {
                all.push(Kernel::CsrAligned { group, cached_x, block_size });
            }
        }
    }
    all.push(Kernel::CsrAligned { group: 16, cached_x: true, block_size: 1024 });
    for coop in Kernel::PARAM_COOPS {
        for (repeat, block_size, split_long_rows) in
            [(1, 128, true), (2, 96, true), (3, 64, true), (64, 512, true), (1, 1024, false)]
        {
            all.push(Kernel::CsrParam { coop, repeat, block_size, split_long_rows });
        }
    }
    all.extend([32, 64, 128, 256, 512].map(|block_size| Kernel::CsrBalanced { block_size }));
    all.extend([32, 128, 512].map(|block_size| Kernel::CsrMerge { block_size }));
    all
}

fn representative_kernels_on_every_matrix<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut matrices = edge_cases::<T>(&mut rng);
    matrices.push(("random rows of 0..64", random_rows(&mut rng)));
    matrices.push(("many long rows", many_long_rows(&mut rng)));
    matrices.push(("dc1-like", dc1_like(&mut rng)));
    matrices.push(("web-graph-like", web_graph_like(&mut rng)));
    matrices.push(("task shapes", task_shapes(&mut rng)));
    for (name, a) in &matrices {
        let mut fixture = Fixture::new(&gpu, name, a, &mut rng);
        for kernel in representative_kernels() {
            fixture.check(&gpu, kernel, 3);
        }
        // The ELL copy wherever the host's ELL takes the matrix; refused, before allocating, with
        // the host's padding error wherever it does not.
        match Ell::try_from_csr(a.view()) {
            Ok(_) => fixture.check(&gpu, Kernel::CsrEllCopy, 3),
            Err(host) => {
                let before = fixture.da.device_bytes();
                let device = gpu.plan(&fixture.da, Kernel::CsrEllCopy).unwrap_err();
                assert_eq!(device.to_string(), host.to_string(), "{name}");
                assert_eq!(fixture.da.device_bytes(), before, "{name}: nothing kept");
            }
        }
    }
}

/// Auto takes the ELL copy for a matrix of rows of one length whose CSR bytes are twice the L2 (a
/// 5-point stencil), and the product is right; the copy is kept and counted in the matrix's bytes.
#[test]
fn gpu_auto_takes_the_ell_copy() {
    let test = "gpu_auto_takes_the_ell_copy";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = stencil_past_twice_the_l2(&gpu, &mut rng);
    let mut fixture = Fixture::new(&gpu, "a 5-point stencil past twice the L2", &a, &mut rng);
    let before = fixture.da.device_bytes();
    let plan = gpu.plan(&fixture.da, Kernel::Auto).unwrap();
    assert_eq!(plan.kernel(), Kernel::CsrEllCopy, "Auto's choice");
    drop(plan);
    // The stencil lies on 5 diagonals: the copy is DIA, an f32 a row and diagonal, a presence word a
    // row, an 8-byte offset a diagonal.
    let dia_bytes = a.nrows * (5 * 4 + 4) + 5 * 8;
    assert_eq!(fixture.da.device_bytes(), before + dia_bytes, "the copy, kept");
    fixture.check(&gpu, Kernel::Auto, 3);
}

/// The ELL copy takes the most compact form the matrix allows (its build finds out on the device):
/// DIA on a few diagonals, however far, where every row's columns increase; ELL with 16-bit offsets
/// from the row where the columns lie within `i16::MAX` of it; plain ELL elsewhere. Each form's `y`
/// is the host ELL's bit for bit, and right.
fn ell_copy_forms<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // 1,000 rows (off every block multiple) of 4 entries over 50,000 columns.
    let (nrows, ncols, t) = (1000, 50_000, size_of::<T>());
    let mut spread = |r: usize, lo: usize, hi: usize| {
        let mut row = std::collections::BTreeSet::new();
        while row.len() < 4 {
            row.insert(rng.random_range(lo..hi));
        }
        row.into_iter().map(move |c| c + r).collect::<Vec<usize>>()
    };
    let forms: [(&str, Vec<usize>, usize); 4] = [
        // `r, r + 1, r + 2, r + 40,000`: 4 diagonals, one past `i16::MAX`.
        (
            "DIA",
            (0..nrows).flat_map(|r| [r, r + 1, r + 2, r + 40_000]).collect(),
            nrows * (4 * t + 4) + 4 * 8,
        ),
        // Four diagonals out of order in each row: DIA would sum them in another order than ELL,
        // so the copy takes the offsets.
        (
            "offsets, rows unsorted",
            (0..nrows).flat_map(|r| [r + 2, r, r + 1, r + 3]).collect(),
            nrows * 4 * (2 + t),
        ),
        // Columns in `r .. r + 2,000`: too many diagonals, every one within `i16::MAX`.
        ("offsets", (0..nrows).flat_map(|r| spread(r, 0, 2000)).collect(), nrows * 4 * (2 + t)),
        // Columns in `r .. r + 49,000`: neither.
        ("plain columns", (0..nrows).flat_map(|r| spread(r, 0, 49_000)).collect(), nrows * 4 * (4 + t)),
    ];
    for (form, cols, copy_bytes) in forms {
        let offsets: Vec<usize> = (0..=nrows).map(|r| 4 * r).collect();
        let a = Csr { nrows, ncols, offsets, cols, vals: random_vector::<T>(&mut rng, 4 * nrows) };
        let name = format!("{test}: {form}");
        let mut fixture = Fixture::new(&gpu, &name, &a, &mut rng);
        let before = fixture.da.device_bytes();
        fixture.check(&gpu, Kernel::CsrEllCopy, 3);
        assert_eq!(fixture.da.device_bytes(), before + copy_bytes, "{name}: the copy's bytes");
        assert_copy_is_ells(&gpu, &fixture, &a, &mut rng, &name);
    }
}

/// The product by `a`'s ELL copy (`fixture.da`'s) is ELL's, bit for bit, from a random `y`.
fn assert_copy_is_ells<T: Scalar>(
    gpu: &Gpu,
    fixture: &Fixture<T>,
    a: &Csr<T>,
    rng: &mut ChaCha8Rng,
    name: &str,
) {
    let ell = gpu.upload_ell(&Ell::try_from_csr(a.view()).unwrap()).unwrap();
    let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
    let start = random_vector::<T>(rng, a.nrows);
    let mut by_ell = gpu.upload_vector(&start).unwrap();
    gpu.spmv(alpha, &ell, &fixture.dx, beta, &mut by_ell).unwrap();
    let mut by_copy = gpu.upload_vector(&start).unwrap();
    gpu.spmv_with(Kernel::CsrEllCopy, alpha, &fixture.da, &fixture.dx, beta, &mut by_copy).unwrap();
    let (by_ell, by_copy) = (by_ell.to_host(gpu).unwrap(), by_copy.to_host(gpu).unwrap());
    let same = by_ell.iter().zip(&by_copy).all(|(e, c)| e.to_f64().to_bits() == c.to_f64().to_bits());
    assert!(same, "{name}: the copy's y differs from ELL's");
}

/// Auto looks for a DIA copy of a matrix past twice the L2 whose rows (up to 81 entries) are too
/// unequal for the ELL-copy term: a band of 81 diagonals, every third column of it left out in a
/// third of the rows, takes the copy in DIA (kept, counted in the matrix's bytes; the product
/// right, in the cold regime and in the hot one); the same rows with their columns spread over 162
/// diagonals take no DIA copy, then or at a second plan: Auto takes their compressed columns
/// instead (each column within 4,300 of its row but in the last rows, whose columns wrap around),
/// at the rule's width, and keeps nothing else.
#[test]
fn gpu_auto_looks_for_a_dia_copy() {
    let test = "gpu_auto_looks_for_a_dia_copy";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // f32 CSR bytes of 8 an entry: twice the L2 and a little more.
    let rows = (2 * gpu.l2_bytes() as usize).div_ceil(8 * 70) + 1001;
    let band = banded::<f32>(&mut rng, rows, rows, 40, 1);
    let mut offsets = vec![0];
    let mut cols = Vec::new();
    for r in 0..rows {
        let row = &band.cols[band.offsets[r]..band.offsets[r + 1]];
        cols.extend(row.iter().filter(|&&c| r % 3 != 0 || c % 3 != 1));
        offsets.push(cols.len());
    }
    let vals = random_vector::<f32>(&mut rng, cols.len());
    let a = Csr { nrows: rows, ncols: rows, offsets, cols, vals };
    let mut fixture = Fixture::new(&gpu, "a thinned band of 81 diagonals past twice the L2", &a, &mut rng);
    let before = fixture.da.device_bytes();
    assert_eq!(gpu.plan(&fixture.da, Kernel::Auto).unwrap().kernel(), Kernel::CsrEllCopy, "Auto's choice");
    let copy_bytes = rows * (81 * 4 + 3 * 4) + 81 * 8;
    assert_eq!(fixture.da.device_bytes(), before + copy_bytes, "the copy in DIA, kept");
    fixture.check(&gpu, Kernel::Auto, 3);
    let hot = gpu.plan_for(&fixture.da, Kernel::Auto, Regime::Hot).unwrap();
    assert_eq!(hot.kernel(), Kernel::CsrEllCopy, "Auto's choice, hot");

    // Row `r`'s entry `k` at column `(r + 53 k) % rows`: 162 diagonals.
    let mut scattered = Vec::with_capacity(a.cols.len());
    for r in 0..rows {
        let start = scattered.len();
        scattered.extend((0..a.offsets[r + 1] - a.offsets[r]).map(|k| (r + 53 * k) % rows));
        scattered[start..].sort_unstable();
    }
    let vals = random_vector::<f32>(&mut rng, scattered.len());
    let b = Csr { nrows: rows, ncols: rows, offsets: a.offsets.clone(), cols: scattered, vals };
    let mut fixture = Fixture::new(&gpu, "the same rows over 162 diagonals", &b, &mut rng);
    let before = fixture.da.device_bytes();
    let Kernel::CsrVector { coop, .. } = gpu.auto_kernel::<f32>(fixture.da.stats(), Regime::Cold) else {
        panic!("the rule gives rows of up to 81 entries a group each")
    };
    let columns = compressed_column_bytes(&b);
    for _ in 0..2 {
        let plan = gpu.plan(&fixture.da, Kernel::Auto).unwrap();
        assert_eq!(plan.kernel(), Kernel::CsrCompressedCopy { coop }, "Auto's choice");
        assert_eq!(fixture.da.device_bytes(), before + columns, "the compressed columns alone");
    }
    fixture.check(&gpu, Kernel::Auto, 3);
}

/// The compressed columns (`Kernel::CsrCompressedCopy`) at every width on the edge cases (among
/// them rows off every multiple of the 32-row segment, empty rows, one huge row, unsorted and
/// repeated columns, and columns too far apart to compress) and on a band (every segment
/// compressed): right, `y` bit for bit the vector kernel's at the same width (the scalar kernel's
/// at one lane), and the columns kept, taking what the host's `CompressedCsr` takes for them.
fn compressed_copy_on_every_matrix<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut matrices = edge_cases::<T>(&mut rng);
    matrices.extend(slice_edges::<T>(&mut rng));
    matrices.push(("a band of 101 diagonals", banded::<T>(&mut rng, 3001, 2990, 50, 1)));
    for (name, a) in &matrices {
        let mut fixture = Fixture::new(&gpu, name, a, &mut rng);
        let before = fixture.da.device_bytes();
        for coop in Kernel::COMPRESSED_COOPS {
            let copy = Kernel::CsrCompressedCopy { coop };
            fixture.check(&gpu, copy, 3);
            let twin = match coop {
                1 => Kernel::CsrScalar { block_size: 128 },
                _ => Kernel::CsrVector { coop, block_size: 128 },
            };
            assert_same_products(&gpu, &fixture, [twin, copy], &mut rng, name);
        }
        let columns = compressed_column_bytes(a);
        assert_eq!(fixture.da.device_bytes(), before + columns, "{name}: the columns, kept");
    }
}

/// Bytes of the columns of `a` in the host's `CompressedCsr`: what the device's compressed columns
/// of `a` take.
fn compressed_column_bytes<T: Scalar>(a: &Csr<T>) -> usize {
    let host = CompressedCsr::<T>::try_from_csr(a.view()).unwrap();
    4 * (host.segments().len() + host.escapes().len()) + 2 * host.deltas().len()
}

#[test]
fn gpu_compressed_copy_on_every_matrix_f32() {
    compressed_copy_on_every_matrix::<f32>("gpu_compressed_copy_on_every_matrix_f32");
}

#[test]
fn gpu_compressed_copy_on_every_matrix_f64() {
    compressed_copy_on_every_matrix::<f64>("gpu_compressed_copy_on_every_matrix_f64");
}

/// The products by `fixture.da` of the two kernels, from one random `y`, are the same bit for bit.
fn assert_same_products<T: Scalar>(
    gpu: &Gpu,
    fixture: &Fixture<T>,
    kernels: [Kernel; 2],
    rng: &mut ChaCha8Rng,
    name: &str,
) {
    let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
    let start = random_vector::<T>(rng, fixture.da.nrows());
    let [a, b] = kernels.map(|kernel| {
        let mut y = gpu.upload_vector(&start).unwrap();
        gpu.spmv_with(kernel, alpha, &fixture.da, &fixture.dx, beta, &mut y).unwrap();
        y.to_host(gpu).unwrap()
    });
    let same = a.iter().zip(&b).all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits());
    assert!(same, "{name}: {:?} and {:?} differ", kernels[0], kernels[1]);
}

/// Auto looks at the compressed columns of a matrix past twice the L2 whose rows the rule gives a
/// warp each (random-1pct's shape: rows of about 200 entries over 20,000 columns), finds that they
/// compress, and takes them at the rule's width (kept, counted in the matrix's bytes; the product
/// right cold and hot, and after new values, which the copy shares); rows of the same lengths over
/// 4 M columns keep the rule's kernel, and no copy is built, then or at a second plan.
#[test]
fn gpu_auto_takes_the_compressed_columns() {
    let test = "gpu_auto_takes_the_compressed_columns";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // f32 CSR bytes of 8 an entry: twice the L2 and a little more.
    let rows = (2 * gpu.l2_bytes() as usize).div_ceil(8 * 190) + 1001;
    let lens: Vec<usize> = (0..rows).map(|_| rng.random_range(180..220)).collect();
    let a = Csr::<f32>::random(&mut rng, rows, 20_000, true, |r| lens[r]);
    let mut fixture = Fixture::new(&gpu, "rows of about 200 over 20,000 columns", &a, &mut rng);
    let before = fixture.da.device_bytes();
    let rule = gpu.auto_kernel::<f32>(fixture.da.stats(), Regime::Cold);
    let Kernel::CsrVector { coop, .. } = rule else { panic!("the rule gives {rule:?}") };
    let copy = Kernel::CsrCompressedCopy { coop };
    assert_eq!(gpu.plan(&fixture.da, Kernel::Auto).unwrap().kernel(), copy, "Auto's choice");
    let columns = 8 * rows.div_ceil(32) + 2 * a.cols.len();
    assert_eq!(compressed_column_bytes(&a), columns, "every segment compressed");
    assert_eq!(fixture.da.device_bytes(), before + columns, "the columns, kept");
    fixture.check(&gpu, Kernel::Auto, 3);
    assert_same_products(&gpu, &fixture, [rule, Kernel::Auto], &mut rng, "Auto's copy");
    assert_eq!(gpu.plan_for(&fixture.da, Kernel::Auto, Regime::Hot).unwrap().kernel(), copy, "hot");
    // The tuner starts from the copy, then times the rule's kernel and the copy's other widths;
    // every product it runs on the way is right.
    let mut tuned = TunedSpmv::new(&gpu, &fixture.da).unwrap();
    let case = &fixture.cases[0];
    while tuned.converged().is_none() && tuned.tuning_products() < 64 {
        fixture.dy.copy_from_host(&gpu, &case.start).unwrap();
        tuned.spmv(case.alpha, &fixture.dx, case.beta, &mut fixture.dy).unwrap();
        gpu.synchronize().unwrap();
        let y = fixture.dy.to_host(&gpu).unwrap();
        case.assert_close(&format!("tuned product ({})", tuned.best()), &y, fixture.tolerance);
    }
    assert!(tuned.converged().is_some(), "not converged after {} products", tuned.tuning_products());
    let widths = [16, 32].map(|coop| Kernel::CsrCompressedCopy { coop });
    assert_eq!(tuned.timed()[..2], [copy, rule], "{:?}", tuned.timed());
    assert!(tuned.timed()[2..].iter().any(|k| widths.contains(k)), "{:?}", tuned.timed());
    let renewed = random_vector::<f32>(&mut rng, a.vals.len());
    fixture.da.update_values(&gpu, &renewed).unwrap();
    let a = Csr { vals: renewed, ..a };
    // The updated matrix, with fresh operands and references for its new values.
    let mut fixture = Fixture { da: fixture.da, ..Fixture::new(&gpu, "after new values", &a, &mut rng) };
    fixture.check(&gpu, Kernel::Auto, 3);

    let b = Csr::<f32>::random(&mut rng, rows, 4_000_000, true, |r| lens[r]);
    let mut fixture = Fixture::new(&gpu, "the same rows over 4 M columns", &b, &mut rng);
    let before = fixture.da.device_bytes();
    let rule = gpu.auto_kernel::<f32>(fixture.da.stats(), Regime::Cold);
    for _ in 0..2 {
        assert_eq!(gpu.plan(&fixture.da, Kernel::Auto).unwrap().kernel(), rule, "Auto's choice");
        assert_eq!(fixture.da.device_bytes(), before, "no copy");
    }
    fixture.check(&gpu, Kernel::Auto, 3);
}

/// The ELL copy of a band of 101 diagonals is DIA with four presence words a row, its `y` ELL's
/// bit for bit.
fn ell_copy_of_a_wide_band<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = banded::<T>(&mut rng, 3001, 2990, 50, 1);
    let mut fixture = Fixture::new(&gpu, test, &a, &mut rng);
    let before = fixture.da.device_bytes();
    fixture.check(&gpu, Kernel::CsrEllCopy, 3);
    let copy_bytes = a.nrows * (101 * size_of::<T>() + 4 * 4) + 101 * 8;
    assert_eq!(fixture.da.device_bytes(), before + copy_bytes, "{test}: the copy is DIA");
    assert_copy_is_ells(&gpu, &fixture, &a, &mut rng, test);
}

#[test]
fn gpu_ell_copy_of_a_wide_band_f32() {
    ell_copy_of_a_wide_band::<f32>("gpu_ell_copy_of_a_wide_band_f32");
}

#[test]
fn gpu_ell_copy_of_a_wide_band_f64() {
    ell_copy_of_a_wide_band::<f64>("gpu_ell_copy_of_a_wide_band_f64");
}

#[test]
fn gpu_ell_copy_forms_f32() {
    ell_copy_forms::<f32>("gpu_ell_copy_forms_f32");
}

#[test]
fn gpu_ell_copy_forms_f64() {
    ell_copy_forms::<f64>("gpu_ell_copy_forms_f64");
}

#[test]
fn gpu_csr_variants_f32() {
    representative_kernels_on_every_matrix::<f32>("gpu_csr_variants_f32");
}

#[test]
fn gpu_csr_variants_f64() {
    representative_kernels_on_every_matrix::<f64>("gpu_csr_variants_f64");
}

/// Every configuration the tuner can reach (long rows split, as the tuner runs them) on matrices with
/// and without long rows, for `beta = 0` (poisoned `y`) and `beta != 0`. The representative set above
/// covers the kernel without the split.
fn whole_tuning_space<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let matrices = [
        ("random rows of 0..64", random_rows::<T>(&mut rng)),
        ("many long rows", many_long_rows(&mut rng)),
        ("one huge row among short ones", {
            Csr::random(&mut rng, 3001, 100_000, true, |r| if r == 1234 { 60_000 } else { 1 + r % 5 })
        }),
    ];
    let space = TunedSpmv::<T>::search_space();
    for (name, a) in &matrices {
        let mut fixture = Fixture::new(&gpu, name, a, &mut rng);
        for &kernel in &space {
            fixture.check(&gpu, kernel, 2);
        }
    }
}

#[test]
fn gpu_tuning_space_f32() {
    whole_tuning_space::<f32>("gpu_tuning_space_f32");
}

#[test]
fn gpu_tuning_space_f64() {
    whole_tuning_space::<f64>("gpu_tuning_space_f64");
}

/// The parametrised kernel with the fixed rule's parameters on dc1 (116,835 rows, mean 6.5).
const DC1_RULE: Kernel = Kernel::CsrParam { coop: 4, repeat: 1, block_size: 128, split_long_rows: true };

/// dc1's two huge rows are split, the split gives the right result product after product (the row
/// counters must return to zero), and a NaN in `x` reaches exactly the rows that read it, through the
/// partial sums too; for the parametrised and the balanced kernel (Auto's choice, dc1 being
/// irregular).
#[test]
fn gpu_long_rows_of_dc1() {
    let test = "gpu_long_rows_of_dc1";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = dc1_like::<f64>(&mut rng);
    let mut fixture = Fixture::new(&gpu, "dc1-like", &a, &mut rng);
    assert_eq!(gpu.plan(&fixture.da, DC1_RULE).unwrap().split_rows(), 2);
    let auto = Kernel::auto(fixture.da.stats(), gpu.sm_count());
    assert_eq!(auto, Kernel::CsrBalanced { block_size: 128 });
    for _ in 0..5 {
        for kernel in [Kernel::Auto, DC1_RULE, Kernel::CsrBalanced { block_size: 64 }] {
            fixture.check(&gpu, kernel, 3);
        }
    }

    let mut x = random_vector::<f64>(&mut rng, a.ncols);
    let view = a.view();
    let nan_col = view.row(1000).0[17];
    x[nan_col] = f64::NAN;
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
    for kernel in [
        Kernel::Auto,
        DC1_RULE,
        Kernel::CsrParam { coop: 1, repeat: 1, block_size: 64, split_long_rows: true },
        Kernel::CsrBalanced { block_size: 512 },
    ] {
        gpu.spmv_with(kernel, 1.0, &fixture.da, &dx, 0.0, &mut dy).unwrap();
        for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
            assert_eq!(v.is_nan(), view.row(r).0.contains(&nan_col), "{kernel:?}, row {r}");
        }
    }
}

/// The balanced kernel product after product on its task boundaries and on a web graph (the long
/// rows' counters must return to zero), and a NaN in `x` at a column of a split row, of a short row
/// and (task shapes) of a row in a task of a few rows reaching exactly the rows that read them.
#[test]
fn gpu_balanced_tasks() {
    let test = "gpu_balanced_tasks";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a, few_rows) in [
        ("task shapes", task_shapes::<f32>(&mut rng), true),
        ("web-graph-like", web_graph_like(&mut rng), false),
    ] {
        let mut fixture = Fixture::new(&gpu, name, &a, &mut rng);
        for _ in 0..4 {
            for block_size in [32, 128] {
                fixture.check(&gpu, Kernel::CsrBalanced { block_size }, 3);
            }
        }

        let view = a.view();
        let row_of_len = |lens: std::ops::RangeInclusive<usize>| {
            (0..a.nrows).find(|&r| lens.contains(&view.row(r).0.len())).expect("such a row")
        };
        let long = row_of_len(Kernel::BALANCED_LONG_ROW as usize..=usize::MAX);
        let short = row_of_len(1..=4);
        let mut nan_cols =
            vec![view.row(long).0[Kernel::BALANCED_LONG_ROW as usize / 2], view.row(short).0[0]];
        if few_rows {
            // The row of 200 entries after an empty one: `task_shapes`' task [0, 200, 0, 50].
            let few = (1..a.nrows)
                .find(|&r| view.row(r).0.len() == 200 && view.row(r - 1).0.is_empty())
                .expect("a task of a few rows");
            nan_cols.push(view.row(few).0[40]);
        }
        let mut x = random_vector::<f32>(&mut rng, a.ncols);
        for &c in &nan_cols {
            x[c] = f32::NAN;
        }
        let dx = gpu.upload_vector(&x).unwrap();
        let mut dy = gpu.zeros::<f32>(a.nrows).unwrap();
        for kernel in [Kernel::CsrBalanced { block_size: 128 }, Kernel::CsrBalanced { block_size: 512 }] {
            gpu.spmv_with(kernel, 1.0, &fixture.da, &dx, 0.0, &mut dy).unwrap();
            for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
                let reads = view.row(r).0.iter().any(|c| nan_cols.contains(c));
                assert_eq!(v.is_nan(), reads, "{name}, {kernel:?}, row {r}");
            }
        }
    }
}

/// Products through the tuner for `regime`, each checked, until it converges (the test synchronises
/// after each product, so every timing is read at the next call), then more with the chosen kernel.
/// In the graph regime the timed graphs write the tuner's own vector: the caller's `y`, started at a
/// different value for each product and read with `beta != 0` in two cases out of three, shows any
/// replay that leaked into it.
fn tuner_until_converged<T: Scalar>(test: &str, regime: Regime) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in
        [("many long rows", many_long_rows::<T>(&mut rng)), ("random rows", random_rows(&mut rng))]
    {
        let mut fixture = Fixture::new(&gpu, name, &a, &mut rng);
        let mut tuned = TunedSpmv::for_regime(&gpu, &fixture.da, regime).unwrap();
        assert_eq!(tuned.regime(), regime);
        assert_eq!(tuned.timed().first(), None);
        let mut after = 0;
        for product in 0..400 {
            let case = &fixture.cases[product % 3];
            fixture.dy.copy_from_host(&gpu, &case.start).unwrap();
            tuned.spmv(case.alpha, &fixture.dx, case.beta, &mut fixture.dy).unwrap();
            let y = fixture.dy.to_host(&gpu).unwrap();
            case.assert_close(
                &format!("{name}, product {product} ({:?})", tuned.best()),
                &y,
                fixture.tolerance,
            );
            if tuned.converged().is_some() {
                after += 1;
                if after == 10 {
                    break;
                }
            }
        }
        let chosen = tuned.converged().unwrap_or_else(|| panic!("{name}: not converged in 400 products"));
        assert!(TunedSpmv::<T>::search_space().contains(&chosen), "{chosen:?}");
        assert!(tuned.timed().len() <= gpu_spmv::tune::MAX_TIMED_PRODUCTS, "{:?}", tuned.timed());
        assert_eq!(tuned.timed()[0], gpu.auto_kernel::<T>(fixture.da.stats(), regime));
        crate::common::say(&format!(
            "{test}, {name}: {chosen:?} after {} products, timed {:?}",
            tuned.tuning_products(),
            tuned.timed()
        ));
    }
}

#[test]
fn gpu_tuner_f32() {
    tuner_until_converged::<f32>("gpu_tuner_f32", Regime::Hot);
}

#[test]
fn gpu_tuner_f64() {
    tuner_until_converged::<f64>("gpu_tuner_f64", Regime::Hot);
}

#[test]
fn gpu_tuner_graph_regime_f32() {
    tuner_until_converged::<f32>("gpu_tuner_graph_regime_f32", Regime::Graph);
}

#[test]
fn gpu_tuner_graph_regime_f64() {
    tuner_until_converged::<f64>("gpu_tuner_graph_regime_f64", Regime::Graph);
}

/// Once converged, a graph-regime tuner's products are captured into a graph and replayed, and the
/// replays compute the product; `plan_for` resolves Auto as the tuner started.
#[test]
fn gpu_tuner_graph_regime_then_captured() {
    let test = "gpu_tuner_graph_regime_then_captured";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = random_rows::<f32>(&mut rng);
    let mut fixture = Fixture::new(&gpu, "random rows", &a, &mut rng);
    let plan = gpu.plan_for(&fixture.da, Kernel::Auto, Regime::Graph).unwrap();
    assert_eq!(plan.kernel(), gpu.auto_kernel::<f32>(fixture.da.stats(), Regime::Graph));
    let mut tuned = TunedSpmv::for_regime(&gpu, &fixture.da, Regime::Graph).unwrap();
    let case = &fixture.cases[0];
    while tuned.converged().is_none() && tuned.tuning_products() < 64 {
        tuned.spmv(case.alpha, &fixture.dx, case.beta, &mut fixture.dy).unwrap();
        gpu.synchronize().unwrap();
    }
    assert!(tuned.converged().is_some(), "not converged after {} products", tuned.tuning_products());
    fixture.dy.copy_from_host(&gpu, &case.start).unwrap();
    let (dx, dy) = (&fixture.dx, &mut fixture.dy);
    let graph =
        gpu.capture(|| (0..3).try_for_each(|_| tuned.spmv(case.alpha, dx, case.beta, &mut *dy))).unwrap();
    graph.launch().unwrap();
    case.assert_close("replayed", &fixture.dy.to_host(&gpu).unwrap(), fixture.tolerance);
}

/// 40 products enqueued through the tuner without waiting in between, each into its own `y`: timings
/// are then read whenever the GPU has passed them, and every product is still right.
#[test]
fn gpu_tuner_without_waiting() {
    let test = "gpu_tuner_without_waiting";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = dc1_like::<f32>(&mut rng);
    let fixture = Fixture::new(&gpu, "dc1-like", &a, &mut rng);
    let mut tuned = TunedSpmv::new(&gpu, &fixture.da).unwrap();
    let case = &fixture.cases[1];
    let mut ys: Vec<DeviceVector<f32>> = (0..40).map(|_| gpu.upload_vector(&case.start).unwrap()).collect();
    for y in &mut ys {
        tuned.spmv(case.alpha, &fixture.dx, case.beta, y).unwrap();
    }
    for (i, y) in ys.iter().enumerate() {
        case.assert_close(&format!("product {i}"), &y.to_host(&gpu).unwrap(), fixture.tolerance);
    }
}

/// A matrix without entries needs no tuning; a matrix of another `Gpu` and bad parameters are refused,
/// leaving `y` as it was.
#[test]
fn gpu_tuner_and_parameter_errors() {
    let test = "gpu_tuner_and_parameter_errors";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let empty = gpu.upload_csr_parts(3, 2, &[0, 0, 0, 0], &[], &[] as &[f32]).unwrap();
    let x = gpu.upload_vector(&[1.0f32, 2.0]).unwrap();
    let mut y = gpu.upload_vector(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut tuned = TunedSpmv::new(&gpu, &empty).unwrap();
    assert_eq!(tuned.converged(), Some(gpu.auto_kernel::<f32>(empty.stats(), Regime::Hot)));
    tuned.spmv(1.0, &x, 2.0, &mut y).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), [2.0, 4.0, 6.0]);

    let other = Gpu::new().unwrap();
    assert!(matches!(TunedSpmv::new(&other, &empty), Err(Error::ForeignBuffer(_))));

    let a = gpu.upload_csr_parts(3, 2, &[0, 1, 2, 2], &[0, 1], &[1.0f32, 1.0]).unwrap();
    for kernel in [
        Kernel::CsrParam { coop: 3, repeat: 1, block_size: 128, split_long_rows: true },
        Kernel::CsrParam { coop: 4, repeat: 0, block_size: 128, split_long_rows: true },
        Kernel::CsrParam { coop: 4, repeat: 1, block_size: 32, split_long_rows: true },
        Kernel::CsrAligned { group: 4, cached_x: true, block_size: 128 },
        Kernel::CsrAligned { group: 16, cached_x: false, block_size: 48 },
    ] {
        let err = gpu.spmv_with(kernel, 1.0, &a, &x, 0.0, &mut y).unwrap_err();
        assert!(matches!(err, Error::InvalidKernel(_)), "{kernel:?}: {err}");
    }
    assert_eq!(y.to_host(&gpu).unwrap(), [2.0, 4.0, 6.0]);
}
