use super::*;
use crate::measure::Timing;
use crate::precision::Precision;
use crate::run::MatrixInfo;
use gpu_spmv::RowStats;

fn timing(median_us: f64) -> Timing {
    Timing {
        median_us,
        min_us: 0.9 * median_us,
        max_us: 1.1 * median_us,
        samples: 21,
        launches_per_sample: 8,
    }
}

/// A record of `variant` with its cold, hot and graph times (µs).
fn record(matrix: &str, precision: Precision, variant: &str, (cold, hot, graph): (f64, f64, f64)) -> Record {
    let family = if variant.starts_with("cusparse") { "cuSPARSE" } else { "gpu-spmv" };
    Record {
        matrix: matrix.into(),
        precision,
        variant: variant.into(),
        family: family.into(),
        resolved: None,
        resolved_hot: None,
        hot_launch: None,
        resolved_graph: None,
        timing: timing(cold),
        gflops: 1.0,
        gbps: 1.0,
        floor_fraction: 0.5,
        speedup_vs_cusparse: f64::NAN,
        hot: Some(timing(hot)),
        graph: Some(timing(graph)),
        speedup_vs_cusparse_hot: f64::NAN,
        speedup_vs_cusparse_graph: f64::NAN,
        host_enqueue_us: Some(if family == "cuSPARSE" { 9.0 } else { 2.0 }),
        host_enqueue_one_shot_us: (variant == "auto").then_some(3.0),
        max_rel_error: 0.0,
        conversion_ms: None,
    }
}

/// `n` matrices; on matrix `i`, Auto's cold, hot and graph times are `1 + i / n` times cuSPARSE's
/// better algorithm's over 2, 3 and 1.5, and a faster kernel of ours beats Auto cold by 2x.
fn results(n: usize) -> Results {
    let stats = RowStats::from_offsets(&[0, 1, 2], 2);
    let mut r = Results {
        git_commit: "test".into(),
        started: "now".into(),
        device: None,
        matrices: Vec::new(),
        records: Vec::new(),
        tuning: Vec::new(),
        notes: Vec::new(),
        uploads: Vec::new(),
        transpose: Vec::new(),
        spmm: Vec::new(),
        reorderings: Vec::new(),
        brc_tuned: Vec::new(),
    };
    for i in 0..n {
        let m = format!("matrix-{i}");
        r.matrices.push(MatrixInfo::new(&m, "none", &stats, 132));
        let slow = 1.0 + i as f64 / n as f64;
        for precision in Precision::ALL {
            r.records.push(record(&m, precision, "cusparse-csr-alg1", (10.0, 12.0, 6.0)));
            r.records.push(record(&m, precision, "cusparse-csr-alg2", (20.0, 9.0, 3.0)));
            r.records.push(record(&m, precision, "auto", (5.0 * slow, 3.0 * slow, 2.0 * slow)));
            let mut fast = record(&m, precision, "csr-vector-4-128", (2.5 * slow, 0.0, 0.0));
            (fast.hot, fast.graph) = (None, None);
            r.records.push(fast);
        }
    }
    r.fill_speedups();
    r
}

#[test]
fn speedups_in_each_regime_are_against_the_better_baseline_of_that_regime() {
    let r = results(2);
    let auto = r.records.iter().find(|r| r.variant == "auto" && r.matrix == "matrix-1").unwrap();
    // Cold: 10 / 7.5; hot: 9 / 4.5; graph: 3 / 3.
    assert!((auto.speedup_vs_cusparse - 10.0 / 7.5).abs() < 1e-12);
    assert!((auto.speedup_vs_cusparse_hot - 2.0).abs() < 1e-12);
    assert!((auto.speedup_vs_cusparse_graph - 1.0).abs() < 1e-12);
    let fast = r.records.iter().find(|r| r.variant == "csr-vector-4-128").unwrap();
    assert!(fast.speedup_vs_cusparse_hot.is_nan() && fast.speedup_vs_cusparse_graph.is_nan());
}

#[test]
fn summary_lines_give_the_geomean_and_the_worst_matrix() {
    let r = results(2);
    let ls = lines(&r);
    // f32 and f64; auto in three regimes, the fastest of ours in three (its hot and graph are Auto's).
    assert_eq!(ls.len(), 12);
    let graph =
        ls.iter().find(|l| l.who == Ours::Auto && l.regime == Regime::Graph && l.precision == Precision::F64);
    let graph = graph.unwrap();
    // Speedups 1.5 and 1.0: geomean sqrt(1.5), worst matrix-1, one pair not below 1x.
    assert!((graph.geomean - 1.5f64.sqrt()).abs() < 1e-12);
    assert_eq!(graph.worst, ("matrix-1".to_owned(), 1.0));
    assert_eq!(graph.below_one, 0);
    let cold = ls.iter().find(|l| l.who == Ours::Fastest && l.regime == Regime::Cold).unwrap();
    assert!((cold.geomean - (4.0f64 * 10.0 / 3.75).sqrt()).abs() < 1e-12);
    let text = text(&r);
    assert!(
        text.contains("2.00 µs with a plan, 3.00 µs one-shot (gpu.spmv), 9.00 µs cusparseSpMV"),
        "{text}"
    );
    let report = r.markdown();
    assert!(report.contains("## Speedup over cuSPARSE by regime"));
    // The table's header starts its line: indented, Markdown would show it as code.
    assert!(report.contains("\n| speedup of | regime | prec |"), "{report}");
    assert!(!report.contains("where              they"), "{report}");
}

#[test]
fn runs_from_before_the_regimes_read_and_summarise_cold_only() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/bench/2026-11-23-real-cold/results.json");
    let mut r = Results::read(std::path::Path::new(path)).unwrap();
    let before: Vec<f64> = r.records.iter().map(|r| r.speedup_vs_cusparse).collect();
    r.fill_speedups();
    for (b, a) in before.iter().zip(r.records.iter().map(|r| r.speedup_vs_cusparse)) {
        let same = (b - a).abs() <= 1e-12 * b.abs() || (b.is_nan() && a.is_nan());
        assert!(same, "cold speedups change when refilled: {b} -> {a}");
    }
    let ls = lines(&r);
    assert!(!ls.is_empty() && ls.iter().all(|l| l.regime == Regime::Cold), "{ls:?}");
    assert_eq!(host_enqueue(&r), None);
}

#[test]
fn plots_draw_one_matrix_and_fifty() {
    for n in [1, 50] {
        let dir = std::env::temp_dir().join(format!("spmv-bench-plots-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let written = crate::plot::write_plots(&results(n), &dir).unwrap();
        assert_eq!(written, ["speedup-f32.svg", "floor-f32.svg", "speedup-f64.svg", "floor-f64.svg"]);
        let svg = std::fs::read_to_string(dir.join("speedup-f32.svg")).unwrap();
        // Every matrix has its row label.
        assert!((0..n).all(|i| svg.contains(&format!("\nmatrix-{i}\n"))), "a row label is missing");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `n` matrices measured without a GPU: only the CPU kernel, whose GB/s on matrix `i` is `10 + i`.
fn cpu_only(n: usize) -> Results {
    let mut r = results(n);
    r.records.clear();
    for m in &r.matrices {
        let i: f64 = m.name.trim_start_matches("matrix-").parse().unwrap();
        for precision in Precision::ALL {
            let mut cpu = record(&m.name, precision, "cpu-rayon", (100.0, 0.0, 0.0));
            (cpu.family, cpu.gbps, cpu.floor_fraction, cpu.hot, cpu.graph) =
                ("CPU".into(), 10.0 + i, f64::NAN, None, None);
            (cpu.host_enqueue_us, cpu.host_enqueue_one_shot_us) = (None, None);
            r.records.push(cpu);
        }
    }
    r.fill_speedups();
    r
}

#[test]
fn a_run_without_a_gpu_sums_up_and_plots_its_cpu_kernels() {
    let r = cpu_only(2);
    assert!(lines(&r).is_empty());
    let cpu = cpu_lines(&r);
    assert_eq!(cpu.len(), 2);
    assert!((cpu[0].geomean_gbps - 110.0f64.sqrt()).abs() < 1e-12);
    assert_eq!(cpu[0].slowest, ("matrix-0".to_owned(), 10.0));
    let text = text(&r);
    assert!(text.starts_with("no GPU, so CPU kernels only (a run on a GPU adds"), "{text}");
    assert!(text.contains("cpu-rayon        f32         2"), "{text}");
    let report = r.markdown();
    assert!(report.contains("## CPU kernels") && report.contains("on the host clock"), "{report}");
    assert!(!report.contains("CUDA events"), "{report}");

    let dir = std::env::temp_dir().join(format!("spmv-bench-cpu-plots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let written = crate::plot::write_plots(&r, &dir).unwrap();
    assert_eq!(written, ["cpu-f32.svg", "cpu-f64.svg"]);
    let svg = std::fs::read_to_string(dir.join("cpu-f64.svg")).unwrap();
    assert!(svg.contains("\nmatrix-1\n") && svg.contains("CPU kernels, f64"), "{svg}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An `--uploads-only` run (the CPU kernel and the uploads, no product on the GPU) reports and
/// summarises, with the upload from `u32` beside its ceilings and the part that bounds it.
#[test]
fn an_uploads_only_run_reports_the_ceilings() {
    use crate::run::AutoPlan;
    use crate::run::Upload;
    use crate::staging::trials::{Fill, PipelineTrial};
    use crate::staging::{StageCeilings, UploadSteps};
    let mut r = results(0);
    r.matrices.push(MatrixInfo::new("m", "none", &RowStats::from_offsets(&[0, 1, 2], 2), 132));
    let mut cpu = record("m", Precision::F64, "cpu-rayon", (100.0, 0.0, 0.0));
    (cpu.family, cpu.hot, cpu.graph) = ("CPU".into(), None, None);
    r.records.push(cpu);
    r.uploads.push(Upload {
        matrix: "m".into(),
        precision: Precision::F64,
        csr_ms: 20.0,
        csr_bytes: 200_000_000,
        with_strategies_ms: 30.0,
        with_strategies_bytes: 210_000_000,
        from_u32_ms: Some(10.0),
        pinned_in_place_ms: None,
        from_pinned_ms: Some(4.0),
        // 40, 25 and 50 GB/s: the host's pass bounds the upload at 8 ms of its 10.
        stage_ceilings: Some(StageCeilings { memcpy_ms: 5.0, pass_ms: 8.0, link_ms: 4.0 }),
        // Of the 10 ms: 0.5 to check the offsets, 8 through the stages; 1.5 beyond them.
        steps: Some(UploadSteps {
            check_ms: 0.5,
            stats_ms: 0.25,
            host_copy_ms: 1.0,
            alloc_ms: 2.0,
            free_ms: 0.75,
            staged_ms: [0.5, 3.0, 4.0],
            staged_all_ms: 8.0,
            pin_ms: Some(12.5),
        }),
        // 100 MB in 2.5 ms: 40 GB/s.
        pipeline_trials: vec![PipelineTrial {
            stages: 2,
            stage_mib: 16,
            fill: Fill::Streaming,
            total_ms: 2.5,
            bytes: 100_000_000,
            chunks: 6,
            fill_ms: 0.3,
            fill_alone_ms: 0.25,
            wait_ms: 0.05,
            copy_ms: 0.31,
            link_idle_ms: 0.125,
            first_copy_ms: 0.35,
        }],
        auto_plan: Some(AutoPlan { kernel: "csr-compressed-copy-c32".into(), ms: 1.25, bytes: 41_500_000 }),
    });
    r.fill_speedups();
    let report = r.markdown();
    assert!(report.contains("| m | f64 | 200.0 | 20.0 | 40.0 | 25.0 | 50.0 | host (b) | 80% |"), "{report}");
    let steps =
        "| m | f64 | 10.00 | 0.50 | 0.25 | 1.00 | 2.00 | 0.75 | 0.50 | 3.00 | 4.00 | 8.00 | 1.50 | 12.50 |";
    assert!(report.contains(steps), "{report}");
    let trial =
        "| m | f64 | 2 | 16 | Streaming | 6 | 2.50 | 40.0 | 0.300 | 0.250 | 0.050 | 0.310 | 0.12 | 0.35 |";
    assert!(report.contains(trial), "{report}");
    assert!(report.contains("| m | f64 | csr-compressed-copy-c32 | 1.25 | 41.5 |"), "{report}");
    let _ = (r.summary(), text(&r));
}
