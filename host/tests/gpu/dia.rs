//! DIA on the GPU: products against the f64 reference with `y` poisoned where `beta == 0`, on
//! stencils, a rectangular band and every shared edge case DIA takes (the others refused with a
//! typed error); `y` bit-identical to ELL's with values in the product's type; the error of narrower
//! values within `Dia::error_bound`; an infinite `x` at a column that a row's missing entry would
//! gather leaves that row finite. Without a GPU these tests print why and pass, unless
//! `SPMV_REQUIRE_GPU=1`, which makes them fail instead.

use crate::common::{
    Case, Csr, banded, edge_cases, five_point, gpu_or_skip, random_vector, rng, seven_point, tolerance,
};
use gpu_spmv::formats::{Dia, Ell, ValueStorage};
use gpu_spmv::reference::{error_scale, spmv_f64};
use gpu_spmv::{Error, FormatError, Gpu, Scalar};
use half::{bf16, f16};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Matrices DIA takes: two stencils (rows off every block multiple), a rectangular band of 31
/// diagonals (three batches of 8 and one of 7), one of 101 (four presence words a row, the last
/// partly used) with every third column left out, a diagonal with every third row empty.
fn diagonal_matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut sparse_diagonal = Csr::random(rng, 1000, 1000, true, |_| 0);
    sparse_diagonal.offsets = (0..=1000usize).map(|r| r - r.div_ceil(3)).collect();
    sparse_diagonal.cols = (0..1000).filter(|r| r % 3 != 0).collect();
    sparse_diagonal.vals = random_vector(rng, sparse_diagonal.cols.len());
    vec![
        ("5-point 157 x 157".into(), five_point(157, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))),
        ("7-point 23^3".into(), seven_point(23, |_, _| T::from_f64(rng.random_range(-1.0..1.0)))),
        ("band of 31 diagonals, 5001 x 5013".into(), banded(rng, 5001, 5013, 15, 1)),
        ("band of 101 diagonals, 3001 x 2990".into(), thinned_band(rng)),
        ("a diagonal, every third row empty".into(), sparse_diagonal),
    ]
}

/// A band of 101 diagonals over 3,001 rows and 2,990 columns, with every third column of it left
/// out in every row: rows whose presence words have holes in each word.
fn thinned_band<T: Scalar>(rng: &mut ChaCha8Rng) -> Csr<T> {
    let mut a = banded::<T>(rng, 3001, 2990, 50, 1);
    let mut offsets = vec![0];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for r in 0..a.nrows {
        for e in a.offsets[r]..a.offsets[r + 1] {
            if a.cols[e] % 3 != 1 {
                cols.push(a.cols[e]);
                vals.push(a.vals[e]);
            }
        }
        offsets.push(cols.len());
    }
    (a.offsets, a.cols, a.vals) = (offsets, cols, vals);
    a
}

/// Every matrix to multiply: the diagonal ones and the edge cases DIA takes; an edge case it
/// refuses must be refused with one of DIA's typed errors.
fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut all = diagonal_matrices(rng);
    for (name, a) in edge_cases::<T>(rng) {
        match Dia::<T>::try_from_csr(a.view()) {
            Ok(_) => all.push((name.to_string(), a)),
            Err(Error::Format(
                FormatError::TooManyDiagonals { .. }
                | FormatError::DuplicateEntry { .. }
                | FormatError::DiaPadding { .. },
            )) => {}
            Err(other) => panic!("{name}: an untyped refusal {other:?}"),
        }
    }
    all
}

fn against_reference<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        let m = gpu.upload_dia(&Dia::<T>::try_from_csr(a.view()).unwrap()).unwrap();
        let x = random_vector::<T>(&mut rng, a.ncols);
        let dx = gpu.upload_vector(&x).unwrap();
        let y0 = random_vector::<T>(&mut rng, a.nrows);
        let poison = vec![T::from_f64(f64::NAN); a.nrows];
        let tol = tolerance::<T>(a.view().stats().max);
        for (alpha, beta, start) in [(1.0, 0.0, &poison), (-1.5, 0.75, &y0), (0.0, 3.0, &y0)] {
            let case = Case::new(&a, &x, T::from_f64(alpha), T::from_f64(beta), start.clone());
            let mut dy = gpu.upload_vector(start).unwrap();
            gpu.spmv(case.alpha, &m, &dx, case.beta, &mut dy).unwrap();
            case.assert_close(&name, &dy.to_host(&gpu).unwrap(), tol);
        }
    }
}

#[test]
fn gpu_dia_f32() {
    against_reference::<f32>("gpu_dia_f32");
}

#[test]
fn gpu_dia_f64() {
    against_reference::<f64>("gpu_dia_f64");
}

/// With values in the product's type and rows sorted, DIA sums a row's entries in ELL's order with
/// the same `fma`s: the same `y`, bit for bit.
fn bit_identical<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in diagonal_matrices::<T>(&mut rng) {
        let dia = gpu.upload_dia(&Dia::<T>::try_from_csr(a.view()).unwrap()).unwrap();
        let ell = gpu.upload_ell(&Ell::try_from_csr(a.view()).unwrap()).unwrap();
        let dx = gpu.upload_vector(&random_vector::<T>(&mut rng, a.ncols)).unwrap();
        let y0 = random_vector::<T>(&mut rng, a.nrows);
        let (alpha, beta) = (T::from_f64(1.25), T::from_f64(-0.5));
        let mut by_dia = gpu.upload_vector(&y0).unwrap();
        gpu.spmv(alpha, &dia, &dx, beta, &mut by_dia).unwrap();
        let mut by_ell = gpu.upload_vector(&y0).unwrap();
        gpu.spmv(alpha, &ell, &dx, beta, &mut by_ell).unwrap();
        let bits = |v: Vec<T>| v.iter().map(|e| e.to_f64().to_bits()).collect::<Vec<u64>>();
        assert_eq!(bits(by_dia.to_host(&gpu).unwrap()), bits(by_ell.to_host(&gpu).unwrap()), "{name}");
    }
}

#[test]
fn gpu_dia_bit_identical_f32() {
    bit_identical::<f32>("gpu_dia_bit_identical_f32");
}

#[test]
fn gpu_dia_bit_identical_f64() {
    bit_identical::<f64>("gpu_dia_bit_identical_f64");
}

/// Every row's error with values stored as `V`, against the f64 reference of the unrounded matrix,
/// is within `Dia::error_bound` (plus the reference's own rounding); returns the largest ratio.
fn within_bound<T: Scalar, V: ValueStorage<T>>(gpu: &Gpu, rng: &mut ChaCha8Rng) -> f64 {
    let mut worst: f64 = 0.0;
    for (name, a) in diagonal_matrices::<T>(rng) {
        let c = Dia::<T, V>::try_from_csr(a.view()).unwrap();
        let m = gpu.upload_dia(&c).unwrap();
        let x = random_vector::<T>(rng, a.ncols);
        let y0 = random_vector::<T>(rng, a.nrows);
        let dx = gpu.upload_vector(&x).unwrap();
        for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.5)] {
            let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
            let reference = spmv_f64(alpha, a.view(), &x, beta, &y0).unwrap();
            let scale = error_scale(alpha, a.view(), &x, beta, &y0).unwrap();
            let mut dy = gpu.upload_vector(&y0).unwrap();
            gpu.spmv(alpha, &m, &dx, beta, &mut dy).unwrap();
            for (row, y) in dy.to_host(gpu).unwrap().iter().enumerate() {
                let n = (a.offsets[row + 1] - a.offsets[row]) as f64;
                let bound = c.error_bound(row) * scale[row] + 2.0 * n * f64::EPSILON * scale[row];
                let err = (y.to_f64() - reference[row]).abs();
                assert!(err <= bound, "{name}, row {row}: error {err:e} over {bound:e}");
                if bound > 0.0 {
                    worst = worst.max(err / bound);
                }
            }
        }
    }
    worst
}

#[test]
fn gpu_dia_narrow_values_within_the_stated_bound() {
    let Some(gpu) = gpu_or_skip("gpu_dia_narrow_values") else { return };
    let mut rng = rng("gpu_dia_narrow_values");
    let ratios = [
        ("bf16 values, f32 product", within_bound::<f32, bf16>(&gpu, &mut rng)),
        ("f16 values, f32 product", within_bound::<f32, f16>(&gpu, &mut rng)),
        ("f32 values, f64 product", within_bound::<f64, f32>(&gpu, &mut rng)),
        ("bf16 values, f64 product", within_bound::<f64, bf16>(&gpu, &mut rng)),
    ];
    for (what, ratio) in ratios {
        crate::common::say(&format!("{what}: largest error / bound = {ratio:.3}"));
    }
}

/// A row without its entry on a diagonal still gathers that column of `x` (so that its gathers wait
/// on nothing) but leaves it out of the sum: an infinite `x` there keeps the row finite, while the
/// rows that do hold that column get the infinity or NaN the reference gives.
#[test]
fn gpu_dia_missing_entries_never_reach_the_sum() {
    let Some(gpu) = gpu_or_skip("gpu_dia_missing_entries") else { return };
    let mut rng = rng("gpu_dia_missing_entries");
    let n = 64;
    let mut a = five_point::<f64>(n, |_, _| rng.random_range(-1.0..1.0));
    // Row `n` (grid point (1, 0)) has no (r, r - 1) entry: column `n - 1` is its missing gather.
    let mut x = random_vector::<f64>(&mut rng, a.ncols);
    x[n - 1] = f64::INFINITY;
    a.vals.iter_mut().for_each(|v| *v = v.abs() + 0.5);
    let m = gpu.upload_dia(&Dia::<f64>::try_from_csr(a.view()).unwrap()).unwrap();
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.upload_vector(&vec![f64::NAN; a.nrows]).unwrap();
    gpu.spmv(1.0, &m, &dx, 0.0, &mut dy).unwrap();
    let y = dy.to_host(&gpu).unwrap();
    let reference = spmv_f64(1.0, a.view(), &x, 0.0, &vec![0.0; a.nrows]).unwrap();
    assert!(y[n].is_finite(), "row {n} gathered its missing entry's infinite x: {}", y[n]);
    for (row, (&got, &want)) in y.iter().zip(&reference).enumerate() {
        if want.is_finite() {
            assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "row {row}: {got} against {want}");
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "row {row}: {got} against {want}");
        }
    }
}
