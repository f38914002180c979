//! CPU kernels with the same contract as the GPU ones: `y = alpha * A * x + beta * y`, `y` not read
//! when `beta == 0`, and neither `A`'s values nor `x` read when `alpha == 0` or `A` has no entries
//! (`y = beta * y` then: a NaN in `x` does not reach `y`). The serial loop in f64 is the oracle of
//! every test.

pub mod cg;

use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use crate::{Error, Result};
use rayon::prelude::*;

/// Which CPU kernel [`spmv`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuKernel {
    /// The naive CSR loop, one row after the other.
    Serial,
    /// The same loop with rows spread over rayon's threads in chunks of consecutive rows.
    Rayon,
    /// Walks x in chunks of `chunk_cols` columns, each chunk once over all rows, so that the part of
    /// x in use stays in cache. It loses to [`CpuKernel::Serial`]: every chunk walks all rows again
    /// (an offset, a cursor and a partial sum per row), while the entries, the bulk of the bytes, are
    /// read once either way. Kept as a teaching example. Needs the column indices of every row in
    /// non-decreasing order (repeats allowed).
    Chunked { chunk_cols: usize },
}

/// `y = alpha * A * x + beta * y` on the CPU. The kernel's refusals come first and do not depend on
/// `alpha`: a refused call leaves `y` as it was.
pub fn spmv<T: Scalar>(
    kernel: CpuKernel,
    alpha: T,
    a: CsrRef<'_, T>,
    x: &[T],
    beta: T,
    y: &mut [T],
) -> Result<()> {
    check_dims(&a, x.len(), y.len())?;
    if let CpuKernel::Chunked { chunk_cols } = kernel {
        check_chunked(chunk_cols, &a)?;
    }
    if without_matrix(alpha, &a) {
        for yr in y.iter_mut() {
            *yr = if beta == T::ZERO { T::ZERO } else { beta * *yr };
        }
        return Ok(());
    }
    match kernel {
        CpuKernel::Serial => {
            for (row, yr) in y.iter_mut().enumerate() {
                *yr = axpby(alpha, row_dot(&a, row, x), beta, *yr);
            }
        }
        CpuKernel::Rayon => {
            y.par_iter_mut().with_min_len(RAYON_MIN_ROWS).enumerate().for_each(|(row, yr)| {
                *yr = axpby(alpha, row_dot(&a, row, x), beta, *yr);
            });
        }
        CpuKernel::Chunked { chunk_cols } => chunked(chunk_cols, alpha, &a, x, beta, y),
    }
    Ok(())
}

/// Rows per rayon task at the least: a row is a few nanoseconds of work, a task far more.
const RAYON_MIN_ROWS: usize = 4096;

/// `alpha * A * x + beta * y` computed in f64 from inputs of any precision: the test oracle, under the
/// same contract as [`spmv`] (`A` and `x` not read when `alpha == 0` or `A` has no entries).
pub fn spmv_f64<T: Scalar>(alpha: T, a: CsrRef<'_, T>, x: &[T], beta: T, y: &[T]) -> Result<Vec<f64>> {
    check_dims(&a, x.len(), y.len())?;
    let skip_matrix = without_matrix(alpha, &a);
    Ok((0..a.nrows())
        .map(|row| {
            let scaled = if skip_matrix {
                0.0
            } else {
                let (cols, vals) = a.row(row);
                let dot: f64 = cols.iter().zip(vals).map(|(&c, v)| v.to_f64() * x[c].to_f64()).sum();
                alpha.to_f64() * dot
            };
            if beta == T::ZERO { scaled } else { scaled + beta.to_f64() * y[row].to_f64() }
        })
        .collect())
}

/// The bound the error of a computed `y[row]` may reach: `sum |a_ij x_j| * |alpha| + |beta y_i|`, the
/// magnitude the rounding errors of the row scale with (cancellation can make `y[row]` far smaller).
/// The terms [`spmv`] does not read are left out; refused with [`Error::DimensionMismatch`] like it.
pub fn error_scale<T: Scalar>(alpha: T, a: CsrRef<'_, T>, x: &[T], beta: T, y: &[T]) -> Result<Vec<f64>> {
    check_dims(&a, x.len(), y.len())?;
    let skip_matrix = without_matrix(alpha, &a);
    Ok((0..a.nrows())
        .map(|row| {
            let from_a = if skip_matrix {
                0.0
            } else {
                let (cols, vals) = a.row(row);
                let abs: f64 = cols.iter().zip(vals).map(|(&c, v)| (v.to_f64() * x[c].to_f64()).abs()).sum();
                alpha.to_f64().abs() * abs
            };
            let from_y = if beta == T::ZERO { 0.0 } else { (beta.to_f64() * y[row].to_f64()).abs() };
            from_a + from_y
        })
        .collect())
}

/// max over rows of `|y - y_ref| / scale` (scale from [`error_scale`]): the error measure of the tests
/// and the benchmark. NaN counts as infinite, rows of scale 0 must match exactly, and slices of
/// different lengths give infinity: a missing result is never exact.
pub fn max_relative_error<T: Scalar>(y: &[T], reference: &[f64], scale: &[f64]) -> f64 {
    if y.len() != reference.len() || y.len() != scale.len() {
        return f64::INFINITY;
    }
    y.iter()
        .zip(reference)
        .zip(scale)
        .map(|((v, &r), &s)| {
            let diff = (v.to_f64() - r).abs();
            if diff.is_nan() {
                f64::INFINITY
            } else if s == 0.0 {
                if diff == 0.0 { 0.0 } else { f64::INFINITY }
            } else {
                diff / s
            }
        })
        .fold(0.0, f64::max)
}

pub(crate) fn check_dims<T>(a: &CsrRef<'_, T>, x: usize, y: usize) -> Result<()> {
    if x != a.ncols() {
        return Err(Error::DimensionMismatch { what: "x", expected: a.ncols(), got: x });
    }
    if y != a.nrows() {
        return Err(Error::DimensionMismatch { what: "y", expected: a.nrows(), got: y });
    }
    Ok(())
}

/// Whether the product leaves the matrix out: `alpha == 0` (BLAS reads neither `A` nor `x` then) or
/// `A` has no entries, the cases in which the GPU only scales `y`, so that an infinite `alpha` times
/// an empty sum does not turn `y` into NaN here either.
fn without_matrix<T: Scalar>(alpha: T, a: &CsrRef<'_, T>) -> bool {
    alpha == T::ZERO || a.nnz() == 0
}

fn row_dot<T: Scalar>(a: &CsrRef<'_, T>, row: usize, x: &[T]) -> T {
    let (cols, vals) = a.row(row);
    cols.iter().zip(vals).fold(T::ZERO, |sum, (&c, &v)| v.mul_add(x[c], sum))
}

/// `alpha * sum + beta * y`, with `y` ignored when `beta == 0` (the BLAS convention: NaN in `y` does
/// not propagate).
fn axpby<T: Scalar>(alpha: T, sum: T, beta: T, y: T) -> T {
    if beta == T::ZERO { alpha * sum } else { alpha.mul_add(sum, beta * y) }
}

/// Refuses what [`CpuKernel::Chunked`] cannot run: chunks of no column, or a row whose column indices
/// decrease (a chunk takes a prefix of what is left of each row). Repeated columns are fine: they are
/// summed like any entries.
fn check_chunked<T>(chunk_cols: usize, a: &CsrRef<'_, T>) -> Result<()> {
    if chunk_cols == 0 {
        return Err(Error::Unsupported("the chunked CPU kernel needs chunks of at least one column"));
    }
    match (0..a.nrows()).find(|&r| !a.row(r).0.is_sorted()) {
        Some(row) => Err(Error::UnsortedRow { kernel: "the chunked CPU kernel", row }),
        None => Ok(()),
    }
}

/// [`CpuKernel::Chunked`] on a matrix that passed [`check_chunked`].
fn chunked<T: Scalar>(chunk_cols: usize, alpha: T, a: &CsrRef<'_, T>, x: &[T], beta: T, y: &mut [T]) {
    let mut sums = vec![T::ZERO; a.nrows()];
    // The next entry of each row not yet consumed: rows are sorted, so a chunk takes a prefix of it.
    let mut cursor: Vec<usize> = a.row_offsets()[..a.nrows()].to_vec();
    for chunk_start in (0..a.ncols()).step_by(chunk_cols) {
        let chunk_end = chunk_start.saturating_add(chunk_cols);
        for (row, sum) in sums.iter_mut().enumerate() {
            let end = a.row_offsets()[row + 1];
            let k = &mut cursor[row];
            while *k < end && a.col_indices()[*k] < chunk_end {
                *sum = a.values()[*k].mul_add(x[a.col_indices()[*k]], *sum);
                *k += 1;
            }
        }
    }
    for (yr, sum) in y.iter_mut().zip(sums) {
        *yr = axpby(alpha, sum, beta, *yr);
    }
}
