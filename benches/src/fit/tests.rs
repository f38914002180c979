use super::*;
use crate::run::Record;
use crate::variants::gpu_kernels;

const TARGET: Target = Target { sm_count: 132, l2_bytes: 50 << 20 };

/// A matrix of `rows` rows of `mean` entries (no long rows), where the kernels in `times` took
/// those times.
fn sample(matrix: &str, rows: usize, mean: f64, times: &[(Kernel, f64)]) -> Sample {
    let stats = RowStats {
        rows,
        cols: rows,
        nnz: (rows as f64 * mean) as usize,
        mean,
        std_dev: 0.0,
        max: mean as usize,
        empty_rows: 0,
    };
    let auto = Kernel::auto(&stats, TARGET.sm_count);
    let auto_us = times.iter().find(|(k, _)| *k == auto).map_or(10.0, |t| t.1);
    Sample {
        matrix: matrix.into(),
        precision: "f32".into(),
        stats,
        features: Features::of(&stats, 4, TARGET),
        sm_count: TARGET.sm_count,
        auto: (auto, auto_us),
        times: times.iter().filter(|(k, _)| *k != auto).map(|(k, t)| (k.to_string(), *t)).collect(),
    }
}

fn scalar() -> Kernel {
    Kernel::CsrScalar { block_size: 128 }
}

fn vector(coop: u32) -> Kernel {
    Kernel::CsrVector { coop, block_size: 128 }
}

/// Every kernel of the bench timed at 12 µs but those of `fast`.
fn all_but(fast: &[(Kernel, f64)]) -> Vec<(Kernel, f64)> {
    gpu_kernels(true).into_iter().map(|k| (k, fast.iter().find(|f| f.0 == k).map_or(12.0, |f| f.1))).collect()
}

/// Short rows run fastest on the merge-path kernel, long rows on the balanced kernel at 256 threads:
/// two fixed kernels, which only a split can give each its own.
fn two_kinds() -> Vec<Sample> {
    let (merge, balanced) = (Kernel::CsrMerge { block_size: 128 }, Kernel::CsrBalanced { block_size: 256 });
    let mut out = Vec::new();
    for i in 0..6 {
        let rows = 200_000 + 1000 * i;
        let short = all_but(&[(merge, 5.0), (balanced, 9.0)]);
        let wide = all_but(&[(merge, 30.0), (balanced, 6.0)]);
        out.push(sample(&format!("short{i}"), rows, 4.0 + i as f64 / 10.0, &short));
        out.push(sample(&format!("wide{i}"), rows, 200.0 + i as f64, &wide));
    }
    out
}

#[test]
fn a_tree_splits_where_the_fastest_kernel_changes() {
    let samples = two_kinds();
    let fitted = fit(&samples, LIMITS);
    let rule = fitted.rule();
    for s in &samples {
        let want = if s.stats.mean < 100.0 {
            Kernel::CsrMerge { block_size: 128 }
        } else {
            Kernel::CsrBalanced { block_size: 256 }
        };
        assert_eq!(fitted.choose(s), want, "{}\n{rule}", s.matrix);
    }
    assert!(matches!(fitted.nodes[0], Node::Split { .. }), "{rule}");
    assert!(score_fitted(&fitted, &samples).iter().all(Scored::hit));
    // Out of sample too: each matrix left out is still chosen right.
    assert!(leave_one_out(&samples, LIMITS).iter().all(Scored::hit));
    // The printed tree names the split and both leaves; the source is the constant's form.
    let text = rule.to_string();
    assert!(
        text.contains("if ") && text.contains("csr-merge-b128") && text.contains("csr-balanced-b256"),
        "{text}"
    );
    assert!(fitted.rust_source("NODES").starts_with(&format!("const NODES: [Node; {}]", fitted.nodes.len())));
}

/// Where a thread per row wins on short rows and a warp on rows of 200, one width rule (a lane per 6
/// or 8 entries) gives both: no split needed, and it carries to means between.
#[test]
fn a_width_leaf_follows_the_mean() {
    let mut samples = Vec::new();
    for i in 0..6 {
        let rows = 200_000 + 1000 * i;
        let short = all_but(&[(scalar(), 5.0), (vector(32), 9.0)]);
        let wide = all_but(&[(scalar(), 30.0), (vector(32), 6.0)]);
        samples.push(sample(&format!("short{i}"), rows, 4.0 + i as f64 / 10.0, &short));
        samples.push(sample(&format!("wide{i}"), rows, 200.0 + i as f64, &wide));
    }
    let fitted = fit(&samples, LIMITS);
    assert_eq!(
        fitted.nodes,
        vec![Node::Width { entries_per_lane: 6, min_fill: AUTO_MIN_FILL }],
        "{}",
        fitted.rule()
    );
    assert!(leave_one_out(&samples, LIMITS).iter().all(Scored::hit));
    let text = fitted.rule().to_string();
    assert!(text.contains("a lane per 6 entries"), "{text}");
}

#[test]
fn fitting_is_deterministic_and_bounded() {
    let samples = two_kinds();
    assert_eq!(fit(&samples, LIMITS), fit(&samples, LIMITS));
    let fitted = fit(&samples, LIMITS);
    // A tree of depth at most `max_depth` has at most 2^(max_depth + 1) - 1 nodes.
    assert!(fitted.nodes.len() < 1 << (LIMITS.max_depth + 1));
    let stump = fit(&samples, Limits { max_depth: 1, ..LIMITS });
    assert!(stump.nodes.len() <= 3);
}

#[test]
fn too_few_samples_make_one_leaf() {
    let samples: Vec<Sample> = two_kinds().into_iter().take(2 * LIMITS.min_leaf - 1).collect();
    assert_eq!(fit(&samples, LIMITS).nodes.len(), 1);
    assert_eq!(fit(&[], LIMITS).nodes, vec![Node::Leaf(Kernel::Auto)]);
}

#[test]
fn the_hand_rule_is_a_leaf_where_it_is_fastest() {
    // Auto's kernel (the parametrised one) is fastest everywhere, and timed only as Auto.
    let samples: Vec<Sample> = (0..10)
        .map(|i| sample(&format!("m{i}"), 100_000 + i, 8.0, &[(scalar(), 9.0), (vector(2), 9.5)]))
        .map(|s| Sample { auto: (s.auto.0, 5.0), ..s })
        .collect();
    let fitted = fit(&samples, LIMITS);
    assert_eq!(fitted.nodes, vec![Node::Leaf(Kernel::Auto)]);
    assert!(score_auto(&samples).iter().all(Scored::hit));
    let line = describe(&score_auto(&samples));
    assert!(line.starts_with("10/10 within 3%"), "{line}");
}

/// Auto's time in a regime belongs to the kernel the run planned for that regime (`resolved_hot`,
/// `resolved_graph`), and a run that recorded only the cold kernel (before the hot rule, when every
/// regime planned by the cold one) credits that one.
#[test]
fn samples_credit_autos_time_to_the_kernel_of_its_regime() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/bench/2026-11-26-regimes-real-graph/results.json");
    let mut results = Results::read(&path).unwrap();
    results.matrices.truncate(1);
    let matrix = results.matrices[0].name.clone();
    let timing = |us: f64| serde_json::json!({"median_us": us, "min_us": us, "max_us": us, "samples": 1, "launches_per_sample": 1});
    let record = |variant: String, us: (f64, f64, f64), resolved: [Option<String>; 3]| -> Record {
        serde_json::from_value(serde_json::json!({
            "matrix": matrix, "precision": "f32", "variant": variant, "family": "gpu-spmv",
            "resolved": resolved[0], "resolved_hot": resolved[1], "resolved_graph": resolved[2],
            "timing": timing(us.0), "hot": timing(us.1), "graph": timing(us.2),
            "gflops": 1.0, "gbps": 1.0, "floor_fraction": 1.0, "speedup_vs_cusparse": 1.0,
            "max_rel_error": 0.0,
        }))
        .unwrap()
    };
    let (cold, hot, graph) = (scalar(), vector(4), vector(8));
    let kernels = [cold, hot, graph].map(|k| Some(k.to_string()));
    for (resolved, want) in
        [(kernels.clone(), [cold, hot, graph]), ([kernels[0].clone(), None, None], [cold; 3])]
    {
        results.records = vec![
            record("auto".into(), (5.0, 4.0, 3.0), resolved),
            record(cold.to_string(), (5.0, 9.0, 9.0), [None, None, None]),
            record(hot.to_string(), (9.0, 4.0, 9.0), [None, None, None]),
            record(graph.to_string(), (9.0, 9.0, 3.0), [None, None, None]),
        ];
        for (regime, want) in [Regime::Cold, Regime::Hot, Regime::Graph].into_iter().zip(want) {
            let samples = samples(&results, regime);
            assert_eq!(samples.len(), 1, "{regime:?}");
            assert_eq!(samples[0].auto.0, want, "{regime:?}");
        }
    }
}

/// The fastest kernel of one run, scored on the other (every time under the 10 µs the helper gives
/// Auto): a tie that the noise orders differently is a hit, a kernel that the other run found slow is a miss, one it did not time scores NaN, and a
/// matrix the first run lacks is left out.
#[test]
fn fastest_across_scores_one_runs_fastest_on_the_other() {
    let a = [
        sample("tie", 1000, 8.0, &[(vector(4), 5.0), (vector(8), 5.05)]),
        sample("far", 1000, 8.0, &[(vector(4), 5.0), (vector(8), 5.5)]),
        sample("untimed", 1000, 8.0, &[(vector(16), 4.5), (vector(8), 5.5)]),
    ];
    let b = [
        sample("tie", 1000, 8.0, &[(vector(4), 5.1), (vector(8), 5.0)]),
        sample("far", 1000, 8.0, &[(vector(4), 6.0), (vector(8), 5.0)]),
        sample("untimed", 1000, 8.0, &[(vector(8), 5.5)]),
        sample("alone", 1000, 8.0, &[(vector(8), 5.5)]),
    ];
    let scored = fastest_across(&a, &b);
    let by = |m: &str| scored.iter().find(|s| s.matrix == m);
    assert_eq!(scored.len(), 3);
    assert!(by("tie").is_some_and(|s| s.chosen == vector(4) && s.hit()));
    assert!(by("far").is_some_and(|s| s.chosen == vector(4) && !s.hit() && (s.ratio - 1.2).abs() < 1e-9));
    assert!(by("untimed").is_some_and(|s| s.ratio.is_nan() && !s.hit()));
    assert!(by("alone").is_none());
}

/// Leave-one-out across two runs scores each matrix of the second by a tree fitted on the first
/// without it; on one run it is the plain leave-one-out.
#[test]
fn leave_one_out_across_one_run_is_leave_one_out() {
    let samples: Vec<Sample> = (0..6)
        .map(|i| {
            sample(&format!("m{i}"), 1000 * (i + 1), 8.0, &[(vector(4), 10.0), (vector(8), 9.0 + i as f64)])
        })
        .collect();
    let plain = leave_one_out(&samples, LIMITS);
    let across = leave_one_out_across(&samples, &samples, LIMITS);
    assert_eq!(plain.len(), samples.len());
    for (p, a) in plain.iter().zip(&across) {
        assert_eq!((&p.matrix, p.chosen, p.ratio.to_bits()), (&a.matrix, a.chosen, a.ratio.to_bits()));
    }
}
