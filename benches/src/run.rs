//! Measuring one matrix in one precision: every variant on the same device buffers, each checked
//! against the f64 CPU result.

use crate::cusparse::{self, Algorithm};
use crate::formats::{convert, formats};
use crate::measure::{Timing, host_enqueue_us, time_cpu, time_gpu};
use crate::precision::Precision;
use crate::regimes::{self, GRAPH_PRODUCTS, Regimes};
use crate::reordering::{Reordering, bench_reordering};
use crate::staging::trials::{PipelineTrial, pipeline_trials};
use crate::staging::{StageCeilings, UploadSteps, stage_ceilings, upload_steps};
use crate::variants::{Variant, panel_kernels, without_split};
use anyhow::{Context, Result};
use gpu_spmv::formats::brc_model_b2;
use gpu_spmv::reference::{self, CpuKernel, error_scale, max_relative_error, spmv_f64};
use gpu_spmv::tune::TunedSpmv;
use gpu_spmv::{CsrRef, DeviceCsr, DeviceVector, Gpu, HotLaunch, Kernel, Regime, RowStats, Scalar};
use nalgebra_sparse::CsrMatrix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One measured variant on one matrix in one precision.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub matrix: String,
    pub precision: Precision,
    pub variant: String,
    pub family: String,
    /// `auto` only: the kernel Auto resolved to on this matrix and GPU for cold products (its key),
    /// so that a report can say which choice Auto's times measure. Absent in runs before it was
    /// recorded.
    #[serde(default)]
    pub resolved: Option<String>,
    /// `auto` only: the kernels of the plans `Gpu::plan_for` makes for the hot and the graph regime,
    /// whose times the record's `hot` and `graph` are (`gpu_spmv::rule::rule_for`: the hot and graph
    /// rules widen the rows of a matrix the L2 holds). Absent in runs before the hot rule, where they
    /// were the cold kernel.
    #[serde(default)]
    pub resolved_hot: Option<String>,
    #[serde(default)]
    pub resolved_graph: Option<String>,
    /// Kernels of ours timed hot: how the hot plan launched its products once it had timed both
    /// ways (`gpu_spmv::HotLaunch`, `Replay` or `Direct`). Absent in runs before the plan chose.
    #[serde(default)]
    pub hot_launch: Option<String>,
    pub timing: Timing,
    /// 2 nnz floating-point operations per product.
    #[serde(deserialize_with = "crate::report::nan_if_null")]
    pub gflops: f64,
    /// Bytes of one pass over the CSR arrays plus x and y, over the median time.
    #[serde(deserialize_with = "crate::report::nan_if_null")]
    pub gbps: f64,
    /// The bandwidth floor's time (the same bytes at the streaming-read bandwidth) over the median
    /// time: 1.0 means as fast as a kernel that only reads.
    #[serde(deserialize_with = "crate::report::nan_if_null")]
    pub floor_fraction: f64,
    /// The better cuSPARSE CSR algorithm's median time over this one's (cold regime).
    #[serde(deserialize_with = "crate::report::nan_if_null")]
    pub speedup_vs_cusparse: f64,
    /// The hot regime ([`crate::regimes`]): the same operands back to back. Measured for `auto`, the
    /// fastest kernel of ours (cold) and cuSPARSE's CSR algorithms, and with `--all-graph` for every
    /// kernel of ours; absent for the other variants and in runs from before the regimes.
    #[serde(default)]
    pub hot: Option<Timing>,
    /// The graph regime: products captured in a CUDA graph and replayed, per product.
    #[serde(default)]
    pub graph: Option<Timing>,
    /// The better cuSPARSE CSR algorithm's hot time over this one's.
    #[serde(default = "crate::report::nan", deserialize_with = "crate::report::nan_if_null")]
    pub speedup_vs_cusparse_hot: f64,
    /// The better cuSPARSE CSR algorithm's graph time over this one's.
    #[serde(default = "crate::report::nan", deserialize_with = "crate::report::nan_if_null")]
    pub speedup_vs_cusparse_graph: f64,
    /// Host time of one enqueue, µs: `Plan::spmv` for ours, one `cusparseSpMV` call for cuSPARSE.
    #[serde(default)]
    pub host_enqueue_us: Option<f64>,
    /// `auto` only: host time of one one-shot `Gpu::spmv`, µs (a plan made and used per call).
    #[serde(default)]
    pub host_enqueue_one_shot_us: Option<f64>,
    /// max over rows of |y - y_ref| / (|alpha| sum |a_ij x_j|), y_ref computed in f64.
    #[serde(deserialize_with = "crate::report::nan_if_null")]
    pub max_rel_error: f64,
    /// For formats beyond CSR: the conversion from CSR on the CPU, in milliseconds.
    pub conversion_ms: Option<f64>,
}

/// A matrix's shape and row statistics, as reported.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixInfo {
    pub name: String,
    pub imitates: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub mean: f64,
    pub std_dev: f64,
    pub max: usize,
    /// Copies rotated between launches so that a matrix that fits in L2 is not timed from L2.
    pub copies_f32: usize,
    pub copies_f64: usize,
    /// The B2 (block width) the BRC model picks for this matrix.
    pub brc_model_b2: usize,
}

impl MatrixInfo {
    pub fn new(name: &str, imitates: &str, stats: &RowStats, sm_count: u32) -> Self {
        Self {
            name: name.to_owned(),
            imitates: imitates.to_owned(),
            rows: stats.rows,
            cols: stats.cols,
            nnz: stats.nnz,
            mean: stats.mean,
            std_dev: stats.std_dev,
            max: stats.max,
            copies_f32: 1,
            copies_f64: 1,
            brc_model_b2: brc_model_b2(stats, sm_count),
        }
    }
}

/// What uploading a CSR matrix costs (the first copy of the operands, timed to completion): the
/// arrays alone, as `upload_csr` does, and with the data of every strategy that cuts rows built too
/// (the parametrised kernel's long-row split, the balanced kernel's row tasks), as every upload did
/// before strategies built their own data when first planned.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Upload {
    pub matrix: String,
    pub precision: Precision,
    pub csr_ms: f64,
    pub csr_bytes: usize,
    pub with_strategies_ms: f64,
    pub with_strategies_bytes: usize,
    /// The same arrays from `u32` indices (`Gpu::upload_csr_u32`: checked as copied, nothing to
    /// narrow), timed to completion; absent from runs before it was measured.
    #[serde(default)]
    pub from_u32_ms: Option<f64>,
    /// The same `u32` arrays checked in parallel, then copied straight from the caller's memory
    /// pinned in place for the copy (the function `pinned_in_place_ms`): what issue 27's untried
    /// route would cost, measured beside the library's staged upload; absent from runs before it
    /// was.
    #[serde(default)]
    pub pinned_in_place_ms: Option<f64>,
    /// The same `u32` arrays held by the caller in page-locked memory, uploaded by
    /// `Gpu::upload_csr_pinned` (copied straight from it, checked on the device), timed to
    /// completion; absent from runs before it was measured.
    #[serde(default)]
    pub from_pinned_ms: Option<f64>,
    /// The ceilings of the upload from `u32`, measured on its bytes in the same run: the host's
    /// copy and pass into pinned stages alone, and the link alone from them; absent from runs
    /// before they were measured.
    #[serde(default)]
    pub stage_ceilings: Option<StageCeilings>,
    /// The steps of the upload from `u32`, each alone on its arrays in the same run (allocation,
    /// the offsets' host work, each array's staged copy): what its time goes to; absent from runs
    /// before they were measured.
    #[serde(default)]
    pub steps: Option<UploadSteps>,
    /// The staged pipeline timed chunk by chunk on the columns and values, in several
    /// configurations (`spmv_bench::staging::trials`); empty in runs before it was measured.
    #[serde(default)]
    pub pipeline_trials: Vec<PipelineTrial>,
    /// Auto's first plan of the freshly uploaded matrix; absent from runs before it was measured.
    #[serde(default)]
    pub auto_plan: Option<AutoPlan>,
}

/// What [`Kernel::Auto`]'s first plan of a matrix costs, timed to completion: the rule, and where
/// Auto looks for a copy (DIA, compressed columns) or takes one (ELL), the look and the copy's
/// build, which later plans of the matrix reuse.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AutoPlan {
    /// The kernel Auto took (its key).
    pub kernel: String,
    pub ms: f64,
    /// The bytes the plan added to the matrix's (a copy, a strategy's data).
    pub bytes: usize,
}

/// Auto's first plan of `a`, a matrix just uploaded, nothing planned for it yet (see [`AutoPlan`]).
fn auto_plan_cost<T: Scalar>(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<AutoPlan> {
    gpu.synchronize()?;
    let before = a.device_bytes();
    let start = std::time::Instant::now();
    let kernel = gpu.plan(a, Kernel::Auto)?.kernel();
    gpu.synchronize()?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(AutoPlan { kernel: kernel.to_string(), ms, bytes: a.device_bytes() - before })
}

/// BRC's B2 tuner (`Gpu::upload_brc_tuned`) on one matrix and precision: the widths it timed and
/// the one it chose, with its own wall time (conversions, uploads and timed products).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BrcTuned {
    pub matrix: String,
    pub precision: Precision,
    pub model_b2: usize,
    pub b2: usize,
    /// Each B2 timed, with its median product time in milliseconds, in the order timed.
    pub trials: Vec<(usize, f64)>,
    pub tuning_ms: f64,
}

/// Uploads `view` twice, timing the arrays alone (then Auto's first plan of that upload) and then
/// with every strategy's data (see [`Upload`]).
fn upload_cost<T: Scalar>(gpu: &Gpu, name: &str, view: CsrRef<'_, T>) -> Result<Upload> {
    let timed = |with_strategies: bool| -> Result<(f64, DeviceCsr<T>)> {
        gpu.synchronize()?;
        let start = std::time::Instant::now();
        let a = gpu.upload_csr_ref(view)?;
        if with_strategies {
            let param = Kernel::CsrParam { coop: 1, repeat: 1, block_size: 128, split_long_rows: true };
            gpu.plan(&a, param)?;
            gpu.plan(&a, Kernel::CsrBalanced { block_size: 128 })?;
            gpu.plan(&a, Kernel::CsrMerge { block_size: 128 })?;
            if gpu.has_stream_engine() {
                gpu.plan(&a, Kernel::CsrStream { stages: 4 })?;
            }
        }
        gpu.synchronize()?;
        Ok((start.elapsed().as_secs_f64() * 1e3, a))
    };
    let (csr_ms, plain) = timed(false)?;
    let csr_bytes = plain.device_bytes();
    let auto_plan = Some(auto_plan_cost(gpu, &plain)?);
    drop(plain);
    let (with_strategies_ms, with_strategies) = timed(true)?;
    let with_strategies_bytes = with_strategies.device_bytes();
    drop(with_strategies);
    // Indices narrowed before the clock starts: the caller's arrays are `u32` already.
    let narrowed =
        |v: &[usize]| v.iter().map(|&i| u32::try_from(i)).collect::<std::result::Result<Vec<_>, _>>();
    let (offsets, cols) = (narrowed(view.row_offsets())?, narrowed(view.col_indices())?);
    gpu.synchronize()?;
    let start = std::time::Instant::now();
    let from_u32 = gpu.upload_csr_u32((view.nrows(), view.ncols()), &offsets, &cols, view.values())?;
    gpu.synchronize()?;
    let from_u32_ms = Some(start.elapsed().as_secs_f64() * 1e3);
    drop(from_u32);
    let pinned_in_place_ms = pinned_in_place_ms(gpu, view.ncols(), &offsets, &cols, view.values())?;
    // cudarc makes no empty page-locked slice: a matrix without entries has no pinned route.
    let from_pinned_ms = (view.nnz() > 0)
        .then(|| from_pinned_ms(gpu, (view.nrows(), view.ncols()), &offsets, &cols, view.values()))
        .transpose()?;
    let stage_ceilings = Some(stage_ceilings(gpu, view.ncols(), &offsets, &cols, view.values())?);
    let steps = Some(upload_steps(gpu, view.ncols(), &offsets, &cols, view.values())?);
    let pipeline_trials = pipeline_trials(gpu, view.ncols(), &cols, view.values())?;
    Ok(Upload {
        matrix: name.to_owned(),
        precision: Precision::of::<T>(),
        csr_ms,
        csr_bytes,
        with_strategies_ms,
        with_strategies_bytes,
        from_u32_ms,
        pinned_in_place_ms,
        from_pinned_ms,
        stage_ceilings,
        steps,
        pipeline_trials,
        auto_plan,
    })
}

/// The time (ms, to completion, best of three) of `Gpu::upload_csr_pinned` on the arrays copied
/// beforehand into page-locked memory (ordinary, cached, as a caller that reads its matrix into it
/// would allocate): the upload a caller gets who keeps the arrays where the copy engine reads them.
fn from_pinned_ms<T: Scalar>(
    gpu: &Gpu,
    dims: (usize, usize),
    offsets: &[u32],
    cols: &[u32],
    values: &[T],
) -> Result<f64> {
    fn pinned<E: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy>(
        gpu: &Gpu,
        data: &[E],
    ) -> Result<cudarc::driver::PinnedHostSlice<E>> {
        let mut p = gpu.pinned_zeroed(data.len())?;
        p.as_mut_slice()?.copy_from_slice(data);
        Ok(p)
    }
    let (o, c, v) = (pinned(gpu, offsets)?, pinned(gpu, cols)?, pinned(gpu, values)?);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        gpu.synchronize()?;
        let start = std::time::Instant::now();
        let a = gpu.upload_csr_pinned(dims, &o, &c, &v)?;
        gpu.synchronize()?;
        best = best.min(start.elapsed().as_secs_f64() * 1e3);
        drop(a);
    }
    Ok(best)
}

/// The time (ms, to completion) of the upload route issue 27 has not tried: the `u32` offsets
/// checked non-decreasing and the columns below `ncols` in parallel (the checks `upload_csr_u32`
/// makes while it stages), then each array pinned where it lies (`cuMemHostRegister`), copied to the
/// device by the copy engine straight from it, and unpinned once the copies completed. Whether
/// pinning costs less than the staging copies it saves decides if the library should take it
/// (`docs/PERF.md`, section 20). The arrays are the bench's own, valid by construction; a failed
/// check is an error. `None` where the driver refuses to pin one of them (two small arrays sharing
/// a page: a page is pinned once).
fn pinned_in_place_ms<T: Scalar>(
    gpu: &Gpu,
    ncols: usize,
    offsets: &[u32],
    cols: &[u32],
    values: &[T],
) -> Result<Option<f64>> {
    use cudarc::driver::sys;
    use rayon::prelude::*;
    /// Pins `data` for the copy engine, unpinned on drop.
    struct Pinned(*mut std::ffi::c_void);
    impl Pinned {
        fn new<E>(data: &[E]) -> Result<Self> {
            let ptr = data.as_ptr().cast_mut().cast::<std::ffi::c_void>();
            // SAFETY: `data` is a live host allocation of `size_of_val(data)` bytes, borrowed for
            // as long as this value lives (its caller drops it before the borrow ends); registering
            // only pins its pages, it writes nothing.
            unsafe { sys::cuMemHostRegister_v2(ptr, std::mem::size_of_val(data), 0) }
                .result()
                .context("cuMemHostRegister")?;
            Ok(Self(ptr))
        }
    }
    impl Drop for Pinned {
        fn drop(&mut self) {
            // SAFETY: the pointer was registered by `new`, once; a failure here has nowhere to go.
            let _ = unsafe { sys::cuMemHostUnregister(self.0) };
        }
    }
    gpu.synchronize()?;
    gpu.context().bind_to_thread()?;
    let start = std::time::Instant::now();
    let (ordered, in_range) = rayon::join(
        || offsets.par_windows(2).all(|w| w[0] <= w[1]),
        || cols.par_iter().all(|&c| (c as usize) < ncols),
    );
    anyhow::ensure!(ordered && in_range, "the bench's own CSR arrays failed the check");
    // On a refusal the arrays already pinned are unpinned as their values drop.
    let pinned =
        || -> Result<[Pinned; 3]> { Ok([Pinned::new(offsets)?, Pinned::new(cols)?, Pinned::new(values)?]) };
    let Ok(pins) = pinned() else { return Ok(None) };
    let stream = gpu.stream();
    let device = (stream.clone_htod(offsets)?, stream.clone_htod(cols)?, stream.clone_htod(values)?);
    gpu.synchronize()?;
    drop(pins);
    let ms = start.elapsed().as_secs_f64() * 1e3;
    drop(device);
    Ok(Some(ms))
}

/// The fewest bytes a CSR product moves: row offsets, column indices and values read once, x read
/// once, y written once (beta = 0).
pub fn csr_bytes(rows: usize, cols: usize, nnz: usize, value_bytes: usize) -> f64 {
    ((rows + 1) * 4 + nnz * (4 + value_bytes) + cols * value_bytes + rows * value_bytes) as f64
}

/// Copies of the operands rotated while timing: enough that together they are several times the L2,
/// so each launch finds its data in HBM as a real product of a large working set would. Capped, since
/// matrices this small are timed over many launches anyway.
fn rotation_copies(bytes: f64, l2_bytes: usize) -> usize {
    const L2_MULTIPLE: f64 = 4.0;
    const MAX_COPIES: usize = 64;
    ((L2_MULTIPLE * l2_bytes as f64 / bytes).ceil() as usize).clamp(1, MAX_COPIES)
}

/// The operands of one copy: matrix, x, y, and the row index per entry cuSPARSE's COO needs.
struct Operands<T> {
    a: DeviceCsr<T>,
    coo_rows: cudarc::driver::CudaSlice<u32>,
    x: DeviceVector<T>,
    y: DeviceVector<T>,
}

/// What one `bench_matrix` call needs besides the matrix.
#[derive(Debug)]
pub struct Setup<'a> {
    pub gpu: Option<&'a Gpu>,
    pub cusparse: Option<&'a cusparse::Handle>,
    pub read_gbps: f64,
    pub l2_bytes: usize,
    pub kernels: &'a [Kernel],
    pub seed: u64,
    /// Also run the tuner and the exhaustive search over the parametrised kernel.
    pub exhaustive: bool,
    /// Also reorder the matrix (when square) by reverse Cuthill–McKee and time it before and after.
    pub reorder: bool,
    /// Time every kernel of ours in the hot and graph regimes, not only Auto and the fastest (cold):
    /// what fitting Auto's rule for those regimes needs (issue 23).
    pub all_regimes: bool,
    /// On a GPU, measure the uploads alone (after the CPU kernel, which checks the matrix): a run of
    /// the upload table in seconds rather than the whole suite's minutes.
    pub uploads_only: bool,
    /// Only the variants of ours (kernels and formats) whose keys contain one of these, Auto always,
    /// and the BRC tuner only where one contains "brc"; all when empty. cuSPARSE and the CPU
    /// kernel always run: they are the speedups' baseline and the reference. An experiment on a few
    /// kernels then costs seconds of GPU time a matrix instead of the hundred variants' minutes.
    pub variants: &'a [String],
}

impl Setup<'_> {
    /// Whether the run times the variant of ours whose key is `key` ([`Setup::variants`]).
    pub fn wants(&self, key: &str) -> bool {
        key == "auto" || self.variants.is_empty() || self.variants.iter().any(|v| key.contains(v.as_str()))
    }
}

/// Measures every variant on `a` in precision `T`.
pub fn bench_matrix<T: Scalar>(
    setup: &Setup<'_>,
    name: &str,
    a: &CsrMatrix<f64>,
    mut progress: impl FnMut(&str),
) -> Result<MatrixRun>
where
    f32: gpu_spmv::formats::ValueStorage<T>,
{
    let (offsets, cols, vals64) = a.csr_data();
    let vals: Vec<T> = vals64.iter().map(|&v| T::from_f64(v)).collect();
    let view = CsrRef::try_new(a.nrows(), a.ncols(), offsets, cols, &vals)?;
    let view_stats = &view.stats();
    let mut rng = ChaCha8Rng::seed_from_u64(setup.seed);
    let x: Vec<T> = (0..a.ncols()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    let zeros = vec![T::ZERO; a.nrows()];
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    let reference = spmv_f64(one, view, &x, zero, &zeros)?;
    let scale = error_scale(one, view, &x, zero, &zeros)?;
    let bytes = csr_bytes(a.nrows(), a.ncols(), a.nnz(), size_of::<T>());
    let flops = 2.0 * a.nnz() as f64;
    let record = |variant: &Variant, timing: Timing, err: f64| Record {
        matrix: name.to_owned(),
        precision: Precision::of::<T>(),
        variant: variant.key(),
        family: variant.family().to_owned(),
        resolved: None,
        resolved_hot: None,
        hot_launch: None,
        resolved_graph: None,
        timing,
        gflops: flops / (timing.median_us * 1e3),
        gbps: bytes / (timing.median_us * 1e3),
        floor_fraction: bytes / (setup.read_gbps * 1e3) / timing.median_us,
        speedup_vs_cusparse: f64::NAN,
        hot: None,
        graph: None,
        speedup_vs_cusparse_hot: f64::NAN,
        speedup_vs_cusparse_graph: f64::NAN,
        host_enqueue_us: None,
        host_enqueue_one_shot_us: None,
        max_rel_error: err,
        conversion_ms: None,
    };
    let mut records = Vec::new();

    let cpu = Variant::Cpu(CpuKernel::Rayon);
    progress(&cpu.key());
    let mut y_cpu = zeros.clone();
    let timing = time_cpu(|| Ok(reference::spmv(CpuKernel::Rayon, one, view, &x, zero, &mut y_cpu)?))?;
    records.push(record(&cpu, timing, max_relative_error(&y_cpu, &reference, &scale)));

    let (Some(gpu), Some(handle)) = (setup.gpu, setup.cusparse) else {
        let (tuning, upload, reorderings, brc_tuned) = (None, None, Vec::new(), None);
        let notes = Vec::new();
        return Ok(MatrixRun { records, copies: 1, tuning, notes, upload, reorderings, brc_tuned });
    };
    let upload = Some(upload_cost(gpu, name, view)?);
    if setup.uploads_only {
        let (tuning, notes, reorderings, brc_tuned) = (None, Vec::new(), Vec::new(), None);
        return Ok(MatrixRun { records, copies: 1, tuning, notes, upload, reorderings, brc_tuned });
    }
    let copies = rotation_copies(bytes, setup.l2_bytes);
    let row_of_entry: Vec<u32> =
        (0..a.nrows()).flat_map(|r| std::iter::repeat_n(r as u32, offsets[r + 1] - offsets[r])).collect();
    let mut sets = (0..copies)
        .map(|_| {
            Ok(Operands {
                a: gpu.upload_csr_ref(view)?,
                coo_rows: gpu.stream().clone_htod(&row_of_entry).context("upload COO rows")?,
                x: gpu.upload_vector(&x)?,
                y: gpu.zeros::<T>(a.nrows())?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let check =
        Check { poison: vec![T::from_f64(f64::NAN); a.nrows()], reference: &reference, scale: &scale };

    // Auto is in `setup.kernels`; the paper's fixed rule, with and without the long-row split, is timed
    // beside it, since Auto departs from it.
    let rule = Kernel::fixed_rule(view_stats, gpu.sm_count());
    // The column-panel kernel where its rows hold enough entries per panel, each panel size planned
    // first: one this GPU or matrix refuses is a note, not the end of the run.
    let panels = panel_kernels(view_stats, size_of::<T>());
    let kernels = setup.kernels.iter().copied().chain([rule]).chain(without_split(rule)).chain(panels);
    let mut notes = Vec::new();
    // Each kernel's record, so that the fastest can be timed in the other regimes.
    let mut ours: Vec<(Kernel, usize)> = Vec::new();
    for kernel in kernels {
        let variant = Variant::Ours(kernel);
        if !setup.wants(&variant.key()) {
            continue;
        }
        progress(&variant.key());
        if let Kernel::CsrPanels { .. } = kernel
            && let Err(refused) = gpu.plan(&sets[0].a, kernel)
        {
            notes.push(format!("{name}, {}: {} refused the matrix: {refused}", T::NAME, variant.key()));
            continue;
        }
        let timing = time_kernel(gpu, kernel, &mut sets)?;
        let err = check_kernel(gpu, kernel, &mut sets, &check)?;
        ours.push((kernel, records.len()));
        let resolved = |regime| -> Result<Option<String>> {
            Ok((kernel == Kernel::Auto)
                .then(|| gpu.plan_for(&sets[0].a, kernel, regime))
                .transpose()?
                .map(|p| p.kernel().to_string()))
        };
        records.push(Record {
            resolved: resolved(Regime::Cold)?,
            resolved_hot: resolved(Regime::Hot)?,
            resolved_graph: resolved(Regime::Graph)?,
            ..record(&variant, timing, err)
        });
    }

    progress("hot and graph regimes");
    let fastest =
        ours.iter().min_by(|a, b| records[a.1].timing.median_us.total_cmp(&records[b.1].timing.median_us));
    let in_regimes: Vec<(Kernel, usize)> = if setup.all_regimes {
        ours.clone()
    } else {
        ours.iter().filter(|(k, _)| *k == Kernel::Auto).chain(fastest).copied().collect()
    };
    for (kernel, index) in in_regimes {
        if records[index].hot.is_some() {
            continue;
        }
        let (regimes, hot_launch, err) = ours_regimes(gpu, kernel, &mut sets[0], &check)?;
        let r = &mut records[index];
        (r.hot, r.graph, r.host_enqueue_us) =
            (Some(regimes.hot), Some(regimes.graph), Some(regimes.host_enqueue_us));
        r.hot_launch = hot_launch.map(|way| format!("{way:?}"));
        r.max_rel_error = r.max_rel_error.max(err);
        if kernel == Kernel::Auto {
            let s = &mut sets[0];
            r.host_enqueue_one_shot_us =
                Some(host_enqueue_us(gpu, || Ok(gpu.spmv(one, &s.a, &s.x, zero, &mut s.y)?))?);
        }
    }

    for alg in Algorithm::ALL {
        let variant = Variant::Cusparse(alg);
        progress(&variant.key());
        let prepared = sets
            .iter()
            .map(|s| cusparse::Prepared::new(gpu, handle, alg, &s.a, Some(&s.coo_rows), &s.x, &s.y))
            .collect::<Result<Vec<_>>>()?;
        let timing = time_gpu(gpu, |i| prepared[i % copies].run(gpu, one, zero))?;
        let mut err = check.run(gpu, &mut sets[0], |_| prepared[0].run(gpu, one, zero))?;
        let mut r = record(&variant, timing, err);
        // The baselines of the regimes. A capture cuSPARSE refuses is a note, not the end of the run.
        if alg != Algorithm::CooAlg1 {
            match prepared[0].capture(gpu, GRAPH_PRODUCTS, one, zero) {
                Ok(graph) => {
                    err = err.max(check.on_y(gpu, &mut sets[0].y, |_| Ok(graph.launch()?))?);
                    let regimes =
                        regimes::measure(gpu, || prepared[0].run(gpu, one, zero), || Ok(graph.launch()?))?;
                    (r.hot, r.graph, r.host_enqueue_us) =
                        (Some(regimes.hot), Some(regimes.graph), Some(regimes.host_enqueue_us));
                    r.max_rel_error = err;
                }
                Err(e) => {
                    notes.push(format!("{name}, {}: {} in a CUDA graph: {e:#}", T::NAME, variant.key()))
                }
            }
        }
        records.push(r);
    }

    for format in formats(view_stats, gpu.sm_count(), T::PRECISION) {
        let variant = Variant::Format(format);
        if !setup.wants(&variant.key()) {
            continue;
        }
        progress(&variant.key());
        let converted = match convert(gpu, format, view, copies)? {
            Ok(converted) => converted,
            Err(refused) => {
                notes.push(format!("{name}, {}: {} refused the matrix: {refused}", T::NAME, variant.key()));
                continue;
            }
        };
        let plans = converted.copies.iter().map(|m| m.plan(gpu)).collect::<gpu_spmv::Result<Vec<_>>>()?;
        let timing = time_gpu(gpu, |i| {
            let s = &mut sets[i % copies];
            Ok(plans[i % copies].spmv(one, &s.x, zero, &mut s.y)?)
        })?;
        let err = check.run(gpu, &mut sets[0], |s| Ok(plans[0].spmv(one, &s.x, zero, &mut s.y)?))?;
        records
            .push(Record { conversion_ms: Some(converted.conversion_ms), ..record(&variant, timing, err) });
    }

    let reorderings = if setup.reorder && a.nrows() == a.ncols() {
        progress("reverse Cuthill-McKee");
        bench_reordering(gpu, name, view, &x, (&reference, &scale))?
    } else {
        Vec::new()
    };

    let brc_tuned = if a.nnz() > 0 && setup.wants("brc") {
        progress("BRC B2 tuner");
        let start = std::time::Instant::now();
        match gpu.upload_brc_tuned(view) {
            Ok((_, t)) => Some(BrcTuned {
                matrix: name.to_owned(),
                precision: Precision::of::<T>(),
                model_b2: t.model_b2,
                b2: t.b2,
                trials: t.trials,
                tuning_ms: start.elapsed().as_secs_f64() * 1e3,
            }),
            Err(e) => {
                notes.push(format!("{name}, {}: the BRC B2 tuner failed: {e}", T::NAME));
                None
            }
        }
    } else {
        None
    };

    let tuning = if setup.exhaustive {
        progress("tuner and exhaustive search");
        Some(tune(gpu, name, rule, &mut sets, &check)?)
    } else {
        None
    };
    Ok(MatrixRun { records, copies, tuning, notes, upload, reorderings, brc_tuned })
}

/// Auto, the fixed rule, the run-time tuner and the exhaustive search over the tuner's space on one
/// matrix, each timed hot (the tuner's regime): how close the first three come to the fourth.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tuning {
    pub matrix: String,
    pub precision: Precision,
    /// Auto's choice, where the tuner starts (absent in runs before the tuner started there).
    #[serde(default)]
    pub auto: String,
    #[serde(default)]
    pub auto_us: f64,
    pub rule: String,
    pub rule_us: f64,
    pub tuned: String,
    pub tuned_us: f64,
    /// Products the tuner ran before it converged.
    pub tuning_products: u64,
    pub best: String,
    pub best_us: f64,
    /// Configurations the exhaustive search timed.
    pub searched: usize,
    /// The largest error of the rule's, the tuner's and the best configuration's products.
    pub max_rel_error: f64,
}

/// What [`bench_matrix`] measured.
#[derive(Debug)]
pub struct MatrixRun {
    pub records: Vec<Record>,
    pub copies: usize,
    pub tuning: Option<Tuning>,
    /// What did not run, and why (a format refusing the matrix).
    pub notes: Vec<String>,
    pub upload: Option<Upload>,
    /// `--reorder`: reverse Cuthill–McKee before and after, per kernel.
    pub reorderings: Vec<Reordering>,
    /// BRC's B2 tuner, on a GPU and a matrix with entries.
    pub brc_tuned: Option<BrcTuned>,
}

/// Products the tuner may take to converge before the bench gives up on it: it times at most 8, and
/// with the stream drained after each product, each timing is read at the next call.
const MAX_TUNING_PRODUCTS: u64 = 64;

fn tune<T: Scalar>(
    gpu: &Gpu,
    name: &str,
    rule: Kernel,
    sets: &mut [Operands<T>],
    check: &Check<'_, T>,
) -> Result<Tuning> {
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    // The tuner times products of one set of operands, as a solver runs them: hot. Every figure here
    // is timed the same way (back to back on set 0), so that they compare with what it saw.
    let hot = |kernel: Kernel, s: &mut Operands<T>| -> Result<f64> {
        let plan = gpu.plan(&s.a, kernel)?;
        Ok(time_gpu(gpu, |_| Ok(plan.spmv(one, &s.x, zero, &mut s.y)?))?.median_us)
    };
    // Auto's choice, where the tuner starts: its plan asks the device where the rule's DIA-copy term
    // says to (`Gpu::plan_for`).
    let auto = gpu.plan_for(&sets[0].a, Kernel::Auto, Regime::Hot)?.kernel();
    let auto_us = hot(auto, &mut sets[0])?;
    let rule_us = hot(rule, &mut sets[0])?;
    let mut max_err = check_kernel(gpu, rule, sets, check)?;

    let set = &mut sets[0];
    let mut tuner = TunedSpmv::new(gpu, &set.a)?;
    // A solver calling the tuner in a loop: each product is followed by the solver's read of a
    // result (a residual norm), which drains the stream.
    while tuner.converged().is_none() && tuner.tuning_products() < MAX_TUNING_PRODUCTS {
        tuner.spmv(one, &set.x, zero, &mut set.y)?;
        gpu.synchronize()?;
    }
    let tuned = tuner.best();
    let tuning_products = tuner.tuning_products();
    drop(tuner);
    let tuned_us = hot(tuned, &mut sets[0])?;
    max_err = max_err.max(check_kernel(gpu, tuned, sets, check)?);

    // Every configuration is timed; the winner's product is checked (the GPU tests check them all).
    let space = TunedSpmv::<T>::search_space();
    let mut best = (auto, auto_us);
    for &kernel in &space {
        let us = hot(kernel, &mut sets[0])?;
        if us < best.1 {
            best = (kernel, us);
        }
    }
    max_err = max_err.max(check_kernel(gpu, best.0, sets, check)?);
    Ok(Tuning {
        matrix: name.to_owned(),
        precision: Precision::of::<T>(),
        auto: auto.to_string(),
        auto_us,
        rule: rule.to_string(),
        rule_us,
        tuned: tuned.to_string(),
        tuned_us,
        tuning_products,
        best: best.0.to_string(),
        best_us: best.1,
        searched: space.len(),
        max_rel_error: max_err,
    })
}

/// Times `y = A x` with `kernel`, rotating over the operand sets, each with its plan.
fn time_kernel<T: Scalar>(gpu: &Gpu, kernel: Kernel, sets: &mut [Operands<T>]) -> Result<Timing> {
    let copies = sets.len();
    let (plans, mut vectors): (Vec<_>, Vec<_>) =
        sets.iter_mut().map(|s| (gpu.plan(&s.a, kernel), (&s.x, &mut s.y))).unzip();
    let plans = plans.into_iter().collect::<gpu_spmv::Result<Vec<_>>>()?;
    time_gpu(gpu, |i| {
        let (x, y) = &mut vectors[i % copies];
        Ok(plans[i % copies].spmv(T::from_f64(1.0), *x, T::ZERO, *y)?)
    })
}

/// Products of a run that settles a hot plan's launch ([`ours_regimes`]): twice its trial's 128 and
/// the capture before them, so that the trial ends inside the first run.
const SETTLE_PRODUCTS: usize = 256;
/// Runs of [`SETTLE_PRODUCTS`] at most: the product that decides is at latest the first after the
/// wait that follows the run holding the trial.
const SETTLE_RUNS: usize = 3;

/// `kernel`'s hot and graph regimes and host enqueue time through a plan on one operand set, how the
/// hot plan launched its products after them, and the error of one replay of its graph (see
/// [`Check`]).
fn ours_regimes<T: Scalar>(
    gpu: &Gpu,
    kernel: Kernel,
    set: &mut Operands<T>,
    check: &Check<'_, T>,
) -> Result<(Regimes, Option<HotLaunch>, f64)> {
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    let Operands { a, x, y, .. } = set;
    // Auto is planned for the regime it is timed in, as a caller who says so gets it.
    let hot = gpu.plan_for(&*a, kernel, Regime::Hot)?;
    let in_graph = gpu.plan_for(&*a, kernel, Regime::Graph)?;
    let graph =
        gpu.capture(|| (0..GRAPH_PRODUCTS).try_for_each(|_| in_graph.spmv(one, &*x, zero, &mut *y)))?;
    let err = check.on_y(gpu, y, |_| Ok(graph.launch()?))?;
    // A hot plan's first products time its two ways of launching (PERF section 49): they run here,
    // in runs longer than that trial with a wait after each, so that every timed product goes the
    // way the plan kept.
    for _ in 0..SETTLE_RUNS {
        if hot.hot_launch() != Some(HotLaunch::Measuring) {
            break;
        }
        for _ in 0..SETTLE_PRODUCTS {
            hot.spmv(one, &*x, zero, &mut *y)?;
        }
        gpu.synchronize()?;
    }
    let regimes = regimes::measure(gpu, || Ok(hot.spmv(one, &*x, zero, &mut *y)?), || Ok(graph.launch()?))?;
    Ok((regimes, hot.hot_launch(), err))
}

/// The error of one product `y = A x` with `kernel` (see [`Check`]).
fn check_kernel<T: Scalar>(
    gpu: &Gpu,
    kernel: Kernel,
    sets: &mut [Operands<T>],
    check: &Check<'_, T>,
) -> Result<f64> {
    check.run(gpu, &mut sets[0], |s| {
        Ok(gpu.spmv_with(kernel, T::from_f64(1.0), &s.a, &s.x, T::ZERO, &mut s.y)?)
    })
}

/// One checked product: `y` poisoned with NaN (so an unwritten element shows), one launch, `y`
/// compared with the f64 reference.
struct Check<'r, T> {
    poison: Vec<T>,
    reference: &'r [f64],
    scale: &'r [f64],
}

impl<T: Scalar> Check<'_, T> {
    fn run(
        &self,
        gpu: &Gpu,
        set: &mut Operands<T>,
        product: impl FnOnce(&mut Operands<T>) -> Result<()>,
    ) -> Result<f64> {
        set.y.copy_from_host(gpu, &self.poison)?;
        product(set)?;
        Ok(max_relative_error(&set.y.to_host(gpu)?, self.reference, self.scale))
    }

    /// [`Check::run`] for a product that needs only `y` from the set (the others are borrowed by a
    /// plan or captured in a graph).
    fn on_y(
        &self,
        gpu: &Gpu,
        y: &mut DeviceVector<T>,
        product: impl FnOnce(&mut DeviceVector<T>) -> Result<()>,
    ) -> Result<f64> {
        y.copy_from_host(gpu, &self.poison)?;
        product(y)?;
        Ok(max_relative_error(&y.to_host(gpu)?, self.reference, self.scale))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(variants: &[String]) -> Setup<'_> {
        Setup {
            gpu: None,
            cusparse: None,
            read_gbps: f64::NAN,
            l2_bytes: 0,
            kernels: &[],
            seed: 1,
            exhaustive: false,
            reorder: false,
            all_regimes: false,
            uploads_only: false,
            variants,
        }
    }

    #[test]
    fn a_variant_filter_keeps_auto_and_the_names_it_holds() {
        let all = setup(&[]);
        assert!(all.wants("csr-scalar-b128") && all.wants("ell") && all.wants("brc"));
        let some = ["scalar".to_owned(), "ell".to_owned()];
        let few = setup(&some);
        assert!(few.wants("auto"), "Auto is every run's subject");
        assert!(few.wants("csr-scalar-b128") && few.wants("ell"));
        assert!(!few.wants("csr-vector-c4-b128") && !few.wants("brc") && !few.wants("compressed-f32"));
    }
}
