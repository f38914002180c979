//! `spmv-bench`: the suite (or Matrix Market files) through every kernel of the library, cuSPARSE and
//! the CPU, in one process on the same device buffers. Run it with `cargo xtask bench`.

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use gpu_spmv::{Error as SpmvError, Gpu};
use indicatif::{ProgressBar, ProgressStyle};
use spmv_bench::cg_study::{self, CgResults};
use spmv_bench::device_info::DeviceInfo;
use spmv_bench::matrices::{self, BenchMatrix};
use spmv_bench::ops::{OpsRun, bench_spmm, bench_transpose};
use spmv_bench::report::Results;
use spmv_bench::run::{MatrixInfo, Setup, bench_matrix};
use spmv_bench::suite::Size;
use spmv_bench::{cg_baseline, cusparse, fem, multi_gpu};
use spmv_bench::{plot, summary, variants};
use std::path::PathBuf;

/// The suite (or Matrix Market files) through every kernel and format of the library, cuSPARSE and
/// the CPU, on the same device buffers, each checked against the f64 CPU product; report.md,
/// results.json and plots in the output folder.
#[derive(Debug, Parser)]
#[command(name = "spmv-bench", version)]
struct Options {
    /// The suite at its small size (quick runs); with --cg, about 100 k unknowns instead of 4 M
    #[arg(long)]
    small: bool,
    /// The CG study instead (Reguly & Giles §8: FEM Poisson Q1-Q4, our CG on CSR, ELL and LMA against
    /// cuSPARSE + cuBLAS); writes cg-report.md and cg-results.json
    #[arg(long)]
    cg: bool,
    /// A Matrix Market file, or a folder of .mtx files, instead of the suite
    #[arg(long, value_name = "PATH")]
    mtx: Option<PathBuf>,
    /// Only the matrices whose names contain one of these (comma-separated); all when absent
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    only: Vec<String>,
    /// The element types to measure
    #[arg(long, value_enum, default_value_t = PrecisionArg::Both)]
    precision: PrecisionArg,
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
    /// Seed of the generated matrices and vectors
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where report.md, results.json and the plots go [default: target/bench/<UTC start time>]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// After the run, print what got faster or slower than in an earlier results.json
    #[arg(long, value_name = "OLD.json")]
    compare: Option<PathBuf>,
    /// Only redraw the plots (and report.md) of an earlier run, next to its results.json
    #[arg(long, value_name = "RESULTS.json")]
    plot: Option<PathBuf>,
    /// Print only the short summary at the end (per regime and precision: the geometric-mean speedup
    /// over cuSPARSE and the worst matrix; the host enqueue times), not the per-matrix table before
    /// it; every run prints the summary. With --plot, print the earlier run's summary
    #[arg(long)]
    summary: bool,
    /// The multi-GPU study instead: the product and a CG iteration on 1 and N GPUs over NCCL, one
    /// process for all GPUs and one process per GPU (set NCCL_NVLS_ENABLE=0 where NVLink multicast
    /// must stay off)
    #[arg(long, value_name = "N")]
    gpus: Option<usize>,
}

/// `--precision`: one element type or both.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum PrecisionArg {
    F32,
    F64,
    Both,
}

impl PrecisionArg {
    /// The element types' names, in the order they are measured.
    fn names(self) -> Vec<&'static str> {
        match self {
            PrecisionArg::F32 => vec!["f32"],
            PrecisionArg::F64 => vec!["f64"],
            PrecisionArg::Both => vec!["f32", "f64"],
        }
    }
}

fn main() -> Result<()> {
    let options = Options::parse();
    let precisions = options.precision.names();
    if let Some(path) = &options.plot {
        let mut results = Results::read(path)?;
        // Speedups from the times, so that a results.json edited or merged by hand plots consistently.
        results.fill_speedups();
        let dir = path.parent().context("results.json has no folder")?;
        results.write(dir)?;
        let plots = plot::write_plots(&results, dir)?;
        println!("redrew {} in {}", plots.join(", "), dir.display());
        if options.summary {
            print!("{}", summary::text(&results));
        }
        return Ok(());
    }

    if let Some(gpus) = options.gpus {
        let started = utc_now();
        let dir = options
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("target/bench").join(format!("{started}-gpus{gpus}")));
        return multi_gpu::run(gpus, &options.only, &dir, git_commit(), started);
    }

    let gpu = match Gpu::new() {
        Ok(gpu) => Some(gpu),
        Err(SpmvError::NoDevice(why)) => {
            let only = if options.cg { "the CG study's CPU setup" } else { "timing the CPU kernels" };
            println!("no GPU ({why}): {only} only");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mut device = gpu.as_ref().map(DeviceInfo::measure).transpose()?;
    if let Some(d) = &device {
        println!(
            "{}: {} SMs, {} MB L2, driver {}; streaming read {:.0} GB/s, device-to-device copy {:.0} GB/s",
            d.name,
            d.sm_count,
            d.l2_bytes >> 20,
            d.driver_version,
            d.read_gbps,
            d.copy_gbps
        );
    }
    let handle = gpu.as_ref().map(cusparse::Handle::new).transpose()?;
    if options.cg {
        return cg_study(&options, gpu.as_ref(), handle.as_ref(), device);
    }
    let kernels = variants::gpu_kernels(gpu.as_ref().is_some_and(Gpu::has_stream_engine));
    let setup = Setup {
        gpu: gpu.as_ref(),
        cusparse: handle.as_ref(),
        read_gbps: device.as_ref().map_or(f64::NAN, |d| d.read_gbps),
        l2_bytes: device.as_ref().map_or(0, |d| d.l2_bytes),
        kernels: &kernels,
        seed: options.seed,
        exhaustive: !options.no_search,
        reorder: options.reorder,
        all_regimes: options.all_graph,
    };

    let list: Vec<BenchMatrix> = match &options.mtx {
        Some(path) => matrices::from_matrix_market(path)?,
        None => matrices::suite(if options.small { Size::Small } else { Size::Full }, options.seed),
    };
    let list: Vec<BenchMatrix> = list
        .into_iter()
        .filter(|m| options.only.is_empty() || options.only.iter().any(|o| m.name.contains(o.as_str())))
        .collect();
    if list.is_empty() {
        bail!("no matrix selected");
    }

    // Progress steps per matrix and precision: the CPU kernel, then on a GPU the kernels, the
    // Auto-without-split variant, the hot and graph regimes, cuSPARSE, about 10 format configurations,
    // BRC's B2 tuner, the reordering when asked for, and the search.
    let reorder = usize::from(options.reorder);
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
            let run = match precision {
                "f32" => bench_matrix::<f32>(&setup, &m.name, &a, progress)?,
                _ => bench_matrix::<f64>(&setup, &m.name, &a, progress)?,
            };
            match precision {
                "f32" => info.copies_f32 = run.copies,
                _ => info.copies_f64 = run.copies,
            }
            results.records.extend(run.records);
            results.tuning.extend(run.tuning);
            results.notes.extend(run.notes);
            results.uploads.extend(run.upload);
            results.reorderings.extend(run.reorderings);
            results.brc_tuned.extend(run.brc_tuned);
            if let (Some(gpu), Some(handle)) = (gpu.as_ref(), handle.as_ref()) {
                let mut ops = OpsRun::default();
                match precision {
                    "f32" if options.transpose => bench_transpose::<f32>(gpu, handle, &m.name, &a, &mut ops)?,
                    "f64" if options.transpose => bench_transpose::<f64>(gpu, handle, &m.name, &a, &mut ops)?,
                    _ => {}
                }
                match precision {
                    "f32" if options.spmm => bench_spmm::<f32>(gpu, handle, &m.name, &a, &mut ops)?,
                    "f64" if options.spmm => bench_spmm::<f64>(gpu, handle, &m.name, &a, &mut ops)?,
                    _ => {}
                }
                results.transpose.extend(ops.transpose);
                results.spmm.extend(ops.spmm);
                results.notes.extend(ops.notes);
            }
        }
        results.matrices.push(info);
    }
    bar.finish_and_clear();
    if let (Some(d), Some(gpu)) = (&mut device, &gpu) {
        d.finish(gpu);
    }
    results.device = device;
    results.fill_speedups();

    let dir = options.out.clone().unwrap_or_else(|| PathBuf::from("target/bench").join(&results.started));
    results.write(&dir)?;
    let plots = plot::write_plots(&results, &dir)?;
    if !options.summary {
        println!("{}", results.summary());
    }
    print!("{}", summary::text(&results));
    println!(
        "report: {} (with results.json{})",
        dir.join("report.md").display(),
        plots.iter().map(|p| format!(", {p}")).collect::<String>()
    );
    if let Some(old) = &options.compare {
        println!("{}", results.compare(&Results::read(old)?, 0.05));
    }
    Ok(())
}

/// `--cg`: the CG study of issue 11 ([`spmv_bench::cg_study`]); fails after writing the report if the
/// baseline's iteration counts disagree with ours.
fn cg_study(
    options: &Options,
    gpu: Option<&Gpu>,
    sparse: Option<&cusparse::Handle>,
    mut device: Option<DeviceInfo>,
) -> Result<()> {
    let blas = gpu.map(cg_baseline::blas).transpose()?;
    let devices = match (gpu, sparse, &blas) {
        (Some(gpu), Some(sparse), Some(blas)) => Some(cg_study::Devices { gpu, sparse, blas }),
        _ => None,
    };
    let unknowns = if options.small { fem::SMALL_UNKNOWNS } else { fem::STUDY_UNKNOWNS };
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
    cg_study::run(devices.as_ref(), unknowns, &options.precision.names(), &mut results, &log)?;
    if let (Some(d), Some(gpu)) = (&mut device, gpu) {
        d.finish(gpu);
    }
    results.device = device;
    let dir = options.out.clone().unwrap_or_else(|| PathBuf::from("target/bench").join(&results.started));
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

/// The commit the binary was built from: what ran, whatever tree it runs in (the GPU machine's copy
/// of the tree may carry another commit's git metadata).
fn git_commit() -> String {
    env!("SPMV_BUILD_COMMIT").to_owned()
}

/// The current UTC time as `YYYYMMDD-HHMMSS`: run folders sort by it.
fn utc_now() -> String {
    jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string()
}
