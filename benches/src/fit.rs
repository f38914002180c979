//! Fitting [`Kernel::Auto`]'s rule to measurements (issue 23): a small decision tree over the
//! features the library computes for each matrix and GPU ([`Features`]), whose leaves are kernels,
//! grown greedily to the least total log-time over the matrices of a run, in the regime asked for;
//! and its leave-one-out check, which fits the tree without each matrix in turn and scores its
//! choice on that matrix, the figure that says how the rule will do on matrices it has not seen.
//!
//! The tree is the library's own type ([`Rule`]), so a tree fitted here chooses exactly as the
//! library's would; `host/src/enqueue/csr/rule.rs` holds the tree fitted on the committed run, and
//! the `auto_rule` test checks that it is what this code fits.

use crate::precision::Precision;
use crate::report::Results;
use crate::run::MatrixInfo;
use crate::summary::Regime;
use crate::variants::gpu_kernels;
use gpu_spmv::rule::{AUTO_MIN_FILL, Feature, Features, Node, Rule, Target, resolve_leaf, width_kernel};
use gpu_spmv::{Kernel, RowStats};
use std::collections::BTreeMap;

/// The share of the fastest kernel's speed a choice must reach to count as a hit: within 3% (the
/// issue's target, and about the spread of one timing).
pub const HIT: f64 = 1.03;

/// How far a tree may grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Deepest split: at depth 3, at most 8 leaves, readable at a glance.
    pub max_depth: usize,
    /// The fewest samples a leaf may hold: a branch that fits one matrix in one precision is the
    /// in-sample noise leave-one-out punishes.
    pub min_leaf: usize,
    /// A split is kept only when it lowers the node's total log-time by this much per sample of the
    /// node: smaller gains are within the timings' noise.
    pub min_gain_per_sample: f64,
}

/// The limits the committed rule was fitted with.
pub const LIMITS: Limits = Limits { max_depth: 3, min_leaf: 4, min_gain_per_sample: 0.005 };

/// One matrix in one precision, in one regime: what the rule sees, and what each kernel of ours
/// took.
#[derive(Debug, Clone)]
pub struct Sample {
    pub matrix: String,
    pub precision: String,
    pub stats: RowStats,
    pub features: Features,
    pub sm_count: u32,
    /// The kernel Auto ran (recorded, or for runs before it was, what the hand rule gives: it had not
    /// changed its choices between the committed runs and the fitted rule) and its time.
    pub auto: (Kernel, f64),
    /// Each kernel of ours timed under its own key in this regime, µs.
    pub times: BTreeMap<String, f64>,
}

impl Sample {
    /// The time of `kernel`'s products: its own record, and Auto's where Auto ran it; of two
    /// timings of one kernel the lower, since the kernel can run that fast (the other met a GPU
    /// slowed by something outside it: orani678's balanced kernel, f32, took 25 µs under its own key
    /// and 6 µs as Auto in the real set's run).
    pub fn time_of(&self, kernel: Kernel) -> Option<f64> {
        let own = self.times.get(&kernel.to_string()).copied();
        let as_auto = (kernel == self.auto.0).then_some(self.auto.1);
        match (own, as_auto) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The fastest kernel of ours measured here, Auto's record among them: its key and time.
    pub fn fastest(&self) -> (String, f64) {
        let (auto, auto_us) = (self.auto.0.to_string(), self.auto.1);
        self.times
            .iter()
            .map(|(k, &t)| (k.clone(), t))
            .fold((auto, auto_us), |best, (k, t)| if t < best.1 { (k, t) } else { best })
    }
}

/// The row statistics a run recorded for a matrix (it did not record the empty rows, which no rule
/// reads).
pub fn stats_of(m: &MatrixInfo) -> RowStats {
    RowStats {
        rows: m.rows,
        cols: m.cols,
        nnz: m.nnz,
        mean: m.mean,
        std_dev: m.std_dev,
        max: m.max,
        empty_rows: 0,
    }
}

/// The GPU a run measured on, as the rule sees it (`None` for a run without a GPU).
pub fn target_of(results: &Results) -> Option<Target> {
    let d = results.device.as_ref()?;
    Some(Target { sm_count: d.sm_count, l2_bytes: d.l2_bytes as u64 })
}

/// The samples of a run in `regime`: every matrix and precision with Auto timed in it.
pub fn samples(results: &Results, regime: Regime) -> Vec<Sample> {
    let Some(target) = target_of(results) else { return Vec::new() };
    let mut out = Vec::new();
    for m in &results.matrices {
        let stats = stats_of(m);
        for precision in Precision::ALL {
            let ours = || {
                results
                    .records
                    .iter()
                    .filter(|r| r.matrix == m.name && r.precision == precision && r.family == "gpu-spmv")
            };
            let Some(auto) = ours().find(|r| r.variant == "auto") else { continue };
            let Some(auto_us) = regime.time_us(auto) else { continue };
            // The kernel whose times these are: the regime's own where the run recorded it (runs
            // before the hot rule planned every regime by the cold one). A run before `resolved`
            // was recorded ran the hand rule; a key no kernel here has (a kernel added since)
            // leaves the sample out rather than guess.
            let in_regime = match regime {
                Regime::Cold => None,
                Regime::Hot => auto.resolved_hot.as_deref(),
                Regime::Graph => auto.resolved_graph.as_deref(),
            };
            let kernel = match in_regime.or(auto.resolved.as_deref()) {
                None => Kernel::auto(&stats, target.sm_count),
                Some(key) => {
                    let Some(kernel) = kernel_of(key, &stats, target.sm_count) else { continue };
                    kernel
                }
            };
            let times = ours()
                .filter(|r| r.variant != "auto")
                .filter_map(|r| Some((r.variant.clone(), regime.time_us(r)?)))
                .collect();
            let value_bytes = match precision {
                Precision::F32 => 4,
                Precision::F64 => 8,
            };
            out.push(Sample {
                matrix: m.name.clone(),
                precision: precision.name().to_owned(),
                stats,
                features: Features::of(&stats, value_bytes, target),
                sm_count: target.sm_count,
                auto: (kernel, auto_us),
                times,
            });
        }
    }
    out
}

/// The kernel of ours a run's key names on a matrix of `stats`: every kernel the bench times on any
/// matrix, the parametrised kernel of Reguly & Giles' fixed rule that it times on this one (with and
/// without its long-row split, `variants::without_split`), and the kernels a recorded `resolved` key
/// of Auto may name. `None` for a key of none of these (a kernel added since the run).
fn kernel_of(key: &str, stats: &RowStats, sm_count: u32) -> Option<Kernel> {
    let fixed = Kernel::fixed_rule(stats, sm_count);
    let timed = gpu_kernels(true).into_iter().chain([fixed]).chain(crate::variants::without_split(fixed));
    timed.chain(per_row_kernels()).chain(panel_kernels()).find(|k| k.to_string() == key)
}

/// The parametrised kernels Auto's hand rule gives (one row per group, 128 threads, long rows
/// split), which the bench times only as Auto: where a recorded `resolved` key is looked up.
fn per_row_kernels() -> impl Iterator<Item = Kernel> {
    Kernel::PARAM_COOPS.into_iter().map(|coop| Kernel::CsrParam {
        coop,
        repeat: 1,
        block_size: 128,
        split_long_rows: true,
    })
}

/// The column-panel kernels Auto's panel term and the tuner plan, every panel size at each of the
/// tuner's block sizes: where a recorded `resolved` key is looked up.
fn panel_kernels() -> impl Iterator<Item = Kernel> {
    Kernel::PANEL_KIB.into_iter().flat_map(|panel_kib| {
        gpu_spmv::tune::TUNE_PANEL_BLOCK_SIZES.map(|block_size| Kernel::CsrPanels { panel_kib, block_size })
    })
}

/// Entries per lane the [`Node::Width`] leaves are offered at.
pub const ENTRIES_PER_LANE: [u32; 6] = [2, 3, 4, 6, 8, 12];

/// Shares of the resident threads the [`Node::Width`] leaves fill at least: Auto's, then less, for
/// products whose matrix is read from the L2, where fewer loads in flight may keep it busy. Auto's
/// first, so that a tie keeps it.
pub const MIN_FILLS: [f64; 3] = [AUTO_MIN_FILL, AUTO_MIN_FILL / 2.0, AUTO_MIN_FILL / 4.0];

/// The leaves a tree may take: the hand rule (Auto), a vector kernel at each width rule
/// ([`ENTRIES_PER_LANE`] at each of [`MIN_FILLS`]), and every other kernel the bench times on every
/// matrix.
pub fn leaves() -> Vec<Node> {
    let widths = MIN_FILLS.into_iter().flat_map(|min_fill| {
        ENTRIES_PER_LANE.map(|entries_per_lane| Node::Width { entries_per_lane, min_fill })
    });
    gpu_kernels(true).into_iter().map(Node::Leaf).chain(widths).collect()
}

/// The kernel a leaf gives a sample (as [`Rule::choose`] does).
fn leaf_kernel(leaf: Node, s: &Sample) -> Kernel {
    let kernel = match leaf {
        Node::Width { entries_per_lane, min_fill } => {
            width_kernel(entries_per_lane, min_fill, &s.stats, s.sm_count)
        }
        Node::Leaf(kernel) => kernel,
        Node::Split { .. } => Kernel::Auto,
    };
    resolve_leaf(kernel, &s.stats, s.sm_count)
}

/// A tree: its nodes in the order [`Rule`] reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub nodes: Vec<Node>,
}

impl Fitted {
    pub fn rule(&self) -> Rule<'_> {
        Rule { nodes: &self.nodes }
    }

    /// The tree's choice for a sample.
    pub fn choose(&self, s: &Sample) -> Kernel {
        self.rule().choose(&s.features, &s.stats, s.sm_count)
    }

    /// The nodes as the Rust constant `rule.rs` holds.
    pub fn rust_source(&self, name: &str) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("    {},", node_source(n))).collect();
        format!("const {name}: [Node; {}] = [\n{}\n];\n", self.nodes.len(), nodes.join("\n"))
    }
}

fn node_source(node: &Node) -> String {
    match node {
        Node::Width { entries_per_lane, min_fill } => {
            format!("Node::Width {{ entries_per_lane: {entries_per_lane}, min_fill: {min_fill:?} }}")
        }
        Node::Leaf(k) => format!("Node::Leaf({})", kernel_source(*k)),
        Node::Split { feature, threshold, below, above } => {
            format!(
                "Node::Split {{ feature: Feature::{feature:?}, threshold: {threshold:?}, below: {below}, above: {above} }}"
            )
        }
    }
}

fn kernel_source(k: Kernel) -> String {
    match k {
        Kernel::Auto => "Kernel::Auto".into(),
        other => format!("Kernel::{other:?}"),
    }
}

/// Each sample's cost under each leaf: the log of the leaf's kernel's time over the sample's
/// fastest (0 for the fastest), `None` where that kernel was not timed on the sample (the leaf
/// cannot hold it).
struct Costs {
    leaves: Vec<Node>,
    /// `[sample][leaf]`.
    of: Vec<Vec<Option<f64>>>,
}

impl Costs {
    fn new(samples: &[Sample]) -> Self {
        let leaves = leaves();
        let of = samples
            .iter()
            .map(|s| {
                let fastest = s.fastest().1;
                leaves.iter().map(|&l| Some((s.time_of(leaf_kernel(l, s))? / fastest).ln())).collect()
            })
            .collect();
        Costs { leaves, of }
    }

    /// The leaf of least total cost over the samples `of`, the first on ties, with its cost.
    fn best_leaf(&self, of: &[usize]) -> Option<(usize, f64)> {
        let total = |leaf: usize| of.iter().map(|&i| self.of[i][leaf]).sum::<Option<f64>>();
        (0..self.leaves.len()).filter_map(|l| Some((l, total(l)?))).fold(None, |best, (l, c)| match best {
            Some((_, b)) if b <= c => best,
            _ => Some((l, c)),
        })
    }
}

/// Fits a tree to `samples` within `limits`, grown greedily (each node takes the split of least
/// total cost of its two best leaves). Deterministic: ties go to the first feature, the lowest
/// threshold and the first leaf.
pub fn fit(samples: &[Sample], limits: Limits) -> Fitted {
    let costs = Costs::new(samples);
    let all: Vec<usize> = (0..samples.len()).collect();
    let mut nodes = Vec::new();
    let grow = Grow { samples, costs: &costs, limits };
    grow.node(&all, limits.max_depth, &mut nodes);
    Fitted { nodes }
}

struct Grow<'a> {
    samples: &'a [Sample],
    costs: &'a Costs,
    limits: Limits,
}

impl Grow<'_> {
    /// Appends the subtree for the samples `of` to `nodes`; returns its root's index.
    fn node(&self, of: &[usize], depth: usize, nodes: &mut Vec<Node>) -> usize {
        let Grow { samples, costs, limits } = *self;
        let min_leaf = limits.min_leaf.max(1);
        let at = nodes.len();
        let Some((leaf, leaf_cost)) = costs.best_leaf(of) else {
            nodes.push(Node::Leaf(Kernel::Auto));
            return at;
        };
        nodes.push(costs.leaves[leaf]);
        if depth == 0 || of.len() < 2 * min_leaf {
            return at;
        }
        let value = |i: usize, f: Feature| samples[i].features.get(f);
        let mut best: Option<(Feature, f64, f64)> = None;
        for feature in Feature::ALL {
            let mut sorted = of.to_vec();
            sorted.sort_by(|&a, &b| value(a, feature).total_cmp(&value(b, feature)));
            for cut in min_leaf..=sorted.len() - min_leaf {
                let (lo, hi) = (value(sorted[cut - 1], feature), value(sorted[cut], feature));
                if lo == hi {
                    continue;
                }
                let (Some((_, a)), Some((_, b))) =
                    (costs.best_leaf(&sorted[..cut]), costs.best_leaf(&sorted[cut..]))
                else {
                    continue;
                };
                if best.is_none_or(|(_, _, c)| a + b < c) {
                    best = Some((feature, (lo + hi) / 2.0, a + b));
                }
            }
        }
        let Some((feature, threshold, split_cost)) = best else { return at };
        if leaf_cost - split_cost < limits.min_gain_per_sample * of.len() as f64 {
            return at;
        }
        let (below, above): (Vec<usize>, Vec<usize>) =
            of.iter().partition(|&&i| value(i, feature) < threshold);
        let below = self.node(&below, depth - 1, nodes);
        let above = self.node(&above, depth - 1, nodes);
        nodes[at] = Node::Split { feature, threshold, below, above };
        at
    }
}

/// How a chooser did on one sample: its choice's time over the fastest.
#[derive(Debug, Clone)]
pub struct Scored {
    pub matrix: String,
    pub precision: String,
    pub chosen: Kernel,
    /// The choice's time over the fastest kernel's (1 is the fastest); NaN where the choice was not
    /// timed on the sample.
    pub ratio: f64,
}

impl Scored {
    pub fn hit(&self) -> bool {
        self.ratio <= HIT
    }
}

fn score(s: &Sample, chosen: Kernel) -> Scored {
    let ratio = s.time_of(chosen).map_or(f64::NAN, |t| t / s.fastest().1);
    Scored { matrix: s.matrix.clone(), precision: s.precision.clone(), chosen, ratio }
}

/// Auto as the run measured it, on every sample.
pub fn score_auto(samples: &[Sample]) -> Vec<Scored> {
    samples.iter().map(|s| score(s, s.auto.0)).collect()
}

/// `fitted`'s choices on every sample (in sample, when it was fitted on them).
pub fn score_fitted(fitted: &Fitted, samples: &[Sample]) -> Vec<Scored> {
    samples.iter().map(|s| score(s, fitted.choose(s))).collect()
}

/// Leave-one-out: for each matrix name, the tree fitted on the other matrices (both precisions, and
/// every size of a suite matrix, left out together, so that a twin cannot vouch for it), scored on
/// it. The scores come by matrix name.
pub fn leave_one_out(samples: &[Sample], limits: Limits) -> Vec<Scored> {
    leave_one_out_across(samples, samples, limits)
}

/// [`leave_one_out`] fitted on `train` and scored on `scored_on`, another run of the same matrices
/// (or the same run): each matrix of `scored_on` by the tree fitted on `train` without it.
pub fn leave_one_out_across(train: &[Sample], scored_on: &[Sample], limits: Limits) -> Vec<Scored> {
    let names: std::collections::BTreeSet<&str> = scored_on.iter().map(|s| s.matrix.as_str()).collect();
    let mut out = Vec::new();
    for name in names {
        let others: Vec<Sample> = train.iter().filter(|s| s.matrix != name).cloned().collect();
        let fitted = fit(&others, limits);
        out.extend(scored_on.iter().filter(|s| s.matrix == name).map(|s| score(s, fitted.choose(s))));
    }
    out
}

/// For each sample of `scored_on`, the kernel that was fastest on the same matrix and precision in
/// `chosen_from` (a choice that knew every timing of that run), scored on `scored_on`'s timings: how
/// often two runs of the same kernels agree on which is fastest, within [`HIT`]. Run on two runs of
/// one binary on one GPU, it measures the timings' noise as it bears on a hit rate. Samples without a
/// twin in `chosen_from`, or whose fastest key names no kernel of ours, are left out; a fastest kernel
/// that `scored_on` did not time scores NaN (a miss, outside the geometric mean).
pub fn fastest_across(chosen_from: &[Sample], scored_on: &[Sample]) -> Vec<Scored> {
    scored_on
        .iter()
        .filter_map(|s| {
            let twin = chosen_from.iter().find(|t| t.matrix == s.matrix && t.precision == s.precision)?;
            Some(score(s, kernel_of(&twin.fastest().0, &s.stats, s.sm_count)?))
        })
        .collect()
}

/// One line on a list of scores: hits within [`HIT`] of the fastest, and the geometric mean and
/// worst of the ratios.
pub fn describe(scored: &[Scored]) -> String {
    let hits = scored.iter().filter(|s| s.hit()).count();
    let worst = scored.iter().filter(|s| !s.ratio.is_nan()).max_by(|a, b| a.ratio.total_cmp(&b.ratio));
    let geo = crate::summary::geomean(scored.iter().map(|s| s.ratio).filter(|r| !r.is_nan()));
    let worst =
        worst.map_or("none".to_owned(), |w| format!("{} {} at {:.3}x", w.matrix, w.precision, w.ratio));
    format!(
        "{hits}/{} within {:.0}% of the fastest ({:.0}%), geometric mean {geo:.3}x the fastest, worst {worst}",
        scored.len(),
        (HIT - 1.0) * 100.0,
        100.0 * hits as f64 / scored.len().max(1) as f64
    )
}

#[cfg(test)]
mod tests;
