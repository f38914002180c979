use super::*;

fn record(
    problem: &str,
    precision: Precision,
    solver: &str,
    precond: &str,
    imp: Implementation,
) -> SolveRecord {
    SolveRecord {
        problem: problem.to_owned(),
        precision,
        solver: solver.to_owned(),
        preconditioner: precond.to_owned(),
        implementation: imp,
        end: "converged".to_owned(),
        converged: true,
        iterations: 400,
        time_ms: 10.0,
        iterations_per_second: 40_000.0,
        relative_residual: Some(9e-7),
        true_residual: 1.1e-6,
        speedup_vs_baseline: None,
        setup_ms: None,
        speedup_with_setup: None,
        iterations_permuted: Vec::new(),
    }
}

fn results(problems: Vec<SolveProblem>, records: Vec<SolveRecord>) -> SolveResults {
    SolveResults {
        git_commit: "abc".to_owned(),
        started: "20260101-000000".to_owned(),
        device: None,
        target_unknowns: 100_000,
        rel_tol: STUDY_REL_TOL,
        max_iterations: MAX_ITERATIONS,
        restart: DEFAULT_RESTART,
        problems,
        records,
        applies: Vec::new(),
        factorisations: Vec::new(),
        notes: Vec::new(),
    }
}

fn problem(name: &str, precision: Precision, diagonal_ratio: f64) -> SolveProblem {
    SolveProblem {
        name: name.to_owned(),
        description: name.to_owned(),
        precision,
        unknowns: 100,
        nnz: 460,
        rhs: "1".to_owned(),
        diagonal_ratio,
        build_ms: 1.0,
    }
}

#[test]
fn iteration_tolerance_is_the_library_tests_slack() {
    assert_eq!(iteration_tolerance("gmres(30)", 0), 2);
    assert_eq!(iteration_tolerance("gmres(30)", 4000), 402);
    assert_eq!(iteration_tolerance("gmres(30)", 4000), 402);
    assert_eq!(iteration_tolerance("bicgstab", 4000), 503);
}

#[test]
fn compare_fills_speedups_and_notes_what_differs() {
    use Implementation::{Baseline, Ours};
    let mut records = vec![
        record("cd-pe100", Precision::F64, "bicgstab", "none", Ours),
        record("cd-pe100", Precision::F64, "bicgstab", "none", Baseline),
        record("cd-pe100", Precision::F64, "gmres(30)", "none", Ours),
        record("cd-pe100", Precision::F64, "gmres(30)", "none", Baseline),
        record("cd-pe100", Precision::F32, "bicgstab", "jacobi", Ours),
        record("cd-pe100", Precision::F32, "bicgstab", "jacobi", Baseline),
        record("cd-pe1000", Precision::F64, "bicgstab", "jacobi", Ours),
        record("cd-pe1000", Precision::F64, "bicgstab", "jacobi", Baseline),
    ];
    records[1].time_ms = 25.0;
    // Within the tolerance (3 + 400/8 = 53).
    records[1].iterations = 410;
    // f64 GMRES: the baseline broke down; a breakdown's count is not compared.
    records[3].converged = false;
    records[3].end = "breakdown: H[j][j] = 0e0".to_owned();
    // f32: 500 against 400, beyond 3 + 50.
    records[5].iterations = 500;
    // A false convergence, as measured once on the H100: a disagreement whatever the other did.
    records[6].true_residual = 4e22;
    records[7].converged = false;
    records[7].end = "breakdown: r̂ᵀr = 0e0".to_owned();
    let mut notes = Vec::new();
    compare(&mut records, &mut notes);
    assert_eq!(records[0].speedup_vs_baseline, Some(2.5));
    assert_eq!(records[1].speedup_vs_baseline, None);
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(!is_disagreement(&notes[0]) && notes[0].contains("not comparable"), "{}", notes[0]);
    assert!(notes[0].contains("breakdown: H[j][j]") && notes[0].contains("true residual"), "{}", notes[0]);
    assert!(!is_disagreement(&notes[1]) && notes[1].contains("f32"), "{}", notes[1]);
    assert!(notes[1].contains("ours 400") && notes[1].contains("cusparse+cublas 500"), "{}", notes[1]);
    assert!(is_disagreement(&notes[2]) && notes[2].contains("far above the tolerance"), "{}", notes[2]);
}

#[test]
fn an_f64_difference_within_the_spread_of_summation_orders_is_a_note_and_beyond_it_a_failure() {
    use Implementation::{Baseline, Ours};
    let gmres = |imp, iterations, permuted: &[usize]| {
        let mut r = record("fem-q2", Precision::F64, "gmres(30)", "jacobi", imp);
        (r.iterations, r.iterations_permuted) = (iterations, permuted.to_vec());
        r
    };
    // As measured on the H100: ours 3,794 and the baseline 4,257, 463 apart (tolerance 381).
    let (ours, base) = (gmres(Ours, 3794, &[]), gmres(Baseline, 4257, &[]));
    assert!(needs_spread(&ours, &base));
    let mut notes = Vec::new();
    compare(&mut [ours, base], &mut notes);
    assert!(is_disagreement(&notes[0]), "{notes:?}");
    // Ranges 3,700-4,100 and 4,000-4,257 overlap: a note, not a failure.
    let mut notes = Vec::new();
    compare(
        &mut [gmres(Ours, 3794, &[3700, 4100, 3900]), gmres(Baseline, 4257, &[4000, 4100, 4200])],
        &mut notes,
    );
    assert!(!is_disagreement(&notes[0]) && notes[0].contains("are 0 apart"), "{notes:?}");
    // Ranges 3,700-3,800 and 4,257-4,300, 457 apart: still a failure.
    let mut notes = Vec::new();
    compare(&mut [gmres(Ours, 3794, &[3700, 3800]), gmres(Baseline, 4257, &[4300, 4280])], &mut notes);
    assert!(is_disagreement(&notes[0]), "{notes:?}");
    // Within the tolerance, or in f32, or not converged: no spread is measured.
    assert!(!needs_spread(&gmres(Ours, 3794, &[]), &gmres(Baseline, 4000, &[])));
    let (mut f32_ours, mut f32_base) = (gmres(Ours, 3794, &[]), gmres(Baseline, 4257, &[]));
    (f32_ours.precision, f32_base.precision) = (Precision::F32, Precision::F32);
    assert!(!needs_spread(&f32_ours, &f32_base));
    let mut stopped = gmres(Baseline, 4257, &[]);
    stopped.converged = false;
    assert!(!needs_spread(&gmres(Ours, 3794, &[]), &stopped));
}

/// The permuted system of the spread measurement is the same system renumbered: `(P A Pᵀ)(P x)`
/// equals `P (A x)` for any `x`, with `P b` and `P d` alike, and a seed gives one permutation.
#[test]
fn a_permuted_system_is_the_system_renumbered() {
    use gpu_spmv::CsrRef;
    use gpu_spmv::reference::problems::convection_diffusion;
    use gpu_spmv::reference::spmv_f64;
    let a: CsrMatrix<f64> = convection_diffusion(7, 5, 10.0).unwrap();
    let n = a.nrows();
    let x: Vec<f64> = (0..n).map(|i| 1.0 + (i * 7 % 11) as f64).collect();
    let b: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let diagonal = CsrRef::from(&a).diagonal();
    let (pa, pb, pd) = permuted_system(&a, &b, &diagonal, 2).unwrap();
    assert_eq!(permuted_system(&a, &b, &diagonal, 2).unwrap().1, pb, "one permutation a seed");
    // P b holds every element of b once: recover P from it (b_i = i).
    let new_to_old: Vec<usize> = pb.iter().map(|&v| v as usize).collect();
    assert_ne!(new_to_old, (0..n).collect::<Vec<_>>(), "seed 2 permutes");
    let px: Vec<f64> = new_to_old.iter().map(|&old| x[old]).collect();
    let zeros = vec![0.0; n];
    let product = |m: &CsrMatrix<f64>, v: &[f64]| spmv_f64(1.0, CsrRef::from(m), v, 0.0, &zeros).unwrap();
    let (ax, pax) = (product(&a, &x), product(&pa, &px));
    for (new, &old) in new_to_old.iter().enumerate() {
        // The row's entries are summed in another order: equal to rounding.
        assert!((pax[new] - ax[old]).abs() <= 1e-13 * ax[old].abs().max(1.0), "row {new}");
        assert_eq!(pd[new], diagonal[old], "diagonal {new}");
    }
    assert_eq!(CsrRef::from(&pa).diagonal(), pd, "the permuted diagonal is P A Pᵀ's");
}

#[test]
fn the_winner_of_each_solve_and_why() {
    use Implementation::Ours;
    let mut records = vec![
        record("cd-pe0", Precision::F64, "bicgstab", "none", Ours),
        record("cd-pe0", Precision::F64, "bicgstab", "jacobi", Ours),
        record("fem-q2", Precision::F64, "bicgstab", "none", Ours),
        record("fem-q2", Precision::F64, "bicgstab", "jacobi", Ours),
        record("fem-q2", Precision::F64, "gmres(30)", "none", Ours),
        record("fem-q2", Precision::F64, "gmres(30)", "jacobi", Ours),
        record("cd-pe0", Precision::F64, "bicgstab", "chebyshev(4)", Ours),
        record("fem-q2", Precision::F64, "gmres(30)", "chebyshev(4)", Ours),
    ];
    // A polynomial that costs more than it saves, and one that wins.
    records[6].time_ms = 12.0;
    (records[7].iterations, records[7].time_ms) = (90, 6.0);
    // Constant diagonal: the same iterations, Jacobi a little slower.
    records[1].time_ms = 10.5;
    // Varying diagonal: Jacobi cuts the iterations and wins.
    (records[3].iterations, records[3].time_ms) = (250, 7.0);
    // GMRES without a preconditioner stalls at the cap.
    (records[4].converged, records[4].iterations) = (false, MAX_ITERATIONS);
    records[4].end = "iteration limit".to_owned();
    let problems = vec![problem("cd-pe0", Precision::F64, 1.0), problem("fem-q2", Precision::F64, 2.7)];
    let results = results(problems, records);
    let winners = results.winners();
    let picks: Vec<(&str, &str, &str)> =
        winners.iter().map(|w| (w.problem.as_str(), w.solver.as_str(), w.winner.as_str())).collect();
    assert_eq!(
        picks,
        [
            ("cd-pe0", "bicgstab", "none"),
            ("fem-q2", "bicgstab", "jacobi"),
            ("fem-q2", "gmres(30)", "chebyshev(4)")
        ]
    );
    let verdict = preconditioner_verdict(&winners);
    assert!(verdict.contains("scales A by a constant"), "{verdict}");
    assert!(verdict.contains("fem-q2 f64 bicgstab 400 → 250"), "{verdict}");
    assert!(verdict.contains("No preconditioner is fastest on: cd-pe0 f64 bicgstab."), "{verdict}");
    assert!(verdict.contains("jacobi is fastest on: fem-q2 f64 bicgstab."), "{verdict}");
    assert!(verdict.contains("chebyshev(4) is fastest on: fem-q2 f64 gmres(30)."), "{verdict}");
    assert!(winners[2].iterations.contains(&("chebyshev(4)".to_owned(), 90)), "{winners:?}");
    let md = results.markdown();
    assert!(md.contains("## Which preconditioner wins") && md.contains(&verdict), "{md}");
    assert!(md.contains("| fem-q2 | gmres(30) | none | ours | **iteration limit** | 20000 |"), "{md}");
}

#[test]
fn results_round_trip_through_json_and_name_the_implementations() {
    let records = vec![record("fem-q1", Precision::F32, "gmres(30)", "none", Implementation::Baseline)];
    let results = results(vec![problem("fem-q1", Precision::F32, 1.5)], records);
    let json = serde_json::to_string(&results).unwrap();
    assert!(json.contains("\"implementation\":\"cusparse+cublas\""), "{json}");
    let back: SolveResults = serde_json::from_str(&json).unwrap();
    assert_eq!(back.records[0].iterations, 400);
    assert_eq!(back.problems[0].diagonal_ratio, 1.5);
}

#[test]
fn without_a_gpu_the_problems_are_built_and_recorded() {
    let problems = problems(400, None).unwrap();
    let names: Vec<&str> = problems.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["cd-pe0", "cd-pe100", "cd-pe1000", "fem-q1", "fem-q2"]);
    let mut results = results(Vec::new(), Vec::new());
    run(None, &problems, &Precision::ALL, DEFAULT_RESTART, &mut results, &|_| {}).unwrap();
    assert_eq!(results.problems.len(), 10);
    assert!(results.records.is_empty());
    assert_eq!(results.notes, ["no GPU: the problems' setup only"]);
    let cd = &results.problems[0];
    // The 20 x 20 grid; the convection-diffusion diagonal is the same in every row.
    assert_eq!((cd.unknowns, cd.rhs.as_str()), (400, "1"));
    assert!((cd.diagonal_ratio - 1.0).abs() < 1e-12, "{}", cd.diagonal_ratio);
    let markdown = results.markdown();
    assert!(markdown.contains("No GPU: the problems' setup only."), "{markdown}");
    assert!(!markdown.contains("Which preconditioner wins"), "{markdown}");
}

#[test]
fn matrix_market_right_hand_sides_make_the_solution_ones() {
    let a = convection_diffusion::<f64>(3, 3, 10.0).unwrap();
    let (b, rhs) = ones_solution(&a);
    assert_eq!(rhs, "A·1");
    let row_sums: Vec<f64> = a.row_iter().map(|r| r.values().iter().sum()).collect();
    assert_eq!(b, row_sums);
    // A graph Laplacian: rows sum to 0, so b = 1 instead.
    let laplacian =
        CsrMatrix::try_from_csr_data(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1], vec![1.0, -1.0, -1.0, 1.0])
            .unwrap();
    assert_eq!(ones_solution(&laplacian), (vec![1.0, 1.0], "1"));
}

/// Preconditioned CG runs on the generated SPD problems and on a file's matrix only where it is
/// symmetric with a positive diagonal.
#[test]
fn cg_runs_on_the_symmetric_problems_only() {
    let poisson = convection_diffusion::<f64>(5, 4, 0.0).unwrap();
    assert!(symmetric_with_positive_diagonal(&poisson));
    let upwinded = convection_diffusion::<f64>(5, 4, 100.0).unwrap();
    assert!(!symmetric_with_positive_diagonal(&upwinded));
    let negated = CsrMatrix::try_from_csr_data(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -1.0]).unwrap();
    assert!(!symmetric_with_positive_diagonal(&negated));
    for spec in problems(400, None).unwrap() {
        let built = (spec.build)().unwrap();
        let expected = spec.name == "cd-pe0" || spec.name.starts_with("fem-");
        assert_eq!(built.spd, expected, "{}", spec.name);
        assert_eq!(built.spd, symmetric_with_positive_diagonal(&built.a), "{}", spec.name);
    }
}

#[test]
fn results_without_applies_still_parse_and_applies_render_as_a_table() {
    let mut results = results(vec![problem("cd-pe0", Precision::F64, 1.0)], Vec::new());
    let mut json: serde_json::Value = serde_json::to_value(&results).unwrap();
    json.as_object_mut().unwrap().remove("applies");
    let back: SolveResults = serde_json::from_value(json).unwrap();
    assert!(back.applies.is_empty());
    let apply = |preconditioner: &str, cusparse_us: Option<f64>| ApplyRecord {
        problem: "cd-pe0".to_owned(),
        precision: Precision::F64,
        preconditioner: preconditioner.to_owned(),
        levels: (631, 631),
        ours_us: 1170.0,
        cusparse_us,
        max_relative_difference: cusparse_us.map(|_| 3e-16),
    };
    results.applies = vec![apply("ilu(0)", Some(2340.0)), apply("ic(0)", None)];
    let md = results.markdown();
    assert!(md.contains("## ILU(0) and IC(0) apply: ours against cuSPARSE SpSV"), "{md}");
    // The table's header starts its line: indented, Markdown would show it as code.
    assert!(md.contains("\n| problem | prec | precond. | levels L/U |"), "{md}");
    assert!(!md.lines().any(|l| l.starts_with("    ")), "{md}");
    assert!(md.contains("| cd-pe0 | f64 | ilu(0) | 631/631 | 1170.0 | 2340.0 | 2.00x | 3.00e-16 |"), "{md}");
    assert!(md.contains("| cd-pe0 | f64 | ic(0) | 631/631 | 1170.0 | n/a | n/a | n/a |"), "{md}");
}

#[test]
fn max_relative_difference_is_relative_to_the_largest_element_and_shows_nan() {
    assert_eq!(max_relative_difference(&[2.0f64, -4.0], &[2.0, -4.0]), 0.0);
    assert_eq!(max_relative_difference(&[2.0f64, -4.0], &[2.5, -4.0]), 0.125);
    assert_eq!(max_relative_difference(&[0.0f64; 3], &[0.0; 3]), 0.0);
    assert!(max_relative_difference(&[1.0f64, 2.0], &[1.0, f64::NAN]).is_nan());
}

#[test]
fn results_without_factorisations_still_parse_and_factorisations_render_as_a_table() {
    let mut results = results(vec![problem("cd-pe0", Precision::F64, 1.0)], Vec::new());
    let mut json: serde_json::Value = serde_json::to_value(&results).unwrap();
    json.as_object_mut().unwrap().remove("factorisations");
    let back: SolveResults = serde_json::from_value(json).unwrap();
    assert!(back.factorisations.is_empty());
    let setup = |preconditioner: &str, cusparse: Option<(f64, f64)>| FactorisationRecord {
        problem: "cd-pe0".to_owned(),
        precision: Precision::F64,
        preconditioner: preconditioner.to_owned(),
        ours_ms: 120.0,
        cusparse_analysis_ms: cusparse.map(|(analysis, _)| analysis),
        cusparse_factorisation_ms: cusparse.map(|(_, factorisation)| factorisation),
        max_relative_difference: cusparse.map(|_| 2e-16),
        device_setup_ms: cusparse.map(|_| 15.0),
        device_refactor_ms: cusparse.map(|_| 3.0),
        device_max_relative_difference: cusparse.map(|_| 0.0),
    };
    results.factorisations = vec![setup("ilu(0)", Some((10.0, 2.0))), setup("ic(0)", None)];
    let md = results.markdown();
    assert!(md.contains("## ILU(0) and IC(0) setup: ours against cuSPARSE csrilu02/csric02"), "{md}");
    assert!(md.contains("\n| problem | prec | precond. | ours ms | cuSPARSE analysis ms |"), "{md}");
    assert!(!md.lines().any(|l| l.starts_with("    ")), "{md}");
    assert!(
        md.contains(
            "| cd-pe0 | f64 | ilu(0) | 120.00 | 10.00 | 2.00 | 10.0x / 60.0x | 2.00e-16 | 15.00 | 3.000 | 1.50x | \
             0.00e0 |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| cd-pe0 | f64 | ic(0) | 120.00 | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |"),
        "{md}"
    );
    // Older runs' records, without the device's columns, still parse.
    let mut record = serde_json::to_value(&results.factorisations[0]).unwrap();
    record.as_object_mut().unwrap().remove("device_setup_ms");
    let old: FactorisationRecord = serde_json::from_value(record).unwrap();
    assert_eq!(old.device_setup_ms, None);
}

/// The ILU(0) pairs: `compare` adds the setups to the times where both sides' were timed, and the
/// report sets the iteration counts, the tolerance and both ratios side by side; older results
/// without setup times still parse.
#[test]
fn ilu0_pairs_compare_with_and_without_setup_and_render_side_by_side() {
    use Implementation::{Baseline, Ours};
    let mut records = vec![
        record("cd-pe0", Precision::F64, "bicgstab", "ilu(0)", Ours),
        record("cd-pe0", Precision::F64, "bicgstab", "ilu(0)", Baseline),
        record("cd-pe0", Precision::F64, "gmres(30)", "ilu(0)", Ours),
        record("cd-pe0", Precision::F64, "gmres(30)", "ilu(0)", Baseline),
        record("cd-pe0", Precision::F64, "bicgstab", "jacobi", Ours),
        record("cd-pe0", Precision::F64, "bicgstab", "jacobi", Baseline),
    ];
    // BiCGSTAB: ours 149 iterations in 270 ms after a 100 ms setup; the baseline 152 in 540 ms after
    // 20 ms: 2x without setup, 560 / 370 with it.
    (records[0].iterations, records[0].time_ms, records[0].setup_ms) = (149, 270.0, Some(100.0));
    (records[1].iterations, records[1].time_ms, records[1].setup_ms) = (152, 540.0, Some(20.0));
    // GMRES: the baseline at the cap, 2000 against 200, past the tolerance of 2 + 20; faster without
    // the setup, 80 / 50 ms, slower with it, 100 / 150.
    (records[2].iterations, records[2].time_ms, records[2].setup_ms) = (200, 50.0, Some(100.0));
    (records[3].iterations, records[3].time_ms, records[3].setup_ms) = (2000, 80.0, Some(20.0));
    (records[3].converged, records[3].end) = (false, "iteration limit".to_owned());
    let mut notes = Vec::new();
    compare(&mut records, &mut notes);
    assert_eq!(records[0].speedup_vs_baseline, Some(2.0));
    let with_setup = records[0].speedup_with_setup.unwrap();
    assert!((with_setup - 560.0 / 370.0).abs() < 1e-12, "{with_setup}");
    // Jacobi's setup is the solver's own, not timed: no ratio with setup.
    assert_eq!(records[4].speedup_vs_baseline, Some(1.0));
    assert_eq!(records[4].speedup_with_setup, None);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(is_disagreement(&notes[0]) && notes[0].contains("gmres(30) ilu(0)"), "{notes:?}");

    let mut results = results(vec![problem("cd-pe0", Precision::F64, 1.0)], records);
    let md = results.markdown();
    assert!(md.contains("## ILU(0): ours against the baseline with cuSPARSE's ILU(0)"), "{md}");
    assert!(md.contains("\n| problem | prec | solver | ours its | baseline its | tolerance |"), "{md}");
    assert!(!md.lines().any(|l| l.starts_with("    ")), "{md}");
    assert!(
        md.contains(
            "| cd-pe0 | f64 | bicgstab | 149 | 152 | 21 | 270.0 | 540.0 | 2.00x | 100.0 | 20.0 | 1.51x |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| cd-pe0 | f64 | gmres(30) | 200 | 2000 (iteration limit) | 22 | 50.0 | 80.0 | 1.60x | 100.0 | \
             20.0 | 0.67x |"
        ),
        "{md}"
    );
    // The solves table shows each setup, n/a where none was built for the solve.
    assert!(
        md.contains("| cd-pe0 | bicgstab | ilu(0) | cusparse+cublas | converged | 152 | 540.0 | 20.0 |"),
        "{md}"
    );
    assert!(md.contains("| cd-pe0 | bicgstab | jacobi | ours | converged | 400 | 10.0 | n/a |"), "{md}");
    // Without an ILU(0) pair there is no such section.
    results.records.retain(|r| r.preconditioner != "ilu(0)" || r.implementation == Ours);
    assert!(!results.markdown().contains("## ILU(0): ours against"));
    // Older runs' records, without setup times, still parse.
    let mut json = serde_json::to_value(&results.records[0]).unwrap();
    for field in ["setup_ms", "speedup_with_setup"] {
        json.as_object_mut().unwrap().remove(field);
    }
    let old: SolveRecord = serde_json::from_value(json).unwrap();
    assert_eq!((old.setup_ms, old.speedup_with_setup), (None, None));
}
