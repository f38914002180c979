//! The format planner (`Gpu::upload_for_products`) on a stencil, a power-law-like matrix, a matrix
//! without entries and one without rows: its record must be consistent with its choice, and products
//! with the planned matrix must match the f64 reference. Without a GPU these tests print why and pass,
//! unless `SPMV_REQUIRE_GPU=1`, which makes them fail instead.

use crate::common::{Csr, check, five_point, gpu_or_skip, random_vector, rng};
use gpu_spmv::formats::{CompressedCsr, CompressedEll, Coo, Dia, Ell, Hyb, Sell};
use gpu_spmv::select::{
    AutoFormat, AutoMatrix, FormatCost, MIN_PLANNED_PRODUCTS, Outcome, Reason, Selection,
    break_even_products, cheapest_format,
};
use gpu_spmv::{DeviceMatrix, Gpu, Scalar};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The 5-point stencil of an `n` x `n` grid, values uniform in [-1, 1).
fn stencil<T: Scalar>(rng: &mut ChaCha8Rng, n: usize) -> Csr<T> {
    five_point(n, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))
}

/// Row lengths falling like 1 / rank, the longest rows scattered: a few rows of thousands of entries,
/// most of one to three, as in a web graph.
fn power_law<T: Scalar>(rng: &mut ChaCha8Rng, nrows: usize) -> Csr<T> {
    let rank = |r: usize| (r * 7919) % nrows + 1;
    Csr::random(rng, nrows, nrows, true, |r| 1 + 20_000 / rank(r))
}

/// Checks the record against the choice: a matrix without entries or with fewer than
/// `MIN_PLANNED_PRODUCTS` products stays CSR unmeasured; otherwise every measured candidate has
/// sane times and its break-even count, and the choice is the smallest total of the measured ones.
fn check_selection<T: Scalar>(name: &str, a: &Csr<T>, m: &AutoMatrix<T>, s: &Selection, products: u64) {
    assert_eq!(s.products, products, "{name}");
    assert_eq!(s.chosen, m.format(), "{name}");
    if a.vals.is_empty() || products < MIN_PLANNED_PRODUCTS {
        let reason = if a.vals.is_empty() { Reason::NoEntries } else { Reason::FewProducts };
        assert_eq!((s.chosen, s.reason, s.csr_product_ms), (AutoFormat::Csr, reason, None), "{name}");
        assert!(s.trials.is_empty(), "{name}");
        return;
    }
    assert_eq!(s.reason, Reason::SmallestTotal, "{name}");
    let csr_ms = s.csr_product_ms.expect("CSR timed");
    assert!(csr_ms.is_finite() && csr_ms > 0.0, "{name}: CSR product {csr_ms} ms");
    let mut measured: Vec<(AutoFormat, FormatCost)> = Vec::new();
    for trial in &s.trials {
        match &trial.outcome {
            Outcome::Measured { cost, break_even } => {
                assert!(cost.product_ms.is_finite() && cost.product_ms > 0.0, "{name}: {cost:?}");
                assert!(cost.conversion_ms.is_finite() && cost.conversion_ms >= 0.0, "{name}: {cost:?}");
                assert_eq!(*break_even, break_even_products(csr_ms, *cost), "{name}");
                measured.push((trial.format, *cost));
            }
            Outcome::Refused(why) => {
                // The layouts with limits of their own: padding (ELL, SELL, compressed ELL), columns
                // near their row (compressed ELL) and few diagonals (DIA).
                let limited = [AutoFormat::Ell, AutoFormat::Sell, AutoFormat::CompressedEll, AutoFormat::Dia];
                assert!(limited.contains(&trial.format), "{name}: {:?} refused ({why})", trial.format);
            }
            other => eprintln!("{name}: {:?} {other:?}", trial.format),
        }
    }
    assert!(!measured.is_empty(), "{name}: COO is always converted for 10^9 products\n{s}");
    let costs: Vec<FormatCost> = measured.iter().map(|&(_, c)| c).collect();
    let expected = cheapest_format(csr_ms, &costs, products).map_or(AutoFormat::Csr, |i| measured[i].0);
    assert_eq!(s.chosen, expected, "{name}\n{s}");
}

/// `y = alpha * A * x + beta * y` with the planned matrix: `beta = 0` on a `y` poisoned with NaN, and
/// `beta != 0`, against the f64 reference.
fn check_products<T: Scalar>(gpu: &Gpu, name: &str, a: &Csr<T>, m: &AutoMatrix<T>, rng: &mut ChaCha8Rng) {
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (a.nrows, a.ncols, a.vals.len()), "{name}");
    let x = random_vector::<T>(rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let y0 = random_vector::<T>(rng, a.nrows);
    let poison = vec![T::from_f64(f64::NAN); a.nrows];
    for (alpha, beta, start) in
        [(T::from_f64(1.0), T::ZERO, &poison), (T::from_f64(-1.5), T::from_f64(0.5), &y0)]
    {
        let mut dy = gpu.upload_vector(start).unwrap();
        gpu.spmv(alpha, m, &dx, beta, &mut dy).unwrap();
        let y = dy.to_host(gpu).unwrap();
        let y_in: Vec<T> = if beta == T::ZERO { vec![T::ZERO; a.nrows] } else { start.clone() };
        check(
            &format!("{name}, {:?}, alpha {alpha}, beta {beta}", m.format()),
            a,
            alpha,
            &x,
            beta,
            &y_in,
            &y,
        );
    }
}

fn plans<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let matrices = [
        ("stencil 300 x 300", stencil::<T>(&mut rng, 300)),
        ("power law, 30000 rows", power_law::<T>(&mut rng, 30_000)),
        ("all rows empty", Csr::random(&mut rng, 1000, 300, true, |_| 0)),
        ("no rows", Csr::random(&mut rng, 0, 5, true, |_| 0)),
    ];
    for (name, a) in &matrices {
        for products in [1, 1_000_000_000] {
            let (m, selection) = gpu.upload_for_products(a.view(), products).unwrap();
            eprintln!("{name}, {}:\n{selection}", T::NAME);
            if products == 1 {
                assert!(matches!(m, AutoMatrix::Csr(_)), "{name}: one product must stay CSR");
            }
            check_selection(name, a, &m, &selection, products);
            check_products(&gpu, name, a, &m, &mut rng);
        }
    }
}

/// Every variant of `AutoMatrix`, built directly whatever the timings would choose, multiplies like
/// the format it holds (ELL, SELL, compressed ELL and DIA on a stencil, which they accept).
fn every_variant<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let p = power_law::<T>(&mut rng, 10_000);
    let s = stencil::<T>(&mut rng, 100);
    let variants = [
        (&p, AutoMatrix::Csr(gpu.upload_csr_ref(p.view()).unwrap())),
        (&p, AutoMatrix::Coo(gpu.upload_coo(&Coo::try_from_csr(p.view()).unwrap()).unwrap())),
        (&p, AutoMatrix::Hyb(gpu.upload_hyb(&Hyb::try_from_csr_with_width(p.view(), 2).unwrap()).unwrap())),
        (&s, AutoMatrix::Ell(gpu.upload_ell(&Ell::try_from_csr(s.view()).unwrap()).unwrap())),
        (&s, AutoMatrix::Sell(gpu.upload_sell(&Sell::try_from_csr(s.view()).unwrap()).unwrap())),
        (
            &p,
            AutoMatrix::Compressed(
                gpu.upload_compressed(&CompressedCsr::try_from_csr(p.view()).unwrap()).unwrap(),
            ),
        ),
        (
            &s,
            AutoMatrix::CompressedEll(
                gpu.upload_compressed_ell(&CompressedEll::try_from_csr(s.view()).unwrap()).unwrap(),
            ),
        ),
        (&s, AutoMatrix::Dia(gpu.upload_dia(&Dia::try_from_csr(s.view()).unwrap()).unwrap())),
    ];
    for (a, m) in &variants {
        check_products(&gpu, "every variant", a, m, &mut rng);
    }
    assert_eq!(
        variants.iter().map(|(_, m)| m.format()).collect::<Vec<_>>(),
        [
            AutoFormat::Csr,
            AutoFormat::CooSegmented,
            AutoFormat::Hyb,
            AutoFormat::Ell,
            AutoFormat::Sell,
            AutoFormat::Compressed,
            AutoFormat::CompressedEll,
            AutoFormat::Dia
        ]
    );
}

#[test]
fn plans_f32() {
    plans::<f32>("plans_f32");
}

#[test]
fn plans_f64() {
    plans::<f64>("plans_f64");
}

#[test]
fn every_variant_f32() {
    every_variant::<f32>("every_variant_f32");
}

#[test]
fn every_variant_f64() {
    every_variant::<f64>("every_variant_f64");
}
