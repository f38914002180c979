//! What the CPU solvers share: the operator they apply, the checks of a system, the Jacobi
//! preconditioner's inverse diagonal, the residual `b - A x`, dot products summed in f64, and the
//! scalar operations in `T` that `Scalar` leaves out (quotient, negation, square root).

use crate::formats::csr::CsrRef;
use crate::formats::lma::Lma;
use crate::iterative::square_order;
use crate::iterative::{Preconditioner, SolveError};
use crate::reference::{CpuKernel, spmv};
use crate::scalar::Scalar;
use crate::{Error, Result};

/// An operator the CPU solvers can apply: `y = A x` and the diagonal of `A`.
pub trait LinearOperator<T> {
    fn nrows(&self) -> usize;
    fn ncols(&self) -> usize;
    /// `y = A x`, overwriting `y`; `x` must have [`Self::ncols`] elements and `y` [`Self::nrows`],
    /// else [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) with `y` untouched.
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
/// ([`SolveError::NonPositiveDiagonal`], [`SolveError::SingularDiagonal`]), or whose inverse is not
/// finite in `T` ([`SolveError::SingularDiagonal`]: a subnormal entry, or an f32 one below about
/// 2.9e-39, would make the preconditioner multiply by infinity).
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
                _ => {
                    let inverse = T::from_f64(1.0 / value);
                    if inverse.to_f64().is_finite() {
                        Ok(inverse)
                    } else {
                        Err(SolveError::SingularDiagonal { row, value }.into())
                    }
                }
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

/// The checks every CPU solver makes after its options, in this order: a square operator
/// ([`SolveError::NotSquare`]), then `b` and `x` of its order ([`Error::DimensionMismatch`]).
/// Returns the order.
pub(crate) fn check_system<T>(a: &impl LinearOperator<T>, b: &[T], x: &[T]) -> Result<usize> {
    let n = square_order(a.nrows(), a.ncols())?;
    for (what, got) in [("b", b.len()), ("x", x.len())] {
        if got != n {
            return Err(Error::DimensionMismatch { what, expected: n, got });
        }
    }
    Ok(n)
}

/// A preconditioner given to a CPU solver's `_with_preconditioner` form, `z = M⁻¹ r` (IC(0) and
/// ILU(0), [`IluFactors`](super::ilu::IluFactors); block-Jacobi,
/// [`BlockInverse`](super::block_jacobi::BlockInverse); the Chebyshev polynomial,
/// [`Polynomial`](super::chebyshev::Polynomial)): the oracles of the GPU solvers' caller
/// preconditioners. (Jacobi a solver builds itself, from
/// [`SolverOptions::preconditioner`](crate::solve::SolverOptions::preconditioner).)
pub trait CpuPrecondition<T> {
    /// The order of `M`: a solver refuses a preconditioner of another order than its operator.
    fn order(&self) -> usize;

    /// `z = M⁻¹ r`, overwriting `z`; refused for `r` or `z` of another length than its order
    /// ([`Error::DimensionMismatch`]), with `z` untouched.
    fn apply(&self, r: &[T], z: &mut [T]) -> Result<()>;
}

/// A CPU solver's preconditioner: Jacobi from its options (or none), or the caller's.
pub(crate) enum Precondition<'p, T> {
    Options(InverseDiagonal<T>),
    Custom(&'p dyn CpuPrecondition<T>),
}

impl<'p, T: Scalar> Precondition<'p, T> {
    /// The options' `preconditioner` (Jacobi's diagonal checked against `need`) or the caller's
    /// `custom` one, which the options must leave at `None` ([`Error::Unsupported`]) and whose order
    /// must be the operator's ([`Error::DimensionMismatch`], "the preconditioner").
    pub(crate) fn new(
        a: &impl LinearOperator<T>,
        preconditioner: Preconditioner,
        custom: Option<&'p dyn CpuPrecondition<T>>,
        need: DiagonalNeed,
    ) -> Result<Self> {
        match (custom, preconditioner) {
            (None, preconditioner) => Ok(Self::Options(InverseDiagonal::new(a, preconditioner, need)?)),
            (Some(m), Preconditioner::None) if m.order() == a.nrows() => Ok(Self::Custom(m)),
            (Some(m), Preconditioner::None) => Err(Error::DimensionMismatch {
                what: "the preconditioner",
                expected: a.nrows(),
                got: m.order(),
            }),
            (Some(_), Preconditioner::Jacobi) => {
                Err(Error::Unsupported("a caller's preconditioner with Preconditioner::Jacobi: pick one"))
            }
        }
    }

    /// `z = M⁻¹ r`.
    pub(crate) fn apply(&self, r: &[T], z: &mut [T]) -> Result<()> {
        match self {
            Self::Options(d) => {
                d.apply(r, z);
                Ok(())
            }
            Self::Custom(m) => m.apply(r, z),
        }
    }
}

/// Refuses `r` or `z` of another length than `n` ([`Error::DimensionMismatch`]).
pub(crate) fn check_lengths<T>(n: usize, r: &[T], z: &[T]) -> Result<()> {
    for (what, got) in [("r", r.len()), ("z", z.len())] {
        if got != n {
            return Err(Error::DimensionMismatch { what, expected: n, got });
        }
    }
    Ok(())
}

/// The `M⁻¹` a solver applies: Jacobi's inverse diagonal rounded to `T`, or the identity.
pub(crate) struct InverseDiagonal<T>(Option<Vec<T>>);

impl<T: Scalar> InverseDiagonal<T> {
    /// Built from `a`'s diagonal for [`Preconditioner::Jacobi`], refused as [`inverse_diagonal`]
    /// refuses an entry that does not meet `need`.
    pub(crate) fn new(
        a: &impl LinearOperator<T>,
        preconditioner: Preconditioner,
        need: DiagonalNeed,
    ) -> Result<Self> {
        Ok(Self(match preconditioner {
            Preconditioner::None => None,
            Preconditioner::Jacobi => Some(inverse_diagonal(&a.diagonal(), need)?),
        }))
    }

    /// `z = M⁻¹ r`, one rounding per element.
    pub(crate) fn apply(&self, r: &[T], z: &mut [T]) {
        match &self.0 {
            Some(d) => z.iter_mut().zip(r).zip(d).for_each(|((z, &r), &d)| *z = d * r),
            None => z.copy_from_slice(r),
        }
    }
}

/// `r = fma(-1, A x, b)`: the residual as the GPU solvers form it, the product and the subtraction
/// fused.
pub(crate) fn residual<T: Scalar>(a: &impl LinearOperator<T>, b: &[T], x: &[T], r: &mut [T]) -> Result<()> {
    a.apply(x, r)?;
    let minus_one = T::from_f64(-1.0);
    r.iter_mut().zip(b).for_each(|(r, &b)| *r = minus_one.mul_add(*r, b));
    Ok(())
}

/// `y = fma(alpha, x, y)` element by element.
pub(crate) fn axpy<T: Scalar>(alpha: T, x: &[T], y: &mut [T]) {
    y.iter_mut().zip(x).for_each(|(y, &x)| *y = alpha.mul_add(x, *y));
}

/// `a / b` rounded to `T`: the f64 quotient of two `T` rounded once more is the `T` quotient (f64
/// has more than twice f32's digits), so this is the division a kernel in `T` makes.
pub(crate) fn quotient<T: Scalar>(a: T, b: T) -> T {
    T::from_f64(a.to_f64() / b.to_f64())
}

/// `-a`, exact.
pub(crate) fn negative<T: Scalar>(a: T) -> T {
    T::from_f64(-a.to_f64())
}

/// `√a` rounded to `T` (correctly rounded, for the reason [`quotient`] is).
pub(crate) fn sqrt<T: Scalar>(a: T) -> T {
    T::from_f64(a.to_f64().sqrt())
}

/// Whether `v` is finite (false for NaN).
pub(crate) fn finite<T: Scalar>(v: T) -> bool {
    v.to_f64().is_finite()
}
