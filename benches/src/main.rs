//! `spmv-bench`: the suite (or Matrix Market files) through every kernel of the library, cuSPARSE and
//! the CPU, in one process on the same device buffers. Run it with `cargo xtask bench`.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use gpu_spmv::{Error as SpmvError, Gpu, Scalar};
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra_sparse::CsrMatrix;
use spmv_bench::cg_study::{self, CgResults};
use spmv_bench::device_info::DeviceInfo;
use spmv_bench::matrices::{self, BenchMatrix};
use spmv_bench::ops::{OpsRun, bench_spmm, bench_transpose};
use spmv_bench::precision::Precision;
use spmv_bench::report::Results;
use spmv_bench::run::{MatrixInfo, Setup, bench_matrix};
use spmv_bench::solve_study::{self, SolveResults};
use spmv_bench::suite::Size;
use spmv_bench::{cublas, cusparse, fem, multi_gpu};
use spmv_bench::{plot, summary, variants};
use std::path::PathBuf;

/// The suite (or Matrix Market files) through every kernel and format of the library, cuSPARSE and
/// the CPU, on the same device buffers, each checked against the f64 CPU product; report.md,
/// results.json and plots in the output folder. Without a subcommand: `suite`.
#[derive(Debug, Parser)]
#[command(name = "spmv-bench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    /// `spmv-bench [OPTIONS]` is `spmv-bench suite [OPTIONS]`.
    #[command(flatten)]
    suite: SuiteArgs,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// The generated suite (ten matrices imitating public ones) through every variant [default]
    Suite(SuiteArgs),
    /// Matrix Market files through every variant, instead of the suite
    Mtx(MtxArgs),
    /// The CG study (Reguly & Giles §8: FEM Poisson Q1-Q4, our CG on CSR, ELL and LMA against
    /// cuSPARSE + cuBLAS); writes cg-report.md and cg-results.json
    Cg(CgArgs),
    /// The solver study (issue 28: BiCGSTAB and GMRES(m), plain, Jacobi and ILU(0), ours against
    /// cuSPARSE + cuBLAS on convection-diffusion, FEM Poisson and Matrix Market problems); writes
    /// solve-report.md and solve-results.json
    Solve(SolveArgs),
    /// The multi-GPU study: the product and a CG iteration on 1 and N GPUs over NCCL, one process for
    /// all GPUs and one process per GPU (set NCCL_NVLS_ENABLE=0 where NVLink multicast must stay off)
    Gpus(GpusArgs),
    /// Redraw the plots and report.md of an earlier run, next to its results.json
    Plot(PlotArgs),
}

#[derive(Debug, Args)]
struct SuiteArgs {
    /// The suite at its small size (about 1 M entries a matrix), for quick runs
    #[arg(long)]
    small: bool,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Args)]
struct MtxArgs {
    /// A Matrix Market file, or a folder of .mtx files
    #[arg(value_name = "PATH")]
    path: PathBuf,
    #[command(flatten)]
    run: RunArgs,
}

/// What a run of products (`suite`, `mtx`) measures and where it writes.
#[derive(Debug, Args)]
struct RunArgs {
    /// Only the matrices whose names contain one of these (comma-separated); all when absent
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Vec<String>,
    /// The element types to measure
    #[arg(long, value_enum, default_value_t = Precisions::Both)]
    precision: Precisions,
    /// Skip the tuner and the exhaustive search over the parametrised kernel
    #[arg(long)]
    no_search: bool,
    /// Also time y = Aᵀx (explicit, atomic) against cuSPARSE's transposed SpMV
    #[arg(long)]
    transpose: bool,
    /// Also reorder each square matrix by reverse Cuthill–McKee and time Auto and the merge-path
    /// kernel before and after
    #[arg(long)]
    reorder: bool,
    /// Also time Y = AX for k = 1 to 64 in both layouts against cusparseSpMM
    #[arg(long)]
    spmm: bool,
    /// Time every kernel of ours in the hot and graph regimes (by default only Auto and the fastest)
    #[arg(long)]
    all_graph: bool,
    /// On a GPU, only the CPU kernel and the uploads (the report's upload tables), not the products
    #[arg(long)]
    uploads_only: bool,
    /// Only the variants of ours whose names contain one of these (comma-separated), Auto always,
    /// cuSPARSE and the CPU always, the BRC tuner where one contains "brc"; all when absent. For
    /// experiments on a few kernels: "fastest of ours" is then the fastest of those timed
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    variants: Vec<String>,
    /// Seed of the generated matrices and vectors
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where report.md, results.json and the plots go, and results.partial.json after each matrix
    /// until the run ends [default: target/bench/<UTC start time>]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// After the run, print what got faster or slower than in an earlier results.json
    #[arg(long, value_name = "OLD.json")]
    compare: Option<PathBuf>,
    /// Print only the short summary at the end (per regime and precision: the geometric-mean speedup
    /// over cuSPARSE and the worst matrix; the host enqueue times; without a GPU, the CPU kernels'
    /// GB/s), not the per-matrix table before it; every run prints the summary
    #[arg(long)]
    summary: bool,
}

#[derive(Debug, Args)]
struct CgArgs {
    /// About 100 k unknowns instead of 4 M
    #[arg(long)]
    small: bool,
    /// The element types to measure
    #[arg(long, value_enum, default_value_t = Precisions::Both)]
    precision: Precisions,
    /// Only these element degrees (comma-separated, 1 to 4); all when absent
    #[arg(long, value_name = "DEGREES", value_delimiter = ',')]
    degree: Vec<usize>,
    /// Only these solvers (comma-separated), to spend less time on the GPU; all when absent. The
    /// speedups need cusparse+cublas, the payoffs csr-auto
    #[arg(long, value_enum, value_name = "SOLVERS", value_delimiter = ',')]
    solvers: Vec<cg_study::Solver>,
    /// Where cg-report.md and cg-results.json go [default: target/bench/<UTC start time>]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct SolveArgs {
    /// About 100 k unknowns per generated problem instead of 4 M
    #[arg(long)]
    small: bool,
    /// The element types to measure
    #[arg(long, value_enum, default_value_t = Precisions::Both)]
    precision: Precisions,
    /// GMRES's restart length
    #[arg(long, value_name = "M", default_value_t = solve_study::DEFAULT_RESTART)]
    restart: usize,
    /// Also the square matrices of this Matrix Market file or folder (b = A·1)
    #[arg(long, value_name = "DIR")]
    mtx: Option<PathBuf>,
    /// Only the problems whose names contain one of these (comma-separated: cd-pe0, cd-pe100,
    /// cd-pe1000, fem-q1, fem-q2, or a matrix file's stem); all when absent
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Vec<String>,
    /// Where solve-report.md and solve-results.json go [default: target/bench/<UTC start time>]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct GpusArgs {
    /// How many GPUs (at least 2)
    #[arg(value_name = "N")]
    gpus: usize,
    /// Only the matrices whose names contain one of these (comma-separated); all when absent
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Vec<String>,
    /// Where report.md and results.json go [default: target/bench/<UTC start time>-gpus<N>]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// The results.json of the run to redraw
    #[arg(value_name = "RESULTS.json")]
    results: PathBuf,
    /// Also print the run's summary
    #[arg(long)]
    summary: bool,
}

/// `--precision`: one element type or both.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Precisions {
    F32,
    F64,
    Both,
}

impl Precisions {
    /// The element types, in the order they are measured.
    fn list(self) -> Vec<Precision> {
        match self {
            Precisions::F32 => vec![Precision::F32],
            Precisions::F64 => vec![Precision::F64],
            Precisions::Both => Precision::ALL.to_vec(),
        }
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.mode.unwrap_or(Mode::Suite(cli.suite)) {
        Mode::Suite(args) => {
            let size = if args.small { Size::Small } else { Size::Full };
            products(matrices::suite(size, args.run.seed), &args.run)
        }
        Mode::Mtx(args) => products(matrices::from_matrix_market(&args.path)?, &args.run),
        Mode::Cg(args) => cg_study(&args),
        Mode::Solve(args) => solve_study(&args),
        Mode::Gpus(args) => {
            let started = utc_now();
            let dir = args.out.unwrap_or_else(|| {
                PathBuf::from("target/bench").join(format!("{started}-gpus{}", args.gpus))
            });
            multi_gpu::run(args.gpus, &args.only, &dir, git_commit(), started)
        }
        Mode::Plot(args) => redraw(&args),
    }
}

/// `plot`: the plots and report.md of an earlier run, redrawn from its results.json.
fn redraw(args: &PlotArgs) -> Result<()> {
    let mut results = Results::read(&args.results)?;
    // Speedups from the times, so that a results.json edited or merged by hand plots consistently.
    results.fill_speedups();
    let dir = args.results.parent().context("results.json has no folder")?;
    results.write(dir)?;
    let plots = plot::write_plots(&results, dir)?;
    println!(
        "redrew report.md{} in {}",
        plots.iter().map(|p| format!(", {p}")).collect::<String>(),
        dir.display()
    );
    if args.summary {
        print!("{}", summary::text(&results));
    }
    Ok(())
}

/// The GPU, or `None` after saying why there is none and what `without` leaves; with the GPU's
/// description and bandwidth, measured now.
fn open_gpu(without: &str) -> Result<(Option<Gpu>, Option<DeviceInfo>)> {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(SpmvError::NoDevice(why)) => {
            println!("no GPU ({why})\n{without}");
            return Ok((None, None));
        }
        Err(e) => return Err(e.into()),
    };
    let d = DeviceInfo::measure(&gpu)?;
    println!(
        "{}: {} SMs, {} MB L2, driver {}; streaming read {:.0} GB/s, device-to-device copy {:.0} GB/s",
        d.name,
        d.sm_count,
        d.l2_bytes >> 20,
        d.driver_version,
        d.read_gbps,
        d.copy_gbps
    );
    Ok((Some(gpu), Some(d)))
}

/// `suite` and `mtx`: every variant on each of `list`'s matrices that `args` selects.
fn products(list: Vec<BenchMatrix>, args: &RunArgs) -> Result<()> {
    let list: Vec<BenchMatrix> = list
        .into_iter()
        .filter(|m| args.only.is_empty() || args.only.iter().any(|o| m.name.contains(o.as_str())))
        .collect();
    if list.is_empty() {
        bail!("no matrix selected");
    }
    let precisions = args.precision.list();
    let (gpu, mut device) = open_gpu(&format!("timing the CPU kernels only: {}", summary::WHAT_A_GPU_ADDS))?;
    let handle = gpu.as_ref().map(cusparse::Handle::new).transpose()?;
    let kernels = variants::gpu_kernels(gpu.as_ref().is_some_and(Gpu::has_stream_engine));
    let setup = Setup {
        gpu: gpu.as_ref(),
        cusparse: handle.as_ref(),
        read_gbps: device.as_ref().map_or(f64::NAN, |d| d.read_gbps),
        l2_bytes: device.as_ref().map_or(0, |d| d.l2_bytes),
        kernels: &kernels,
        seed: args.seed,
        exhaustive: !args.no_search,
        reorder: args.reorder,
        all_regimes: args.all_graph,
        uploads_only: args.uploads_only,
        variants: &args.variants,
    };

    // Progress steps per matrix and precision: the CPU kernel, then on a GPU the kernels, the
    // Auto-without-split variant, the hot and graph regimes, cuSPARSE, about 10 format configurations,
    // BRC's B2 tuner, the reordering when asked for, and the search.
    let reorder = usize::from(args.reorder);
    let per_matrix = 1 + if gpu.is_some() {
        kernels.len() + 2 + cusparse::Algorithm::ALL.len() + 10 + 1 + reorder + 1
    } else {
        0
    };
    let bar = ProgressBar::new((list.len() * precisions.len() * per_matrix) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed_precise} {msg}")?);
    let mut results = Results {
        git_commit: git_commit(),
        started: utc_now(),
        device: None,
        matrices: Vec::new(),
        records: Vec::new(),
        tuning: Vec::new(),
        notes: Vec::new(),
        uploads: Vec::new(),
        reorderings: Vec::new(),
        brc_tuned: Vec::new(),
        transpose: Vec::new(),
        spmm: Vec::new(),
    };
    let dir = args.out.clone().unwrap_or_else(|| PathBuf::from("target/bench").join(&results.started));
    for m in list {
        bar.set_message(format!("{}: building", m.name));
        let a = (m.build)().with_context(|| format!("building {}", m.name))?;
        let stats = gpu_spmv::CsrRef::from(&a).stats();
        let mut info = MatrixInfo::new(&m.name, &m.imitates, &stats, gpu.as_ref().map_or(1, Gpu::sm_count));
        for &precision in &precisions {
            let progress = |what: &str| {
                bar.set_message(format!("{} {precision} {what}", m.name));
                bar.inc(1);
            };
            let copies = match precision {
                Precision::F32 => {
                    one_precision::<f32>(&setup, handle.as_ref(), args, &m.name, &a, progress, &mut results)?
                }
                Precision::F64 => {
                    one_precision::<f64>(&setup, handle.as_ref(), args, &m.name, &a, progress, &mut results)?
                }
            };
            match precision {
                Precision::F32 => info.copies_f32 = copies,
                Precision::F64 => info.copies_f64 = copies,
            }
        }
        results.matrices.push(info);
        results.checkpoint(&dir)?;
    }
    bar.finish_and_clear();
    if let (Some(d), Some(gpu)) = (&mut device, &gpu) {
        d.finish(gpu);
    }
    results.device = device;
    results.fill_speedups();

    results.write(&dir)?;
    std::fs::remove_file(dir.join(Results::PARTIAL))?;
    let plots = plot::write_plots(&results, &dir)?;
    if !args.summary {
        println!("{}", results.summary());
    }
    print!("{}", summary::text(&results));
    println!(
        "report: {} (with results.json{})",
        dir.join("report.md").display(),
        plots.iter().map(|p| format!(", {p}")).collect::<String>()
    );
    if let Some(old) = &args.compare {
        println!("{}", results.compare(&Results::read(old)?, 0.05));
    }
    Ok(())
}
/// One matrix in precision `T`: every variant, and on a GPU the transposed product and SpMM where
/// `args` asks for them, into `results`; returns the copies of the operands rotated through L2.
fn one_precision<T: Scalar>(
    setup: &Setup<'_>,
    handle: Option<&cusparse::Handle>,
    args: &RunArgs,
    name: &str,
    a: &CsrMatrix<f64>,
    progress: impl FnMut(&str),
    results: &mut Results,
) -> Result<usize>
where
    f32: gpu_spmv::formats::ValueStorage<T>,
{
    let run = bench_matrix::<T>(setup, name, a, progress)?;
    results.records.extend(run.records);
    results.tuning.extend(run.tuning);
    results.notes.extend(run.notes);
    results.uploads.extend(run.upload);
    results.reorderings.extend(run.reorderings);
    results.brc_tuned.extend(run.brc_tuned);
    if let (Some(gpu), Some(handle)) = (setup.gpu, handle) {
        let mut ops = OpsRun::default();
        if args.transpose {
            bench_transpose::<T>(gpu, handle, name, a, &mut ops)?;
        }
        if args.spmm {
            bench_spmm::<T>(gpu, handle, name, a, &mut ops)?;
        }
        results.transpose.extend(ops.transpose);
        results.spmm.extend(ops.spmm);
        results.notes.extend(ops.notes);
    }
    Ok(run.copies)
}

/// `cg`: the CG study of issue 11 ([`spmv_bench::cg_study`]); fails after writing the report if the
/// baseline's iteration counts disagree with ours.
fn cg_study(args: &CgArgs) -> Result<()> {
    let (gpu, mut device) = open_gpu("the CG study's CPU setup only")?;
    let handle = gpu.as_ref().map(cusparse::Handle::new).transpose()?;
    let (gpu, sparse) = (gpu.as_ref(), handle.as_ref());
    let blas = gpu.map(cublas::blas).transpose()?;
    let devices = match (gpu, sparse, &blas) {
        (Some(gpu), Some(sparse), Some(blas)) => Some(cg_study::Devices { gpu, sparse, blas }),
        _ => None,
    };
    let unknowns = if args.small { fem::SMALL_UNKNOWNS } else { fem::STUDY_UNKNOWNS };
    let mut results = CgResults {
        git_commit: git_commit(),
        started: utc_now(),
        device: None,
        target_unknowns: unknowns,
        rel_tol: cg_study::STUDY_REL_TOL,
        iterations_per_sample: cg_study::ITERATIONS_PER_SAMPLE,
        problems: Vec::new(),
        records: Vec::new(),
        notes: Vec::new(),
    };
    let log = |line: &str| println!("{line}");
    let degrees = if args.degree.is_empty() { cg_study::DEGREES.to_vec() } else { args.degree.clone() };
    let solvers = if args.solvers.is_empty() { cg_study::SOLVERS.to_vec() } else { args.solvers.clone() };
    let precisions = args.precision.list();
    cg_study::run(devices.as_ref(), unknowns, &degrees, &precisions, &solvers, &mut results, &log)?;
    if let (Some(d), Some(gpu)) = (&mut device, gpu) {
        d.finish(gpu);
    }
    results.device = device;
    let dir = args.out.clone().unwrap_or_else(|| PathBuf::from("target/bench").join(&results.started));
    results.write(&dir)?;
    println!("{}", results.summary());
    println!("report: {} (with cg-results.json)", dir.join("cg-report.md").display());
    let disagreements: Vec<&String> = results.notes.iter().filter(|n| cg_study::is_disagreement(n)).collect();
    if !disagreements.is_empty() {
        bail!(
            "the baseline's iteration counts disagree with ours:\n{}",
            disagreements.iter().map(|n| n.as_str()).collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}

/// `solve`: the solver study of issue 28 ([`spmv_bench::solve_study`]); fails after writing the report
/// if an f64 iteration count of the baseline disagrees with ours.
fn solve_study(args: &SolveArgs) -> Result<()> {
    let (gpu, mut device) = open_gpu("the solver study's problems only")?;
    let handle = gpu.as_ref().map(cusparse::Handle::new).transpose()?;
    let blas = gpu.as_ref().map(cublas::blas).transpose()?;
    let devices = match (&gpu, &handle, &blas) {
        (Some(gpu), Some(sparse), Some(blas)) => Some(cg_study::Devices { gpu, sparse, blas }),
        _ => None,
    };
    let unknowns = if args.small { fem::SMALL_UNKNOWNS } else { fem::STUDY_UNKNOWNS };
    let problems: Vec<_> = solve_study::problems(unknowns, args.mtx.as_deref())?
        .into_iter()
        .filter(|p| args.only.is_empty() || args.only.iter().any(|o| p.name.contains(o.as_str())))
        .collect();
    if problems.is_empty() {
        bail!("no problem selected");
    }
    let mut results = SolveResults {
        git_commit: git_commit(),
        started: utc_now(),
        device: None,
        target_unknowns: unknowns,
        rel_tol: solve_study::STUDY_REL_TOL,
        max_iterations: solve_study::MAX_ITERATIONS,
        restart: args.restart,
        problems: Vec::new(),
        records: Vec::new(),
        applies: Vec::new(),
        factorisations: Vec::new(),
        notes: Vec::new(),
    };
    let log = |line: &str| println!("{line}");
    solve_study::run(devices.as_ref(), &problems, &args.precision.list(), args.restart, &mut results, &log)?;
    if let (Some(d), Some(gpu)) = (&mut device, &gpu) {
        d.finish(gpu);
    }
    results.device = device;
    let dir = args.out.clone().unwrap_or_else(|| PathBuf::from("target/bench").join(&results.started));
    results.write(&dir)?;
    println!("{}", results.summary());
    println!("report: {} (with solve-results.json)", dir.join("solve-report.md").display());
    let disagreements: Vec<&str> =
        results.notes.iter().map(String::as_str).filter(|n| solve_study::is_disagreement(n)).collect();
    if !disagreements.is_empty() {
        bail!("f64 iteration counts of the baseline disagree with ours:\n{}", disagreements.join("\n"));
    }
    Ok(())
}

/// The commit the binary was built from: what ran, whatever tree it runs in (the GPU machine's copy
/// of the tree may carry another commit's git metadata).
fn git_commit() -> String {
    env!("SPMV_BUILD_COMMIT").to_owned()
}

/// The current UTC time as `YYYYMMDD-HHMMSS`: run folders sort by it.
fn utc_now() -> String {
    jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string()
}
