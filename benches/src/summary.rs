//! The answer of a run in a few lines: per regime and precision, the geometric-mean speedup over the
//! better cuSPARSE CSR algorithm and the worst matrix, for `Kernel::Auto` and for the fastest kernel
//! of ours; and the host time of one enqueue. The end of every run prints it (`--summary` prints only
//! it), `report.md` opens with it, and the plots sort by the same speedups. A run without a GPU has
//! no speedups: its summary is the CPU kernels' bandwidth per precision.

use crate::precision::Precision;
use crate::report::Results;
use crate::run::Record;
use std::fmt::Write as _;

/// Where a product's operands come from (see [`crate::regimes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    /// Rotated out of L2: HBM.
    Cold,
    /// The same operands back to back: L2 where they fit.
    Hot,
    /// Hot, captured in a CUDA graph and replayed.
    Graph,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::Cold, Regime::Hot, Regime::Graph];

    pub fn name(self) -> &'static str {
        match self {
            Regime::Cold => "cold",
            Regime::Hot => "hot",
            Regime::Graph => "graph",
        }
    }

    /// The record's time per product in this regime, µs (`None` where it was not measured).
    pub fn time_us(self, r: &Record) -> Option<f64> {
        match self {
            Regime::Cold => Some(r.timing.median_us),
            Regime::Hot => r.hot.map(|t| t.median_us),
            Regime::Graph => r.graph.map(|t| t.median_us),
        }
    }

    /// The record's speedup over the better cuSPARSE CSR algorithm in this regime (NaN where either
    /// was not measured).
    pub fn speedup(self, r: &Record) -> f64 {
        match self {
            Regime::Cold => r.speedup_vs_cusparse,
            Regime::Hot => r.speedup_vs_cusparse_hot,
            Regime::Graph => r.speedup_vs_cusparse_graph,
        }
    }
}

/// Whose speedups a summary line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ours {
    /// `Kernel::Auto`: what a user gets without choosing.
    Auto,
    /// Per matrix, the fastest kernel of ours measured in the regime.
    Fastest,
}

impl Ours {
    pub fn name(self) -> &'static str {
        match self {
            Ours::Auto => "auto",
            Ours::Fastest => "fastest of ours",
        }
    }
}

/// The speedup of `who` over cuSPARSE in `regime` on every matrix of `precision` where both were
/// measured, in the order of `results.matrices`.
pub fn speedups(results: &Results, who: Ours, regime: Regime, precision: Precision) -> Vec<(String, f64)> {
    results
        .matrices
        .iter()
        .filter_map(|m| {
            let of_matrix = results.records.iter().filter(|r| r.matrix == m.name && r.precision == precision);
            let speedup = match who {
                Ours::Auto => of_matrix.filter(|r| r.variant == "auto").map(|r| regime.speedup(r)).next(),
                Ours::Fastest => of_matrix
                    .filter(|r| r.family == "gpu-spmv")
                    .map(|r| regime.speedup(r))
                    .filter(|s| s.is_finite())
                    .max_by(f64::total_cmp),
            }?;
            speedup.is_finite().then(|| (m.name.clone(), speedup))
        })
        .collect()
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub who: Ours,
    pub regime: Regime,
    pub precision: Precision,
    pub matrices: usize,
    pub geomean: f64,
    /// The matrix with the lowest speedup, and that speedup.
    pub worst: (String, f64),
    /// Matrices where cuSPARSE is faster.
    pub below_one: usize,
}

/// Every (who, regime, precision) with at least one measured matrix.
pub fn lines(results: &Results) -> Vec<Line> {
    let mut out = Vec::new();
    for precision in Precision::ALL {
        for who in [Ours::Auto, Ours::Fastest] {
            for regime in Regime::ALL {
                let s = speedups(results, who, regime, precision);
                let Some(worst) = s.iter().min_by(|a, b| a.1.total_cmp(&b.1)).cloned() else { continue };
                out.push(Line {
                    who,
                    regime,
                    precision,
                    matrices: s.len(),
                    geomean: geomean(s.iter().map(|p| p.1)),
                    worst,
                    below_one: s.iter().filter(|p| p.1 < 1.0).count(),
                });
            }
        }
    }
    out
}

/// The geometric mean (NaN for none).
pub fn geomean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    if n == 0 { f64::NAN } else { (sum / n as f64).exp() }
}

/// The median of the figures (NaN for none).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The host enqueue times, µs, medians over matrices and precisions: ours through a plan, ours
/// one-shot, and cuSPARSE (per matrix, the better of its CSR algorithms).
pub fn host_enqueue(results: &Results) -> Option<(f64, f64, f64)> {
    let auto = || results.records.iter().filter(|r| r.variant == "auto");
    let plan = median(auto().filter_map(|r| r.host_enqueue_us).collect());
    let one_shot = median(auto().filter_map(|r| r.host_enqueue_one_shot_us).collect());
    let cusparse = median(
        auto()
            .filter_map(|a| {
                results
                    .records
                    .iter()
                    .filter(|r| r.matrix == a.matrix && r.precision == a.precision && r.family == "cuSPARSE")
                    .filter_map(|r| r.host_enqueue_us)
                    .min_by(f64::total_cmp)
            })
            .collect(),
    );
    plan.is_finite().then_some((plan, one_shot, cusparse))
}

/// What a run on a GPU measures beyond a run without one: said where a run without one reports.
pub const WHAT_A_GPU_ADDS: &str = "a run on a GPU adds every GPU kernel and format of the library, \
     cuSPARSE, the bandwidth floor, the cold, hot and graph regimes, their speedup summary and plots";

/// One CPU kernel's bandwidth over the matrices of one precision: the summary of a run without a
/// GPU, where the CPU kernels are all there is.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuLine {
    pub variant: String,
    pub precision: Precision,
    pub matrices: usize,
    /// The geometric mean of its GB/s over the matrices.
    pub geomean_gbps: f64,
    /// The matrix with the lowest GB/s, and that GB/s.
    pub slowest: (String, f64),
}

/// The GB/s of every CPU kernel per matrix of `precision`, in the order of `results.matrices`, by
/// kernel (in the order first measured).
pub fn cpu_gbps(results: &Results, precision: Precision) -> Vec<(String, Vec<(String, f64)>)> {
    let mut kernels: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for m in &results.matrices {
        let cpu = results.records.iter().filter(|r| r.matrix == m.name && r.precision == precision);
        for r in cpu.filter(|r| r.family == "CPU" && r.gbps.is_finite()) {
            let at = match kernels.iter().position(|(variant, _)| *variant == r.variant) {
                Some(at) => at,
                None => {
                    kernels.push((r.variant.clone(), Vec::new()));
                    kernels.len() - 1
                }
            };
            kernels[at].1.push((m.name.clone(), r.gbps));
        }
    }
    kernels
}

/// Every (CPU kernel, precision) with at least one measured matrix.
pub fn cpu_lines(results: &Results) -> Vec<CpuLine> {
    let mut out = Vec::new();
    for precision in Precision::ALL {
        for (variant, per_matrix) in cpu_gbps(results, precision) {
            let Some(slowest) = per_matrix.iter().min_by(|a, b| a.1.total_cmp(&b.1)).cloned() else {
                continue;
            };
            out.push(CpuLine {
                variant,
                precision,
                matrices: per_matrix.len(),
                geomean_gbps: geomean(per_matrix.iter().map(|p| p.1)),
                slowest,
            });
        }
    }
    out
}

/// The summary of a run without speedups over cuSPARSE (no GPU): the CPU kernels' bandwidth, and
/// what a GPU would add.
fn cpu_text(results: &Results) -> String {
    let mut out = format!("no GPU, so CPU kernels only ({WHAT_A_GPU_ADDS})\n");
    let lines = cpu_lines(results);
    if lines.is_empty() {
        out.push_str("no CPU kernel measured either\n");
        return out;
    }
    let _ = writeln!(
        out,
        "{:<16} {:<4} {:>8} {:>14}  slowest matrix",
        "CPU kernel", "prec", "matrices", "GB/s geomean"
    );
    for l in &lines {
        let _ = writeln!(
            out,
            "{:<16} {:<4} {:>8} {:>14.1}  {} ({:.1} GB/s)",
            l.variant, l.precision, l.matrices, l.geomean_gbps, l.slowest.0, l.slowest.1
        );
    }
    out
}

/// The summary as text: a table of [`lines`] and the host enqueue times; without them (no GPU), the
/// CPU kernels' bandwidth.
pub fn text(results: &Results) -> String {
    let mut out = String::new();
    let lines = lines(results);
    if lines.is_empty() {
        return cpu_text(results);
    }
    let _ = writeln!(
        out,
        "{:<16} {:<6} {:<4} {:>8} {:>9} {:>8}  worst matrix",
        "speedup of", "regime", "prec", "matrices", "geomean", "below 1x"
    );
    for l in &lines {
        let _ = writeln!(
            out,
            "{:<16} {:<6} {:<4} {:>8} {:>8.2}x {:>8}  {} ({:.2}x)",
            l.who.name(),
            l.regime.name(),
            l.precision,
            l.matrices,
            l.geomean,
            l.below_one,
            l.worst.0,
            l.worst.1
        );
    }
    if let Some((plan, one_shot, cusparse)) = host_enqueue(results) {
        let _ = writeln!(
            out,
            "host enqueue per product (median): {plan:.2} µs with a plan, {one_shot:.2} µs one-shot \
             (gpu.spmv), {cusparse:.2} µs cusparseSpMV"
        );
    }
    if let Some(launch) = results.device.as_ref().and_then(|d| d.launch_us) {
        let _ = writeln!(out, "host cost of one bare kernel launch (the driver's floor): {launch:.2} µs");
    }
    if let Some(graph) = results.device.as_ref().and_then(|d| d.graph_launch_us) {
        let _ = writeln!(out, "host cost of one launch of a one-kernel graph: {graph:.2} µs");
    }
    out
}

#[cfg(test)]
mod tests;
