//! Test matrices, fresh random inputs and the comparison against the f64 reference.
#![allow(dead_code)] // each test binary uses a different part

mod skip;

#[allow(unused_imports)] // as above
pub use skip::{alone_on_the_gpus, gpu_or_skip, required_gpus, say, skipped, skipped_without};

use gpu_spmv::reference::{error_scale, max_relative_error, spmv_f64};
use gpu_spmv::{CsrRef, Scalar};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Raw CSR arrays owned by a test.
#[derive(Debug, Clone)]
pub struct Csr<T> {
    pub nrows: usize,
    pub ncols: usize,
    pub offsets: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<T>,
}

impl<T: Scalar> Csr<T> {
    pub fn view(&self) -> CsrRef<'_, T> {
        CsrRef::try_new(self.nrows, self.ncols, &self.offsets, &self.cols, &self.vals)
            .expect("valid test matrix")
    }

    /// A matrix whose row `r` has `lens(r)` entries at random columns (sorted and distinct when
    /// `sorted`, else in random order and possibly repeated), values uniform in [-1, 1).
    pub fn random(
        rng: &mut ChaCha8Rng,
        nrows: usize,
        ncols: usize,
        sorted: bool,
        lens: impl Fn(usize) -> usize,
    ) -> Self {
        let mut offsets = vec![0];
        let mut cols = Vec::new();
        for r in 0..nrows {
            let len = if ncols == 0 { 0 } else { lens(r) };
            let mut row: Vec<usize> = (0..len).map(|_| rng.random_range(0..ncols)).collect();
            if sorted {
                row.sort_unstable();
                row.dedup();
            }
            cols.extend(row);
            offsets.push(cols.len());
        }
        let vals = (0..cols.len()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
        Self { nrows, ncols, offsets, cols, vals }
    }
}

/// A fresh seed, printed so that a failure can be replayed with `SPMV_TEST_SEED`.
pub fn rng(test: &str) -> ChaCha8Rng {
    let seed = std::env::var("SPMV_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("{test}: seed {seed} (replay with SPMV_TEST_SEED={seed})");
    ChaCha8Rng::seed_from_u64(seed)
}

pub fn random_vector<T: Scalar>(rng: &mut ChaCha8Rng, len: usize) -> Vec<T> {
    (0..len).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
}

/// The edge cases every kernel must get right, each with its name. Sizes are not multiples of a
/// warp or a block.
pub fn edge_cases<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Csr<T>)> {
    vec![
        ("no rows", Csr::random(rng, 0, 5, true, |_| 0)),
        ("no columns", Csr::random(rng, 7, 0, true, |_| 0)),
        ("all rows empty", Csr::random(rng, 1000, 300, true, |_| 0)),
        ("one row, one entry", Csr::random(rng, 1, 1, true, |_| 1)),
        (
            "every third row empty",
            Csr::random(rng, 2049, 1500, true, |r| if r % 3 == 0 { 0 } else { 1 + r % 17 }),
        ),
        (
            "one huge row among short ones",
            Csr::random(rng, 3001, 100_000, true, |r| if r == 1234 { 60_000 } else { 1 + r % 5 }),
        ),
        ("wide: 5 x 200000", Csr::random(rng, 5, 200_000, true, |_| 5000)),
        ("tall: 100003 x 3", Csr::random(rng, 100_003, 3, true, |r| r % 4)),
        ("unsorted, repeated columns", Csr::random(rng, 999, 50, false, |r| r % 70)),
        ("uneven random rows", Csr::random(rng, 10_007, 9_001, true, |r| (r * 7919) % 97)),
    ]
}

/// Row counts around SELL's slices of 32 rows (one, one short of a slice, one past one and past two,
/// random rows of 0 to 40 entries), and one long row among 40,000 short ones, which ELL pads every row
/// to while SELL pads its slice alone.
pub fn slice_edges<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Csr<T>)> {
    let short = |rng: &mut ChaCha8Rng, nrows| {
        let lens: Vec<usize> = (0..nrows).map(|_| rng.random_range(0..=40)).collect();
        Csr::random(rng, nrows, 97, true, |r| lens[r])
    };
    vec![
        ("1 row", short(rng, 1)),
        ("31 rows", short(rng, 31)),
        ("33 rows", short(rng, 33)),
        ("65 rows", short(rng, 65)),
        (
            "one long row among 40000 short ones",
            Csr::random(rng, 40_000, 50_000, true, |r| if r == 12_345 { 2_000 } else { 1 + r % 8 }),
        ),
    ]
}

/// The error allowed for a row of `max_len` entries: a few ulps per level of a reduction tree, with
/// margin for sequential sums (which grow like sqrt(len) for random signs).
pub fn tolerance<T: Scalar>(max_len: usize) -> f64 {
    T::EPSILON * 8.0 * (2.0 + (max_len as f64).sqrt())
}

/// One product to check: its scalars, the `y` it starts from, and the f64 reference result with the
/// magnitude its rounding errors scale with, computed once to compare with many kernels' outputs.
pub struct Case<T> {
    pub alpha: T,
    pub beta: T,
    pub start: Vec<T>,
    pub reference: Vec<f64>,
    pub scale: Vec<f64>,
}

impl<T: Scalar> Case<T> {
    /// The product `alpha A x + beta start` (with `beta = 0`, `start` may be poison: it is not read).
    pub fn new(a: &Csr<T>, x: &[T], alpha: T, beta: T, start: Vec<T>) -> Self {
        let view = a.view();
        Case {
            reference: spmv_f64(alpha, view, x, beta, &start).expect("dimensions"),
            scale: error_scale(alpha, view, x, beta, &start).expect("dimensions"),
            alpha,
            beta,
            start,
        }
    }

    /// Asserts that `y` is within `tol` of the reference (relative error, see [`max_relative_error`])
    /// and returns the error.
    pub fn assert_close(&self, what: &str, y: &[T], tol: f64) -> f64 {
        let err = max_relative_error(y, &self.reference, &self.scale);
        let (alpha, beta) = (self.alpha, self.beta);
        assert!(
            err <= tol,
            "{what}, alpha {alpha}, beta {beta}: relative error {err:e} over tolerance {tol:e}"
        );
        err
    }
}

/// Checks `y` (computed as `alpha A x + beta y0`) against the f64 reference and returns the error.
pub fn check<T: Scalar>(what: &str, a: &Csr<T>, alpha: T, x: &[T], beta: T, y0: &[T], y: &[T]) -> f64 {
    Case::new(a, x, alpha, beta, y0.to_vec()).assert_close(what, y, tolerance::<T>(a.view().stats().max))
}

/// A 5-point stencil in f32 of values in [-1, 1) whose CSR bytes are past twice `gpu`'s L2: where
/// Auto takes the ELL copy (`rule::ell_copy_term`). A row holds 5 entries of 8 bytes and an offset
/// of 4; the boundary rows, shorter, are made up by two more grid lines.
pub fn stencil_past_twice_the_l2(gpu: &gpu_spmv::Gpu, rng: &mut ChaCha8Rng) -> Csr<f32> {
    let side = ((2 * gpu.l2_bytes()) as f64 / 44.0).sqrt().ceil() as usize + 2;
    five_point(side, |_, _| rng.random_range(-1.0..1.0))
}

/// The 5-point stencil of an `n` x `n` grid (row `r` holds `r` and its grid neighbours, in column
/// order), entry `(r, c)` of value `value(r, c)`.
pub fn five_point<T: Scalar>(n: usize, mut value: impl FnMut(usize, usize) -> T) -> Csr<T> {
    let (mut offsets, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for r in 0..n * n {
        let (i, j) = (r / n, r % n);
        let neighbours = [
            (i > 0).then(|| r - n),
            (j > 0).then(|| r - 1),
            Some(r),
            (j + 1 < n).then(|| r + 1),
            (i + 1 < n).then(|| r + n),
        ];
        for c in neighbours.into_iter().flatten() {
            cols.push(c);
            vals.push(value(r, c));
        }
        offsets.push(cols.len());
    }
    Csr { nrows: n * n, ncols: n * n, offsets, cols, vals }
}

/// The 7-point stencil of an `n` x `n` x `n` grid (row `r` holds `r` and its grid neighbours, in
/// column order), entry `(r, c)` of value `value(r, c)`: columns up to `n^2` from the row.
pub fn seven_point<T: Scalar>(n: usize, mut value: impl FnMut(usize, usize) -> T) -> Csr<T> {
    let (mut offsets, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for r in 0..n * n * n {
        let (i, j, k) = (r / (n * n), (r / n) % n, r % n);
        let neighbours = [
            (i > 0).then(|| r - n * n),
            (j > 0).then(|| r - n),
            (k > 0).then(|| r - 1),
            Some(r),
            (k + 1 < n).then(|| r + 1),
            (j + 1 < n).then(|| r + n),
            (i + 1 < n).then(|| r + n * n),
        ];
        for c in neighbours.into_iter().flatten() {
            cols.push(c);
            vals.push(value(r, c));
        }
        offsets.push(cols.len());
    }
    Csr { nrows: n * n * n, ncols: n * n * n, offsets, cols, vals }
}

/// A banded matrix: row `r` holds every `step`-th column of `r - half_width ..= r + half_width`
/// (clipped to the columns), values uniform in [-1, 1). Consecutive rows share columns, as the
/// formats that reuse a window of `x` need.
pub fn banded<T: Scalar>(
    rng: &mut ChaCha8Rng,
    nrows: usize,
    ncols: usize,
    half_width: usize,
    step: usize,
) -> Csr<T> {
    let mut offsets = vec![0];
    let mut cols = Vec::new();
    for r in 0..nrows {
        let end = (r + half_width + 1).min(ncols);
        cols.extend((r.saturating_sub(half_width)..end).step_by(step.max(1)));
        offsets.push(cols.len());
    }
    let vals = (0..cols.len()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    Csr { nrows, ncols, offsets, cols, vals }
}

/// The address space a test that feeds the library bad input runs in: 4 GiB, far above what any of
/// its inputs needs, far below what an unchecked size would ask for. An over-allocation then fails
/// that test (the allocation fails, and Rust aborts the test binary) instead of the machine.
pub const MEMORY_CAP_BYTES: u64 = 4 << 30;

/// Caps this process's address space at [`MEMORY_CAP_BYTES`] (`RLIMIT_AS`), once. Only for test
/// binaries that use no GPU: the CUDA driver reserves more address space than the cap.
pub fn cap_memory() {
    static CAP: std::sync::Once = std::sync::Once::new();
    CAP.call_once(|| {
        let limit = libc::rlimit { rlim_cur: MEMORY_CAP_BYTES, rlim_max: MEMORY_CAP_BYTES };
        // SAFETY: `setrlimit` reads the struct it is given, which lives across the call.
        let status = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
        assert_eq!(status, 0, "setrlimit(RLIMIT_AS): {}", std::io::Error::last_os_error());
    });
}

/// `alpha A x + beta y` with each of `kernels` on `a`, for the three cases every CSR kernel must get
/// right (beta 0 on `y` poisoned with NaN, so that an unwritten element shows; both non-zero; alpha
/// 0), each checked against the f64 reference within [`tolerance`].
pub fn check_kernels<T: Scalar>(
    gpu: &gpu_spmv::Gpu,
    name: &str,
    a: &Csr<T>,
    kernels: &[gpu_spmv::Kernel],
    rng: &mut ChaCha8Rng,
) {
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
        for &kernel in kernels {
            dy.copy_from_host(gpu, &case.start).unwrap();
            gpu.spmv_with(kernel, alpha, &da, &dx, beta, &mut dy).unwrap();
            let err = case.assert_close(&format!("{name}, {kernel}"), &dy.to_host(gpu).unwrap(), tol);
            eprintln!("{name}, {kernel}, alpha {alpha}, beta {beta}: relative error {err:e}");
        }
    }
}

/// What a deterministic kernel promises on `a`: every product of `kernel`'s plan gives the same
/// bits, and a NaN in `x` at a column of the longest row and of a short row (1 to 4 entries) reaches
/// exactly the rows that read it; the plan replayed in a CUDA graph gives the same bits too.
pub fn check_deterministic_and_nan(
    gpu: &gpu_spmv::Gpu,
    name: &str,
    a: &Csr<f64>,
    kernel: gpu_spmv::Kernel,
    rng: &mut ChaCha8Rng,
) {
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let plan = gpu.plan(&da, kernel).unwrap();
    let mut x = random_vector::<f64>(rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
    plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
    let first = dy.to_host(gpu).unwrap();
    let same = |y: &[f64]| first.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
    for run in 1..4 {
        plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
        assert!(same(&dy.to_host(gpu).unwrap()), "{name}, {kernel}: product {run} differs from the first");
    }
    dy.copy_from_host(gpu, &vec![f64::NAN; a.nrows]).unwrap();
    let graph = gpu.capture(|| plan.spmv(1.0, &dx, 0.0, &mut dy)).unwrap();
    graph.launch().unwrap();
    assert!(same(&dy.to_host(gpu).unwrap()), "{name}, {kernel}: the graph's product differs");

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
    for (r, v) in dy.to_host(gpu).unwrap().iter().enumerate() {
        let reads = view.row(r).0.iter().any(|c| nan_cols.contains(c));
        assert_eq!(v.is_nan(), reads, "{name}, {kernel}, row {r}");
    }
}

/// `|b - A x| / |b|` in f64: a solve's true residual, whatever its recurrence says.
pub fn true_residual<T: Scalar>(a: CsrRef<'_, T>, b: &[T], x: &[T]) -> f64 {
    let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let (mut r, mut bb) = (0.0, 0.0);
    for (row, &bi) in b.iter().enumerate() {
        let (cols, vals) = a.row(row);
        let ax: f64 = cols.iter().zip(vals).map(|(&c, v)| v.to_f64() * x64[c]).sum();
        r += (bi.to_f64() - ax).powi(2);
        bb += bi.to_f64().powi(2);
    }
    (r / bb).sqrt()
}

/// The recurrence a GPU solver and its CPU oracle share, for [`assert_counts_agree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recurrence {
    Cg,
    Bicgstab,
    Gmres,
}

/// Asserts that a GPU solve and its CPU oracle both converged, their iteration counts within what
/// the summation orders allow: the GPU sums its dot products in `T` by a fixed tree, the oracle in
/// f64, and a long recurrence amplifies the difference. CG drifts by a few iterations in f64 and up
/// to 3% in f32 (measured on the H100 over random right-hand sides); GMRES, which minimises the
/// residual, little; BiCGSTAB, whose residual is far from monotone, most: 98 against 103
/// iterations in f64 on the H100 at Pe 0 without a preconditioner, and 108 against 89 for the
/// right-hand side of seed 16316112855569821176, both converged, hence a quarter.
pub fn assert_counts_agree<T: Scalar>(
    recurrence: Recurrence,
    gpu: &gpu_spmv::solve::Outcome,
    cpu: &gpu_spmv::solve::Outcome,
    what: &str,
) {
    use gpu_spmv::solve::Stop;
    assert_eq!(cpu.stop, Stop::Converged, "{what}: CPU {cpu:?}");
    assert_eq!(gpu.stop, Stop::Converged, "{what}: GPU {gpu:?}");
    let single = T::EPSILON > 1e-10;
    let slack = match recurrence {
        Recurrence::Cg => 2 + cpu.iterations / if single { 20 } else { 50 },
        Recurrence::Bicgstab => 3 + cpu.iterations / 4,
        Recurrence::Gmres => 2 + cpu.iterations / if single { 10 } else { 20 },
    };
    assert!(gpu.iterations.abs_diff(cpu.iterations) <= slack, "{what}: GPU {gpu:?}, CPU {cpu:?}");
}

/// The CPU oracle's solve of `A x = b` from `x = 0` by BiCGSTAB, or by GMRES restarting every
/// `restart` steps, with the caller's preconditioner `m`.
pub fn oracle_with_preconditioner(
    a: CsrRef<'_, f64>,
    b: &[f64],
    options: &gpu_spmv::solve::SolverOptions,
    restart: Option<usize>,
    m: &dyn gpu_spmv::reference::CpuPrecondition<f64>,
) -> gpu_spmv::solve::Outcome {
    use gpu_spmv::reference::{bicgstab::bicgstab_with_preconditioner, gmres::gmres_with_preconditioner};
    let mut x = vec![0.0; b.len()];
    match restart {
        Some(m_steps) => gmres_with_preconditioner(&a, b, &mut x, options, m_steps, m),
        None => bicgstab_with_preconditioner(&a, b, &mut x, options, m),
    }
    .unwrap()
}

/// A nonsymmetric, diagonally dominant matrix of order `n`, rows of random columns in random order
/// (some repeated) and the diagonal last, so that ILU(0) exists and its pattern is irregular (its
/// first level wide: the rows whose columns all lie right of the diagonal).
pub fn dominant_irregular<T: Scalar>(rng: &mut ChaCha8Rng, n: usize) -> (Vec<usize>, Vec<usize>, Vec<T>) {
    let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
    for r in 0..n {
        let len = rng.random_range(0..9);
        let mut sum = 0.0;
        for _ in 0..len {
            let v: f64 = rng.random_range(-1.0..1.0);
            cols.push(rng.random_range(0..n));
            values.push(T::from_f64(v));
            sum += v.abs();
        }
        cols.push(r);
        values.push(T::from_f64(sum + 1.0));
        offsets.push(cols.len());
    }
    (offsets, cols, values)
}
