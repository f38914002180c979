//! The solver study of issue 28, item 5 (`spmv-bench solve`): the library's BiCGSTAB and GMRES(m)
//! (`gpu_spmv::solve`, on a plan of `Kernel::Auto`) against the host-driven cuSPARSE + cuBLAS
//! versions of the same recurrences ([`crate::solve_baseline`]), plain and Jacobi-preconditioned, in
//! f32 and f64, on the same device CSR matrix, right-hand side, initial guess (zero) and stopping test;
//! and ours preconditioned by a Chebyshev polynomial, block-Jacobi and ILU(0) ([`OursOnly`]), to
//! say which preconditioner wins where, ILU(0) against the baseline with cuSPARSE's ILU(0)
//! ([`BaselineIlu0`]: `csrilu02`, applied by SpSV) on the same solves; on the symmetric positive definite
//! problems (and the files' matrices that are symmetric with a positive diagonal) also preconditioned CG (`solve::Pcg`) with Jacobi, a Chebyshev polynomial, block-Jacobi
//! and IC(0) ([`OursOnly::SPD`]), and pipelined CG with Jacobi and IC(0). Per problem and precision
//! also one apply of the ILU(0) factors (and the IC(0) ones on the SPD problems), ours against
//! cuSPARSE's triangular solves on the same factors ([`ApplyRecord`]), and their setup, ours (the
//! CPU factorisation and the upload) against cuSPARSE's device factorisation, `csrilu02` and
//! `csric02` ([`FactorisationRecord`]).
//!
//! The problems: the convection–diffusion system of `gpu_spmv::reference::problems` on a square grid
//! of about the run's unknowns at Péclet numbers [`PECLETS`] (0 is the SPD Poisson matrix, 1000 is
//! convection-dominated; `b = 1`, a constant source), the FEM Poisson problem of the CG study at
//! degrees [`FEM_DEGREES`] (`b` its load vector), and with `--mtx DIR` the square matrices of a
//! Matrix Market folder (`b = A·1`, so that the solution is all ones, or `b = 1` where `A·1 = 0`).
//!
//! Per (problem, precision, solver, preconditioner, implementation) one solve to `|r| <= rel_tol |b|`
//! ([`STUDY_REL_TOL`]; both solvers stop converged only on a recomputed `b - A x`: GMRES at its restart,
//! BiCGSTAB by restarting when its recurrence converges) capped at [`MAX_ITERATIONS`], after a warm-up solve
//! of [`WARMUP_ITERATIONS`] (the libraries load their kernels on first use): its wall time on the host
//! clock from a synchronised start to a synchronised end (setup excluded), iterations, iterations per
//! second, the true relative residual `|b - A x| / |b|` in f64 on the CPU, and how it ended: converged,
//! at the cap, or a breakdown, which is recorded, not an error of the run; where the solve has a
//! preconditioner built for it ([`OursOnly`], [`BaselineIlu0`]), that setup's time too, taken the
//! same way. Ours over the baseline is the ratio of the times to solution, and with ILU(0) also the
//! ratio with each side's setup added ([`SolveRecord::speedup_with_setup`]): the fair comparisons
//! are both sides without their setup or both with it, and the report gives both. Iteration counts
//! of ours and the baseline that differ by more
//! than [`iteration_tolerance`] are noted with both true residuals, except where either broke down (a
//! breakdown's iteration is rounding's choice); in f32 the note says so and the run goes on (near
//! f32's attainable accuracy the summation order of the dot products moves the counts, as the CG
//! study found). In f64, where both converged (without a preconditioner or with Jacobi), both are
//! solved again on [`SPREAD_PERMUTATIONS`]
//! random symmetric permutations of the system, which change every summation order and nothing
//! else: if the two ranges of counts lie within the tolerance of each other the difference is
//! rounding's and a note says so with the counts (a restarted GMRES, whose slow restarts amplify
//! rounding, moved by 463 iterations of 3,794 on FEM Q2 with Jacobi); otherwise the run fails after
//! writing the report. An f64 ILU(0) pair past the tolerance fails the run at once: renumbering the
//! unknowns changes ILU(0) itself, so the permuted systems would not measure rounding alone.
//!
//! Run time (estimated from the problem sizes and the H100's bandwidth, not yet measured): `--small`
//! (about 100 k unknowns) a minute or less; the full 4 M unknowns about 10 minutes, most of it the
//! GMRES(30) solves of the three SPD problems, whose restarts stall at the cap (20 000 Arnoldi steps
//! of about 0.5-1 ms each, 24 such solves over both precisions); `--only` and `--precision` split it.

use crate::cg_baseline::faster_algorithm;
use crate::cg_study::{Devices, notes_section, or_na, preconditioner_name, timed, timed_gpu, true_residual};
use crate::cublas::BlasScalar;
use crate::cusparse::{Factorisation, PreparedFactorisation, PreparedIluApply};
use crate::device_info::DeviceInfo;
use crate::fem::Poisson;
use crate::matrices;
use crate::measure::time_gpu;
use crate::precision::Precision;
use crate::solve_baseline::{BaselineBicgstab, BaselineGmres, BaselineIlu0, End, Method};
use anyhow::{Context, Result};
use gpu_spmv::nalgebra_sparse::CsrMatrix;
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{
    Bicgstab, BlockJacobi, Chebyshev, Gmres, Ic0, Ilu0, Jacobi, Pcg, PipelinedCg, Precondition,
    Preconditioner, SolverOptions, Stop,
};
use gpu_spmv::{CsrRef, DeviceCsr, DeviceVector, Kernel, Scalar};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// The stopping test of every solve: `|r| <= 1e-6 |b|`, the CG study's, reachable in f32.
pub const STUDY_REL_TOL: f64 = 1e-6;

/// The iteration limit of every solve: BiCGSTAB needs a few thousand iterations on the 4 M-unknown
/// Poisson problems (growing as `1/h`, like CG's), so a solve at the cap has stalled.
pub const MAX_ITERATIONS: usize = 20_000;

/// GMRES's restart length unless `--restart` says otherwise.
pub const DEFAULT_RESTART: usize = 30;

/// The Chebyshev preconditioner of the study: its degree, and the power iteration's steps and
/// interval ratio for its bounds (`Chebyshev::estimate_bounds`).
pub const CHEBYSHEV: (usize, usize, f64) = (4, 20, 30.0);

/// The iteration limit of the solves with a caller's preconditioner ([`OursOnly`], and the
/// baseline's ILU(0)): an ILU(0) apply is two level-scheduled solves of
/// about 630 sequential levels each at 100 k unknowns (a millisecond or more), so a solve that stalls
/// (f32 at the study's tolerance does) would take minutes at [`MAX_ITERATIONS`]; these
/// preconditioners converge in hundreds where they converge at all (Chebyshev(4) took at most 578 at
/// 100 k unknowns in f64).
pub const OURS_ONLY_MAX_ITERATIONS: usize = 2_000;

/// The block size of the study's block-Jacobi preconditioner.
pub const BLOCK_JACOBI: usize = 8;

/// The preconditioners that ours takes as a caller's (`with_preconditioner`), which answer which
/// preconditioner wins; of them only ILU(0) has a baseline, for BiCGSTAB and GMRES
/// ([`BaselineIlu0`]), so the others are ours alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OursOnly {
    Jacobi,
    Chebyshev,
    BlockJacobi,
    Ilu0,
    Ic0,
}

impl OursOnly {
    /// Those of the nonsymmetric solvers (Jacobi has its baseline there).
    pub const ALL: [OursOnly; 3] = [OursOnly::Chebyshev, OursOnly::BlockJacobi, OursOnly::Ilu0];

    /// Those of preconditioned CG on the symmetric positive definite problems.
    pub const SPD: [OursOnly; 4] =
        [OursOnly::Jacobi, OursOnly::Chebyshev, OursOnly::BlockJacobi, OursOnly::Ic0];

    /// The name its records carry.
    pub fn name(self) -> String {
        match self {
            OursOnly::Jacobi => "jacobi".to_owned(),
            OursOnly::Chebyshev => format!("chebyshev({})", CHEBYSHEV.0),
            OursOnly::BlockJacobi => format!("block-jacobi({BLOCK_JACOBI})"),
            OursOnly::Ilu0 => "ilu(0)".to_owned(),
            OursOnly::Ic0 => "ic(0)".to_owned(),
        }
    }

    /// The preconditioner for `case`'s matrix (Chebyshev with a plan of its own).
    fn build<'a, T: BlasScalar>(self, case: &Case<'a, T>) -> Result<Box<dyn Precondition<T> + 'a>> {
        let gpu = case.devices.gpu;
        Ok(match self {
            OursOnly::Jacobi => Box::new(Jacobi::new(gpu, case.diagonal)?),
            OursOnly::Chebyshev => {
                let (degree, steps, ratio) = CHEBYSHEV;
                let inner = gpu.plan(case.da, Kernel::Auto)?;
                let bounds = Chebyshev::estimate_bounds(&inner, steps, ratio)?;
                Box::new(Chebyshev::new(inner, bounds, degree)?)
            }
            OursOnly::BlockJacobi => Box::new(BlockJacobi::new(gpu, CsrRef::from(case.a), BLOCK_JACOBI)?),
            OursOnly::Ilu0 => Box::new(Ilu0::new(gpu, CsrRef::from(case.a))?),
            OursOnly::Ic0 => Box::new(Ic0::new(gpu, CsrRef::from(case.a))?),
        })
    }
}

/// The iterations of the untimed warm-up solve before each timed one.
pub const WARMUP_ITERATIONS: usize = 2;

/// The Péclet numbers of the convection–diffusion problems.
pub const PECLETS: [f64; 3] = [0.0, 100.0, 1000.0];

/// The degrees of the FEM Poisson problems.
pub const FEM_DEGREES: [usize; 2] = [1, 2];

/// Whose solver ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Implementation {
    #[serde(rename = "ours")]
    Ours,
    #[serde(rename = "cusparse+cublas")]
    Baseline,
}

impl Implementation {
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Ours => "ours",
            Implementation::Baseline => "cusparse+cublas",
        }
    }
}

/// A problem of the study, built when its turn comes (the 4 M-unknown ones are large).
pub struct ProblemSpec {
    pub name: String,
    pub description: String,
    pub build: Box<dyn Fn() -> Result<Built>>,
}

impl std::fmt::Debug for ProblemSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProblemSpec").field("name", &self.name).finish()
    }
}

/// A problem's matrix and right-hand side, in f64, and what the right-hand side is.
#[derive(Debug)]
pub struct Built {
    pub a: CsrMatrix<f64>,
    pub b: Vec<f64>,
    pub rhs: &'static str,
    /// Symmetric positive definite, or (for a file) symmetric with a positive diagonal, which it
    /// needs to be: the study runs preconditioned CG on it too (a matrix that is not definite breaks
    /// down, a finding of the run).
    pub spd: bool,
}

/// Whether `a` equals its transpose, bit for bit, and its diagonal is positive.
pub fn symmetric_with_positive_diagonal(a: &CsrMatrix<f64>) -> bool {
    let diagonal_positive = (0..a.nrows()).all(|r| a.get_entry(r, r).is_some_and(|e| e.into_value() > 0.0));
    a.nrows() == a.ncols() && diagonal_positive && a.transpose() == *a
}

/// The study's problems at about `unknowns` unknowns, then the `.mtx` files of `mtx`.
pub fn problems(unknowns: usize, mtx: Option<&Path>) -> Result<Vec<ProblemSpec>> {
    let side = ((unknowns as f64).sqrt().round() as usize).max(1);
    let mut list: Vec<ProblemSpec> = PECLETS
        .into_iter()
        .map(|pe| ProblemSpec {
            name: format!("cd-pe{pe}"),
            description: format!("convection-diffusion {side}x{side}, Pe {pe}"),
            build: Box::new(move || {
                let a = convection_diffusion::<f64>(side, side, pe)?;
                Ok(Built { b: vec![1.0; a.nrows()], a, rhs: "1", spd: pe == 0.0 })
            }),
        })
        .collect();
    list.extend(FEM_DEGREES.into_iter().map(|degree| ProblemSpec {
        name: format!("fem-q{degree}"),
        description: format!("FEM Poisson Q{degree}"),
        build: Box::new(move || {
            let problem = Poisson::with_unknowns(degree, unknowns);
            Ok(Built { a: problem.csr::<f64>(), b: problem.load(), rhs: "load vector", spd: true })
        }),
    }));
    if let Some(dir) = mtx {
        list.extend(matrices::from_matrix_market(dir)?.into_iter().map(|m| ProblemSpec {
            name: m.name,
            description: m.imitates,
            build: Box::new(move || {
                let a = (m.build)()?;
                let (b, rhs) = ones_solution(&a);
                let spd = symmetric_with_positive_diagonal(&a);
                Ok(Built { a, b, rhs, spd })
            }),
        }));
    }
    Ok(list)
}

/// `b = A·1`, so that the solution is known, or `b = 1` where `A·1` is zero (a matrix whose rows sum
/// to 0, as a graph Laplacian's).
fn ones_solution(a: &CsrMatrix<f64>) -> (Vec<f64>, &'static str) {
    let b: Vec<f64> = a.row_iter().map(|row| row.values().iter().sum()).collect();
    if b.iter().any(|&v| v != 0.0) { (b, "A·1") } else { (vec![1.0; a.nrows()], "1") }
}

/// One problem in one precision.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SolveProblem {
    pub name: String,
    pub description: String,
    pub precision: Precision,
    pub unknowns: usize,
    pub nnz: usize,
    pub rhs: String,
    /// The largest over the smallest `|a_ii|` (infinite with a zero on the diagonal): 1 where Jacobi
    /// only scales `A` by a constant.
    pub diagonal_ratio: f64,
    /// Building the matrix and `b` on the CPU, ms.
    pub build_ms: f64,
}

/// One solve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SolveRecord {
    pub problem: String,
    pub precision: Precision,
    /// `bicgstab` or `gmres(m)`.
    pub solver: String,
    pub preconditioner: String,
    pub implementation: Implementation,
    /// `converged`, `iteration limit`, or the breakdown.
    pub end: String,
    pub converged: bool,
    pub iterations: usize,
    /// Wall time of the solve, synchronised at both ends, ms.
    pub time_ms: f64,
    pub iterations_per_second: f64,
    /// The recurrence's `|r| / |b|` at the end (none after a breakdown).
    pub relative_residual: Option<f64>,
    /// `|b - A x| / |b|` of the last iterate, in f64 on the CPU.
    pub true_residual: f64,
    /// The baseline's time to solution over ours (ours only).
    pub speedup_vs_baseline: Option<f64>,
    /// The setup of the preconditioner built for this solve, ms, from a synchronised start to a
    /// synchronised end: ours' [`OursOnly`] preconditioner (`Ilu0::new`: the factorisation, the
    /// level schedules, the upload; Chebyshev's plan and power iteration; ...) or the baseline's
    /// [`BaselineIlu0::new`]; none where the preconditioner is the solver's own (none or Jacobi,
    /// made in its constructor, which is not timed). Absent from the results of older runs.
    #[serde(default)]
    pub setup_ms: Option<f64>,
    /// The baseline's time to solution over ours with each side's [`SolveRecord::setup_ms`] added
    /// (ours only, where both were timed: the ILU(0) pairs).
    #[serde(default)]
    pub speedup_with_setup: Option<f64>,
    /// The same solve's iteration counts on [`SPREAD_PERMUTATIONS`] random symmetric permutations
    /// of the system (`P A Pᵀ`, `P b`: the same iterates in exact arithmetic, other summation orders
    /// everywhere), taken only for an f64 pair of ours and the baseline that both converged and
    /// differ by more than [`iteration_tolerance`]; empty otherwise (see `agreement`).
    #[serde(default)]
    pub iterations_permuted: Vec<usize>,
}

/// What `spmv-bench solve` writes to `solve-results.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SolveResults {
    pub git_commit: String,
    pub started: String,
    pub device: Option<DeviceInfo>,
    pub target_unknowns: usize,
    pub rel_tol: f64,
    pub max_iterations: usize,
    pub restart: usize,
    pub problems: Vec<SolveProblem>,
    pub records: Vec<SolveRecord>,
    /// One apply of ILU(0) (and IC(0) on the symmetric positive definite problems), ours against
    /// cuSPARSE's triangular solves on the same factors (absent from the results of older runs).
    #[serde(default)]
    pub applies: Vec<ApplyRecord>,
    /// The setup of ILU(0) (and IC(0) on the symmetric positive definite problems), ours against
    /// cuSPARSE's device factorisation (absent from the results of older runs).
    #[serde(default)]
    pub factorisations: Vec<FactorisationRecord>,
    /// What did not run, or did not agree, and why.
    pub notes: Vec<String>,
}

/// One apply `z = U⁻¹ L⁻¹ r` of a problem's ILU(0) or IC(0) factors (`r = b`), ours
/// (`gpu_spmv::solve::{Ilu0, Ic0}`, level-scheduled) against cuSPARSE's generic triangular solve
/// (`cusparseSpSV`, [`crate::cusparse::PreparedIluApply`]) on the same factors.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApplyRecord {
    pub problem: String,
    pub precision: Precision,
    /// `ilu(0)` or `ic(0)`.
    pub preconditioner: String,
    /// The levels of our lower and upper solves: their sequential steps.
    pub levels: (usize, usize),
    /// Ours, µs per apply.
    pub ours_us: f64,
    /// cuSPARSE's, µs per apply (none where it did not run: see the notes).
    pub cusparse_us: Option<f64>,
    /// `max_i |z_ours,i - z_cusparse,i| / max_i |z_ours,i|` (none where cuSPARSE did not run).
    pub max_relative_difference: Option<f64>,
}

/// The setup of a problem's ILU(0) or IC(0) preconditioner: ours as a user sees it against
/// cuSPARSE's device factorisation (`csrilu02`, `csric02`: [`crate::cusparse::PreparedFactorisation`]),
/// which a cuSPARSE user would call for the factors that SpSV then applies. The study's baseline apply
/// ([`ApplyRecord`]) still uploads the oracle's factors, so that both sides apply the same ones;
/// cuSPARSE's factors are compared with them here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FactorisationRecord {
    pub problem: String,
    pub precision: Precision,
    /// `ilu(0)` or `ic(0)`.
    pub preconditioner: String,
    /// Ours: one `Ilu0::new` or `Ic0::new` on the host clock from a synchronised start to a
    /// synchronised end, the CPU factorisation (in f64), the level schedules and the upload, ms.
    pub ours_ms: f64,
    /// cuSPARSE's `PreparedFactorisation::new` timed the same way: the copy of `A`'s values, the
    /// descriptor, the work buffer and the analysis with its level information, ms (none where it
    /// did not run: see the notes).
    pub cusparse_analysis_ms: Option<f64>,
    /// cuSPARSE's factorisation alone (`PreparedFactorisation::run`: the copy of `A`'s values and the
    /// routine), ms: the median of `measure::time_gpu`'s samples, as the applies are timed.
    pub cusparse_factorisation_ms: Option<f64>,
    /// `max |f_cusparse - f_ours| / max |f_ours|` over the factors in ours' layout.
    pub max_relative_difference: Option<f64>,
    /// Ours factorised on the device: one `Ilu0::on_device` or `Ic0::on_device` timed as `ours_ms`
    /// is (the pattern read back and preprocessed on the host, the uploads, the factorisation, the
    /// check of its faults), ms (absent from older runs, and where it did not run: see the notes).
    #[serde(default)]
    pub device_setup_ms: Option<f64>,
    /// Ours' `refactor` of the same values, what a Newton loop repeats: the median of
    /// `measure::time_gpu`'s samples, ms.
    #[serde(default)]
    pub device_refactor_ms: Option<f64>,
    /// `max |z_device - z_host| / max |z_host|` of the two factors' applies of `b` (0 in f64: the
    /// same factors).
    #[serde(default)]
    pub device_max_relative_difference: Option<f64>,
}

/// The largest difference in iterations between ours and the baseline of `solver` (`bicgstab` or
/// `gmres(m)`) that counts as agreement, the slack of the library's own test of its solvers against
/// their oracles (`host/tests/gpu/krylov.rs`): the recurrences are the same and differ in the rounding
/// of the dot products, a rounding of `T` each, which a long solve amplifies; BiCGSTAB's residual is
/// far from monotone and its count moves most (98 against 103 iterations in f64 on the H100), and a
/// restarted GMRES moves by up to a cycle's worth (3,845 against 4,071 on FEM Q2 in f64).
pub fn iteration_tolerance(solver: &str, iterations: usize) -> usize {
    if solver == "bicgstab" { 3 + iterations / 8 } else { 2 + iterations / 10 }
}

/// How many random symmetric permutations of a system measure the spread of a solver's iteration
/// count under other summation orders, where ours and the baseline differ past the tolerance.
pub const SPREAD_PERMUTATIONS: u64 = 3;

/// The marker of a note that fails the run: an f64 disagreement.
const DISAGREE: &str = "ITERATION COUNTS DISAGREE";

/// Whether a note is an f64 iteration-count disagreement (the run fails on one).
pub fn is_disagreement(note: &str) -> bool {
    note.contains(DISAGREE)
}

/// Runs the study on `problems` in each of `precisions`, GMRES restarting every `restart` steps: only
/// the problems' setup without `devices`. `log` gets a line per measurement.
pub fn run(
    devices: Option<&Devices<'_>>,
    problems: &[ProblemSpec],
    precisions: &[Precision],
    restart: usize,
    results: &mut SolveResults,
    log: &dyn Fn(&str),
) -> Result<()> {
    if devices.is_none() {
        results.notes.push("no GPU: the problems' setup only".to_owned());
    }
    for spec in problems {
        log(&format!("{}: building ({})", spec.name, spec.description));
        let (built, build_ms) = timed(|| (spec.build)());
        let built = built.with_context(|| format!("building {}", spec.name))?;
        if built.a.nrows() != built.a.ncols() {
            let (rows, cols) = (built.a.nrows(), built.a.ncols());
            results.notes.push(format!("{}: {rows} x {cols}, not square: skipped", spec.name));
            continue;
        }
        for &precision in precisions {
            let problem = Problem { spec, built: &built, build_ms, restart };
            match precision {
                Precision::F32 => study::<f32>(devices, &problem, results, log)?,
                Precision::F64 => study::<f64>(devices, &problem, results, log)?,
            }
        }
    }
    Ok(())
}

/// What every precision of a problem shares.
struct Problem<'a> {
    spec: &'a ProblemSpec,
    built: &'a Built,
    build_ms: f64,
    restart: usize,
}

/// One problem in `T` on the device: what each solve needs.
struct Case<'a, T: Scalar> {
    /// The problem's name.
    problem: &'a str,
    devices: &'a Devices<'a>,
    a: &'a CsrMatrix<T>,
    da: &'a DeviceCsr<T>,
    b_host: &'a [T],
    b: &'a DeviceVector<T>,
    diagonal: &'a [T],
    alg: crate::cusparse::Algorithm,
}

/// A finished solve: how it ended, its time, its last iterate, and its preconditioner's setup time
/// where one was built for it ([`SolveRecord::setup_ms`]).
struct Solved<T> {
    end: End,
    ms: f64,
    x: Vec<T>,
    setup_ms: Option<f64>,
}

fn study<T: BlasScalar>(
    devices: Option<&Devices<'_>>,
    problem: &Problem<'_>,
    results: &mut SolveResults,
    log: &dyn Fn(&str),
) -> Result<()> {
    let (name, precision) = (&problem.spec.name, Precision::of::<T>());
    let name_of_problem = name.as_str();
    let built = problem.built;
    let (offsets, cols, values) = built.a.csr_data();
    let values: Vec<T> = values.iter().map(|&v| T::from_f64(v)).collect();
    let n = built.a.nrows();
    let a = CsrMatrix::try_from_csr_data(n, n, offsets.to_vec(), cols.to_vec(), values)
        .map_err(|e| anyhow::anyhow!("{name} in {precision}: {e}"))?;
    let diagonal = CsrRef::from(&a).diagonal();
    let magnitudes = diagonal.iter().map(|d| d.to_f64().abs());
    let (low, high) = magnitudes.fold((f64::INFINITY, 0.0f64), |(lo, hi), d| (lo.min(d), hi.max(d)));
    results.problems.push(SolveProblem {
        name: name.clone(),
        description: problem.spec.description.clone(),
        precision,
        unknowns: n,
        nnz: a.nnz(),
        rhs: built.rhs.to_owned(),
        diagonal_ratio: if n == 0 { 1.0 } else { high / low },
        build_ms: problem.build_ms,
    });
    let Some(devices) = devices else { return Ok(()) };
    let gpu = devices.gpu;
    let b_host: Vec<T> = built.b.iter().map(|&v| T::from_f64(v)).collect();
    let (da, db) = (gpu.upload_csr(&a)?, gpu.upload_vector(&b_host)?);
    let alg = faster_algorithm(gpu, devices.sparse, &da)?;
    let case = Case {
        problem: name_of_problem,
        devices,
        a: &a,
        da: &da,
        b_host: &b_host,
        b: &db,
        diagonal: &diagonal,
        alg,
    };
    let jacobi = diagonal.iter().all(|d| d.to_f64() != 0.0 && d.to_f64().is_finite());
    if !jacobi {
        results.notes.push(format!("{name} {precision}: a zero or non-finite diagonal entry: no Jacobi"));
    }
    let mut records = Vec::new();
    // The ours-alone solves: their preconditioner is a caller's, and their limit lower.
    let plain = SolverOptions {
        rel_tol: STUDY_REL_TOL,
        max_iterations: OURS_ONLY_MAX_ITERATIONS,
        preconditioner: Preconditioner::None,
    };
    for method in [Method::Bicgstab, Method::Gmres(problem.restart)] {
        for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
            if preconditioner == Preconditioner::Jacobi && !jacobi {
                continue;
            }
            let options =
                SolverOptions { rel_tol: STUDY_REL_TOL, max_iterations: MAX_ITERATIONS, preconditioner };
            let first = records.len();
            for implementation in [Implementation::Ours, Implementation::Baseline] {
                let solved = solve(&case, method, options, implementation)?;
                let preconditioner = preconditioner_name(preconditioner);
                let record = record(&case, name, &method.name(), preconditioner, implementation, solved)?;
                log(&format!(
                    "{name} {precision} {} {} {}: {} after {} iterations in {:.1} ms, true residual {:.2e}",
                    record.solver,
                    record.preconditioner,
                    implementation.name(),
                    record.end,
                    record.iterations,
                    record.time_ms,
                    record.true_residual
                ));
                records.push(record);
            }
            if let [ours, base] = &mut records[first..]
                && needs_spread(ours, base)
            {
                for (record, implementation) in
                    [(ours, Implementation::Ours), (base, Implementation::Baseline)]
                {
                    record.iterations_permuted = permuted_counts(&case, method, options, implementation)?;
                    log(&format!(
                        "{name} {precision} {} {} {}: {} iterations on {SPREAD_PERMUTATIONS} permuted systems {:?}",
                        record.solver,
                        record.preconditioner,
                        implementation.name(),
                        record.iterations,
                        record.iterations_permuted
                    ));
                }
            }
        }
        for preconditioner in OursOnly::ALL {
            ours_alone(&case, Custom::Method(method), plain, preconditioner, &mut records, results, log)?;
            if preconditioner == OursOnly::Ilu0 {
                baseline_ilu0(&case, method, plain, &mut records, results, log)?;
            }
        }
    }
    if built.spd {
        for preconditioner in OursOnly::SPD {
            ours_alone(&case, Custom::Pcg, plain, preconditioner, &mut records, results, log)?;
        }
        // Pipelined CG's cost against Pcg's, with the cheapest preconditioner and the strongest.
        for preconditioner in [OursOnly::Jacobi, OursOnly::Ic0] {
            ours_alone(&case, Custom::PipelinedCg, plain, preconditioner, &mut records, results, log)?;
        }
    }
    compare(&mut records, &mut results.notes);
    results.records.extend(records);
    apply_comparison(&case, OursOnly::Ilu0, results, log)?;
    if built.spd {
        apply_comparison(&case, OursOnly::Ic0, results, log)?;
    }
    Ok(())
}

/// Ours ([`OursOnly::Ilu0`] or [`OursOnly::Ic0`]) against cuSPARSE's SpSV, one apply each on the same
/// factors, recorded in `results.applies`; factors that cannot be built, or a cuSPARSE that fails,
/// are a note.
fn apply_comparison<T: BlasScalar>(
    case: &Case<'_, T>,
    preconditioner: OursOnly,
    results: &mut SolveResults,
    log: &dyn Fn(&str),
) -> Result<()> {
    let (problem, precision, name) = (case.problem, Precision::of::<T>(), preconditioner.name());
    let what = format!("{problem} {precision} {name} apply");
    let gpu = case.devices.gpu;
    let n = case.a.nrows();
    let view = CsrRef::from(case.a);
    let factors = match preconditioner {
        OursOnly::Ic0 => IluFactors::incomplete_cholesky(view),
        _ => IluFactors::new(view),
    };
    // Ours as a user builds it, timed: the same factorisation again (it is deterministic), its level
    // schedules and the upload.
    let built = factors.map_err(anyhow::Error::from).and_then(|factors| {
        let (ours, setup_ms) = timed_gpu(gpu, || -> gpu_spmv::Result<Box<dyn Precondition<T>>> {
            Ok(match preconditioner {
                OursOnly::Ic0 => Box::new(Ic0::new(gpu, view)?),
                _ => Box::new(Ilu0::new(gpu, view)?),
            })
        })?;
        Ok((ours, factors, setup_ms))
    });
    let Some((mut ours, factors, setup_ms)) =
        or_note(built, &mut results.notes, &format!("{what}: not built"))
    else {
        return Ok(());
    };
    let levels = (factors.lower_levels().count(), factors.upper_levels().count());
    let r = case.b;
    let mut z_ours = gpu.zeros::<T>(n)?;
    let ours_us = time_gpu(gpu, |_| Ok(ours.apply(gpu, r, &mut z_ours)?))?.median_us;
    let z_ours = z_ours.to_host(gpu)?;
    let cusparse = || -> Result<(f64, f64)> {
        let (offsets, cols, values) = factors.csr();
        let df = gpu.upload_csr_parts(n, n, offsets, cols, values)?;
        let (y, z) = (gpu.zeros::<T>(n)?, gpu.zeros::<T>(n)?);
        let prepared = PreparedIluApply::new(gpu, case.devices.sparse, &df, r, &y, &z)?;
        let us = time_gpu(gpu, |_| prepared.run())?.median_us;
        let z = z.to_host(gpu)?;
        Ok((us, max_relative_difference(&z_ours, &z)))
    };
    let (cusparse_us, difference) =
        or_note(cusparse(), &mut results.notes, &format!("{what}: cuSPARSE SpSV did not run")).unzip();
    log(&format!(
        "{what}: ours {ours_us:.1} µs, cuSPARSE SpSV {} µs, levels {levels:?}, max rel. difference {}",
        or_na(cusparse_us, |v| format!("{v:.1}")),
        or_na(difference, |v| format!("{v:.2e}")),
    ));
    results.applies.push(ApplyRecord {
        problem: problem.to_owned(),
        precision,
        preconditioner: name,
        levels,
        ours_us,
        cusparse_us,
        max_relative_difference: difference,
    });
    factorisation_comparison(case, preconditioner, &factors, (setup_ms, &z_ours), results, log)
}

/// cuSPARSE's factorisation of the case's matrix (`csrilu02` for [`OursOnly::Ilu0`], `csric02` for
/// [`OursOnly::Ic0`]) timed beside ours' setup on the host, `ours_ms`, and its factors compared with
/// ours', `factors`; and ours on the device ([`device_factorisation`]), its apply of `b` compared
/// with the host's factors' apply, `z_ours`; recorded in `results.factorisations`. A cuSPARSE or a
/// device factorisation that fails (a zero pivot included) is a note.
fn factorisation_comparison<T: BlasScalar>(
    case: &Case<'_, T>,
    preconditioner: OursOnly,
    factors: &IluFactors<T>,
    (ours_ms, z_ours): (f64, &[T]),
    results: &mut SolveResults,
    log: &dyn Fn(&str),
) -> Result<()> {
    let (problem, precision, name) = (case.problem, Precision::of::<T>(), preconditioner.name());
    let gpu = case.devices.gpu;
    let factorisation =
        if preconditioner == OursOnly::Ic0 { Factorisation::Ic0 } else { Factorisation::Ilu0 };
    let routine = factorisation.routine();
    let cusparse = || -> Result<(f64, f64, f64)> {
        let (prepared, analysis_ms) = timed_gpu(gpu, || {
            Ok(PreparedFactorisation::new(gpu, case.devices.sparse, factorisation, case.da))
        })?;
        let mut prepared = prepared?;
        let factorisation_ms = time_gpu(gpu, |_| prepared.run(gpu))?.median_us * 1e-3;
        prepared.zero_pivot()?;
        let (ours, theirs) = (factors.csr().2, prepared.factors(gpu)?);
        anyhow::ensure!(
            ours.len() == theirs.len(),
            "{} factor entries against ours' {}",
            theirs.len(),
            ours.len()
        );
        Ok((analysis_ms, factorisation_ms, max_relative_difference(ours, &theirs)))
    };
    let what = format!("{problem} {precision} {name} setup: cuSPARSE {routine} did not run");
    let cusparse = or_note(cusparse(), &mut results.notes, &what);
    let (analysis_ms, factorisation_ms, difference) =
        (cusparse.map(|c| c.0), cusparse.map(|c| c.1), cusparse.map(|c| c.2));
    let device = match preconditioner {
        OursOnly::Ic0 => device_factorisation(case, Ic0::on_device, Ic0::refactor, Ic0::verify),
        _ => device_factorisation(case, Ilu0::on_device, Ilu0::refactor, Ilu0::verify),
    }
    .map(|(setup_ms, refactor_ms, z)| (setup_ms, refactor_ms, max_relative_difference(z_ours, &z)));
    let what = format!("{problem} {precision} {name} setup: ours on the device did not run");
    let device = or_note(device, &mut results.notes, &what);
    log(&format!(
        "{problem} {precision} {name} setup: ours {ours_ms:.2} ms, cuSPARSE {routine} analysis {} ms and \
         factorisation {} ms, factors' max rel. difference {}; ours on the device: setup {} ms, \
         refactor {} ms, apply's max rel. difference {}",
        or_na(analysis_ms, |v| format!("{v:.2}")),
        or_na(factorisation_ms, |v| format!("{v:.2}")),
        or_na(difference, |v| format!("{v:.2e}")),
        or_na(device.map(|d| d.0), |v| format!("{v:.2}")),
        or_na(device.map(|d| d.1), |v| format!("{v:.3}")),
        or_na(device.map(|d| d.2), |v| format!("{v:.2e}")),
    ));
    results.factorisations.push(FactorisationRecord {
        problem: problem.to_owned(),
        precision,
        preconditioner: name,
        ours_ms,
        cusparse_analysis_ms: analysis_ms,
        cusparse_factorisation_ms: factorisation_ms,
        max_relative_difference: difference,
        device_setup_ms: device.map(|d| d.0),
        device_refactor_ms: device.map(|d| d.1),
        device_max_relative_difference: device.map(|d| d.2),
    });
    Ok(())
}

/// Ours factorised on the device: `make` (`Ilu0::on_device` or `Ic0::on_device`) as a user calls it,
/// from a synchronised start to a synchronised end (the pattern read back and preprocessed on the
/// host, the uploads, the factorisation and the check of its faults), ms; then `refactor` of the same
/// values, what a Newton loop repeats after `update_values`, the median of `measure::time_gpu`'s
/// samples, ms, checked by `verify`; and the apply of `b` with the factors.
fn device_factorisation<T: BlasScalar, P: Precondition<T>>(
    case: &Case<'_, T>,
    make: impl FnOnce(&gpu_spmv::Gpu, &DeviceCsr<T>) -> gpu_spmv::Result<P>,
    refactor: impl Fn(&mut P, &gpu_spmv::Gpu, &DeviceCsr<T>) -> gpu_spmv::Result<()>,
    verify: impl Fn(&P, &gpu_spmv::Gpu) -> gpu_spmv::Result<()>,
) -> Result<(f64, f64, Vec<T>)> {
    let gpu = case.devices.gpu;
    let (made, setup_ms) = timed_gpu(gpu, || make(gpu, case.da))?;
    let mut made = made;
    let refactor_ms = time_gpu(gpu, |_| Ok(refactor(&mut made, gpu, case.da)?))?.median_us * 1e-3;
    verify(&made, gpu)?;
    let mut z = gpu.zeros::<T>(case.da.nrows())?;
    made.apply(gpu, case.b, &mut z)?;
    Ok((setup_ms, refactor_ms, z.to_host(gpu)?))
}

/// `result`'s value, or `None` after noting `what` and the error: a failure that is a finding of
/// the run, not an error of it.
fn or_note<R>(result: Result<R>, notes: &mut Vec<String>, what: &str) -> Option<R> {
    result.map_err(|e| notes.push(format!("{what}: {e:#}"))).ok()
}

/// `max_i |a_i - b_i| / max_i |a_i|` in f64: 0 where both are zero, and NaN where either holds one
/// (an element left unwritten shows).
pub fn max_relative_difference<T: Scalar>(a: &[T], b: &[T]) -> f64 {
    let scale = a.iter().map(|v| v.to_f64().abs()).fold(0.0f64, f64::max);
    let mut diff = 0.0f64;
    for (u, v) in a.iter().zip(b) {
        let d = (u.to_f64() - v.to_f64()).abs();
        if d.is_nan() {
            return f64::NAN;
        }
        diff = diff.max(d);
    }
    if diff == 0.0 { 0.0 } else { diff / scale }
}

/// One solve from `x = 0`, after a warm-up solve of [`WARMUP_ITERATIONS`].
fn solve<T: BlasScalar>(
    case: &Case<'_, T>,
    method: Method,
    options: SolverOptions,
    implementation: Implementation,
) -> Result<Solved<T>> {
    let Devices { gpu, sparse, blas } = *case.devices;
    let (b, diagonal, n) = (case.b, case.diagonal, case.a.nrows());
    let x0 = gpu.zeros::<T>(n)?;
    let run = |options: SolverOptions| -> Result<Solved<T>> {
        let plan = || gpu.plan(case.da, Kernel::Auto);
        let mut x = gpu.zeros::<T>(n)?;
        let (end, ms, x) = match (implementation, method) {
            (Implementation::Ours, Method::Bicgstab) => {
                let mut solver = Bicgstab::new(plan()?, options, Some(diagonal))?;
                let (result, ms) = timed_gpu(gpu, || Ok(solver.solve(b, &mut x)))?;
                (End::of(result)?, ms, x.to_host(gpu)?)
            }
            (Implementation::Ours, Method::Gmres(m)) => {
                let mut solver = Gmres::new(plan()?, options, m, Some(diagonal))?;
                let (result, ms) = timed_gpu(gpu, || Ok(solver.solve(b, &mut x)))?;
                (End::of(result)?, ms, x.to_host(gpu)?)
            }
            (Implementation::Baseline, Method::Bicgstab) => {
                let mut solver =
                    BaselineBicgstab::new(gpu, sparse, blas, case.alg, case.da, options, diagonal)?;
                let (end, ms) = timed_gpu(gpu, || Ok(solver.solve(b, &x0)))?;
                (end?, ms, solver.x().to_host(gpu)?)
            }
            (Implementation::Baseline, Method::Gmres(m)) => {
                let mut solver =
                    BaselineGmres::new(gpu, sparse, blas, case.alg, case.da, options, m, diagonal)?;
                let (end, ms) = timed_gpu(gpu, || Ok(solver.solve(b, &x0)))?;
                (end?, ms, solver.x().to_host(gpu)?)
            }
        };
        Ok(Solved { end, ms, x, setup_ms: None })
    };
    run(SolverOptions { max_iterations: WARMUP_ITERATIONS, ..options })?;
    run(options)
}

/// Whether a pair of ours and the baseline needs its spread under other summation orders measured:
/// f64 solves that both converged, to true residuals within 10 times the tolerance, whose counts
/// differ by more than [`iteration_tolerance`] ([`agreement`] then reads the spread).
fn needs_spread(ours: &SolveRecord, base: &SolveRecord) -> bool {
    let fine = |r: &SolveRecord| r.converged && r.true_residual <= 10.0 * STUDY_REL_TOL;
    ours.precision == Precision::F64
        && fine(ours)
        && fine(base)
        && ours.iterations.abs_diff(base.iterations) > iteration_tolerance(&ours.solver, ours.iterations)
}

/// The iteration counts of `implementation`'s solve on [`SPREAD_PERMUTATIONS`] random symmetric
/// permutations of the case's system (seeds 1, 2, ...): `P A Pᵀ x' = P b` has the solution `P x`
/// and, in exact arithmetic, the same residual norms at every iteration, so its count differs from
/// the unpermuted one only by rounding, each product and dot product summing in another order.
fn permuted_counts<T: BlasScalar>(
    case: &Case<'_, T>,
    method: Method,
    options: SolverOptions,
    implementation: Implementation,
) -> Result<Vec<usize>> {
    let gpu = case.devices.gpu;
    (1..=SPREAD_PERMUTATIONS)
        .map(|seed| {
            let (a, b_host, diagonal) = permuted_system(case.a, case.b_host, case.diagonal, seed)
                .with_context(|| format!("{} permuted", case.problem))?;
            let (da, b) = (gpu.upload_csr(&a)?, gpu.upload_vector(&b_host)?);
            let permuted = Case { a: &a, da: &da, b_host: &b_host, b: &b, diagonal: &diagonal, ..*case };
            Ok(solve(&permuted, method, options, implementation)?.end.iterations())
        })
        .collect()
}

/// `P A Pᵀ`, `P b` and `P d` for the random permutation `P` of `seed` (ChaCha8): row and column
/// `new` of the result are row and column `new_to_old[new]` of `a`, each row's entries sorted by
/// column.
fn permuted_system<T: Copy>(
    a: &CsrMatrix<T>,
    b: &[T],
    diagonal: &[T],
    seed: u64,
) -> Result<(CsrMatrix<T>, Vec<T>, Vec<T>)> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let n = a.nrows();
    let mut new_to_old: Vec<usize> = (0..n).collect();
    new_to_old.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    let mut old_to_new = vec![0; n];
    for (new, &old) in new_to_old.iter().enumerate() {
        old_to_new[old] = new;
    }
    let mut entries: Vec<(usize, usize, T)> =
        a.triplet_iter().map(|(i, j, &v)| (old_to_new[i], old_to_new[j], v)).collect();
    entries.sort_unstable_by_key(|&(i, j, _)| (i, j));
    let mut offsets = vec![0; n + 1];
    for &(i, _, _) in &entries {
        offsets[i + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let (cols, values) = entries.iter().map(|&(_, j, v)| (j, v)).unzip();
    let permuted = CsrMatrix::try_from_csr_data(n, n, offsets, cols, values)
        .map_err(|e| anyhow::anyhow!("a permuted matrix: {e}"))?;
    let gather = |v: &[T]| new_to_old.iter().map(|&old| v[old]).collect();
    Ok((permuted, gather(b), gather(diagonal)))
}

/// The solver of an ours-alone row: one of the nonsymmetric methods, or preconditioned CG.
#[derive(Debug, Clone, Copy)]
enum Custom {
    Method(Method),
    Pcg,
    PipelinedCg,
}

impl Custom {
    fn name(self) -> String {
        match self {
            Custom::Method(method) => method.name(),
            Custom::Pcg => "pcg".to_owned(),
            Custom::PipelinedCg => "pipelined-cg".to_owned(),
        }
    }
}

/// One ours-alone solve of `case` by `solver` preconditioned by `preconditioner`, recorded; a
/// preconditioner that cannot be built for the matrix (a singular block, an interval the power
/// iteration does not find, an IC(0) pivot that is not positive) is a note, a finding of the run.
fn ours_alone<T: BlasScalar>(
    case: &Case<'_, T>,
    solver: Custom,
    options: SolverOptions,
    preconditioner: OursOnly,
    records: &mut Vec<SolveRecord>,
    results: &mut SolveResults,
    log: &dyn Fn(&str),
) -> Result<()> {
    let (problem, precision, name) = (case.problem, Precision::of::<T>(), preconditioner.name());
    match solve_custom(case, solver, options, preconditioner) {
        Ok(solved) => {
            let record = record(case, problem, &solver.name(), &name, Implementation::Ours, solved)?;
            log(&format!(
                "{problem} {precision} {} {name} ours: {} after {} iterations in {:.1} ms, true residual {:.2e}",
                record.solver, record.end, record.iterations, record.time_ms, record.true_residual
            ));
            records.push(record);
        }
        Err(e) => {
            results.notes.push(format!("{problem} {precision} {} {name}: not built: {e:#}", solver.name()))
        }
    }
    Ok(())
}

/// One solve of ours from `x = 0` preconditioned by `preconditioner`, built before the clock starts,
/// after a warm-up solve of [`WARMUP_ITERATIONS`].
fn solve_custom<T: BlasScalar>(
    case: &Case<'_, T>,
    solver: Custom,
    options: SolverOptions,
    preconditioner: OursOnly,
) -> Result<Solved<T>> {
    let gpu = case.devices.gpu;
    let (b, n) = (case.b, case.a.nrows());
    let run = |options: SolverOptions| -> Result<Solved<T>> {
        let (preconditioner, setup_ms) = timed_gpu(gpu, || Ok(preconditioner.build(case)))?;
        let preconditioner = preconditioner?;
        let plan = gpu.plan(case.da, Kernel::Auto)?;
        let mut x = gpu.zeros::<T>(n)?;
        let result = match solver {
            Custom::Method(Method::Bicgstab) => {
                let mut solver = Bicgstab::with_preconditioner(plan, options, preconditioner)?;
                timed_gpu(gpu, || Ok(solver.solve(b, &mut x)))?
            }
            Custom::Method(Method::Gmres(m)) => {
                let mut solver = Gmres::with_preconditioner(plan, options, m, preconditioner)?;
                timed_gpu(gpu, || Ok(solver.solve(b, &mut x)))?
            }
            Custom::Pcg => {
                let mut solver = Pcg::with_preconditioner(plan, options, preconditioner)?;
                timed_gpu(gpu, || Ok(solver.solve(b, &mut x)))?
            }
            Custom::PipelinedCg => {
                let mut solver = PipelinedCg::with_preconditioner(plan, options, preconditioner)?;
                timed_gpu(gpu, || Ok(solver.solve(b, &mut x)))?
            }
        };
        let (result, ms) = result;
        Ok(Solved { end: End::of(result)?, ms, x: x.to_host(gpu)?, setup_ms: Some(setup_ms) })
    };
    run(SolverOptions { max_iterations: WARMUP_ITERATIONS, ..options })?;
    run(options)
}

/// The baseline of ours' ILU(0) solve of `case` by `method`: the same options, from `x = 0`, on
/// cuSPARSE and cuBLAS preconditioned by cuSPARSE's ILU(0) ([`BaselineIlu0`]), recorded beside
/// ours'; factors cuSPARSE cannot make (a zero pivot) are a note, a finding of the run.
fn baseline_ilu0<T: BlasScalar>(
    case: &Case<'_, T>,
    method: Method,
    options: SolverOptions,
    records: &mut Vec<SolveRecord>,
    results: &mut SolveResults,
    log: &dyn Fn(&str),
) -> Result<()> {
    let (problem, precision, name) = (case.problem, Precision::of::<T>(), OursOnly::Ilu0.name());
    let implementation = Implementation::Baseline;
    match solve_baseline_ilu0(case, method, options) {
        Ok(solved) => {
            let record = record(case, problem, &method.name(), &name, implementation, solved)?;
            log(&format!(
                "{problem} {precision} {} {name} {}: {} after {} iterations in {:.1} ms (setup {}), true \
                 residual {:.2e}",
                record.solver,
                implementation.name(),
                record.end,
                record.iterations,
                record.time_ms,
                or_na(record.setup_ms, |v| format!("{v:.1} ms")),
                record.true_residual
            ));
            records.push(record);
        }
        Err(e) => results.notes.push(format!(
            "{problem} {precision} {} {name} {}: not built: {e:#}",
            method.name(),
            implementation.name()
        )),
    }
    Ok(())
}

/// One solve of the baseline from `x = 0` preconditioned by cuSPARSE's ILU(0), its setup
/// ([`BaselineIlu0::new`]) timed before the solve's clock starts, after a warm-up solve of
/// [`WARMUP_ITERATIONS`] with a setup of its own, as [`solve_custom`] builds ours'.
fn solve_baseline_ilu0<T: BlasScalar>(
    case: &Case<'_, T>,
    method: Method,
    options: SolverOptions,
) -> Result<Solved<T>> {
    let Devices { gpu, sparse, blas } = *case.devices;
    let (b, da) = (case.b, case.da);
    let x0 = gpu.zeros::<T>(case.a.nrows())?;
    let run = |options: SolverOptions| -> Result<Solved<T>> {
        let (ilu, setup_ms) = timed_gpu(gpu, || Ok(BaselineIlu0::new(gpu, sparse, da)))?;
        let ilu = ilu?;
        let (end, ms, x) = match method {
            Method::Bicgstab => {
                let mut solver = BaselineBicgstab::with_ilu0(gpu, sparse, blas, case.alg, da, options, ilu)?;
                let (end, ms) = timed_gpu(gpu, || Ok(solver.solve(b, &x0)))?;
                (end?, ms, solver.x().to_host(gpu)?)
            }
            Method::Gmres(m) => {
                let mut solver = BaselineGmres::with_ilu0(gpu, sparse, blas, case.alg, da, options, m, ilu)?;
                let (end, ms) = timed_gpu(gpu, || Ok(solver.solve(b, &x0)))?;
                (end?, ms, solver.x().to_host(gpu)?)
            }
        };
        Ok(Solved { end, ms, x, setup_ms: Some(setup_ms) })
    };
    run(SolverOptions { max_iterations: WARMUP_ITERATIONS, ..options })?;
    run(options)
}

/// The record of one solve, its true residual computed from its last iterate.
fn record<T: Scalar>(
    case: &Case<'_, T>,
    problem: &str,
    solver: &str,
    preconditioner: &str,
    implementation: Implementation,
    solved: Solved<T>,
) -> Result<SolveRecord> {
    let iterations = solved.end.iterations();
    let relative_residual = match solved.end {
        End::Stopped(outcome) => Some(outcome.relative_residual),
        End::Breakdown { .. } => None,
    };
    Ok(SolveRecord {
        problem: problem.to_owned(),
        precision: Precision::of::<T>(),
        solver: solver.to_owned(),
        preconditioner: preconditioner.to_owned(),
        implementation,
        end: solved.end.describe(),
        converged: matches!(solved.end, End::Stopped(o) if o.stop == Stop::Converged),
        iterations,
        time_ms: solved.ms,
        iterations_per_second: iterations as f64 / (solved.ms * 1e-3),
        relative_residual,
        true_residual: true_residual(CsrRef::from(case.a), case.b_host, &solved.x)?,
        speedup_vs_baseline: None,
        setup_ms: solved.setup_ms,
        speedup_with_setup: None,
        iterations_permuted: Vec::new(),
    })
}

/// Fills ours' speedups over the baseline in one problem's records (with the setups added where both
/// sides' were timed), and notes the iteration counts or ends that differ beyond
/// [`iteration_tolerance`].
pub fn compare(records: &mut [SolveRecord], notes: &mut Vec<String>) {
    let pairs: Vec<(usize, usize)> = (0..records.len())
        .filter(|&i| records[i].implementation == Implementation::Ours)
        .filter_map(|i| {
            let r = &records[i];
            let j = records.iter().position(|o| {
                o.implementation == Implementation::Baseline
                    && (&o.problem, o.precision, &o.solver, &o.preconditioner)
                        == (&r.problem, r.precision, &r.solver, &r.preconditioner)
            })?;
            Some((i, j))
        })
        .collect();
    for (i, j) in pairs {
        let base = records[j].clone();
        let ours = &mut records[i];
        ours.speedup_vs_baseline = Some(base.time_ms / ours.time_ms);
        ours.speedup_with_setup = ours
            .setup_ms
            .zip(base.setup_ms)
            .map(|(setup, base_setup)| (base.time_ms + base_setup) / (ours.time_ms + setup));
        let tolerance = iteration_tolerance(&ours.solver, ours.iterations);
        if let Some(note) = agreement(ours, &base, tolerance) {
            notes.push(note);
        }
    }
}

/// Whether ours and the baseline agree, `None` when they do, else the note that says how.
///
/// A converged solve whose true residual is over 10 times the tolerance is a false convergence and
/// a disagreement whatever the other did. Where either broke down, the counts are not compared:
/// BiCGSTAB's breakdowns on these problems come at iterations that the rounding of the dot products
/// decides (measured on the H100: both implementations break down, at 385 and 178 iterations on the
/// same system; `PERF.md`, section 19). Otherwise the counts must agree within `tolerance`; in f32
/// a difference is noted, not a failure.
fn agreement(ours: &SolveRecord, base: &SolveRecord, tolerance: usize) -> Option<String> {
    let false_convergence = |r: &SolveRecord| r.converged && r.true_residual > 10.0 * STUDY_REL_TOL;
    let broke_down = |r: &SolveRecord| r.end.starts_with("breakdown");
    let head = if false_convergence(ours) || false_convergence(base) {
        format!("{DISAGREE} (a converged recurrence whose true residual is far above the tolerance):")
    } else if broke_down(ours) || broke_down(base) {
        "iteration counts not comparable (a breakdown's iteration depends on rounding):".to_owned()
    } else if ours.iterations.abs_diff(base.iterations) <= tolerance && ours.converged == base.converged {
        return None;
    } else if let Some(gap) = spread_gap(ours, base).filter(|&gap| gap <= tolerance) {
        format!(
            "iteration counts differ, by no more than rounding moves each (the ranges of counts on {SPREAD_PERMUTATIONS} \
             random symmetric permutations of the system, ours {:?} and the baseline's {:?}, are {gap} apart):",
            ours.iterations_permuted, base.iterations_permuted
        )
    } else if ours.precision == Precision::F64 {
        format!("{DISAGREE}:")
    } else {
        "iteration counts differ (f32: rounding of the dot products, not a failure):".to_owned()
    };
    Some(disagreement(ours, base, tolerance, &head))
}

/// How far apart the ranges of ours' and the baseline's iteration counts lie (0 where they overlap),
/// each range over the unpermuted count and those on the permuted systems; `None` where the spread
/// was not measured.
fn spread_gap(ours: &SolveRecord, base: &SolveRecord) -> Option<usize> {
    let range = |r: &SolveRecord| {
        let counts = || r.iterations_permuted.iter().chain([&r.iterations]);
        (!r.iterations_permuted.is_empty())
            .then(|| (*counts().min().unwrap_or(&0), *counts().max().unwrap_or(&0)))
    };
    let ((ours_low, ours_high), (base_low, base_high)) = (range(ours)?, range(base)?);
    Some(ours_low.max(base_low).saturating_sub(ours_high.min(base_high)))
}

/// The note of ours and the baseline ending apart, after `head`.
fn disagreement(ours: &SolveRecord, base: &SolveRecord, tolerance: usize, head: &str) -> String {
    format!(
        "{} {} {} {}: {head} ours {} ({}, true residual {:.2e}), cusparse+cublas {} ({}, true residual \
         {:.2e}), tolerance {tolerance}",
        ours.problem,
        ours.precision,
        ours.solver,
        ours.preconditioner,
        ours.iterations,
        ours.end,
        ours.true_residual,
        base.iterations,
        base.end,
        base.true_residual,
    )
}

/// Which preconditioner solved one (problem, precision, solver) fastest, ours.
#[derive(Debug, Clone, PartialEq)]
pub struct Winner {
    pub problem: String,
    pub precision: Precision,
    pub solver: String,
    /// The preconditioner of the fastest converged solve, or [`NOTHING_CONVERGED`].
    pub winner: String,
    /// Each preconditioner's iterations, in the order the study ran them.
    pub iterations: Vec<(String, usize)>,
    pub diagonal_ratio: f64,
}

/// The [`Winner::winner`] of a (problem, precision, solver) that no preconditioner solved.
pub const NOTHING_CONVERGED: &str = "nothing converged";

impl Winner {
    /// The iterations of the solve preconditioned by `name`, if it ran.
    fn iterations_of(&self, name: &str) -> Option<usize> {
        self.iterations.iter().find(|(p, _)| p == name).map(|&(_, i)| i)
    }
}

impl SolveResults {
    /// Writes `solve-results.json` and `solve-report.md` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("solve-results.json"), serde_json::to_string_pretty(self)?)?;
        std::fs::write(dir.join("solve-report.md"), self.markdown())?;
        Ok(())
    }

    fn find(&self, like: &SolveRecord, preconditioner: &str) -> Option<&SolveRecord> {
        self.records.iter().find(|r| {
            (&r.problem, r.precision, &r.solver, r.implementation)
                == (&like.problem, like.precision, &like.solver, like.implementation)
                && r.preconditioner == preconditioner
        })
    }

    /// Per (problem, precision, solver) of ours, in the order run: the fastest converged solve's
    /// preconditioner.
    pub fn winners(&self) -> Vec<Winner> {
        let mut winners: Vec<Winner> = Vec::new();
        let mut fastest: Vec<Option<f64>> = Vec::new();
        for r in self.records.iter().filter(|r| r.implementation == Implementation::Ours) {
            let at = winners
                .iter()
                .position(|w| (&w.problem, w.precision, &w.solver) == (&r.problem, r.precision, &r.solver));
            let at = at.unwrap_or_else(|| {
                let diagonal_ratio = self
                    .problems
                    .iter()
                    .find(|p| p.name == r.problem && p.precision == r.precision)
                    .map_or(f64::NAN, |p| p.diagonal_ratio);
                winners.push(Winner {
                    problem: r.problem.clone(),
                    precision: r.precision,
                    solver: r.solver.clone(),
                    winner: NOTHING_CONVERGED.to_owned(),
                    iterations: Vec::new(),
                    diagonal_ratio,
                });
                fastest.push(None);
                winners.len() - 1
            });
            winners[at].iterations.push((r.preconditioner.clone(), r.iterations));
            if r.converged && fastest[at].is_none_or(|t| r.time_ms < t) {
                fastest[at] = Some(r.time_ms);
                winners[at].winner = r.preconditioner.clone();
            }
        }
        winners
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Solver study: BiCGSTAB and GMRES({}), and CG on the SPD problems (issue 28)\n",
            self.restart
        );
        let _ = writeln!(out, "Commit `{}`, started {}.\n", self.git_commit, self.started);
        match &self.device {
            Some(d) => {
                let _ = writeln!(
                    out,
                    "Device: {} ({} SMs), driver {}; streaming read {:.0} GB/s. Clocks and temperature at \
                     start: {}; at end: {}.\n",
                    d.name,
                    d.sm_count,
                    d.driver_version,
                    d.read_gbps,
                    d.clocks_start.as_deref().unwrap_or("n/a"),
                    d.clocks_end.as_deref().unwrap_or("n/a"),
                );
            }
            None => {
                let _ = writeln!(out, "No GPU: the problems' setup only.\n");
            }
        }
        let _ = writeln!(
            out,
            "About {} unknowns per generated problem; initial guess 0; stop at `|r| <= {:e} |b|` (for \
             both, of a recomputed `b - A x`) or at {} iterations (BiCGSTAB: loops of two products; GMRES: Arnoldi \
             steps). *ms* is the wall time of one solve from a synchronised start to a synchronised end, \
             after a warm-up solve of {} iterations; *setup ms* is the setup of a preconditioner built for \
             the solve (not part of *ms*; n/a for none and Jacobi, which the solvers make themselves), \
             timed the same way; *true residual* is `|b - A x| / |b|` in f64 on the \
             CPU; *vs baseline* is the baseline's time to solution over ours. Ours is `gpu_spmv::solve` on \
             a plan of `Kernel::Auto`; the baseline is the same recurrence host-driven on cuSPARSE SpMV \
             (the faster CSR algorithm) and cuBLAS in host pointer mode, with ILU(0) cuSPARSE's \
             (`csrilu02`, applied by SpSV: see its section). Iteration counts agree within \
             `3 + iterations / 8` for BiCGSTAB and `2 + iterations / 10` for GMRES, else a note; counts ending in a breakdown are not compared, and a convergence whose true residual is over 10 times the tolerance is a disagreement.\n",
            self.target_unknowns, self.rel_tol, self.max_iterations, WARMUP_ITERATIONS
        );
        self.problems_table(&mut out);
        for precision in Precision::ALL {
            if self.records.iter().any(|r| r.precision == precision) {
                self.solves_table(precision, &mut out);
            }
        }
        if !self.records.is_empty() {
            self.ilu_table(&mut out);
            self.preconditioners(&mut out);
        }
        if !self.applies.is_empty() {
            self.applies_table(&mut out);
        }
        if !self.factorisations.is_empty() {
            self.factorisations_table(&mut out);
        }
        notes_section(&self.notes, &mut out);
        out
    }

    fn problems_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Problems\n\n| problem | description | prec | unknowns | nnz | b | diagonal max/min | build ms |\n\
             |---|---|---|---:|---:|---|---:|---:|"
        );
        for p in &self.problems {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {:.3} | {:.0} |",
                p.name, p.description, p.precision, p.unknowns, p.nnz, p.rhs, p.diagonal_ratio, p.build_ms
            );
        }
        out.push('\n');
    }

    fn solves_table(&self, precision: Precision, out: &mut String) {
        let _ = writeln!(
            out,
            "## {precision}\n\n| problem | solver | precond. | implementation | end | iterations | ms | setup ms | \
             it/s | rel. residual | true residual | vs baseline |\n\
             |---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in self.records.iter().filter(|r| r.precision == precision) {
            let end = if r.converged { r.end.clone() } else { format!("**{}**", r.end) };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {:.0} | {} | {:.2e} | {} |",
                r.problem,
                r.solver,
                r.preconditioner,
                r.implementation.name(),
                end,
                r.iterations,
                r.time_ms,
                or_na(r.setup_ms, |v| format!("{v:.1}")),
                r.iterations_per_second,
                or_na(r.relative_residual, |v| format!("{v:.2e}")),
                r.true_residual,
                or_na(r.speedup_vs_baseline, |v| format!("{v:.2}x")),
            );
        }
        out.push('\n');
    }

    /// BiCGSTAB and GMRES with ILU(0), ours against the baseline with cuSPARSE's ILU(0): the
    /// iteration counts side by side, and the times to solution without and with each side's setup.
    fn ilu_table(&self, out: &mut String) {
        let ilu = OursOnly::Ilu0.name();
        let pairs: Vec<(&SolveRecord, &SolveRecord)> = self
            .records
            .iter()
            .filter(|r| r.implementation == Implementation::Ours && r.preconditioner == ilu)
            .filter_map(|r| {
                let mut like = r.clone();
                like.implementation = Implementation::Baseline;
                Some((r, self.find(&like, &ilu)?))
            })
            .collect();
        if pairs.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "## ILU(0): ours against the baseline with cuSPARSE's ILU(0)\n\n\
             BiCGSTAB and GMRES right-preconditioned by ILU(0), stopped as above or at {OURS_ONLY_MAX_ITERATIONS} \
             iterations. Ours: `solve::Ilu0` (the factors computed on the CPU in f64, rounded once, \
             uploaded, applied by level-scheduled solves). The baseline: the same host-driven recurrence \
             with the factors of cuSPARSE's `csrilu02` on the device, applied by two `cusparseSpSV_solve` \
             (`L` unit lower, then `U`). *ms* is the solve alone, as in the tables above, and *vs \
             baseline* the baseline's over ours, the solves tables' column; *setup ms* builds the \
             preconditioner as a user's solve does, from a synchronised start to a synchronised end: ours \
             `Ilu0::new` (the factorisation, the level schedules, the upload), the baseline's the copy of \
             `A`'s values, `csrilu02`'s analysis and factorisation, its zero-pivot check and both SpSV \
             analyses; *with setup* is the baseline's time to solution over ours with each side's setup \
             added. A fair comparison counts the setup on both sides or on neither, so both are given: \
             without it for a preconditioner reused over many solves, with it for one solve. The \
             iteration counts should agree within *tolerance*, the rule of every pair above (a \
             difference past it is a note, in f64 a disagreement that fails the run): the recurrences \
             are the same step for step and the factors \
             are ILU(0) of the same matrix, equal to rounding (the setup table's *max rel. difference*: \
             csrilu02 rounds every step in the working precision where ours rounds the f64 factors \
             once), but SpSV sums each row in its own order, and cuBLAS's dot products sum in another \
             order than ours; BiCGSTAB's residual is far from monotone, so these roundings can move its \
             count by a few iterations. The spread over permuted systems is not taken here: \
             renumbering the unknowns changes ILU(0) itself.\n\n\
             | problem | prec | solver | ours its | baseline its | tolerance | ours ms | baseline ms | \
             vs baseline | ours setup ms | baseline setup ms | with setup |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for (ours, base) in pairs {
            let its = |r: &SolveRecord| {
                if r.converged { r.iterations.to_string() } else { format!("{} ({})", r.iterations, r.end) }
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} |",
                ours.problem,
                ours.precision,
                ours.solver,
                its(ours),
                its(base),
                iteration_tolerance(&ours.solver, ours.iterations),
                ours.time_ms,
                base.time_ms,
                or_na(ours.speedup_vs_baseline, |v| format!("{v:.2}x")),
                or_na(ours.setup_ms, |v| format!("{v:.1}")),
                or_na(base.setup_ms, |v| format!("{v:.1}")),
                or_na(ours.speedup_with_setup, |v| format!("{v:.2}x")),
            );
        }
        out.push('\n');
    }

    /// One ILU(0)/IC(0) apply, ours against cuSPARSE's SpSV.
    fn applies_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## ILU(0) and IC(0) apply: ours against cuSPARSE SpSV\n\n\
             One apply `z = U⁻¹ L⁻¹ b` of the same factors: ours (level-scheduled, `solve::Ilu0`/`Ic0`) \
             and cuSPARSE's generic triangular solve (`cusparseSpSV_solve` with `L`, unit diagonal, then \
             `U`, on one CSR matrix; analysis not timed). µs per apply: the median of the samples \
             `measure::time_gpu` takes with CUDA events on the stream, after its warm-up, as the products \
             are timed. *speedup* is cuSPARSE's time over ours; *max rel. difference* is \
             `max |z_ours - z_cusparse| / max |z_ours|`.\n\n\
             | problem | prec | precond. | levels L/U | ours µs/apply | cuSPARSE µs/apply | speedup | \
             max rel. difference |\n|---|---|---|---:|---:|---:|---:|---:|"
        );
        for a in &self.applies {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}/{} | {:.1} | {} | {} | {} |",
                a.problem,
                a.precision,
                a.preconditioner,
                a.levels.0,
                a.levels.1,
                a.ours_us,
                or_na(a.cusparse_us, |v| format!("{v:.1}")),
                or_na(a.cusparse_us, |v| format!("{:.2}x", v / a.ours_us)),
                or_na(a.max_relative_difference, |v| format!("{v:.2e}")),
            );
        }
        out.push('\n');
    }

    /// The ILU(0)/IC(0) setup, ours against cuSPARSE's csrilu02/csric02.
    fn factorisations_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## ILU(0) and IC(0) setup: ours against cuSPARSE csrilu02/csric02\n\n\
             *ours ms*: one `Ilu0::new`/`Ic0::new` as a user calls it (the factorisation on the CPU in \
             f64, the level schedules, the upload), from a synchronised start to a synchronised end. \
             cuSPARSE factorises on the device (`csrilu02` for ILU(0), `csric02` for IC(0); legacy API, \
             level policy): *analysis ms* is its preparation, once per pattern (the copy of `A`'s \
             values, the work buffer, `_analysis`), timed the same way; *factorisation ms* is the \
             routine alone with the copy of `A`'s values it factorises in place, what a Newton loop \
             repeats for new values, the median of the samples `measure::time_gpu` takes with CUDA \
             events. *ours / cuSPARSE* is ours over analysis + factorisation, then over the \
             factorisation alone. The apply table's cuSPARSE column applies ours' factors; *max rel. \
             difference* is `max |f_cusparse - f_ours| / max |f_ours|` over the factors (IC(0)'s in \
             ILU(0)'s layout). *device setup ms* is ours factorised on the device, one \
             `Ilu0::on_device`/`Ic0::on_device` timed as *ours ms* is (the pattern read back and \
             preprocessed on the host, the uploads, the factorisation, the check of its faults); \
             *device refactor ms* its `refactor` of new values of the pattern, what a Newton loop \
             repeats, timed as cuSPARSE's factorisation is; *refactor / cuSPARSE* is it over cuSPARSE's \
             factorisation alone; *device difference* compares the two factors' applies of `b`.\n\n\
             | problem | prec | precond. | ours ms | cuSPARSE analysis ms | cuSPARSE factorisation ms | \
             ours / cuSPARSE | max rel. difference | device setup ms | device refactor ms | \
             refactor / cuSPARSE | device difference |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for f in &self.factorisations {
            let ratios =
                f.cusparse_analysis_ms.zip(f.cusparse_factorisation_ms).map(|(analysis, factorisation)| {
                    (f.ours_ms / (analysis + factorisation), f.ours_ms / factorisation)
                });
            let refactor_ratio = f.device_refactor_ms.zip(f.cusparse_factorisation_ms).map(|(d, c)| d / c);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} |",
                f.problem,
                f.precision,
                f.preconditioner,
                f.ours_ms,
                or_na(f.cusparse_analysis_ms, |v| format!("{v:.2}")),
                or_na(f.cusparse_factorisation_ms, |v| format!("{v:.2}")),
                or_na(ratios, |(first, again)| format!("{first:.1}x / {again:.1}x")),
                or_na(f.max_relative_difference, |v| format!("{v:.2e}")),
                or_na(f.device_setup_ms, |v| format!("{v:.2}")),
                or_na(f.device_refactor_ms, |v| format!("{v:.3}")),
                or_na(refactor_ratio, |v| format!("{v:.2}x")),
                or_na(f.device_max_relative_difference, |v| format!("{v:.2e}")),
            );
        }
        out.push('\n');
    }

    /// Which preconditioner wins where, and why, from the data.
    fn preconditioners(&self, out: &mut String) {
        let winners = self.winners();
        let _ = writeln!(
            out,
            "## Which preconditioner wins\n\nOurs, time to a converged solve (a solve that did not converge \
             loses; the preconditioners' setup, the power iteration, the blocks' inversion and the \
             factorisation, not counted: the solves tables' *setup ms*). {} are given to ours as a \
             caller's preconditioner, and on the symmetric positive definite \
             problems preconditioned CG (pcg) with {} and pipelined CG with jacobi and ic(0), to at most {} \
             iterations; of these only ilu(0) has a baseline (the section above).\n\n\
             | problem | prec | solver | fastest | iterations per preconditioner | diagonal max/min |\n\
             |---|---|---|---|---|---:|",
            OursOnly::ALL.map(OursOnly::name).join(", "),
            OursOnly::SPD.map(OursOnly::name).join(", "),
            OURS_ONLY_MAX_ITERATIONS
        );
        for w in &winners {
            let iterations: Vec<String> = w.iterations.iter().map(|(p, i)| format!("{p} {i}")).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.3} |",
                w.problem,
                w.precision,
                w.solver,
                w.winner,
                iterations.join(", "),
                w.diagonal_ratio
            );
        }
        let _ = writeln!(out, "\n{}\n", preconditioner_verdict(&winners));
    }

    /// A terminal summary: per problem, precision and solver, ours against the baseline.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<12} {:<4} {:<12} {:<7} {:>8} {:>8} {:>10} {:>10} {:>8}",
            "problem", "prec", "solver", "precond", "its", "base its", "ms", "base ms", "speedup"
        );
        for r in self.records.iter().filter(|r| r.implementation == Implementation::Ours) {
            let mut base = r.clone();
            base.implementation = Implementation::Baseline;
            let base = self.find(&base, &r.preconditioner);
            let _ = writeln!(
                out,
                "{:<12} {:<4} {:<12} {:<7} {:>8} {:>8} {:>10.1} {:>10} {:>8}",
                r.problem,
                r.precision,
                r.solver,
                r.preconditioner,
                r.iterations,
                or_na(base.map(|b| b.iterations), |v| v.to_string()),
                r.time_ms,
                or_na(base.map(|b| b.time_ms), |v| format!("{v:.1}")),
                or_na(r.speedup_vs_baseline, |v| format!("{v:.2}x")),
            );
        }
        out
    }
}

/// The sentences that end the report: where each preconditioner wins, and the reason the data gives
/// for Jacobi. Jacobi on a constant diagonal scales `A` by a constant, which leaves the Krylov
/// iterates the same up to rounding: it can only cost its extra pass; where the diagonal varies it
/// can cut iterations.
pub fn preconditioner_verdict(winners: &[Winner]) -> String {
    let list = |pick: &dyn Fn(&Winner) -> bool| {
        let names: Vec<String> = winners
            .iter()
            .filter(|w| pick(w))
            .map(|w| format!("{} {} {}", w.problem, w.precision, w.solver))
            .collect();
        if names.is_empty() { "none".to_owned() } else { names.join(", ") }
    };
    let mut preconditioners: Vec<&str> = Vec::new();
    for (p, _) in winners.iter().flat_map(|w| &w.iterations) {
        if !preconditioners.contains(&p.as_str()) {
            preconditioners.push(p);
        }
    }
    let mut text = String::new();
    for p in preconditioners {
        let label = if p == "none" { "No preconditioner".to_owned() } else { p.to_owned() };
        let _ = write!(text, "{label} is fastest on: {}. ", list(&|w| w.winner == p));
    }
    let _ = write!(text, "Nothing converged on: {}. ", list(&|w| w.winner == NOTHING_CONVERGED));
    let both = |w: &Winner| Some((w.iterations_of("none")?, w.iterations_of("jacobi")?));
    let constant = |w: &Winner| (w.diagonal_ratio - 1.0).abs() <= 1e-6;
    let same_iterations = winners
        .iter()
        .filter(|w| constant(w))
        .filter_map(both)
        .all(|(none, jacobi)| none.abs_diff(jacobi) <= 2 + none / 10);
    let cut: Vec<String> = winners
        .iter()
        .filter(|w| !constant(w))
        .filter_map(|w| both(w).filter(|(none, jacobi)| jacobi < none).map(|pair| (w, pair)))
        .map(|(w, (none, jacobi))| format!("{} {} {} {none} → {jacobi}", w.problem, w.precision, w.solver))
        .collect();
    if winners.iter().any(constant) {
        text += if same_iterations {
            "Where the diagonal is constant (max/min 1, the convection–diffusion rows) Jacobi only scales A by a \
             constant: the iterations stay the same up to rounding, and its extra vector passes make it the \
             slower. "
        } else {
            "Where the diagonal is constant (max/min 1) Jacobi only scales A by a constant, yet the iteration \
             counts moved by more than rounding would: see the table. "
        };
    }
    if !cut.is_empty() {
        let _ = write!(text, "Where the diagonal varies, Jacobi cut the iterations: {}.", cut.join(", "));
    } else if winners.iter().any(|w| !constant(w)) {
        text += "Where the diagonal varies, Jacobi cut no iteration count.";
    }
    text.trim_end().to_owned()
}

#[cfg(test)]
mod tests;
