//! Where Auto misses (issue 23): per matrix, precision and regime, the kernel Auto ran, the fastest
//! kernel of ours, the gap, and what kind of miss it is.
//!
//! The kind compares the two kernels' keys: another family (per-row, balanced, merge path,
//! streaming), another width of a per-row kernel, another block size, or the same width and block
//! in another per-row kernel (the parametrised kernel Auto runs against the plain thread-per-row and
//! vector kernels, which have no long-row split and no grid stride). Where Auto's own kernel was
//! also timed under its own key, the two timings of one kernel show how much of a gap is
//! measurement. Beside the kind, the causes the matrix suggests: a GPU that a warp per row leaves
//! under-filled (occupancy), and in the hot and graph regimes a product that fits in L2.

use crate::fit::{HIT, Sample, samples};
use crate::report::Results;
use crate::summary::Regime;
use gpu_spmv::rule::Feature;
use std::fmt::Write as _;

/// One kernel key taken apart: its family, its per-row kernel, threads per row, threads per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape<'k> {
    family: &'static str,
    kernel: &'k str,
    width: u32,
    block: u32,
}

/// Reads a kernel key (`Kernel`'s `Display`): `None` for a key of no CSR kernel.
fn shape(key: &str) -> Option<Shape<'_>> {
    let parts: Vec<&str> = key.split('-').collect();
    let number = |prefix: char| -> Option<u32> {
        parts.iter().find_map(|p| p.strip_prefix(prefix).and_then(|n| n.parse().ok()))
    };
    let block = number('b').unwrap_or(0);
    let per_row = |kernel, width| Some(Shape { family: "per-row", kernel, width, block });
    match parts.get(1).copied()? {
        "scalar" => per_row("scalar", 1),
        "vector" => per_row("vector", number('c')?),
        "param" => per_row("param", number('c')?),
        "aligned" => per_row("aligned", number('g')?),
        "balanced" => Some(Shape { family: "balanced", kernel: "balanced", width: 0, block }),
        "merge" => Some(Shape { family: "merge", kernel: "merge", width: 0, block }),
        "stream" => Some(Shape { family: "stream", kernel: "stream", width: 0, block: number('s')? }),
        "panels" => Some(Shape { family: "panels", kernel: "panels", width: number('k')?, block }),
        _ => None,
    }
}

/// The kind of a miss of Auto's kernel `auto` against the fastest, `fastest`.
pub fn kind(auto: &str, fastest: &str) -> &'static str {
    let (Some(a), Some(f)) = (shape(auto), shape(fastest)) else { return "unknown kernel" };
    if auto == fastest {
        "measurement"
    } else if a.family != f.family {
        "family"
    } else if (a.family == "per-row" || a.family == "panels") && a.width != f.width {
        // For column panels, the panel's width.
        "width"
    } else if a.kernel != f.kernel {
        "per-row kernel"
    } else {
        "block size"
    }
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Line {
    pub matrix: String,
    pub precision: String,
    pub regime: Regime,
    pub auto: String,
    pub auto_us: f64,
    pub fastest: String,
    pub fastest_us: f64,
    /// Auto's time over the fastest, minus 1.
    pub gap: f64,
    /// Auto's kernel timed under its own key as well, µs: the second timing of the same kernel.
    pub same_kernel_us: Option<f64>,
    /// [`kind`], or `hit` within [`HIT`].
    pub kind: &'static str,
    /// What the matrix suggests: `occupancy` (a warp per row fills less than the GPU), `L2 fit`
    /// (hot or graph, and one product's bytes fit in L2).
    pub causes: Vec<&'static str>,
}

fn line(s: &Sample, regime: Regime) -> Line {
    let (auto, auto_us) = (s.auto.0.to_string(), s.auto.1);
    let (fastest, fastest_us) = s.fastest();
    let same_kernel_us = s.times.get(&auto).copied();
    let gap = auto_us / fastest_us - 1.0;
    let kind = if auto_us <= HIT * fastest_us {
        "hit"
    } else if same_kernel_us.is_some_and(|t| t <= HIT * fastest_us) {
        "measurement"
    } else {
        kind(&auto, &fastest)
    };
    let mut causes = Vec::new();
    if s.features.get(Feature::Fill) < 1.0 {
        causes.push("occupancy");
    }
    if regime != Regime::Cold && s.features.get(Feature::L2Share) < 1.0 {
        causes.push("L2 fit");
    }
    Line {
        matrix: s.matrix.clone(),
        precision: s.precision.clone(),
        regime,
        auto,
        auto_us,
        fastest,
        fastest_us,
        gap,
        same_kernel_us,
        kind,
        causes,
    }
}

/// Every matrix, precision and regime of a run with Auto timed in it.
pub fn lines(results: &Results) -> Vec<Line> {
    Regime::ALL
        .iter()
        .flat_map(|&regime| samples(results, regime).into_iter().map(move |s| line(&s, regime)))
        .collect()
}

/// The table in Markdown: one row per miss (gap above [`HIT`]), then per regime the count of hits
/// and of each kind, and the geometric-mean gap. In the hot and graph regimes the committed runs
/// timed only Auto, the fastest kernel cold and cuSPARSE there, so "fastest" is the fastest of those.
pub fn table(results: &Results) -> String {
    let lines = lines(results);
    let mut out = String::new();
    out.push_str("| matrix | prec | regime | Auto's kernel | µs | fastest of ours | µs | gap | same kernel again, µs | kind | causes |\n");
    out.push_str("|---|---|---|---|---:|---|---:|---:|---:|---|---|\n");
    for l in lines.iter().filter(|l| l.kind != "hit") {
        let again = l.same_kernel_us.map_or(String::new(), |t| format!("{t:.2}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2} | {} | {:.2} | {:+.1}% | {again} | {} | {} |",
            l.matrix,
            l.precision,
            l.regime.name(),
            l.auto,
            l.auto_us,
            l.fastest,
            l.fastest_us,
            100.0 * l.gap,
            l.kind,
            l.causes.join(", ")
        );
    }
    out.push('\n');
    out.push_str(&counts(&lines));
    out
}

/// Per regime: samples, hits, each kind's count, and the geometric mean of Auto over the fastest.
pub fn counts(lines: &[Line]) -> String {
    let mut out = String::from(
        "| regime | samples | hits | family | width | per-row kernel | block size | measurement | Auto / fastest (geomean) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for regime in Regime::ALL {
        let of: Vec<&Line> = lines.iter().filter(|l| l.regime == regime).collect();
        if of.is_empty() {
            continue;
        }
        let n = |kind: &str| of.iter().filter(|l| l.kind == kind).count();
        let geo = crate::summary::geomean(of.iter().map(|l| 1.0 + l.gap));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {geo:.3}x |",
            regime.name(),
            of.len(),
            n("hit"),
            n("family"),
            n("width"),
            n("per-row kernel"),
            n("block size"),
            n("measurement")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_taken_apart() {
        assert_eq!(shape("csr-scalar-b128").map(|s| (s.kernel, s.width, s.block)), Some(("scalar", 1, 128)));
        assert_eq!(shape("csr-vector-c8-b128").map(|s| (s.width, s.block)), Some((8, 128)));
        assert_eq!(
            shape("csr-param-c4-r1-b256-nosplit").map(|s| (s.kernel, s.width, s.block)),
            Some(("param", 4, 256))
        );
        assert_eq!(shape("csr-aligned-g16-nc-b64").map(|s| (s.width, s.block)), Some((16, 64)));
        assert_eq!(shape("csr-balanced-b256").map(|s| (s.family, s.block)), Some(("balanced", 256)));
        assert_eq!(shape("csr-stream-s3").map(|s| s.family), Some("stream"));
        assert_eq!(shape("cusparse-csr-alg1"), None);
        assert_eq!(shape("auto"), None);
    }

    #[test]
    fn misses_are_sorted_into_kinds() {
        assert_eq!(kind("csr-param-c4-r1-b128", "csr-balanced-b128"), "family");
        assert_eq!(kind("csr-param-c4-r1-b128", "csr-vector-c8-b128"), "width");
        assert_eq!(kind("csr-param-c1-r1-b128", "csr-scalar-b128"), "per-row kernel");
        assert_eq!(kind("csr-param-c8-r1-b128", "csr-aligned-g8-nc-b128"), "per-row kernel");
        assert_eq!(kind("csr-balanced-b128", "csr-balanced-b256"), "block size");
        assert_eq!(kind("csr-merge-b128", "csr-merge-b256"), "block size");
        assert_eq!(kind("csr-balanced-b128", "csr-balanced-b128"), "measurement");
        assert_eq!(kind("csr-balanced-b128", "cusparse-csr-alg1"), "unknown kernel");
        assert_eq!(kind("csr-panels-k64-b512", "csr-balanced-b128"), "family");
        assert_eq!(kind("csr-panels-k64-b512", "csr-panels-k48-b512"), "width");
        assert_eq!(kind("csr-panels-k64-b512", "csr-panels-k64-b256"), "block size");
    }
}
