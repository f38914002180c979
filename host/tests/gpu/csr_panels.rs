//! The column-panel CSR product (`Kernel::CsrPanels`) against the f64 reference, at every panel
//! size the GPU grants, on the shapes its panels and row groups meet: few wide rows over a million
//! columns (what it is for), column counts one below, at and one above a panel and past three
//! panels (`P - 1`, `P`, `P + 1`, `3P + 7` for the panel's `P` columns), rows that all lie inside one
//! panel, runs of empty rows, one huge row (alone, and among many short rows), rows of tenfold
//! different lengths side by side, enough rows that the blocks' ranges start and end inside panels
//! and deal each panel's rows over several rounds, rectangular matrices, sorted rows with repeated
//! columns, and the shared edge cases (`alpha`/`beta` cases and NaN-poisoned `y` in `check_kernels`).
//! Products of a plan give the same bits, also in a CUDA graph, and so do plans of every block size
//! at one panel size (whose grids and ranges differ); a NaN or an infinity in `x` reaches
//! exactly the rows that read it; rows whose columns decrease are summed whole by the combine, and
//! right. Without a GPU the tests print why and pass (see `common::gpu_or_skip`).

use crate::common::{
    Case, Csr, check_deterministic_and_nan, check_kernels, edge_cases, gpu_or_skip, random_vector, rng,
    tolerance,
};
use gpu_spmv::rule::panels_term;
use gpu_spmv::tune::TunedSpmv;
use gpu_spmv::{Error, Gpu, Kernel, Regime, Scalar};
use kernels_gpu::abi::csr_panel_cols;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Block sizes each panel size is tried with: the bench's 512, three warps (a block whose groups
/// do not divide a power of two of rows), and the largest, 1024 (fewer blocks, so longer ranges).
const BLOCK_SIZES: [u32; 3] = [512, 96, 1024];

/// The panel sizes this GPU grants a block, each at every block size of [`BLOCK_SIZES`] that fits
/// an SM with it in both precisions, with a note for each it refuses.
fn panel_kernels(gpu: &Gpu, test: &str) -> Vec<Kernel> {
    let mut kernels = Vec::new();
    for panel_kib in Kernel::PANEL_KIB {
        for block_size in BLOCK_SIZES {
            let kernel = Kernel::CsrPanels { panel_kib, block_size };
            match (plan_f32(gpu, kernel), plan_f64(gpu, kernel)) {
                (Ok(()), Ok(())) => kernels.push(kernel),
                (Err(Error::InvalidKernel(why)), _) | (_, Err(Error::InvalidKernel(why))) => {
                    eprintln!("{test}: {} refuses {kernel}: {why}", gpu.name());
                }
                (Err(e), _) | (_, Err(e)) => panic!("{test}: {kernel}: {e}"),
            }
        }
    }
    assert!(!kernels.is_empty(), "48 KiB panels need no opt-in and run on every GPU");
    kernels
}

fn plan_f32(gpu: &Gpu, kernel: Kernel) -> Result<(), Error> {
    let a = gpu.upload_csr_parts::<f32>(1, 1, &[0, 1], &[0], &[1.0])?;
    gpu.plan(&a, kernel).map(drop)
}

fn plan_f64(gpu: &Gpu, kernel: Kernel) -> Result<(), Error> {
    let a = gpu.upload_csr_parts::<f64>(1, 1, &[0, 1], &[0], &[1.0])?;
    gpu.plan(&a, kernel).map(drop)
}

/// `a` with each row's entries sorted by column, repeated columns kept (non-decreasing).
fn sorted_rows<T: Scalar>(mut a: Csr<T>) -> Csr<T> {
    for r in 0..a.nrows {
        let range = a.offsets[r]..a.offsets[r + 1];
        let mut row: Vec<(usize, T)> =
            a.cols[range.clone()].iter().copied().zip(a.vals[range.clone()].iter().copied()).collect();
        row.sort_by_key(|&(c, _)| c);
        for (k, (c, v)) in range.zip(row) {
            (a.cols[k], a.vals[k]) = (c, v);
        }
    }
    a
}

/// Rows whose columns all lie in one panel of `p` columns (panel `r % panels` for row `r`, the last
/// one shorter), of 0 to 200 entries.
fn rows_in_one_panel<T: Scalar>(rng: &mut ChaCha8Rng, p: usize) -> Csr<T> {
    let (nrows, ncols) = (2_003, 4 * p + 11);
    let panels = ncols.div_ceil(p);
    let (mut offsets, mut cols) = (vec![0], Vec::new());
    for r in 0..nrows {
        let first = (r % panels) * p;
        let width = p.min(ncols - first);
        let mut row: Vec<usize> = (0..r % 201).map(|_| first + rng.random_range(0..width)).collect();
        row.sort_unstable();
        row.dedup();
        cols.extend(row);
        offsets.push(cols.len());
    }
    let vals = random_vector(rng, cols.len());
    Csr { nrows, ncols, offsets, cols, vals }
}

fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut all: Vec<(String, Csr<T>)> = vec![
        ("short-wide".into(), Csr::random(rng, 301, 1_090_000, true, |r| 2_400 + (r * 37) % 400)),
        (
            "short-wide, every third row empty".into(),
            Csr::random(rng, 1_001, 700_001, true, |r| if r % 3 == 0 { 0 } else { 500 + r % 1_500 }),
        ),
        ("one huge row".into(), Csr::random(rng, 3, 1_000_003, true, |r| if r == 1 { 700_000 } else { r })),
        ("tall: 50021 x 20011".into(), Csr::random(rng, 50_021, 20_011, true, |r| r % 9)),
        ("sorted, repeated columns".into(), sorted_rows(Csr::random(rng, 999, 50, false, |r| r % 70))),
        // Blocks' ranges of (panel, row group) items that start and end inside a panel's rows, each
        // panel's rows dealt over several rounds of 32 rows a warp, and the warps' last round cut
        // short: many rows, a fifth of them empty, of unequal lengths, over 17 f32 panels.
        (
            "20011 x 200003, several rounds a panel".into(),
            Csr::random(rng, 20_011, 200_003, true, |r| if r % 5 == 0 { 0 } else { 20 + (r * 7) % 180 }),
        ),
        // Row lengths that differ tenfold in a repeating pattern, as short-wide's log-normal rows do:
        // a warp's groups hold segments of 0 to a few hundred entries in the same round.
        (
            "unequal wide rows".into(),
            Csr::random(rng, 1_537, 400_009, true, |r| [260, 26, 2_600, 0, 9, 1_300, 1][r % 7]),
        ),
        // One row of most of the entries among many short ones: its segment in every panel is long,
        // the others' are mostly empty.
        (
            "huge row among short ones".into(),
            Csr::random(rng, 5_001, 800_000, true, |r| if r == 2_500 { 700_000 } else { 1 + r % 4 }),
        ),
    ];
    // Column counts around each panel width of this precision.
    let widths: Vec<usize> =
        Kernel::PANEL_KIB.iter().map(|&kib| csr_panel_cols(kib, size_of::<T>() as u32) as usize).collect();
    for &p in &widths {
        for ncols in [p - 1, p, p + 1, 3 * p + 7] {
            let a = Csr::random(rng, 517, ncols, true, |r| (r * 7919) % 300);
            all.push((format!("517 x {ncols} (panel {p})"), a));
        }
        all.push((format!("rows inside one panel of {p}"), rows_in_one_panel(rng, p)));
    }
    // Every edge case, unsorted rows among them: summed whole by the combine.
    all.extend(edge_cases(rng).into_iter().map(|(name, a)| (name.to_owned(), a)));
    all
}

fn panel_products<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let kernels = panel_kernels(&gpu, test);
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        check_kernels(&gpu, &name, &a, &kernels, &mut rng);
    }
}

#[test]
fn gpu_csr_panels_f32() {
    panel_products::<f32>("gpu_csr_panels_f32");
}

#[test]
fn gpu_csr_panels_f64() {
    panel_products::<f64>("gpu_csr_panels_f64");
}

/// Every product of a plan gives the same bits, also replayed in a graph; a NaN in `x` reaches
/// exactly the rows that read it (`check_deterministic_and_nan`), at the smallest and largest panel
/// the GPU grants.
#[test]
fn gpu_csr_panels_is_deterministic_and_keeps_nan_in_its_rows() {
    let test = "gpu_csr_panels_is_deterministic";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let kernels = panel_kernels(&gpu, test);
    let mut rng = rng(test);
    let matrices = [
        ("short-wide", Csr::<f64>::random(&mut rng, 301, 1_090_000, true, |r| 2_400 + (r * 37) % 400)),
        (
            "huge row among short ones",
            Csr::random(&mut rng, 5_001, 800_000, true, |r| if r == 2_500 { 700_000 } else { 1 + r % 4 }),
        ),
    ];
    for (name, a) in &matrices {
        for kernel in [kernels[0], kernels[kernels.len() - 1]] {
            check_deterministic_and_nan(&gpu, name, a, kernel, &mut rng);
        }
    }
}

/// A (row, panel) partial sum is a group's alone, its lanes' order set by the panel's mean segment
/// and not by the block, the grid or the blocks' ranges: the products of every block size at one
/// panel size give the same bits, on matrices whose ranges cross panels differently at each size.
#[test]
fn gpu_csr_panels_gives_the_same_bits_at_every_block_size() {
    let test = "gpu_csr_panels_gives_the_same_bits_at_every_block_size";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let kernels = panel_kernels(&gpu, test);
    let mut rng = rng(test);
    let matrices = [
        ("short-wide", Csr::<f64>::random(&mut rng, 301, 1_090_000, true, |r| 2_400 + (r * 37) % 400)),
        ("20011 x 200003", Csr::random(&mut rng, 20_011, 200_003, true, |r| (r * 13) % 200)),
    ];
    for (name, a) in &matrices {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        let dx = gpu.upload_vector(&random_vector::<f64>(&mut rng, a.ncols)).unwrap();
        let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
        for panel_kib in Kernel::PANEL_KIB {
            let mut first: Option<Vec<f64>> = None;
            for kernel in kernels
                .iter()
                .copied()
                .filter(|k| matches!(k, Kernel::CsrPanels { panel_kib: kib, .. } if *kib == panel_kib))
            {
                dy.copy_from_host(&gpu, &vec![f64::NAN; a.nrows]).unwrap();
                gpu.spmv_with(kernel, 1.0, &da, &dx, 0.0, &mut dy).unwrap();
                let y = dy.to_host(&gpu).unwrap();
                match &first {
                    None => first = Some(y),
                    Some(f) => assert!(
                        f.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
                        "{name}, {kernel}: not the bits of the first block size"
                    ),
                }
            }
        }
    }
}

/// An infinity in `x` makes exactly the rows that read its column infinite, with the sign of their
/// entry there (each column appears at most once in a row of this matrix).
#[test]
fn gpu_csr_panels_keeps_infinity_in_its_rows() {
    let test = "gpu_csr_panels_keeps_infinity_in_its_rows";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let kernels = panel_kernels(&gpu, test);
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 2_000, 300_007, true, |r| 100 + r % 400);
    let mut x = random_vector::<f32>(&mut rng, a.ncols);
    let inf_col = a.cols[a.offsets[1_000]];
    x[inf_col] = f32::INFINITY;
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.zeros::<f32>(a.nrows).unwrap();
    for kernel in kernels {
        dy.copy_from_host(&gpu, &vec![f32::NAN; a.nrows]).unwrap();
        gpu.spmv_with(kernel, 1.0, &da, &dx, 0.0, &mut dy).unwrap();
        for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
            let (cols, vals) = a.view().row(r);
            match cols.iter().position(|&c| c == inf_col) {
                Some(k) => assert_eq!(*v, f32::INFINITY * vals[k].signum(), "{kernel}, row {r}"),
                None => assert!(v.is_finite(), "{kernel}, row {r}: {v}"),
            }
        }
    }
}

/// Rows whose columns decrease (swapped entries, and rows in random order with repeated columns)
/// among sorted ones: the plan takes them without asking the device, gives them no panel segments,
/// and the combine sums them whole, so the products match the reference at every panel size, with
/// the same bits on every product; panel sizes outside the compiled list are refused by the
/// strategy's check.
#[test]
fn gpu_csr_panels_sums_unsorted_rows_whole() {
    let test = "gpu_csr_panels_sums_unsorted_rows_whole";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let kernels = panel_kernels(&gpu, test);
    let mut rng = rng(test);
    let mut a = Csr::<f64>::random(&mut rng, 4_000, 300_000, true, |r| 20 + r % 300);
    // Rows 2,500 and 3,100 swap two entries; rows 3,200 to 3,299 are replaced by unsorted rows with
    // repeated columns (a row of the same columns in random order).
    for r in [3_100, 2_500] {
        a.cols.swap(a.offsets[r] + 3, a.offsets[r] + 11);
    }
    for r in 3_200..3_300 {
        let range = a.offsets[r]..a.offsets[r + 1];
        let len = range.len();
        for k in range {
            a.cols[k] = rng.random_range(0..a.ncols.min(len.max(1) * 1_000));
        }
    }
    check_kernels(&gpu, "unsorted rows among sorted ones", &a, &kernels, &mut rng);
    for kernel in [kernels[0], kernels[kernels.len() - 1]] {
        check_deterministic_and_nan(&gpu, "unsorted rows among sorted ones", &a, kernel, &mut rng);
    }
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let bad = gpu.plan(&da, Kernel::CsrPanels { panel_kib: 40, block_size: 512 });
    assert!(matches!(bad, Err(Error::InvalidKernel(_))), "{bad:?}");
}

/// Auto's column-panel term on a matrix it takes (few, long rows over a wide `x`, entries worth two
/// panels an SM): Auto's plans run the column panels in every regime and give the reference's
/// products; the tuner starts there, tries Auto's choice without the term, and every product it
/// runs on the way is right; the same matrix with rows whose columns decrease keeps the panels,
/// for a plan and for the tuner, and its products are right too.
#[test]
fn gpu_auto_takes_the_panels_for_few_long_rows_over_a_wide_x() {
    let test = "gpu_auto_takes_the_panels_for_few_long_rows_over_a_wide_x";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // 1,800 rows of 3,000 to 6,000 entries over 1.09 M columns: 8.1 M entries, about 51 a row in each
    // of the 89 f64 panels of 96 KiB (Auto's), an `x` of 8.7 MB.
    let a = Csr::<f64>::random(&mut rng, 1_800, 1_090_000, true, |r| 3_000 + (r * 37) % 3_000);
    let stats = a.view().stats();
    let Some(panels) = panels_term(&stats, 8, gpu.target()) else {
        eprintln!("{test}: the panel term does not take this matrix on {} ({:?})", gpu.name(), gpu.target());
        return;
    };
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    for regime in [Regime::Cold, Regime::Hot, Regime::Graph] {
        assert_eq!(gpu.auto_kernel::<f64>(da.stats(), regime), panels, "{regime:?}");
        assert_eq!(gpu.plan_for(&da, Kernel::Auto, regime).unwrap().kernel(), panels, "{regime:?}");
    }
    assert_eq!(gpu.plan(&da, Kernel::Auto).unwrap().kernel(), panels);
    check_kernels(&gpu, "few long rows, Auto", &a, &[Kernel::Auto], &mut rng);
    tune_and_check(&gpu, "few long rows", &a, panels, &mut rng);

    // Rows 700 and 1,500 swap two entries: Auto keeps the panels, which sum those rows whole.
    let mut unsorted = a;
    for r in [1_500, 700] {
        unsorted.cols.swap(unsorted.offsets[r] + 3, unsorted.offsets[r] + 11);
    }
    let du = gpu.upload_csr_ref(unsorted.view()).unwrap();
    assert_eq!(gpu.plan(&du, Kernel::Auto).unwrap().kernel(), panels);
    check_kernels(&gpu, "few long rows, two unsorted, Auto", &unsorted, &[Kernel::Auto], &mut rng);
    tune_and_check(&gpu, "few long rows, two unsorted", &unsorted, panels, &mut rng);
}

/// Runs a tuner on `a` until it has converged (and 5 products more), each product checked against
/// the f64 reference (`y` poisoned before each, `beta = 0`), its first timed kernel `start`.
fn tune_and_check(gpu: &Gpu, name: &str, a: &Csr<f64>, start: Kernel, rng: &mut ChaCha8Rng) {
    let x = random_vector::<f64>(rng, a.ncols);
    let case = Case::new(a, &x, 1.0, 0.0, vec![f64::NAN; a.nrows]);
    let tol = tolerance::<f64>(a.view().stats().max);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
    let mut tuned = TunedSpmv::new(gpu, &da).unwrap();
    let mut after = 0;
    for product in 0..100 {
        dy.copy_from_host(gpu, &case.start).unwrap();
        tuned.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        gpu.synchronize().unwrap();
        case.assert_close(
            &format!("{name}, tuned product {product} ({})", tuned.best()),
            &dy.to_host(gpu).unwrap(),
            tol,
        );
        if tuned.converged().is_some() {
            after += 1;
            if after == 5 {
                break;
            }
        }
    }
    let chosen = tuned.converged().unwrap_or_else(|| panic!("{name}: not converged in 100 products"));
    assert_eq!(tuned.timed().first(), Some(&start), "{name}");
    assert!(tuned.timed().len() <= gpu_spmv::tune::MAX_TIMED_PRODUCTS, "{name}: {:?}", tuned.timed());
    eprintln!(
        "{name}: tuned to {chosen} after {} products, timed {:?}",
        tuned.tuning_products(),
        tuned.timed()
    );
}
