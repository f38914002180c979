//! The CPU references against the GPU paths' documented rules: `y` not read when `beta == 0`,
//! neither `A` nor `x` (or `X`) when `alpha == 0` or `A` has no entries, lengths and shapes refused
//! naming the operand; and against each other (the transposed oracle is the oracle of the
//! transpose, SpMM is SpMV column by column). Also the dense views they read (`DenseRef::try_new`).

use gpu_spmv::reference::{
    DenseRef, error_scale, error_scale_transposed, max_relative_error, spmm_f64, spmv_f64,
    spmv_transpose_f64, transpose,
};
use gpu_spmv::{CsrRef, Error, Scalar};

/// `DenseRef::try_new` accepts exactly the views of at most as many elements as their data holds
/// whose last element lies in it, and every element of an accepted one can be read.
pub fn check_dense_view(len: usize, rows: usize, cols: usize, row_stride: usize, col_stride: usize) {
    let data: Vec<f32> = (0..len).map(|i| i as f32).collect();
    let elements = rows as u128 * cols as u128;
    // In u128, where the product of two `usize`s fits but a sum of two may not: `None` past it.
    let last = if elements == 0 {
        Some(0)
    } else {
        ((rows as u128 - 1) * row_stride as u128).checked_add((cols as u128 - 1) * col_stride as u128 + 1)
    };
    let fits = elements <= usize::MAX as u128 && last.is_some_and(|l| l <= usize::MAX as u128);
    let last = last.unwrap_or(u128::MAX);
    match DenseRef::try_new(&data, rows, cols, row_stride, col_stride) {
        Ok(view) => {
            assert!(fits && elements.max(last) <= len as u128, "accepted a view past its data");
            assert_eq!((view.rows(), view.cols()), (rows, cols));
            // Row by row only where there are elements: a view of 2^33 rows and no column is fine.
            for r in (0..rows).take_while(|_| elements > 0) {
                for c in 0..cols {
                    assert_eq!(view.at(r, c), data[r * row_stride + c * col_stride]);
                }
            }
        }
        Err(Error::TooLarge { .. }) => assert!(!fits),
        Err(Error::DimensionMismatch { expected, got, .. }) => {
            assert!(fits && got == len && expected as u128 == elements.max(last) && expected > len);
        }
        Err(e) => panic!("unexpected refusal {e}"),
    }
}

/// Every reference on `a` (small integer values) with `x`, `y` of the right lengths, and a column
/// count within the limit of declared counts: the contract's rules and the references' agreement.
pub fn check_references<T: Scalar>(a: CsrRef<'_, T>, alpha: T, beta: T) {
    // First, as the vectors below are sized by the column count: refused past the declared limit.
    let Ok((offsets, rows, values)) = transpose(a) else {
        return assert!(a.ncols() > gpu_spmv::formats::MAX_ROWS_WITHOUT_ENTRIES);
    };
    let x: Vec<T> = (0..a.ncols()).map(|i| T::from_f64((i % 7) as f64 - 3.0)).collect();
    let xt: Vec<T> = (0..a.nrows()).map(|i| T::from_f64((i % 5) as f64 - 2.0)).collect();
    let y: Vec<T> = (0..a.nrows()).map(|i| T::from_f64((i % 3) as f64 + 1.0)).collect();
    let yt: Vec<T> = (0..a.ncols()).map(|i| T::from_f64((i % 4) as f64 - 1.0)).collect();
    let nan = |n| vec![T::from_f64(f64::NAN); n];
    let scaled = |y: &[T]| -> Vec<f64> {
        y.iter().map(|v| if beta == T::ZERO { 0.0 } else { beta.to_f64() * v.to_f64() }).collect()
    };
    let without_matrix = alpha == T::ZERO || a.nnz() == 0;

    // SpMV: NaN in x is not read when alpha == 0; NaN in y not when beta == 0.
    let want = spmv_f64(alpha, a, &x, beta, &y).unwrap();
    if without_matrix {
        assert_eq!(spmv_f64(alpha, a, &nan(a.ncols()), beta, &y).unwrap(), scaled(&y));
    }
    if beta == T::ZERO {
        assert_eq!(spmv_f64(alpha, a, &x, beta, &nan(a.nrows())).unwrap(), want);
    }
    let scale = error_scale(alpha, a, &x, beta, &y).unwrap();
    assert_eq!(max_relative_error(&want, &want, &scale), 0.0);
    assert!(
        matches!(spmv_f64(alpha, a, &y, beta, &x), Err(Error::DimensionMismatch { .. }))
            || a.nrows() == a.ncols()
    );

    // The transposed product: the oracle of the transpose, and the same rules.
    let at =
        CsrRef::try_new(a.ncols(), a.nrows(), &offsets, &rows, &values).expect("the transpose is valid CSR");
    let want_t = spmv_transpose_f64(alpha, a, &xt, beta, &yt).unwrap();
    let via = spmv_f64(alpha, at, &xt, beta, &yt).unwrap();
    assert!(
        want_t.iter().zip(&via).all(|(a, b)| a == b || (a.is_nan() && b.is_nan())),
        "Aᵀx: {want_t:?} {via:?}"
    );
    assert_eq!(
        error_scale_transposed(alpha, a, &xt, beta, &yt).unwrap(),
        error_scale(alpha, at, &xt, beta, &yt).unwrap()
    );
    if without_matrix {
        assert_eq!(spmv_transpose_f64(alpha, a, &nan(a.nrows()), beta, &yt).unwrap(), scaled(&yt));
        assert_eq!(
            error_scale_transposed(alpha, a, &nan(a.nrows()), beta, &yt).unwrap(),
            scaled(&yt).iter().map(|v| v.abs()).collect::<Vec<_>>()
        );
    }
    if beta == T::ZERO {
        assert_eq!(spmv_transpose_f64(alpha, a, &xt, beta, &nan(a.ncols())).unwrap(), want_t);
    }
    for (xl, yl) in [(a.nrows() + 1, a.ncols()), (a.nrows(), a.ncols() + 1)] {
        let (xs, ys) = (vec![T::ZERO; xl], vec![T::ZERO; yl]);
        assert!(matches!(spmv_transpose_f64(alpha, a, &xs, beta, &ys), Err(Error::DimensionMismatch { .. })));
        assert!(matches!(
            error_scale_transposed(alpha, a, &xs, beta, &ys),
            Err(Error::DimensionMismatch { .. })
        ));
    }

    // SpMM with two columns, X row-major and Y column-major: SpMV per column, the same rules.
    let k = 2;
    let xs: Vec<T> = (0..a.ncols() * k).map(|i| T::from_f64((i % 9) as f64 - 4.0)).collect();
    let ys: Vec<T> = (0..a.nrows() * k).map(|i| T::from_f64((i % 2) as f64 + 0.5)).collect();
    let xd = DenseRef::try_new(&xs, a.ncols(), k, k, 1).unwrap();
    let yd = DenseRef::try_new(&ys, a.nrows(), k, 1, a.nrows()).unwrap();
    let (out, _) = spmm_f64(alpha, a, xd, beta, yd).unwrap();
    for c in 0..k {
        let column: Vec<T> = (0..a.ncols()).map(|r| xs[r * k + c]).collect();
        let want = spmv_f64(alpha, a, &column, beta, &ys[c * a.nrows()..(c + 1) * a.nrows()]).unwrap();
        assert_eq!(out[c * a.nrows()..(c + 1) * a.nrows()], want[..], "column {c}");
    }
    let nans = nan(a.ncols().max(a.nrows()) * k);
    if without_matrix {
        let xn = DenseRef::try_new(&nans, a.ncols(), k, k, 1).unwrap();
        let (out, _) = spmm_f64(alpha, a, xn, beta, yd).unwrap();
        assert_eq!(out, scaled(&ys));
    }
    if beta == T::ZERO {
        let yn = DenseRef::try_new(&nans, a.nrows(), k, 1, a.nrows()).unwrap();
        let (again, _) = spmm_f64(alpha, a, xd, beta, yn).unwrap();
        let (out, _) = spmm_f64(alpha, a, xd, beta, yd).unwrap();
        assert_eq!(again, out);
    }
    let wrong = DenseRef::try_new(&xs, a.ncols(), 1, 1, 1).unwrap();
    assert!(matches!(
        spmm_f64(alpha, a, xd, beta, wrong),
        Err(Error::DimensionMismatch { what: "the columns of Y" | "the rows of Y", .. })
    ));
}
