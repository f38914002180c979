//! The run's results: the terminal table, `report.md`, `results.json`, and `--compare`.

use crate::device_info::DeviceInfo;
use crate::ops::{SpmmRecord, TransposeRecord};
use crate::precision::Precision;
use crate::reordering::Reordering;
use crate::run::{BrcTuned, MatrixInfo, Record, Tuning, Upload};
use crate::summary::{self, Regime};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Everything one run measured: what `results.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub git_commit: String,
    pub started: String,
    pub device: Option<DeviceInfo>,
    pub matrices: Vec<MatrixInfo>,
    pub records: Vec<Record>,
    /// The fixed rule and the tuner against the exhaustive search, per matrix and precision.
    pub tuning: Vec<Tuning>,
    /// What did not run, and why.
    pub notes: Vec<String>,
    /// What uploading each matrix cost, per precision (absent from runs before it was measured).
    #[serde(default)]
    pub uploads: Vec<Upload>,
    /// `--reorder`: reverse Cuthill–McKee's cost and effect, per matrix, precision and kernel.
    #[serde(default)]
    pub reorderings: Vec<Reordering>,
    /// BRC's B2 tuner, per matrix and precision.
    #[serde(default)]
    pub brc_tuned: Vec<BrcTuned>,
    /// `--transpose`: the transposed product, ours and cuSPARSE's.
    #[serde(default)]
    pub transpose: Vec<TransposeRecord>,
    /// `--spmm`: products with `k` vectors, ours and cuSPARSE's.
    #[serde(default)]
    pub spmm: Vec<SpmmRecord>,
}

/// Reads a number that JSON could not hold: serde_json writes NaN and infinities as `null` (no GPU,
/// so no floor; a NaN in a result), which reads back as NaN.
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// The default of a figure absent from an older results.json: not measured.
pub fn nan() -> f64 {
    f64::NAN
}

/// `value` formatted by `f`, or `n/a` when it is not finite (no GPU, no baseline).
fn or_na(value: f64, f: impl Fn(f64) -> String) -> String {
    if value.is_finite() { f(value) } else { "n/a".to_owned() }
}

/// The better of cuSPARSE's two CSR algorithms per (matrix, precision): the speedup baseline.
const BASELINES: [&str; 2] = ["cusparse-csr-alg1", "cusparse-csr-alg2"];

impl Results {
    /// Fills each record's speedup over the better cuSPARSE CSR algorithm of its matrix and precision,
    /// in every regime the record was measured in.
    pub fn fill_speedups(&mut self) {
        let regimes: [fn(&Record) -> Option<f64>; 3] =
            [|r| Some(r.timing.median_us), |r| r.hot.map(|t| t.median_us), |r| r.graph.map(|t| t.median_us)];
        let baselines = regimes.map(|time| {
            let mut best: BTreeMap<(String, Precision), f64> = BTreeMap::new();
            for r in self.records.iter().filter(|r| BASELINES.contains(&r.variant.as_str())) {
                if let Some(us) = time(r) {
                    let t = best.entry((r.matrix.clone(), r.precision)).or_insert(f64::INFINITY);
                    *t = t.min(us);
                }
            }
            best
        });
        for r in &mut self.records {
            let key = (r.matrix.clone(), r.precision);
            let [cold, hot, graph] = std::array::from_fn(|i| match (baselines[i].get(&key), regimes[i](r)) {
                (Some(&baseline), Some(us)) => baseline / us,
                _ => f64::NAN,
            });
            (r.speedup_vs_cusparse, r.speedup_vs_cusparse_hot, r.speedup_vs_cusparse_graph) =
                (cold, hot, graph);
        }
    }

    /// Writes `results.json` (compact: runs of every kernel on the real set reach 3.5 MB pretty,
    /// two fifths more than compact, and the committed runs travel to the GPU machine with the
    /// working tree, whose size is limited) and `report.md` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("results.json"), serde_json::to_string(self)?)?;
        std::fs::write(dir.join("report.md"), self.markdown())?;
        Ok(())
    }

    /// The file [`Results::checkpoint`] writes, beside where `results.json` will go.
    pub const PARTIAL: &'static str = "results.partial.json";

    /// Writes what the run has measured so far (speedups filled in a copy) to [`Results::PARTIAL`]
    /// in `dir`, so that a run stopped before its end (a time limit on a lent GPU) leaves the
    /// matrices it finished, readable by [`Results::read`] and `spmv-bench plot`. Through a
    /// temporary file and a rename: an interrupted write leaves the last checkpoint whole.
    pub fn checkpoint(&self, dir: &Path) -> Result<()> {
        let mut partial = self.clone();
        partial.fill_speedups();
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let temporary = dir.join(format!("{}.tmp", Self::PARTIAL));
        std::fs::write(&temporary, serde_json::to_string(&partial)?)?;
        std::fs::rename(&temporary, dir.join(Self::PARTIAL))?;
        Ok(())
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The per-kernel table of one matrix and precision, fastest first.
    fn table(&self, matrix: &str, precision: Precision, out: &mut String) {
        let mut rows: Vec<&Record> =
            self.records.iter().filter(|r| r.matrix == matrix && r.precision == precision).collect();
        rows.sort_by(|a, b| a.timing.median_us.total_cmp(&b.timing.median_us));
        let _ = writeln!(
            out,
            "| variant | time µs (median) | spread | GFLOP/s | GB/s | of floor | vs cuSPARSE | max rel. error |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for r in rows {
            let _ = writeln!(
                out,
                "| {} | {:.2} | {:.0}% | {:.1} | {:.0} | {} | {} | {:.1e} |",
                r.variant,
                r.timing.median_us,
                100.0 * r.timing.spread(),
                r.gflops,
                r.gbps,
                or_na(r.floor_fraction, |v| format!("{:.0}%", 100.0 * v)),
                or_na(r.speedup_vs_cusparse, |v| format!("{v:.2}x")),
                r.max_rel_error
            );
        }
    }

    /// The `--transpose` and `--spmm` tables (nothing when neither ran).
    fn ops_markdown(&self, out: &mut String) {
        if !self.transpose.is_empty() {
            let _ = writeln!(out, "\n## Transposed product y = Aᵀx\n");
            let _ = writeln!(
                out,
                "| matrix | precision | variant | µs | GB/s | build ms | break-even products |"
            );
            let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|");
            for r in &self.transpose {
                let build = r.build_ms.map_or("".to_owned(), |b| format!("{b:.2}"));
                let even = r.break_even_products.map_or("".to_owned(), |b| format!("{b:.0}"));
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {:.1} | {:.0} | {build} | {even} |",
                    r.matrix, r.precision, r.variant, r.time_us, r.gbps
                );
            }
        }
        if !self.spmm.is_empty() {
            let _ = writeln!(out, "\n## SpMM Y = AX\n");
            let _ = writeln!(out, "| matrix | precision | layout | k | variant | µs | GB/s | vs k SpMV |");
            let _ = writeln!(out, "|---|---|---|---:|---|---:|---:|---:|");
            for r in &self.spmm {
                let variant = if r.kernel.is_empty() {
                    r.variant.clone()
                } else {
                    format!("{} ({})", r.variant, r.kernel)
                };
                let speedup = r.speedup_vs_k_spmv.map_or("".to_owned(), |s| format!("{s:.2}x"));
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {variant} | {:.1} | {:.0} | {speedup} |",
                    r.matrix, r.precision, r.layout, r.k, r.time_us, r.gbps
                );
            }
        }
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# gpu-spmv benchmark\n");
        let _ = writeln!(out, "Commit `{}`, started {}.\n", self.git_commit, self.started);
        if let Some(d) = &self.device {
            let _ = writeln!(
                out,
                "Device: {} ({} SMs, {} MB L2), driver {}. Clocks (SM, memory) and temperature at start: {}; \
                 at end: {}.\n",
                d.name,
                d.sm_count,
                d.l2_bytes >> 20,
                d.driver_version,
                d.clocks_start.as_deref().unwrap_or("n/a"),
                d.clocks_end.as_deref().unwrap_or("n/a"),
            );
            let _ = writeln!(
                out,
                "Bandwidth: streaming read (our probe kernel) {:.0} GB/s, the floor's denominator; \
                 device-to-device copy {:.0} GB/s (read + written).\n",
                d.read_gbps, d.copy_gbps
            );
            if !d.row_runs.is_empty() {
                let runs: Vec<String> = d
                    .row_runs
                    .iter()
                    .map(|r| {
                        format!("N = {}: {:.0} GB/s ({:.0}%)", r.run, r.gbps, 100.0 * r.gbps / d.read_gbps)
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "Row-run reads (two arrays read a warp per run of N elements, 4-byte loads, as a warp \
                     per row reads a CSR matrix; of the streaming read): {}.\n",
                    runs.join(", ")
                );
            }
        } else {
            let _ = writeln!(out, "No GPU, so CPU kernels only: {}.\n", summary::WHAT_A_GPU_ADDS);
        }
        let cpu_times = format!(
            "the CPU kernels' times are medians of {} calls on the host clock",
            crate::measure::CPU_SAMPLES
        );
        if self.device.is_some() {
            let _ = writeln!(
                out,
                "GPU times are medians of {} or more samples of back-to-back products (CUDA events); \
                 {cpu_times}. Spread is (max - min) / median. GB/s counts one pass over the CSR arrays \
                 plus x and y; *of floor* is that bandwidth over the streaming-read bandwidth; *vs \
                 cuSPARSE* is the better cuSPARSE CSR algorithm's time over this one's.\n",
                crate::measure::MIN_SAMPLES
            );
        } else {
            let _ = writeln!(
                out,
                "Times: {cpu_times}. Spread is (max - min) / median. GB/s counts one pass over the CSR \
                 arrays plus x and y.\n"
            );
        }
        self.regimes_markdown(&mut out);
        self.cpu_markdown(&mut out);
        if !self.tuning.is_empty() {
            self.tuning_table(&mut out);
        }
        if self.records.iter().any(|r| r.conversion_ms.is_some()) {
            self.formats_table(&mut out);
        }
        if !self.uploads.is_empty() {
            self.uploads_table(&mut out);
        }
        if !self.reorderings.is_empty() {
            self.reorderings_table(&mut out);
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "Not run:\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
            out.push('\n');
        }
        for m in &self.matrices {
            let _ = writeln!(
                out,
                "## {} ({})\n\n{} x {}, {} non-zeros, {:.1} ± {:.1} per row, longest {}.\n",
                m.name, m.imitates, m.rows, m.cols, m.nnz, m.mean, m.std_dev, m.max
            );
            for precision in Precision::ALL {
                if self.records.iter().any(|r| r.matrix == m.name && r.precision == precision) {
                    let _ = writeln!(out, "### {precision}\n");
                    self.table(&m.name, precision, &mut out);
                    out.push('\n');
                }
            }
        }
        self.ops_markdown(&mut out);
        out
    }

    /// The CPU kernels' bandwidth per precision, for a run without speedups over cuSPARSE (no GPU):
    /// the summary such a run opens with.
    fn cpu_markdown(&self, out: &mut String) {
        if !summary::lines(self).is_empty() {
            return;
        }
        let lines = summary::cpu_lines(self);
        if lines.is_empty() {
            return;
        }
        let _ =
            writeln!(out, "## CPU kernels\n\n| kernel | prec | matrices | GB/s geomean | slowest matrix |");
        let _ = writeln!(out, "|---|---|---:|---:|---|");
        for l in &lines {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} | {} ({:.1} GB/s) |",
                l.variant, l.precision, l.matrices, l.geomean_gbps, l.slowest.0, l.slowest.1
            );
        }
        out.push('\n');
    }

    /// The regimes: per regime and precision the geometric-mean speedup and the worst matrix, then
    /// per matrix Auto's and the better cuSPARSE's time in each regime and the host enqueue times
    /// (nothing for runs from before the regimes, or without a GPU).
    fn regimes_markdown(&self, out: &mut String) {
        let lines = summary::lines(self);
        if lines.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "## Speedup over cuSPARSE by regime\n\n\
             *cold*: operands rotated out of L2 (HBM); *hot*: the same operands back to back (L2 where \
             they fit); *graph*: {} hot products captured in a CUDA graph and replayed, per product \
             (cuSPARSE's captured the same way after its preprocess). Against the better of cuSPARSE CSR \
             ALG1 and ALG2 in the same regime.\n\n\
             | speedup of | regime | prec | matrices | geomean | below 1x | worst matrix |\n\
             |---|---|---|---:|---:|---:|---|",
            crate::regimes::GRAPH_PRODUCTS
        );
        for l in &lines {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.2}x | {} | {} ({:.2}x) |",
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
        if let Some((plan, one_shot, cusparse)) = summary::host_enqueue(self) {
            let _ = writeln!(
                out,
                "\nHost time of one enqueue (median over matrices and precisions; host clock over                  back-to-back calls): {plan:.2} µs through a `Plan`, {one_shot:.2} µs one-shot (`gpu.spmv`),                  {cusparse:.2} µs for `cusparseSpMV`."
            );
        }
        let _ = writeln!(
            out,
            "\n| matrix | prec | cold auto µs | cuSP µs | speedup | hot auto µs | cuSP µs | speedup |              graph auto µs | cuSP µs | speedup | enqueue µs: plan / one-shot / cuSP |\n             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        );
        let us = |v: Option<f64>| or_na(v.unwrap_or(f64::NAN), |v| format!("{v:.2}"));
        let x = |v: f64| or_na(v, |v| format!("{v:.2}x"));
        for m in &self.matrices {
            for precision in Precision::ALL {
                let of = |r: &&Record| r.matrix == m.name && r.precision == precision;
                let Some(auto) = self.records.iter().filter(of).find(|r| r.variant == "auto") else {
                    continue;
                };
                let baseline = |regime: Regime| {
                    self.records
                        .iter()
                        .filter(of)
                        .filter(|r| BASELINES.contains(&r.variant.as_str()))
                        .filter_map(|r| regime.time_us(r))
                        .min_by(f64::total_cmp)
                };
                let cusparse_enqueue = self
                    .records
                    .iter()
                    .filter(of)
                    .filter(|r| BASELINES.contains(&r.variant.as_str()))
                    .filter_map(|r| r.host_enqueue_us)
                    .min_by(f64::total_cmp);
                let mut row = format!("| {} | {precision} |", m.name);
                for regime in Regime::ALL {
                    let _ = write!(
                        row,
                        " {} | {} | {} |",
                        us(regime.time_us(auto)),
                        us(baseline(regime)),
                        x(regime.speedup(auto))
                    );
                }
                let _ = writeln!(
                    out,
                    "{row} {} / {} / {} |",
                    us(auto.host_enqueue_us),
                    us(auto.host_enqueue_one_shot_us),
                    us(cusparse_enqueue)
                );
            }
        }
        out.push('\n');
    }

    /// Auto's, the fixed rule's and the tuner's time as a fraction of the exhaustive search's best,
    /// all timed hot (the tuner's regime), and the geometric means of those fractions.
    fn tuning_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## The tuner against Auto, the fixed rule and the exhaustive search (hot)

             Each timed on one set of operands back to back, as the tuner times the products of a solver              loop. Fraction = best time / their time (1.0 = as fast as the best kernel of the search              space).
"
        );
        let of_best = |us: f64, best: f64| if us > 0.0 { best / us } else { f64::NAN };
        let geomean = |f: &dyn Fn(&Tuning) -> f64| {
            let logs: Vec<f64> = self.tuning.iter().map(f).filter(|v| v.is_finite()).map(f64::ln).collect();
            (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
        };
        let _ = writeln!(
            out,
            "Geometric means of the fractions: Auto {:.0}%, rule {:.0}%, tuner {:.0}%.
",
            100.0 * geomean(&|t| of_best(t.auto_us, t.best_us)),
            100.0 * geomean(&|t| of_best(t.rule_us, t.best_us)),
            100.0 * geomean(&|t| of_best(t.tuned_us, t.best_us)),
        );
        let _ = writeln!(
            out,
            "| matrix | prec | auto | auto µs | of best | rule µs | of best | tuned | tuned µs | of best | \
             products to converge | best of {} | best µs |",
            self.tuning.first().map_or(0, |t| t.searched)
        );
        let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|");
        for t in &self.tuning {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} | {:.0}% | {:.2} | {:.0}% | {} | {:.2} | {:.0}% | {} | {} | {:.2} |",
                t.matrix,
                t.precision,
                t.auto,
                t.auto_us,
                100.0 * of_best(t.auto_us, t.best_us),
                t.rule_us,
                100.0 * of_best(t.rule_us, t.best_us),
                t.tuned,
                t.tuned_us,
                100.0 * of_best(t.tuned_us, t.best_us),
                t.tuning_products,
                t.best,
                t.best_us
            );
        }
        out.push('\n');
    }

    /// The fastest record of `family` on a matrix and precision.
    fn fastest(&self, matrix: &str, precision: Precision, family: &str) -> Option<&Record> {
        self.records
            .iter()
            .filter(|r| r.matrix == matrix && r.precision == precision && r.family == family)
            .min_by(|a, b| a.timing.median_us.total_cmp(&b.timing.median_us))
    }

    /// Per format: its time, its conversion cost, and after how many products it pays off against
    /// the fastest CSR kernel of ours and against the better cuSPARSE (Reguly & Giles' break-even:
    /// conversion time over the time a product saves); and BRC's model B2 against the best B2 tried.
    /// The cost of an upload: the CSR arrays alone, and with every row-cutting strategy's data built
    /// too (what an upload cost before strategies built their data when first planned).
    fn uploads_table(&self, out: &mut String) {
        let link = self.device.as_ref().and_then(|d| d.h2d_pinned_gbps);
        let link_text = link.map_or_else(|| "not measured".to_owned(), |g| format!("{g:.1} GB/s"));
        let _ = writeln!(
            out,
            "## Upload\n\nCSR arrays alone, from a `CsrMatrix`'s `usize` indices (`upload_csr`: narrowed and \
             checked) and from `u32` indices (`upload_csr_u32`: checked), GB/s of the device arrays; the \
             `u32` arrays checked in parallel and copied from the caller's memory pinned in place for the \
             copy (not a library path: what pinning instead of staging would cost); the `u32` arrays held in \
             page-locked memory by the caller (`upload_csr_pinned`: copied straight from it, checked on the \
             device; best of three); and from `usize` with \
             the long-row split and the balanced kernel's row tasks built and uploaded too; timed to \
             completion. The host link's own pinned host-to-device rate, measured at the start of this run: \
             {link_text}.\n\n\
             | matrix | prec | CSR MB | from usize ms | GB/s | of the link | from u32 ms | GB/s | of the link \
             | u32, pinned in place ms | GB/s | of the link | from pinned u32 ms | GB/s | of the link \
             | with strategies ms | with strategies MB |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for u in &self.uploads {
            let mb = |bytes: usize| bytes as f64 / 1e6;
            let rate = |ms: f64| {
                let gbps = u.csr_bytes as f64 / (ms * 1e6);
                let share = link.map_or_else(|| "-".to_owned(), |l| format!("{:.0}%", 100.0 * gbps / l));
                format!("{ms:.2} | {gbps:.1} | {share}")
            };
            let from_u32 = u.from_u32_ms.map_or_else(|| "- | - | -".to_owned(), rate);
            let pinned = u.pinned_in_place_ms.map_or_else(|| "- | - | -".to_owned(), rate);
            let from_pinned = u.from_pinned_ms.map_or_else(|| "- | - | -".to_owned(), rate);
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} | {} | {} | {} | {} | {:.2} | {:.1} |",
                u.matrix,
                u.precision,
                mb(u.csr_bytes),
                rate(u.csr_ms),
                from_u32,
                pinned,
                from_pinned,
                u.with_strategies_ms,
                mb(u.with_strategies_bytes)
            );
        }
        out.push('\n');
        if self.uploads.iter().any(|u| u.auto_plan.is_some()) {
            self.auto_plan_table(out);
        }
        if self.uploads.iter().any(|u| u.stage_ceilings.is_some()) {
            self.stage_ceilings_table(out, link);
        }
        if self.uploads.iter().any(|u| u.steps.is_some()) {
            self.upload_steps_table(out);
        }
        if self.uploads.iter().any(|u| !u.pipeline_trials.is_empty()) {
            self.pipeline_trials_table(out);
        }
    }

    /// Auto's first plan of each matrix: its kernel, time and the bytes it kept (see
    /// `spmv_bench::run::AutoPlan`).
    fn auto_plan_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### Auto's first plan\n\n\
             `gpu.plan(&a, Kernel::Auto)` on the freshly uploaded matrix, timed to completion: the rule and, \
             where Auto takes or looks for a copy of the matrix, the look and the copy's build (later plans \
             reuse it).\n\n\
             | matrix | prec | Auto's kernel | ms | MB kept |\n|---|---|---|---:|---:|"
        );
        for u in &self.uploads {
            if let Some(p) = &u.auto_plan {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {:.2} | {:.1} |",
                    u.matrix,
                    u.precision,
                    p.kernel,
                    p.ms,
                    p.bytes as f64 / 1e6
                );
            }
        }
        out.push('\n');
    }

    /// The staged pipeline chunk by chunk in each configuration (see
    /// `spmv_bench::staging::trials`): where its time goes, and which configuration is fastest.
    fn pipeline_trials_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### The staged pipeline chunk by chunk\n\n\
             The columns (checked) then the values of each matrix through the pipeline, best of a few runs, \
             in each configuration: *stages* × *MiB*, written by the library's pass (`checked`) or by \
             streaming stores (`streaming`). Per chunk (means): the host's *pass*, its *wait* for the stage's \
             last copy, the *copy* on the link (device events around it), and the same pass with no copy \
             running (*pass alone*); *idle* is the link's time without \
             a copy between the first copy's start and the last one's end, *first* the time to the first \
             copy's start. GB/s of the two arrays over *total*.\n\n\
             | matrix | prec | stages | MiB | fill | chunks | total ms | GB/s | pass ms | pass alone ms | wait ms \
             | copy ms | idle ms | first ms |\n\
             |---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for u in &self.uploads {
            for t in &u.pipeline_trials {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {:?} | {} | {:.2} | {:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} |",
                    u.matrix,
                    u.precision,
                    t.stages,
                    t.stage_mib,
                    t.fill,
                    t.chunks,
                    t.total_ms,
                    t.bytes as f64 / (t.total_ms * 1e6),
                    t.fill_ms,
                    t.fill_alone_ms,
                    t.wait_ms,
                    t.copy_ms,
                    t.link_idle_ms,
                    t.first_copy_ms
                );
            }
        }
        out.push('\n');
    }

    /// The upload from `u32` beside its steps, each alone (see `spmv_bench::staging::UploadSteps`):
    /// where its time goes beyond the overlapped pass and link.
    fn upload_steps_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### Upload from u32: its steps alone\n\n\
             The same arrays, each step of `upload_csr_u32` alone, best of a few passes, ms: the offsets' \
             *check*, their *stats* and the matrix's *host copy* of them (the library's functions; the \
             copy into a fresh allocation, its pages faulted in); *alloc*, the three device buffers \
             allocated as the library does (`cuMemAllocAsync` from the default pool, trimmed by the \
             synchronisation after the last free) and *free*, to completion; each array *staged* alone \
             through a replica of the library's pipeline (pass into a stage, copy, event; a stage refilled \
             once its copy completed) into buffers allocated beforehand, and the three back to back \
             (*staged all*). *Beyond* is the upload's time less the offsets' check and staged all: what \
             the steps overlapped with them leave, and what no step alone accounts for. *Pin* is the replica's \
             four stages pinned, written once and freed: about twice what the first staged upload of a `Gpu` \
             pays once for the library's two.\n\n\
             | matrix | prec | upload ms | check | stats | host copy | alloc | free | staged offsets \
             | staged columns | staged values | staged all | beyond | pin |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for u in &self.uploads {
            let (Some(s), Some(upload_ms)) = (u.steps, u.from_u32_ms) else { continue };
            let beyond = upload_ms - s.check_ms - s.staged_all_ms;
            let _ = writeln!(
                out,
                "| {} | {} | {upload_ms:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} \
                 | {:.2} | {beyond:.2} | {} |",
                u.matrix,
                u.precision,
                s.check_ms,
                s.stats_ms,
                s.host_copy_ms,
                s.alloc_ms,
                s.free_ms,
                s.staged_ms[0],
                s.staged_ms[1],
                s.staged_ms[2],
                s.staged_all_ms,
                s.pin_ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.2}"))
            );
        }
        out.push('\n');
    }

    /// The upload from `u32` beside its ceilings, measured in the same run on its bytes (see
    /// `spmv_bench::staging`): which of the host and the link sets its pace, and how near it comes.
    fn stage_ceilings_table(&self, out: &mut String, link: Option<f64>) {
        let _ = writeln!(
            out,
            "### Upload from u32: the host's and the link's ceilings\n\n\
             The same arrays, chunk by chunk through pinned stages as `upload_csr_u32` cuts them, each part \
             alone, best of a few passes: (a) *memcpy*, the bytes copied into the stages by all cores, \
             nothing checked, no link; (b) *pass*, the library's own pass over each chunk \
             (`formats::copy_checked`: columns checked as copied), no link; (c) *link*, the chunks copied \
             from the stages to the device back to back. The upload overlaps (b) with (c), so it can at best \
             reach the slower of them; *of ceiling* is the upload's rate over that. GB/s of the CSR arrays; \
             the pinned link probe (one 256 MiB copy): {}.\n\n\
             | matrix | prec | CSR MB | upload from u32 GB/s | (a) memcpy GB/s | (b) pass GB/s | (c) link GB/s \
             | bound by | of ceiling |\n\
             |---|---|---:|---:|---:|---:|---:|---|---:|",
            link.map_or_else(|| "not measured".to_owned(), |g| format!("{g:.1} GB/s"))
        );
        for u in &self.uploads {
            let (Some(c), Some(upload_ms)) = (u.stage_ceilings, u.from_u32_ms) else { continue };
            let gbps = |ms: f64| u.csr_bytes as f64 / (ms * 1e6);
            let (bound, ceiling_ms) =
                if c.pass_ms >= c.link_ms { ("host (b)", c.pass_ms) } else { ("link (c)", c.link_ms) };
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {bound} | {:.0}% |",
                u.matrix,
                u.precision,
                u.csr_bytes as f64 / 1e6,
                gbps(upload_ms),
                gbps(c.memcpy_ms),
                gbps(c.pass_ms),
                gbps(c.link_ms),
                100.0 * ceiling_ms / upload_ms
            );
        }
        out.push('\n');
    }

    /// Reverse Cuthill–McKee: host cost, bandwidth, product time before and after, and after how
    /// many products the reordering pays for itself (Reguly & Giles, section 5.6).
    fn reorderings_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Reverse Cuthill–McKee\n\nHost time of the permutation and the permuted arrays; products \
             timed on the original and the reordered matrix (same x, permuted); break-even = host time \
             over the time a product saves.\n\n\
             | matrix | prec | kernel | RCM ms | bandwidth before | after | before µs | after µs | speed-up | \
             break-even products | max rel. error |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in &self.reorderings {
            let even = r.break_even_products.map_or_else(|| "never".to_owned(), |n| format!("{n:.0}"));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} | {} | {} | {:.2} | {:.2} | {:.2}x | {} | {:.1e} |",
                r.matrix,
                r.precision,
                r.kernel,
                r.rcm_ms,
                r.bandwidth_before,
                r.bandwidth_after,
                r.before_us,
                r.after_us,
                r.before_us / r.after_us,
                even,
                r.max_rel_error
            );
        }
        out.push('\n');
    }

    fn formats_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Formats beyond CSR: conversion cost and break-even\n\n\
             GB/s counts the CSR bytes (the same work), so the columns compare. *Break-even* is the \
             conversion time over the time one product saves: the number of products after which \
             converting pays off (never, when the format is not faster).\n"
        );
        let _ = writeln!(
            out,
            "| matrix | prec | format | µs | GB/s | conversion ms | break-even vs best CSR | vs cuSPARSE |"
        );
        let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|");
        let break_even = |conversion_ms: f64, format_us: f64, reference: Option<&Record>| match reference {
            Some(r) if r.timing.median_us > format_us => {
                format!("{:.0}", (conversion_ms * 1e3 / (r.timing.median_us - format_us)).ceil())
            }
            Some(_) => "never".to_owned(),
            None => "n/a".to_owned(),
        };
        for r in self.records.iter().filter(|r| r.conversion_ms.is_some()) {
            let conversion = r.conversion_ms.unwrap_or(f64::NAN);
            let csr = self.fastest(&r.matrix, r.precision, "gpu-spmv");
            let cusparse = self.fastest(&r.matrix, r.precision, "cuSPARSE");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} | {:.0} | {:.1} | {} | {} |",
                r.matrix,
                r.precision,
                r.variant,
                r.timing.median_us,
                r.gbps,
                conversion,
                break_even(conversion, r.timing.median_us, csr),
                break_even(conversion, r.timing.median_us, cusparse),
            );
        }
        let _ = writeln!(
            out,
            "\nBRC's block width: the model's B2 and the tuner's (`Gpu::upload_brc_tuned`, widths timed \
             in order, its wall time) against the best of every B2 tried; fractions are best time / \
             its time (Ashari et al.'s tuner: 96%).\n"
        );
        let _ = writeln!(
            out,
            "| matrix | prec | model B2 | µs | best B2 | µs | model / best | tuned B2 | µs | tuned / best | \
             widths timed | tuner ms |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
        for m in &self.matrices {
            for precision in Precision::ALL {
                let brc: Vec<&Record> = self
                    .records
                    .iter()
                    .filter(|r| {
                        r.matrix == m.name
                            && r.precision == precision
                            && r.variant.starts_with("brc-b")
                            && !r.variant.ends_with("-atomic")
                    })
                    .collect();
                let model = brc.iter().find(|r| r.variant == format!("brc-b{}", m.brc_model_b2));
                let best = brc.iter().min_by(|a, b| a.timing.median_us.total_cmp(&b.timing.median_us));
                if let (Some(model), Some(best)) = (model, best) {
                    let tuned =
                        self.brc_tuned.iter().find(|t| t.matrix == m.name && t.precision == precision);
                    let tuned_record =
                        tuned.and_then(|t| brc.iter().find(|r| r.variant == format!("brc-b{}", t.b2)));
                    let tuned_cells = match (tuned, tuned_record) {
                        (Some(t), Some(r)) => format!(
                            "{} | {:.2} | {:.0}% | {} | {:.0}",
                            t.b2,
                            r.timing.median_us,
                            100.0 * best.timing.median_us / r.timing.median_us,
                            t.trials.iter().map(|(b2, _)| b2.to_string()).collect::<Vec<_>>().join(", "),
                            t.tuning_ms
                        ),
                        _ => "– | – | – | – | –".to_owned(),
                    };
                    let _ = writeln!(
                        out,
                        "| {} | {precision} | {} | {:.2} | {} | {:.2} | {:.0}% | {tuned_cells} |",
                        m.name,
                        m.brc_model_b2,
                        model.timing.median_us,
                        best.variant.trim_start_matches("brc-b"),
                        best.timing.median_us,
                        100.0 * best.timing.median_us / model.timing.median_us
                    );
                }
            }
        }
        out.push('\n');
    }

    /// A compact terminal summary: per matrix and precision, the library's best kernel, Auto, and the
    /// better cuSPARSE.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<22} {:<4} {:<26} {:>9} {:>7} {:>6} {:>8} {:>8} {:>9}",
            "matrix", "prec", "fastest of ours", "µs", "GB/s", "floor", "auto µs", "cuSP µs", "speedup"
        );
        for m in &self.matrices {
            for precision in Precision::ALL {
                let of = |family: &str| {
                    self.records
                        .iter()
                        .filter(|r| r.matrix == m.name && r.precision == precision && r.family == family)
                        .min_by(|a, b| a.timing.median_us.total_cmp(&b.timing.median_us))
                };
                let Some(best) = of("gpu-spmv").or_else(|| of("CPU")) else { continue };
                let find = |v: &str| {
                    self.records
                        .iter()
                        .find(|r| r.matrix == m.name && r.precision == precision && r.variant == v)
                };
                let auto = find("auto").map_or(f64::NAN, |r| r.timing.median_us);
                let cusparse = of("cuSPARSE").map_or(f64::NAN, |r| r.timing.median_us);
                let _ = writeln!(
                    out,
                    "{:<22} {:<4} {:<26} {:>9.2} {:>7.0} {:>6} {:>8} {:>8} {:>9}",
                    m.name,
                    precision,
                    best.variant,
                    best.timing.median_us,
                    best.gbps,
                    or_na(best.floor_fraction, |v| format!("{:.0}%", 100.0 * v)),
                    or_na(auto, |v| format!("{v:.2}")),
                    or_na(cusparse, |v| format!("{v:.2}")),
                    or_na(best.speedup_vs_cusparse, |v| format!("{v:.2}x"))
                );
            }
        }
        out
    }

    /// What got faster or slower than in `old`, by more than `threshold` (a fraction).
    pub fn compare(&self, old: &Results, threshold: f64) -> String {
        let key = |r: &Record| (r.matrix.clone(), r.precision, r.variant.clone());
        let before: BTreeMap<_, f64> = old.records.iter().map(|r| (key(r), r.timing.median_us)).collect();
        let mut changes: Vec<(f64, String)> = self
            .records
            .iter()
            .filter_map(|r| {
                let was = *before.get(&key(r))?;
                let ratio = was / r.timing.median_us;
                ((ratio - 1.0).abs() > threshold).then(|| {
                    let word = if ratio > 1.0 { "faster" } else { "slower" };
                    let line = format!(
                        "{:<22} {:<4} {:<28} {:>9.2} -> {:>9.2} µs  {:.2}x {word}",
                        r.matrix, r.precision, r.variant, was, r.timing.median_us, ratio
                    );
                    (ratio, line)
                })
            })
            .collect();
        changes.sort_by(|a, b| b.0.total_cmp(&a.0));
        if changes.is_empty() {
            return format!("no change beyond {:.0}% against {}", 100.0 * threshold, old.git_commit);
        }
        let lines: Vec<String> = changes.into_iter().map(|(_, l)| l).collect();
        format!("changes beyond {:.0}% against {}:\n{}", 100.0 * threshold, old.git_commit, lines.join("\n"))
    }
}
