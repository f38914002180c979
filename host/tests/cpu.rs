//! CPU kernels against the f64 reference, and the validation of raw CSR input.

mod common;

use common::{Csr, check, edge_cases, random_vector, rng};
use gpu_spmv::reference::{CpuKernel, error_scale, max_relative_error, spmv, spmv_f64};
use gpu_spmv::{CsrError, CsrRef, Error, Scalar};

const KERNELS: [CpuKernel; 4] = [
    CpuKernel::Serial,
    CpuKernel::Rayon,
    CpuKernel::Chunked { chunk_cols: 7 },
    CpuKernel::Chunked { chunk_cols: 4096 },
];

fn all_kernels_on_edge_cases<T: Scalar>() {
    let mut rng = rng(&format!("cpu kernels {}", T::NAME));
    for (name, a) in edge_cases::<T>(&mut rng) {
        let x = random_vector::<T>(&mut rng, a.ncols);
        let y0 = random_vector::<T>(&mut rng, a.nrows);
        let view = a.view();
        let sorted = (0..a.nrows).all(|r| view.row(r).0.is_sorted());
        for kernel in KERNELS {
            for (alpha, beta) in [(T::from_f64(1.0), T::ZERO), (T::from_f64(-0.5), T::from_f64(2.0))] {
                let mut y = y0.clone();
                let result = spmv(kernel, alpha, a.view(), &x, beta, &mut y);
                if matches!(kernel, CpuKernel::Chunked { .. }) && !sorted {
                    assert!(matches!(result, Err(Error::UnsortedRow { .. })), "{name}: {result:?}");
                    assert_eq!(y, y0, "{name}: y changed by a refused call");
                    continue;
                }
                result.unwrap();
                check(&format!("{name}, {kernel:?}"), &a, alpha, &x, beta, &y0, &y);
            }
        }
    }
}

#[test]
fn cpu_kernels_f32() {
    all_kernels_on_edge_cases::<f32>();
}

#[test]
fn cpu_kernels_f64() {
    all_kernels_on_edge_cases::<f64>();
}

#[test]
fn hand_checked_product() {
    // [1 0 2]   [1]   [ 7]
    // [0 0 0] * [2] = [ 0]
    // [0 3 0]   [3]   [ 6]
    let a = CsrRef::try_new(3, 3, &[0, 2, 2, 3], &[0, 2, 1], &[1.0, 2.0, 3.0]).unwrap();
    for kernel in KERNELS {
        let mut y = vec![f64::NAN, 5.0, 1.0];
        spmv(kernel, 1.0, a, &[1.0, 2.0, 3.0], 0.0, &mut y).unwrap();
        assert_eq!(y, [7.0, 0.0, 6.0], "{kernel:?}: beta = 0 must not read y");
        spmv(kernel, 2.0, a, &[1.0, 2.0, 3.0], -1.0, &mut y).unwrap();
        assert_eq!(y, [7.0, 0.0, 6.0], "{kernel:?}");
    }
}

#[test]
fn nan_reaches_exactly_the_rows_that_read_it() {
    let mut rng = rng("cpu nan");
    let a = Csr::<f64>::random(&mut rng, 500, 400, true, |r| r % 9);
    let mut x = random_vector::<f64>(&mut rng, 400);
    x[123] = f64::NAN;
    let mut y = vec![0.0; 500];
    spmv(CpuKernel::Rayon, 1.0, a.view(), &x, 0.0, &mut y).unwrap();
    let view = a.view();
    for (r, v) in y.iter().enumerate() {
        assert_eq!(v.is_nan(), view.row(r).0.contains(&123), "row {r}");
    }
}

#[test]
fn validation_names_the_fault() {
    /// Rows, columns, row offsets, column indices and the error they must give (3 values each).
    type Case<'a> = (usize, usize, &'a [usize], &'a [usize], CsrError);
    let vals = [1.0f32; 3];
    let cases: [Case; 6] = [
        (2, 3, &[0, 1, 2, 3], &[0, 1, 2], CsrError::OffsetsLength { rows: 2, got: 4 }),
        (2, 3, &[1, 2, 3], &[0, 1, 2], CsrError::OffsetsStart(1)),
        (2, 3, &[0, 3, 2], &[0, 1, 2], CsrError::OffsetsDecrease { row: 1, start: 3, end: 2 }),
        (2, 3, &[0, 1, 2], &[0, 1, 2], CsrError::OffsetsEnd { last: 2, nnz: 3 }),
        (2, 3, &[0, 1, 3], &[0, 1], CsrError::LengthMismatch { col_indices: 2, values: 3 }),
        (2, 3, &[0, 1, 3], &[0, 1, 3], CsrError::ColumnOutOfRange { row: 1, entry: 2, col: 3, ncols: 3 }),
    ];
    for (rows, cols, offsets, idx, expected) in cases {
        let err = CsrRef::try_new(rows, cols, offsets, idx, &vals).unwrap_err();
        assert_eq!(err, expected);
        assert!(!err.to_string().is_empty());
    }
    assert_eq!(
        CsrRef::<f32>::try_new(0, 3, &[], &[], &[]).unwrap_err(),
        CsrError::OffsetsLength { rows: 0, got: 0 }
    );
}

#[test]
fn dimension_errors_leave_y_untouched() {
    let a = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 2], &[1.0f32, 2.0]).unwrap();
    let mut y = vec![4.0f32, 5.0];
    let err = spmv(CpuKernel::Serial, 1.0, a, &[1.0, 2.0], 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "x", expected: 3, got: 2 }), "{err}");
    let mut short = vec![4.0f32];
    let err = spmv(CpuKernel::Serial, 1.0, a, &[1.0, 2.0, 3.0], 0.0, &mut short).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "y", expected: 2, got: 1 }), "{err}");
    assert_eq!(y, [4.0, 5.0]);
    assert_eq!(short, [4.0]);
}

#[test]
fn row_stats() {
    let a = CsrRef::try_new(4, 9, &[0, 0, 4, 5, 8], &[0, 1, 2, 3, 4, 5, 6, 7], &[1.0f64; 8]).unwrap();
    let s = a.stats();
    assert_eq!((s.rows, s.cols, s.nnz, s.max, s.empty_rows), (4, 9, 8, 4, 1));
    assert_eq!(s.mean, 2.0);
    assert!((s.std_dev - 1.5811388300841898).abs() < 1e-12);
}

/// Issue 9: with `alpha == 0` the CPU kernels and the oracle read neither `A` nor `x` (`y = beta * y`,
/// as on the GPU), and `y` is not read when `beta == 0` either.
#[test]
fn alpha_zero_reads_neither_a_nor_x() {
    let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0f64, f64::INFINITY]).unwrap();
    let x = [f64::NAN, 1.0];
    for kernel in KERNELS {
        let mut y = vec![5.0, -2.0];
        spmv(kernel, 0.0, a, &x, 1.0, &mut y).unwrap();
        assert_eq!(y, [5.0, -2.0], "{kernel:?}");
        spmv(kernel, 0.0, a, &x, 3.0, &mut y).unwrap();
        assert_eq!(y, [15.0, -6.0], "{kernel:?}");
        let mut poisoned = vec![f64::NAN; 2];
        spmv(kernel, 0.0, a, &x, 0.0, &mut poisoned).unwrap();
        assert_eq!(poisoned, [0.0, 0.0], "{kernel:?}");
    }
    assert_eq!(spmv_f64(0.0, a, &x, 1.0, &[5.0, -2.0]).unwrap(), [5.0, -2.0]);
    assert_eq!(spmv_f64(0.0, a, &x, 0.0, &[f64::NAN; 2]).unwrap(), [0.0, 0.0]);
    assert_eq!(error_scale(0.0, a, &x, 2.0, &[5.0, -2.0]).unwrap(), [10.0, 4.0]);
    // A matrix without entries contributes nothing either, whatever alpha: not inf * 0 = NaN.
    let empty = CsrRef::<f32>::try_new(2, 1, &[0, 0, 0], &[], &[]).unwrap();
    for kernel in KERNELS {
        let mut y = vec![1.0f32, 2.0];
        spmv(kernel, f32::INFINITY, empty, &[f32::NAN], 2.0, &mut y).unwrap();
        assert_eq!(y, [2.0, 4.0], "{kernel:?}");
    }
    assert_eq!(spmv_f64(f32::INFINITY, empty, &[1.0], 2.0, &[1.0, 2.0]).unwrap(), [2.0, 4.0]);
}

/// Issue 9: a refusal of the chunked kernel does not depend on `alpha`, and sorted rows with a
/// repeated column are run (the README allows repeats), not refused.
#[test]
fn chunked_takes_sorted_rows_with_repeats() {
    let a = CsrRef::try_new(2, 3, &[0, 3, 4], &[0, 2, 2, 1], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    for chunk_cols in [1, 2, 3, 100] {
        let mut y = vec![0.0f32; 2];
        spmv(CpuKernel::Chunked { chunk_cols }, 1.0, a, &[1.0, 10.0, 100.0], 0.0, &mut y).unwrap();
        assert_eq!(y, [501.0, 40.0], "chunk_cols {chunk_cols}");
    }
    let unsorted = CsrRef::try_new(2, 3, &[0, 1, 3], &[1, 2, 0], &[1.0f32, 1.0, 1.0]).unwrap();
    for alpha in [1.0, 0.0] {
        let mut y = vec![7.0f32, 8.0];
        let err = spmv(CpuKernel::Chunked { chunk_cols: 1 }, alpha, unsorted, &[1.0; 3], 1.0, &mut y);
        assert!(matches!(err, Err(Error::UnsortedRow { row: 1, .. })), "alpha {alpha}: {err:?}");
        assert_eq!(y, [7.0, 8.0]);
    }
}

/// Issue 9: `error_scale` refuses short vectors instead of indexing past them, and a missing result
/// never reads as exact.
#[test]
fn error_measures_refuse_what_does_not_fit() {
    let a = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 2], &[1.0f64, 2.0]).unwrap();
    let err = error_scale(1.0, a, &[1.0], 0.0, &[0.0; 2]).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "x", expected: 3, got: 1 }), "{err}");
    let err = error_scale(1.0, a, &[1.0; 3], 1.0, &[]).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { what: "y", expected: 2, got: 0 }), "{err}");
    assert_eq!(max_relative_error::<f64>(&[], &[1.0, 2.0], &[1.0, 1.0]), f64::INFINITY);
    assert_eq!(max_relative_error(&[1.0, 2.0], &[1.0, 2.0], &[1.0]), f64::INFINITY);
    assert_eq!(max_relative_error(&[1.0, 2.0], &[1.0, 2.0], &[1.0, 0.0]), 0.0);
    assert_eq!(max_relative_error::<f32>(&[], &[], &[]), 0.0);
}

/// Issue 9: `CsrRef::row` past the last row panics like a slice index, as documented.
#[test]
#[should_panic(expected = "index out of bounds")]
fn row_past_the_end_panics_as_documented() {
    let a = CsrRef::try_new(1, 1, &[0, 1], &[0], &[1.0f32]).unwrap();
    let _ = a.row(1);
}

/// Issue 9: statistics of offsets that are not CSR are of no use, but never an overflow panic.
#[test]
fn row_stats_of_decreasing_offsets_do_not_panic() {
    let s = gpu_spmv::RowStats::from_offsets(&[3, 1], 4);
    assert_eq!((s.rows, s.nnz, s.max, s.empty_rows), (1, 0, 0, 1));
    let s = gpu_spmv::RowStats::from_offsets(&[0, usize::MAX, 0, usize::MAX], 4);
    assert_eq!((s.rows, s.nnz, s.max), (3, usize::MAX, usize::MAX));
}
