//! `spmv-bench gpus N`: the product and a CG iteration on one GPU and on `N` over NCCL (issue 12),
//! in both run modes of `gpu_spmv::distributed` (one process driving every GPU; one process per GPU,
//! this binary re-executed once per rank), on matrices large enough that one GPU's share is several
//! times its L2 (60 MB on an H200).
//!
//! Per matrix: the time of the product on one GPU and on `N`, the speedup, the ghost volume, the
//! time of the exchange alone ([`DistributedPlan::exchange`]) and of the arithmetic alone (both
//! blocks' products without the exchange), from which the share of the exchange hidden behind the
//! local product follows: `(arithmetic + exchange - product) / exchange`; in the one-process mode
//! by both routes of the exchange ([`Exchange::Nccl`], and [`Exchange::Peer`] where the GPUs have
//! peer access, issue 26). Then a Jacobi-CG
//! iteration on one GPU and on `N` for the symmetric positive definite matrices. f64 throughout, the
//! CG study's precision. Timing is by the host's clock around `REPEATS` calls between two
//! synchronisations of every GPU, the median of `SAMPLES`: a distributed product has no one stream
//! whose events could time it.

use anyhow::{Context, Result, bail};
use gpu_spmv::distributed::{
    DistributedCsr, DistributedPcg, DistributedPipelinedCg, DistributedPlan, Exchange, Ranks, UniqueId,
};
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::solve::Cg;
use gpu_spmv::solve::{Preconditioner, SolverOptions};
use gpu_spmv::{CsrRef, DeviceVector, Gpu, Kernel};
use nalgebra_sparse::CsrMatrix;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Calls per timed sample, and samples per figure (the median is kept).
const REPEATS: usize = 20;
const SAMPLES: usize = 7;
/// CG iterations a timed call enqueues: the solver-tier CGs copy their iterate out to the caller's
/// `x` once a call (a batch), which a batch of one would count as part of every iteration.
const CG_BATCH: u32 = 10;

/// The H200's HBM3e bandwidth and the measured GPU-to-GPU copy bandwidth over NVLink (issue 12),
/// and a latency per NCCL exchange (a grouped send/recv launch and its handshake, a few µs to tens
/// of µs on one host): the constants of the prediction (docs/PERF.md, section 12).
pub const HBM_BYTES_PER_S: f64 = 4.8e12;
pub const LINK_BYTES_PER_S: f64 = 384e9;
pub const EXCHANGE_LATENCY_S: f64 = 15e-6;

/// The child's environment in the one-process-per-GPU mode.
const RANK: &str = "SPMV_BENCH_RANK";
const ID_FILE: &str = "SPMV_BENCH_NCCL_ID";

/// One matrix of the study.
struct StudyMatrix {
    name: &'static str,
    spd: bool,
    a: CsrMatrix<f64>,
}

/// The study's matrices: a 7-point stencil of 200^3 (8 M rows, 56 M entries), a band of half-width
/// 16 on 4 M rows (132 M entries), the CG study's FEM matrix (Q2, 4 M unknowns) and the suite's
/// power-law graph at 16 M rows. Stencil and band get a strictly dominant diagonal, so that CG
/// applies; the power-law graph is not symmetric.
fn matrices(only: &[String]) -> Vec<StudyMatrix> {
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    let mut all = Vec::new();
    if wanted("stencil3d-7-200") {
        all.push(StudyMatrix { name: "stencil3d-7-200", spd: true, a: stencil7(200) });
    }
    if wanted("band-33-4M") {
        all.push(StudyMatrix { name: "band-33-4M", spd: true, a: band(4_000_000, 16) });
    }
    if wanted("fem-q2-4M") {
        let a = crate::fem::Poisson::with_unknowns(2, crate::fem::STUDY_UNKNOWNS).csr::<f64>();
        all.push(StudyMatrix { name: "fem-q2-4M", spd: true, a });
    }
    if wanted("powerlaw-16M") {
        all.push(StudyMatrix {
            name: "powerlaw-16M",
            spd: false,
            a: crate::suite::powerlaw_graph(16_000_000, 1),
        });
    }
    all
}

/// The rows of `n` unknowns, each `(columns, off-diagonal count)` from `neighbours`, as a symmetric
/// matrix with `-1` off the diagonal and one more than the off-diagonal count on it.
fn dominant(n: usize, neighbours: impl Fn(usize, &mut Vec<usize>)) -> CsrMatrix<f64> {
    let (mut offsets, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    let mut row = Vec::new();
    for r in 0..n {
        row.clear();
        neighbours(r, &mut row);
        let off = row.len() - 1;
        for &c in &row {
            cols.push(c);
            vals.push(if c == r { off as f64 + 1.0 } else { -1.0 });
        }
        offsets.push(cols.len());
    }
    CsrMatrix::try_from_csr_data(n, n, offsets, cols, vals).expect("sorted, in range")
}

/// The 7-point stencil of an `n`^3 grid.
fn stencil7(n: usize) -> CsrMatrix<f64> {
    let plane = n * n;
    dominant(n * plane, |r, w| {
        let (x, y, z) = (r % n, r / n % n, r / plane);
        let candidates = [
            (z > 0).then(|| r - plane),
            (y > 0).then(|| r - n),
            (x > 0).then(|| r - 1),
            Some(r),
            (x + 1 < n).then(|| r + 1),
            (y + 1 < n).then(|| r + n),
            (z + 1 < n).then(|| r + plane),
        ];
        w.extend(candidates.into_iter().flatten());
    })
}

/// The band `|r - c| <= half` of `n` rows.
fn band(n: usize, half: usize) -> CsrMatrix<f64> {
    dominant(n, |r, w| w.extend(r.saturating_sub(half)..(r + half + 1).min(n)))
}

/// The figures of one matrix.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MatrixRecord {
    pub name: String,
    pub rows: usize,
    pub entries: usize,
    /// Entries of `x` received per product, summed over the GPUs, and their bytes (f64).
    pub ghost_entries: usize,
    pub ghost_bytes: usize,
    pub product_us_one_gpu: f64,
    pub product_us: f64,
    pub speedup_over_one_gpu: f64,
    /// The same product with one process per GPU (the slowest rank's time).
    pub product_us_process_per_gpu: Option<f64>,
    pub speedup_process_per_gpu: Option<f64>,
    /// The exchange alone and both blocks' products alone, on `N` GPUs.
    pub exchange_us: f64,
    pub arithmetic_us: f64,
    /// `(arithmetic + exchange - product) / exchange`, clamped to [0, 1].
    pub exchange_hidden: f64,
    pub predicted_speedup: f64,
    /// A Jacobi-CG iteration: `solve::Cg` on one GPU, and the solver tier's PCG over the
    /// distributed space (`DistributedPcg`) on `N`.
    pub cg_iteration_us_one_gpu: Option<f64>,
    pub cg_iteration_us: Option<f64>,
    pub cg_speedup: Option<f64>,
    pub cg_iteration_us_process_per_gpu: Option<f64>,
    /// The product, the exchange alone, the share hidden and a CG iteration by the peer route, one
    /// process for all GPUs (`None` where the GPUs have no peer access); the fields above are the
    /// NCCL route's.
    pub product_us_peer: Option<f64>,
    pub speedup_peer: Option<f64>,
    pub exchange_us_peer: Option<f64>,
    pub exchange_hidden_peer: Option<f64>,
    pub cg_iteration_us_peer: Option<f64>,
    pub cg_speedup_peer: Option<f64>,
    /// A Jacobi-pipelined-CG iteration of the solver tier over the distributed space
    /// (`DistributedPipelinedCg`), NCCL route, one process, and with one process per GPU.
    #[serde(default)]
    pub pipelined_iteration_us: Option<f64>,
    #[serde(default)]
    pub pipelined_iteration_us_process_per_gpu: Option<f64>,
    /// The product replayed from one graph over the GPUs (`DistributedPlan::capture`), one process,
    /// by the NCCL and the peer route.
    pub product_us_graph: Option<f64>,
    pub product_us_peer_graph: Option<f64>,
}

/// `results.json` of a `gpus` run.
#[derive(Debug, Serialize, Deserialize)]
pub struct MultiGpuResults {
    pub git_commit: String,
    pub started: String,
    pub gpus: usize,
    pub devices: Vec<String>,
    pub nccl_nvls_enable: Option<String>,
    pub matrices: Vec<MatrixRecord>,
}

/// What a child of the one-process-per-GPU mode reports: per matrix, its product and CG times.
#[derive(Debug, Serialize, Deserialize)]
struct RankTimes {
    product_us: Vec<f64>,
    cg_iteration_us: Vec<Option<f64>>,
    pipelined_iteration_us: Vec<Option<f64>>,
}

/// The median over [`SAMPLES`] of the time per call of `call` (µs), `sync` waiting for every GPU
/// before and after each sample of [`REPEATS`] calls, after one warm-up sample.
fn time_us(mut call: impl FnMut() -> Result<()>, sync: impl Fn() -> Result<()>) -> Result<f64> {
    let step = |step| match step {
        Step::Start => Ok(()),
        Step::Iterate => call(),
    };
    time_samples(step, sync, 1)
}

/// What a timing asks of the work it times: to get ready for a sample (untimed), or one call.
#[derive(Debug, Clone, Copy)]
enum Step {
    Start,
    Iterate,
}

/// The median over [`SAMPLES`] of the time of one of the `units` a call does (µs): each sample
/// `Step::Start` (untimed), `sync`, [`REPEATS`] `Step::Iterate` calls and `sync`, after one warm-up
/// sample.
fn time_samples(
    mut step: impl FnMut(Step) -> Result<()>,
    sync: impl Fn() -> Result<()>,
    units: u32,
) -> Result<f64> {
    let mut samples = Vec::with_capacity(SAMPLES);
    for sample in 0..=SAMPLES {
        step(Step::Start)?;
        sync()?;
        let start = Instant::now();
        for _ in 0..REPEATS {
            step(Step::Iterate)?;
        }
        sync()?;
        if sample > 0 {
            samples.push(start.elapsed().as_secs_f64() * 1e6 / (REPEATS as f64 * f64::from(units)));
        }
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[SAMPLES / 2])
}

fn sync_all(ranks: &Ranks) -> Result<()> {
    for m in ranks.members() {
        m.gpu().synchronize()?;
    }
    Ok(())
}

/// The process's parts of a vector of `values`, by `parts(i)`.
fn scatter(
    ranks: &Ranks,
    values: &[f64],
    parts: impl Fn(usize) -> std::ops::Range<usize>,
) -> Result<Vec<DeviceVector<f64>>> {
    ranks.members().iter().enumerate().map(|(i, m)| Ok(m.gpu().upload_vector(&values[parts(i)])?)).collect()
}

/// The times of a distributed product (µs): enqueued call by call, its exchange and arithmetic
/// alone, and replayed from one graph over the GPUs.
struct ProductTimes {
    product: f64,
    exchange: f64,
    arithmetic: f64,
    graph: f64,
}

fn time_distributed(
    ranks: &Ranks,
    d: &DistributedCsr<f64>,
    plan: &mut DistributedPlan<'_, f64>,
) -> Result<ProductTimes> {
    let x = scatter(ranks, &vec![1.0; d.ncols()], |i| d.cols(i))?;
    let mut y = scatter(ranks, &vec![0.0; d.nrows()], |i| d.rows(i))?;
    let product = time_us(|| Ok(plan.spmv(1.0, &x, 0.0, &mut y)?), || sync_all(ranks))?;
    let exchange = time_us(|| Ok(plan.exchange(&x)?), || sync_all(ranks))?;
    let arithmetic = time_us(|| Ok(plan.without_exchange(1.0, &x, 0.0, &mut y)?), || sync_all(ranks))?;
    let graph = plan.capture(1.0, &x, 0.0, &mut y)?;
    let graph = time_us(|| Ok(graph.launch()?), || sync_all(ranks))?;
    Ok(ProductTimes { product, exchange, arithmetic, graph })
}

/// CG options that never stop within a timing: a zero tolerance and no iteration limit in reach.
fn endless() -> SolverOptions {
    SolverOptions { rel_tol: 0.0, max_iterations: u32::MAX as usize, preconditioner: Preconditioner::Jacobi }
}

/// Which distributed CG [`time_distributed_cg`] times.
#[derive(Debug, Clone, Copy)]
enum DistributedSolver {
    /// `DistributedPcg`: the solver tier's PCG over the distributed space.
    Pcg,
    /// `DistributedPipelinedCg`: one all-reduce an iteration.
    Pipelined,
}

/// The time of a distributed Jacobi-CG iteration (µs) of `solver`, its ghosts by `exchange`.
fn time_distributed_cg(
    ranks: &Ranks,
    d: &DistributedCsr<f64>,
    diagonal: &[f64],
    exchange: Exchange,
    solver: DistributedSolver,
) -> Result<f64> {
    let plan = d.plan_with(ranks, Kernel::Auto, exchange)?;
    let b = scatter(ranks, &vec![1.0; d.nrows()], |i| d.rows(i))?;
    let mut x = scatter(ranks, &vec![0.0; d.nrows()], |i| d.rows(i))?;
    let sync = || sync_all(ranks);
    match solver {
        DistributedSolver::Pcg => {
            let mut cg = DistributedPcg::new(plan, endless(), Some(diagonal))?;
            time_iterations_us(
                |step| match step {
                    Step::Start => Ok(cg.start(&b, &x)?),
                    Step::Iterate => Ok(cg.iterate(&mut x, CG_BATCH)?),
                },
                sync,
            )
        }
        DistributedSolver::Pipelined => {
            let mut cg = DistributedPipelinedCg::new(plan, endless(), Some(diagonal))?;
            time_iterations_us(
                |step| match step {
                    Step::Start => Ok(cg.start(&b, &x)?),
                    Step::Iterate => Ok(cg.iterate(&mut x, CG_BATCH)?),
                },
                sync,
            )
        }
    }
}

/// The median time of one CG iteration (µs): as [`time_us`], each call a batch of [`CG_BATCH`]
/// iterations, but every sample from a fresh start (untimed). The study's matrices but FEM are
/// diagonally dominant, so a CG with no tolerance drives `rᵀr` to exactly 0 in a few hundred
/// iterations and stops, after which its iterations are gated off and cost only the product: a
/// sample of [`REPEATS`] batches from a start stays far from that.
fn time_iterations_us(solver: impl FnMut(Step) -> Result<()>, sync: impl Fn() -> Result<()>) -> Result<f64> {
    time_samples(solver, sync, CG_BATCH)
}

/// The predicted speedup on the partition `d` describes (all parts, computed on the host): one GPU
/// streams the whole matrix and its vectors; on `N`, each GPU streams its blocks while its ghosts
/// cross NVLink, so the slowest GPU takes `max(local, exchange) + remote`.
fn predict(a: CsrRef<'_, f64>, gpus: usize) -> Result<f64> {
    use gpu_spmv::formats::{RowPartition, Split};
    let bytes = |rows: usize, cols: usize, nnz: usize| (nnz * 12 + rows * 4 + (rows + cols) * 8) as f64;
    let one = bytes(a.nrows(), a.ncols(), a.nnz()) / HBM_BYTES_PER_S;
    let split = Split::new(&a, RowPartition::balanced(&a, gpus)?)?;
    let slowest = split
        .parts
        .iter()
        .map(|p| {
            let local = bytes(p.rows.len(), p.cols.len(), p.local.col_indices.len()) / HBM_BYTES_PER_S;
            // The remote block's rows, its product `t` and `y` read and written at those rows.
            let remote_rows = p.remote_rows.len();
            let remote = (bytes(remote_rows, p.ghosts.len(), p.remote.col_indices.len())
                + remote_rows as f64 * 20.0)
                / HBM_BYTES_PER_S;
            let exchange = if p.ghosts.is_empty() {
                0.0
            } else {
                EXCHANGE_LATENCY_S + (p.ghosts.len() * 8) as f64 / LINK_BYTES_PER_S
            };
            local.max(exchange) + remote
        })
        .fold(0.0, f64::max);
    Ok(one / slowest)
}

/// The whole study on `gpus` GPUs; results.json and report.md in `dir`.
pub fn run(gpus: usize, only: &[String], dir: &Path, git_commit: String, started: String) -> Result<()> {
    if let Ok(rank) = std::env::var(RANK) {
        return run_rank(rank.parse().context(RANK)?, gpus, only, dir);
    }
    if gpus < 2 {
        bail!("`gpus N` needs at least 2 GPUs to compare with one");
    }
    let ranks = Ranks::all_local(gpus).context("one process for all GPUs")?;
    let devices = ranks.members().iter().map(|m| m.gpu().name().to_owned()).collect();
    let one = ranks.members()[0].gpu();
    let mut records = Vec::new();
    let study = matrices(only);
    for m in &study {
        let a = CsrRef::from(&m.a);
        println!("{}: {} rows, {} entries", m.name, a.nrows(), a.nnz());
        let mut r =
            MatrixRecord { name: m.name.into(), rows: a.nrows(), entries: a.nnz(), ..Default::default() };
        r.product_us_one_gpu = time_one_gpu(one, a)?;
        let d = DistributedCsr::upload(&ranks, a)?;
        r.ghost_entries = (0..ranks.members().len()).map(|i| d.ghosts(i)).sum();
        r.ghost_bytes = r.ghost_entries * 8;
        let mut plan = d.plan_with(&ranks, Kernel::Auto, Exchange::Nccl)?;
        let t = time_distributed(&ranks, &d, &mut plan)?;
        (r.product_us, r.exchange_us, r.arithmetic_us, r.product_us_graph) =
            (t.product, t.exchange, t.arithmetic, Some(t.graph));
        drop(plan);
        r.speedup_over_one_gpu = r.product_us_one_gpu / r.product_us;
        r.exchange_hidden = hidden(r.arithmetic_us, r.exchange_us, r.product_us);
        let peer = match d.plan_with(&ranks, Kernel::Auto, Exchange::Peer) {
            Ok(mut plan) => Some(time_distributed(&ranks, &d, &mut plan)?),
            Err(gpu_spmv::Error::Unsupported(why)) => {
                println!("  no peer route: {why}");
                None
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(t) = &peer {
            (r.product_us_peer, r.speedup_peer) = (Some(t.product), Some(r.product_us_one_gpu / t.product));
            (r.exchange_us_peer, r.exchange_hidden_peer) =
                (Some(t.exchange), Some(hidden(t.arithmetic, t.exchange, t.product)));
            r.product_us_peer_graph = Some(t.graph);
        }
        r.predicted_speedup = predict(a, gpus)?;
        if m.spd {
            let diagonal = a.diagonal();
            let single = time_one_gpu_cg(one, a, &diagonal)?;
            let many = time_distributed_cg(&ranks, &d, &diagonal, Exchange::Nccl, DistributedSolver::Pcg)?;
            (r.cg_iteration_us_one_gpu, r.cg_iteration_us, r.cg_speedup) =
                (Some(single), Some(many), Some(single / many));
            r.pipelined_iteration_us = Some(time_distributed_cg(
                &ranks,
                &d,
                &diagonal,
                Exchange::Nccl,
                DistributedSolver::Pipelined,
            )?);
            if peer.is_some() {
                let many =
                    time_distributed_cg(&ranks, &d, &diagonal, Exchange::Peer, DistributedSolver::Pcg)?;
                (r.cg_iteration_us_peer, r.cg_speedup_peer) = (Some(many), Some(single / many));
            }
        }
        println!(
            "  product {:.1} µs on 1 GPU, {:.1} µs on {gpus} ({:.2}x, predicted {:.2}x); exchange {:.1} µs, {:.0}% hidden; ghosts {} KB",
            r.product_us_one_gpu,
            r.product_us,
            r.speedup_over_one_gpu,
            r.predicted_speedup,
            r.exchange_us,
            100.0 * r.exchange_hidden,
            r.ghost_bytes / 1000
        );
        if let (Some(product), Some(exchange)) = (r.product_us_peer, r.exchange_us_peer) {
            println!("  peer route: product {product:.1} µs on {gpus}, exchange {exchange:.1} µs");
        }
        records.push(r);
    }
    drop(ranks);
    let per_rank = run_children(gpus, only, dir)?;
    for (k, r) in records.iter_mut().enumerate() {
        let product = per_rank.iter().map(|t| t.product_us[k]).fold(0.0, f64::max);
        r.product_us_process_per_gpu = Some(product);
        r.speedup_process_per_gpu = Some(r.product_us_one_gpu / product);
        r.cg_iteration_us_process_per_gpu =
            per_rank.iter().map(|t| t.cg_iteration_us[k]).try_fold(0.0, |m: f64, t| t.map(|t| m.max(t)));
        r.pipelined_iteration_us_process_per_gpu = per_rank
            .iter()
            .map(|t| t.pipelined_iteration_us[k])
            .try_fold(0.0, |m: f64, t| t.map(|t| m.max(t)));
    }
    let results = MultiGpuResults {
        git_commit,
        started,
        gpus,
        devices,
        nccl_nvls_enable: std::env::var("NCCL_NVLS_ENABLE").ok(),
        matrices: records,
    };
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&results)?)?;
    std::fs::write(dir.join("report.md"), report(&results))?;
    println!("{}", report(&results));
    println!("report: {}", dir.join("report.md").display());
    Ok(())
}

/// The share of the exchange hidden behind the arithmetic: `(arithmetic + exchange - product) /
/// exchange`, clamped to [0, 1].
fn hidden(arithmetic: f64, exchange: f64, product: f64) -> f64 {
    ((arithmetic + exchange - product) / exchange).clamp(0.0, 1.0)
}

fn time_one_gpu(gpu: &Gpu, a: CsrRef<'_, f64>) -> Result<f64> {
    let da = gpu.upload_csr_ref(a)?;
    let plan = gpu.plan(&da, Kernel::Auto)?;
    let x = gpu.upload_vector(&vec![1.0; a.ncols()])?;
    let mut y = gpu.zeros(a.nrows())?;
    time_us(|| Ok(plan.spmv(1.0, &x, 0.0, &mut y)?), || Ok(gpu.synchronize()?))
}

fn time_one_gpu_cg(gpu: &Gpu, a: CsrRef<'_, f64>, diagonal: &[f64]) -> Result<f64> {
    let da = gpu.upload_csr_ref(a)?;
    let mut cg = Cg::new(gpu.plan(&da, Kernel::Auto)?, endless(), Some(diagonal))?;
    let b = gpu.upload_vector(&vec![1.0; a.nrows()])?;
    let mut x = gpu.zeros(a.nrows())?;
    time_iterations_us(
        |step| match step {
            Step::Start => Ok(cg.start(&b, &mut x)?),
            Step::Iterate => Ok(cg.iterate(&mut x, CG_BATCH)?),
        },
        || Ok(gpu.synchronize()?),
    )
}

/// The one-process-per-GPU mode: this binary once per rank, joined by an NCCL unique id in a file.
fn run_children(gpus: usize, only: &[String], dir: &Path) -> Result<Vec<RankTimes>> {
    std::fs::create_dir_all(dir)?;
    let id_file = dir.join("nccl-id");
    std::fs::write(&id_file, UniqueId::new()?.to_bytes())?;
    let exe = std::env::current_exe()?;
    let mut args = vec!["gpus".to_owned(), gpus.to_string(), "--out".to_owned(), dir.display().to_string()];
    if !only.is_empty() {
        args.extend(["--only".to_owned(), only.join(",")]);
    }
    println!("one process per GPU: {gpus} processes");
    let children: Vec<_> = (0..gpus)
        .map(|rank| Command::new(&exe).args(&args).env(RANK, rank.to_string()).env(ID_FILE, &id_file).spawn())
        .collect::<std::io::Result<_>>()?;
    for (rank, mut child) in children.into_iter().enumerate() {
        let status = child.wait()?;
        if !status.success() {
            bail!("rank {rank} of the one-process-per-GPU run failed: {status}");
        }
    }
    std::fs::remove_file(&id_file)?;
    (0..gpus)
        .map(|rank| {
            let path = rank_file(dir, rank);
            let times = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
            std::fs::remove_file(&path)?;
            Ok(times)
        })
        .collect()
}

fn rank_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank}.json"))
}

/// A child: rank `rank` on GPU `rank`, the same matrices as the parent, its times to a file.
fn run_rank(rank: usize, gpus: usize, only: &[String], dir: &Path) -> Result<()> {
    let id = UniqueId::from_bytes(&std::fs::read(std::env::var(ID_FILE).context(ID_FILE)?)?)?;
    let ranks = Ranks::one_of(rank, rank, gpus, &id)?;
    let mut times =
        RankTimes { product_us: Vec::new(), cg_iteration_us: Vec::new(), pipelined_iteration_us: Vec::new() };
    for m in matrices(only) {
        let a = CsrRef::from(&m.a);
        let d = DistributedCsr::upload(&ranks, a)?;
        let mut plan = d.plan_with(&ranks, Kernel::Auto, Exchange::Nccl)?;
        times.product_us.push(time_distributed(&ranks, &d, &mut plan)?.product);
        drop(plan);
        let cg = |solver| -> Result<Option<f64>> {
            Ok(if m.spd {
                Some(time_distributed_cg(&ranks, &d, &a.diagonal(), Exchange::Nccl, solver)?)
            } else {
                None
            })
        };
        times.cg_iteration_us.push(cg(DistributedSolver::Pcg)?);
        times.pipelined_iteration_us.push(cg(DistributedSolver::Pipelined)?);
    }
    std::fs::write(rank_file(dir, rank), serde_json::to_string(&times)?)?;
    Ok(())
}

/// report.md: one table of the product, one of CG.
fn report(r: &MultiGpuResults) -> String {
    let n = r.gpus;
    let mut s = format!(
        "# Multi-GPU run ({n} GPUs: {}), commit {}, {}\n\nNCCL_NVLS_ENABLE={}. f64, CSR with `Kernel::Auto` per block. \
         Times per call, median of {SAMPLES} samples of {REPEATS} calls; a CG iteration's from calls of \
         {CG_BATCH} iterations, each sample from a fresh start.\n\n\
         | matrix | rows | entries | ghosts (KB) | 1 GPU (µs) | {n} GPUs (µs) | speedup | predicted | 1 process/GPU (µs) | speedup | exchange (µs) | hidden | arithmetic (µs) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        r.devices.join(", "),
        r.git_commit,
        r.started,
        r.nccl_nvls_enable.as_deref().unwrap_or("(unset)")
    );
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    for m in &r.matrices {
        s += &format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.2}x | {:.2}x | {} | {}x | {:.1} | {:.0}% | {:.1} |\n",
            m.name,
            m.rows,
            m.entries,
            m.ghost_bytes / 1000,
            m.product_us_one_gpu,
            m.product_us,
            m.speedup_over_one_gpu,
            m.predicted_speedup,
            opt(m.product_us_process_per_gpu, 1),
            opt(m.speedup_process_per_gpu, 2),
            m.exchange_us,
            100.0 * m.exchange_hidden,
            m.arithmetic_us
        );
    }
    s += &format!(
        "\nThe columns above are the NCCL exchange's. By the peer exchange (one process, each GPU \
         gathering its ghosts from the owners' `x` in place):\n\n\
         | matrix | {n} GPUs (µs) | speedup | exchange (µs) | hidden |\n|---|---|---|---|---|\n"
    );
    for m in &r.matrices {
        s += &format!(
            "| {} | {} | {}x | {} | {} |\n",
            m.name,
            opt(m.product_us_peer, 1),
            opt(m.speedup_peer, 2),
            opt(m.exchange_us_peer, 1),
            m.exchange_hidden_peer.map_or("-".into(), |h| format!("{:.0}%", 100.0 * h))
        );
    }
    s += &format!(
        "\nThe product captured once into one graph over the {n} GPUs and replayed (one process; \
         `DistributedPlan::capture`):\n\n\
         | matrix | NCCL, graph (µs) | speedup | peer, graph (µs) | speedup |\n|---|---|---|---|---|\n"
    );
    let speedup = |one: f64, t: Option<f64>| opt(t.map(|t| one / t), 2);
    for m in &r.matrices {
        s += &format!(
            "| {} | {} | {}x | {} | {}x |\n",
            m.name,
            opt(m.product_us_graph, 1),
            speedup(m.product_us_one_gpu, m.product_us_graph),
            opt(m.product_us_peer_graph, 1),
            speedup(m.product_us_one_gpu, m.product_us_peer_graph)
        );
    }
    s += &format!(
        "\n## Jacobi-CG iteration\n\n`solve::Cg` on 1 GPU, `DistributedPcg` on {n}.\n\n| matrix | 1 GPU (µs) | {n} GPUs, NCCL (µs) | speedup | {n} GPUs, peer (µs) | speedup | 1 process/GPU (µs) |\n|---|---|---|---|---|---|---|\n"
    );
    for m in r.matrices.iter().filter(|m| m.cg_iteration_us.is_some()) {
        s += &format!(
            "| {} | {} | {} | {}x | {} | {}x | {} |\n",
            m.name,
            opt(m.cg_iteration_us_one_gpu, 1),
            opt(m.cg_iteration_us, 1),
            opt(m.cg_speedup, 2),
            opt(m.cg_iteration_us_peer, 1),
            opt(m.cg_speedup_peer, 2),
            opt(m.cg_iteration_us_process_per_gpu, 1)
        );
    }
    s += "\nThe solver tier's CGs over the distributed space, NCCL route (µs an iteration; PCG all-reduces \
         twice an iteration, pipelined CG once):\n\n\
         | matrix | `DistributedPcg` | `DistributedPipelinedCg` | pipelined, 1 process/GPU |\n|---|---|---|---|\n";
    for m in r.matrices.iter().filter(|m| m.cg_iteration_us.is_some()) {
        s += &format!(
            "| {} | {} | {} | {} |\n",
            m.name,
            opt(m.cg_iteration_us, 1),
            opt(m.pipelined_iteration_us, 1),
            opt(m.pipelined_iteration_us_process_per_gpu, 1)
        );
    }
    s
}
