//! CPU kernels with the same contract as the GPU ones: `y = alpha * A * x + beta * y`, `y` not read
//! when `beta == 0`, and neither `A`'s values nor `x` read when `alpha == 0` or `A` has no entries
//! (`y = beta * y` then: a NaN in `x` does not reach `y`). The serial loop in f64 is the oracle of
//! every test; the transposed product and the product with several vectors have theirs
//! ([`spmv_transpose_f64`], [`spmm_f64`]), [`transpose`] gives the arrays the device's
//! construction of `Aᵀ` must match, and [`assemble::assemble`] those of a matrix assembled from COO
//! triples on the device. The iterative solvers' oracles (`cg`, `bicgstab`, `gmres`),
//! which the GPU solvers follow step for step, the preconditioners' (`block_jacobi`, `chebyshev`,
//! `ilu`), and the model problems they are tested on (`problems`) are its submodules.

pub mod assemble;
pub mod bicgstab;
pub mod block_jacobi;
pub mod cg;
pub mod chebyshev;
pub mod gmres;
pub mod ilu;
pub mod ilu_pattern;
mod operator;
pub mod problems;
#[cfg(test)]
mod solver_checks;

pub use operator::{CpuPrecondition, LinearOperator};
pub(crate) use operator::{
    DiagonalNeed, Precondition, axpy, check_lengths, check_system, dot, finite, inverse_diagonal, negative,
    positive, quotient, residual, sqrt,
};

use crate::formats::csr::CsrRef;
use crate::formats::limits::check_declared;
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
/// and the benchmark. Rows of scale 0 must match exactly. Infinite wherever nothing can be
/// certified: a NaN anywhere (in `y`, the reference or the scale), a reference or scale that is
/// infinite (the f64 oracle overflowed, so it says nothing of `y`), and slices of different
/// lengths (a missing result is never exact).
pub fn max_relative_error<T: Scalar>(y: &[T], reference: &[f64], scale: &[f64]) -> f64 {
    if y.len() != reference.len() || y.len() != scale.len() {
        return f64::INFINITY;
    }
    y.iter()
        .zip(reference)
        .zip(scale)
        .map(|((v, &r), &s)| {
            let diff = (v.to_f64() - r).abs();
            if diff.is_nan() || !r.is_finite() || !s.is_finite() {
                f64::INFINITY
            } else if s == 0.0 {
                if diff == 0.0 { 0.0 } else { f64::INFINITY }
            } else {
                diff / s
            }
        })
        .fold(0.0, f64::max)
}

/// `Aᵀ` in CSR, with each row's entries in the order of `A`'s rows (and, for a column repeated in a
/// row of `A`, in their order there): a stable counting sort of the entries by column, the arrays
/// the device's construction (`kernels-gpu/src/transpose/build.rs`) must produce bit for bit.
/// Returns the row offsets (`ncols + 1`), column indices (rows of `A`) and values.
///
/// `A`'s column count sizes the row offsets but no array of `A`: refused with [`Error::TooLarge`],
/// before anything is allocated, past [`crate::formats::MAX_ROWS_WITHOUT_ENTRIES`] plus
/// [`crate::formats::MAX_ROWS_PER_ENTRY`] per entry.
pub fn transpose<T: Scalar>(a: CsrRef<'_, T>) -> Result<(Vec<usize>, Vec<usize>, Vec<T>)> {
    check_declared("the column count (the row count of the transpose)", a.ncols(), a.nnz())?;
    let mut offsets = vec![0usize; a.ncols() + 1];
    for &c in a.col_indices() {
        offsets[c + 1] += 1;
    }
    for j in 0..a.ncols() {
        offsets[j + 1] += offsets[j];
    }
    let mut next = offsets.clone();
    let (mut rows, mut values) = (vec![0usize; a.nnz()], vec![T::ZERO; a.nnz()]);
    for row in 0..a.nrows() {
        let (cols, vals) = a.row(row);
        for (&c, &v) in cols.iter().zip(vals) {
            rows[next[c]] = row;
            values[next[c]] = v;
            next[c] += 1;
        }
    }
    Ok((offsets, rows, values))
}

/// `alpha * Aᵀ * x + beta * y` computed in f64: the oracle of the transposed product (`x` has one
/// element per row of `A`, `y` one per column), under the contract of [`spmv`]: `y` not read when
/// `beta == 0`, neither `A` nor `x` when `alpha == 0` or `A` has no entries.
pub fn spmv_transpose_f64<T: Scalar>(
    alpha: T,
    a: CsrRef<'_, T>,
    x: &[T],
    beta: T,
    y: &[T],
) -> Result<Vec<f64>> {
    let sums = transposed_sums(alpha, a, x, y, |p| p)?;
    Ok(sums
        .iter()
        .zip(y)
        .map(|(&dot, &yc)| {
            let scaled = if without_matrix(alpha, &a) { 0.0 } else { alpha.to_f64() * dot };
            if beta == T::ZERO { scaled } else { scaled + beta.to_f64() * yc.to_f64() }
        })
        .collect())
}

/// The error bound of the transposed product per element of `y`, as [`error_scale`] for `A`, with
/// the same refusals as [`spmv_transpose_f64`] and the same terms left out.
pub fn error_scale_transposed<T: Scalar>(
    alpha: T,
    a: CsrRef<'_, T>,
    x: &[T],
    beta: T,
    y: &[T],
) -> Result<Vec<f64>> {
    let abs = transposed_sums(alpha, a, x, y, f64::abs)?;
    Ok(abs
        .iter()
        .zip(y)
        .map(|(&s, &yc)| {
            let from_a = if without_matrix(alpha, &a) { 0.0 } else { alpha.to_f64().abs() * s };
            let from_y = if beta == T::ZERO { 0.0 } else { (beta.to_f64() * yc.to_f64()).abs() };
            from_a + from_y
        })
        .collect())
}

/// `sum_r f(a_rc x_r)` for every column `c`, after the transposed product's length checks; zeros,
/// with neither `A` nor `x` read, when the product leaves the matrix out. Sized by `y`, which the
/// check holds to `A`'s column count.
fn transposed_sums<T: Scalar>(
    alpha: T,
    a: CsrRef<'_, T>,
    x: &[T],
    y: &[T],
    f: impl Fn(f64) -> f64,
) -> Result<Vec<f64>> {
    check_dims_transposed(&a, x.len(), y.len())?;
    let mut sums = vec![0.0f64; y.len()];
    if without_matrix(alpha, &a) {
        return Ok(sums);
    }
    for (row, &xr) in x.iter().enumerate() {
        let (cols, vals) = a.row(row);
        for (&c, v) in cols.iter().zip(vals) {
            sums[c] += f(v.to_f64() * xr.to_f64());
        }
    }
    Ok(sums)
}

/// A dense matrix in host memory, in either layout: element `(r, c)` at
/// `r * row_stride + c * col_stride` of its data (row-major: `(ld, 1)`; column-major: `(1, ld)`).
/// Checked when made: a view of at most as many elements as its data holds, each of them in it.
#[derive(Debug, Clone, Copy)]
pub struct DenseRef<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a, T: Copy> DenseRef<'a, T> {
    /// The `rows x cols` view of `data` with the given strides. Refused, with
    /// [`Error::DimensionMismatch`] naming the elements needed, when `data` holds fewer than
    /// `rows * cols` elements or the last element (`(rows - 1) * row_stride + (cols - 1) *
    /// col_stride`) lies past it; with [`Error::TooLarge`] when either count overflows `usize`.
    pub fn try_new(
        data: &'a [T],
        rows: usize,
        cols: usize,
        row_stride: usize,
        col_stride: usize,
    ) -> Result<Self> {
        let too_large = |what| Error::TooLarge { what, value: rows.max(cols), limit: usize::MAX };
        let elements =
            rows.checked_mul(cols).ok_or(too_large("a dimension of a dense matrix (rows × cols)"))?;
        let needed = if elements == 0 {
            0
        } else {
            (rows - 1)
                .checked_mul(row_stride)
                .zip((cols - 1).checked_mul(col_stride))
                .and_then(|(r, c)| r.checked_add(c))
                .and_then(|last| last.checked_add(1))
                .ok_or(too_large("a dimension of a dense matrix (its last element's index)"))?
                .max(elements)
        };
        if data.len() < needed {
            return Err(Error::DimensionMismatch {
                what: "the data of a dense matrix",
                expected: needed,
                got: data.len(),
            });
        }
        Ok(Self { data, rows, cols, row_stride, col_stride })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Element `(r, c)`.
    ///
    /// # Panics
    ///
    /// If `r >= rows()` or `c >= cols()`, like a slice index out of bounds.
    pub fn at(&self, r: usize, c: usize) -> T {
        assert!(
            r < self.rows && c < self.cols,
            "({r}, {c}) is outside a {} x {} matrix",
            self.rows,
            self.cols
        );
        self.data[r * self.row_stride + c * self.col_stride]
    }
}

/// `alpha * A * X + beta * Y` computed in f64, and the error bound of each element (as
/// [`error_scale`] per column): both `A.nrows x k`, column-major, packed. Under the contract of
/// [`spmv`]: `Y` is not read when `beta == 0`, neither `A` nor `X` when `alpha == 0` or `A` has no
/// entries. Refused with [`Error::DimensionMismatch`] naming the dimension at fault: `X` must be
/// `A.ncols x k` and `Y` `A.nrows x k`.
pub fn spmm_f64<T: Scalar>(
    alpha: T,
    a: CsrRef<'_, T>,
    x: DenseRef<'_, T>,
    beta: T,
    y: DenseRef<'_, T>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let (k, skip_matrix) = (x.cols, without_matrix(alpha, &a));
    for (what, expected, got) in [
        ("the rows of X", a.ncols(), x.rows),
        ("the rows of Y", a.nrows(), y.rows),
        ("the columns of Y", k, y.cols),
    ] {
        if got != expected {
            return Err(Error::DimensionMismatch { what, expected, got });
        }
    }
    // At most Y's elements, which its data holds (checked when Y was made).
    let (mut out, mut scale) = (Vec::with_capacity(a.nrows() * k), Vec::with_capacity(a.nrows() * k));
    for c in 0..k {
        for row in 0..a.nrows() {
            let (mut dot, mut abs) = (0.0f64, 0.0f64);
            if !skip_matrix {
                let (cols, vals) = a.row(row);
                for (&j, v) in cols.iter().zip(vals) {
                    let p = v.to_f64() * x.at(j, c).to_f64();
                    dot += p;
                    abs += p.abs();
                }
            }
            let from_y = if beta == T::ZERO { 0.0 } else { beta.to_f64() * y.at(row, c).to_f64() };
            let from_a = if skip_matrix { 0.0 } else { alpha.to_f64() * dot };
            out.push(from_a + from_y);
            scale.push(if skip_matrix { 0.0 } else { alpha.to_f64().abs() * abs } + from_y.abs());
        }
    }
    Ok((out, scale))
}

fn check_dims_transposed<T>(a: &CsrRef<'_, T>, x: usize, y: usize) -> Result<()> {
    if x != a.nrows() {
        return Err(Error::DimensionMismatch { what: "x", expected: a.nrows(), got: x });
    }
    if y != a.ncols() {
        return Err(Error::DimensionMismatch { what: "y", expected: a.ncols(), got: y });
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3 x 4 matrix whose row 2 repeats column 1.
    fn matrix() -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        (vec![0, 2, 3, 6], vec![3, 1, 0, 1, 2, 1], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    }

    #[test]
    fn the_transpose_is_stable_by_column() {
        let (o, c, v) = matrix();
        let a = CsrRef::try_new(3, 4, &o, &c, &v).unwrap();
        let (to, tc, tv) = transpose(a).unwrap();
        assert_eq!(to, [0, 1, 4, 5, 6]);
        assert_eq!(tc, [1, 0, 2, 2, 2, 0]);
        assert_eq!(tv, [3.0, 2.0, 4.0, 6.0, 5.0, 1.0]);
        // Transposing twice gives the matrix back, up to the order within a row: here sorted.
        let back = transpose(CsrRef::try_new(4, 3, &to, &tc, &tv).unwrap()).unwrap();
        assert_eq!(back.0, o);
    }

    #[test]
    fn the_transposed_oracle_is_the_oracle_of_the_transpose() {
        let (o, c, v) = matrix();
        let a = CsrRef::try_new(3, 4, &o, &c, &v).unwrap();
        let (to, tc, tv) = transpose(a).unwrap();
        let at = CsrRef::try_new(4, 3, &to, &tc, &tv).unwrap();
        let (x, y) = ([1.0, -2.0, 0.5], [f64::NAN; 4]);
        let direct = spmv_transpose_f64(2.0, a, &x, 0.0, &y).unwrap();
        assert_eq!(direct, spmv_f64(2.0, at, &x, 0.0, &y).unwrap());
        assert_eq!(direct, [-12.0, 14.0, 5.0, 2.0]);
        assert!(spmv_transpose_f64(1.0, a, &y, 0.0, &y).is_err());
    }

    #[test]
    fn spmm_is_spmv_per_column_in_either_layout() {
        let (o, c, v) = matrix();
        let a = CsrRef::try_new(3, 4, &o, &c, &v).unwrap();
        let k = 2;
        let col_major: Vec<f64> = (0..4 * k).map(|i| i as f64 - 3.0).collect();
        let row_major: Vec<f64> = (0..4 * k).map(|i| col_major[(i % k) * 4 + i / k]).collect();
        let y0 = vec![1.0; 3 * k];
        let y = DenseRef::try_new(&y0, 3, k, 1, 3).unwrap();
        let xc = DenseRef::try_new(&col_major, 4, k, 1, 4).unwrap();
        let xr = DenseRef::try_new(&row_major, 4, k, k, 1).unwrap();
        let (by_cols, _) = spmm_f64(0.5, a, xc, 2.0, y).unwrap();
        assert_eq!(spmm_f64(0.5, a, xr, 2.0, y).unwrap().0, by_cols);
        for j in 0..k {
            let column = spmv_f64(0.5, a, &col_major[4 * j..4 * j + 4], 2.0, &y0[..3]).unwrap();
            assert_eq!(by_cols[3 * j..3 * j + 3], column[..]);
        }
    }
}
