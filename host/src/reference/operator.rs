//! What the CPU solvers share: the operator they apply, the Jacobi preconditioner's inverse
//! diagonal, and dot products summed in f64.

use crate::Result;
use crate::formats::csr::CsrRef;
use crate::formats::lma::Lma;
use crate::iterative::SolveError;
use crate::reference::{CpuKernel, spmv};
use crate::scalar::Scalar;

/// An operator the CPU solvers can apply: `y = A x` and the diagonal of `A`.
pub trait LinearOperator<T> {
    fn nrows(&self) -> usize;
    fn ncols(&self) -> usize;
    /// `y = A x`, overwriting `y`; `x` must have [`Self::ncols`] elements and `y` [`Self::nrows`],
    /// else [`Error::DimensionMismatch`] with `y` untouched.
    fn apply(&self, x: &[T], y: &mut [T]) -> Result<()>;
    /// The [`Self::nrows`] diagonal entries (repeated entries summed).
    fn diagonal(&self) -> Vec<T>;
}

impl<T: Scalar> LinearOperator<T> for CsrRef<'_, T> {
    fn nrows(&self) -> usize {
        CsrRef::nrows(self)
    }

    fn ncols(&self) -> usize {
        CsrRef::ncols(self)
    }

    fn apply(&self, x: &[T], y: &mut [T]) -> Result<()> {
        spmv(CpuKernel::Rayon, T::from_f64(1.0), *self, x, T::ZERO, y)
    }

    fn diagonal(&self) -> Vec<T> {
        (0..CsrRef::nrows(self))
            .map(|r| {
                let (cols, vals) = self.row(r);
                cols.iter().zip(vals).filter(|&(&c, _)| c == r).fold(T::ZERO, |d, (_, &v)| d + v)
            })
            .collect()
    }
}

impl<T: Scalar> LinearOperator<T> for Lma<T> {
    fn nrows(&self) -> usize {
        self.node_count()
    }

    fn ncols(&self) -> usize {
        self.node_count()
    }

    fn apply(&self, x: &[T], y: &mut [T]) -> Result<()> {
        self.spmv(T::from_f64(1.0), x, T::ZERO, y)
    }

    fn diagonal(&self) -> Vec<T> {
        Lma::diagonal(self)
    }
}

/// What a Jacobi preconditioner needs of the diagonal: CG's must be positive (an SPD matrix's is),
/// the nonsymmetric solvers' only non-zero and finite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiagonalNeed {
    Positive,
    NonZero,
}

/// `1 / d` for every diagonal entry, rounded to `T` (the f64 quotient rounded to f32 is the f32
/// quotient: f64 has more than twice f32's digits), or the first entry that does not meet `need`
/// ([`SolveError::NonPositiveDiagonal`], [`SolveError::SingularDiagonal`]).
pub(crate) fn inverse_diagonal<T: Scalar>(diagonal: &[T], need: DiagonalNeed) -> Result<Vec<T>> {
    diagonal
        .iter()
        .enumerate()
        .map(|(row, &d)| {
            let value = d.to_f64();
            match need {
                DiagonalNeed::Positive if !positive(d) => {
                    Err(SolveError::NonPositiveDiagonal { row, value }.into())
                }
                DiagonalNeed::NonZero if value == 0.0 || !value.is_finite() => {
                    Err(SolveError::SingularDiagonal { row, value }.into())
                }
                _ => Ok(T::from_f64(1.0 / value)),
            }
        })
        .collect()
}

/// `uᵀv`, summed in f64 and rounded to `T`.
pub(crate) fn dot<T: Scalar>(u: &[T], v: &[T]) -> T {
    T::from_f64(u.iter().zip(v).map(|(a, b)| a.to_f64() * b.to_f64()).sum())
}

/// Whether `v` is a positive finite number (false for NaN).
pub(crate) fn positive<T: Scalar>(v: T) -> bool {
    v > T::ZERO && v.to_f64().is_finite()
}
