use super::*;
use gpu_spmv::CsrRef;
use gpu_spmv::reference::cg::cg;
use gpu_spmv::reference::{error_scale, max_relative_error, spmv_f64};
use gpu_spmv::solve::{Preconditioner, SolverOptions, Stop};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A fresh seed, printed so that a failure can be replayed with `SPMV_TEST_SEED`.
fn rng(test: &str) -> ChaCha8Rng {
    let seed = std::env::var("SPMV_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("{test}: seed {seed} (replay with SPMV_TEST_SEED={seed})");
    ChaCha8Rng::seed_from_u64(seed)
}

fn random_vector<T: Scalar>(rng: &mut ChaCha8Rng, len: usize) -> Vec<T> {
    (0..len).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
}

fn solve(problem: &Poisson, preconditioner: Preconditioner) -> (Vec<f64>, usize) {
    let a = problem.csr::<f64>();
    let b = problem.load();
    let mut x = vec![0.0; problem.unknowns()];
    let options = SolverOptions { rel_tol: 1e-13, max_iterations: 10_000, preconditioner };
    let out = cg(&CsrRef::from(&a), &b, &mut x, &options).unwrap();
    assert_eq!(out.stop, Stop::Converged, "{problem:?}: {out:?}");
    (x, out.iterations)
}

#[test]
fn sizes_and_row_lengths_are_those_of_the_study() {
    for (degree, row) in [(1, 9), (2, 25), (3, 49), (4, 81)] {
        let p = Poisson::new(degree, 6);
        assert_eq!(p.unknowns(), (6 * degree - 1).pow(2));
        let a = p.csr::<f64>();
        let longest = (0..a.nrows()).map(|r| a.row(r).nnz()).max().unwrap();
        assert_eq!(longest, row, "Q{degree}");
        let study = Poisson::with_unknowns(degree, STUDY_UNKNOWNS);
        let off = study.unknowns().abs_diff(STUDY_UNKNOWNS) as f64 / STUDY_UNKNOWNS as f64;
        assert!(off < 0.01, "Q{degree}: {} unknowns", study.unknowns());
    }
}

#[test]
fn element_stiffness_rows_sum_to_zero_and_scale_free() {
    // Constants are in the kernel of the Laplacian; in 2D the stiffness of a square does not depend
    // on its size.
    for degree in 1..=4 {
        let p = Poisson::new(degree, 3);
        let (k, k_small) = (p.element_stiffness(1.0, 1.0), p.element_stiffness(0.01, 0.01));
        let m = p.nodes_per_element();
        for i in 0..m {
            let row: f64 = k[i * m..(i + 1) * m].iter().sum();
            assert!(row.abs() < 1e-12, "Q{degree} row {i}: {row}");
            assert!(k[i * m + i] > 0.0);
        }
        assert!(k.iter().zip(&k_small).all(|(a, b)| (a - b).abs() < 1e-12 * a.abs().max(1.0)));
    }
    // Q1 on a square: the classic 4 x 4 matrix with 2/3 on the diagonal.
    let k = Poisson::new(1, 1).element_stiffness(0.5, 0.5);
    let expected = [4.0, -1.0, -1.0, -2.0].map(|v| v / 6.0);
    for (i, e) in expected.iter().enumerate() {
        assert!((k[i] - e).abs() < 1e-15, "{k:?}");
    }
}

#[test]
fn assembly_is_symmetric_and_positive_definite() {
    let mut rng = rng("assembly_is_symmetric_and_positive_definite");
    for degree in 1..=4 {
        let p = Poisson::new(degree, 5);
        let a = p.csr::<f64>();
        assert_eq!(a, a.transpose(), "Q{degree} is not symmetric");
        let view = CsrRef::from(&a);
        for _ in 0..20 {
            let x: Vec<f64> = random_vector(&mut rng, p.unknowns());
            let ax = spmv_f64(1.0, view, &x, 0.0, &x).unwrap();
            let xax: f64 = x.iter().zip(&ax).map(|(a, b)| a * b).sum();
            assert!(xax > 0.0, "Q{degree}: xᵀAx = {xax}");
        }
    }
}

#[test]
fn lma_product_equals_csr_product() {
    let mut rng = rng("lma_product_equals_csr_product");
    // Cells chosen so that no size is a multiple of a warp.
    for (degree, cells) in [(1, 13), (2, 7), (3, 5), (4, 3)] {
        let p = Poisson::new(degree, cells);
        check_lma::<f64>(&mut rng, &p);
        check_lma::<f32>(&mut rng, &p);
    }
}

fn check_lma<T: Scalar>(rng: &mut ChaCha8Rng, p: &Poisson) {
    let (lma, csr) = (p.lma::<T>(), p.csr::<T>());
    let n = p.unknowns();
    let (x, y0): (Vec<T>, Vec<T>) = (random_vector(rng, n), random_vector(rng, n));
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
    let mut y = y0.clone();
    lma.spmv(alpha, &x, beta, &mut y).unwrap();
    let view = CsrRef::from(&csr);
    let reference = spmv_f64(alpha, view, &x, beta, &y0).unwrap();
    let scale = error_scale(alpha, view, &x, beta, &y0).unwrap();
    let err = max_relative_error(&y, &reference, &scale);
    // An element row sums m products and a node adds at most 4 rows (k + 1)^2 <= 25: well within
    // 64 roundings.
    assert!(err <= 64.0 * T::EPSILON, "Q{} {}: error {err}", p.degree, T::NAME);
    // The stiffness matrices are symmetric bit for bit, so the study's operator is stored packed,
    // and gives the bits of the whole storage.
    assert_eq!(lma.storage(), gpu_spmv::formats::LmaStorage::Symmetric, "Q{}", p.degree);
    let m = p.nodes_per_element();
    assert_eq!(lma.values().len(), p.elements() * m * (m + 1) / 2);
    let mut y_full = y0.clone();
    lma.to_full_storage().spmv(alpha, &x, beta, &mut y_full).unwrap();
    let bits = |v: &[T]| v.iter().map(|e| e.to_f64().to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&y), bits(&y_full), "Q{} {}", p.degree, T::NAME);
}

#[test]
fn cg_on_the_lma_operator_matches_cg_on_csr() {
    let p = Poisson::new(3, 6);
    let (lma, csr) = (p.lma::<f64>(), p.csr::<f64>());
    let b = p.load();
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 1000, preconditioner: Preconditioner::Jacobi };
    let (mut x_lma, mut x_csr) = (vec![0.0; p.unknowns()], vec![0.0; p.unknowns()]);
    let on_lma = cg(&lma, &b, &mut x_lma, &options).unwrap();
    let on_csr = cg(&CsrRef::from(&csr), &b, &mut x_csr, &options).unwrap();
    assert!(on_lma.iterations.abs_diff(on_csr.iterations) <= 1, "{on_lma:?} vs {on_csr:?}");
    let diff = x_lma.iter().zip(&x_csr).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(diff < 1e-8, "{diff}");
}

/// The L2 error of Q_k falls as `h^(k + 1)`: the order observed between a mesh and its refinement is
/// within 0.25 of it (the meshes are coarse enough for a debug build, fine enough to be asymptotic).
#[test]
fn discrete_solutions_converge_at_order_k_plus_1() {
    for (degree, cells) in [(1, 8), (2, 4), (3, 4), (4, 2)] {
        let (coarse, fine) = (Poisson::new(degree, cells), Poisson::new(degree, 2 * cells));
        let (u_coarse, _) = solve(&coarse, Preconditioner::None);
        let (u_fine, iterations) = solve(&fine, Preconditioner::Jacobi);
        let (e_coarse, e_fine) = (coarse.l2_error(&u_coarse), fine.l2_error(&u_fine));
        let order = (e_coarse / e_fine).log2();
        eprintln!(
            "Q{degree}: L2 error {e_coarse:.3e} (h = 1/{cells}), {e_fine:.3e} (h = 1/{}): order {order:.3} \
             ({iterations} Jacobi-CG iterations)",
            2 * cells
        );
        let expected = degree as f64 + 1.0;
        assert!((order - expected).abs() <= 0.25, "Q{degree}: order {order}, expected {expected}");
    }
}

#[test]
fn source_is_minus_the_laplacian_of_the_solution() {
    let h = 1e-4;
    for (x, y) in [(0.3, 0.7), (0.5, 0.5), (0.9, 0.1)] {
        let laplacian = (exact(x + h, y) + exact(x - h, y) + exact(x, y + h) + exact(x, y - h)
            - 4.0 * exact(x, y))
            / (h * h);
        assert!((source(x, y) + laplacian).abs() < 1e-6, "({x}, {y}): {} vs {}", source(x, y), -laplacian);
    }
}
