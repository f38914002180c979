//! The ops of the scalar programs (`kernels_gpu::abi::ScalarOp`; their meaning is documented beside
//! the `KRYLOV_OP_*` codes), built by name, and the slots every solve shares (besides
//! `KRYLOV_SLOT_RESIDUAL`, slot 0, the residual a status was decided on).

use crate::scalar::Scalar;
use kernels_gpu::abi::{
    KRYLOV_FLAG_COUNT, KRYLOV_FLAG_CYCLE, KRYLOV_NO_SLOT, KRYLOV_OP_ADD_RANGE, KRYLOV_OP_BACKSOLVE,
    KRYLOV_OP_COLUMNS, KRYLOV_OP_CONVERGED, KRYLOV_OP_COPY, KRYLOV_OP_COPY_RANGE, KRYLOV_OP_COUNT,
    KRYLOV_OP_DIV, KRYLOV_OP_END_CYCLE, KRYLOV_OP_FINITE, KRYLOV_OP_GIVENS, KRYLOV_OP_LIMIT, KRYLOV_OP_MUL,
    KRYLOV_OP_NONZERO, KRYLOV_OP_POSITIVE, KRYLOV_OP_RECORD, KRYLOV_OP_SET, KRYLOV_OP_SQRT, KRYLOV_OP_START,
    ScalarOp,
};

/// `bᵀb`.
pub(crate) const BB: u32 = 1;
/// `(rel_tol |b|)²`: converged once a residual's square is at most this.
pub(crate) const TOL: u32 = 2;
/// 1, for reciprocals.
pub(crate) const ONE: u32 = 3;
/// 0, for GMRES's exact convergence (`H[j + 1][j] = 0`).
pub(crate) const ZERO: u32 = 4;
/// The first slot a solver numbers its own scalars from.
pub(crate) const FIRST_FREE: u32 = 5;

/// Whether a convergence or limit test ends a GMRES cycle rather than the solve, and whether a
/// convergence counts the iteration it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    Solve,
    SolveCounting,
    Cycle,
}

impl Ends {
    fn flags(self) -> u32 {
        match self {
            Ends::Solve => 0,
            Ends::SolveCounting => KRYLOV_FLAG_COUNT,
            Ends::Cycle => KRYLOV_FLAG_CYCLE,
        }
    }
}

fn op<T: Scalar>(code: u32, a: u32, b: u32, c: u32, out: u32, tag: u32, value: T) -> ScalarOp<T> {
    ScalarOp { code, a, b, c, out, tag, value }
}

const NO: u32 = KRYLOV_NO_SLOT;

pub(crate) fn set<T: Scalar>(out: u32, value: T) -> ScalarOp<T> {
    op(KRYLOV_OP_SET, NO, NO, 0, out, 0, value)
}

pub(crate) fn copy<T: Scalar>(a: u32, out: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_COPY, a, NO, 0, out, 0, T::ZERO)
}

pub(crate) fn mul<T: Scalar>(a: u32, b: u32, out: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_MUL, a, b, 0, out, 0, T::ZERO)
}

/// `out = a / b`, a breakdown tagged `tag` unless `b` is non-zero and finite (the quotient is not
/// tested: a `finite` op after it does).
pub(crate) fn div<T: Scalar>(a: u32, b: u32, out: u32, tag: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_DIV, a, b, 0, out, tag, T::ZERO)
}

pub(crate) fn sqrt<T: Scalar>(a: u32, out: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_SQRT, a, NO, 0, out, 0, T::ZERO)
}

pub(crate) fn nonzero<T: Scalar>(a: u32, tag: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_NONZERO, a, NO, 0, NO, tag, T::ZERO)
}

/// A breakdown tagged `tag` unless `a` is positive and finite: CG's `pᵀAp` and `rᵀz`.
pub(crate) fn positive<T: Scalar>(a: u32, tag: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_POSITIVE, a, NO, 0, NO, tag, T::ZERO)
}

pub(crate) fn finite<T: Scalar>(a: u32, tag: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_FINITE, a, NO, 0, NO, tag, T::ZERO)
}

/// Running, no iterations done since this start, at most `max_iterations`; `done` iterations of
/// the solve before it (where its residual history goes on).
pub(crate) fn start<T: Scalar>(max_iterations: u32, done: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_START, max_iterations, done, 0, NO, 0, T::ZERO)
}

/// The residual history's entry `done + iterations + offset` (`history`'s `capacity` slots from
/// `base`) set to `s[slot]`, where it is below `capacity`.
pub(crate) fn record<T: Scalar>(slot: u32, offset: u32, (base, capacity): (u32, u32)) -> ScalarOp<T> {
    op(KRYLOV_OP_RECORD, slot, capacity, offset, base, 0, T::ZERO)
}

/// Converged if `rr <= TOL`.
pub(crate) fn converged<T: Scalar>(rr: u32, ends: Ends) -> ScalarOp<T> {
    op(KRYLOV_OP_CONVERGED, rr, TOL, ends.flags(), NO, 0, T::ZERO)
}

/// Converged if `a <= b`: GMRES's exact convergence, `H[j + 1][j]² <= 0`.
pub(crate) fn converged_if_at_most<T: Scalar>(a: u32, b: u32, ends: Ends) -> ScalarOp<T> {
    op(KRYLOV_OP_CONVERGED, a, b, ends.flags(), NO, 0, T::ZERO)
}

pub(crate) fn count<T: Scalar>() -> ScalarOp<T> {
    op(KRYLOV_OP_COUNT, NO, NO, 0, NO, 0, T::ZERO)
}

/// At the iteration limit, stop with the residual in `rr` (in a cycle, end the cycle).
pub(crate) fn limit<T: Scalar>(rr: u32, ends: Ends) -> ScalarOp<T> {
    op(KRYLOV_OP_LIMIT, rr, NO, ends.flags(), NO, 0, T::ZERO)
}

/// `s[dst + k] += s[src + k]` for `k < len`.
pub(crate) fn add_range<T: Scalar>(src: u32, dst: u32, len: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_ADD_RANGE, src, len, 0, dst, 0, T::ZERO)
}

/// `s[dst + k] = s[src + k]` for `k < len` (the ranges apart).
pub(crate) fn copy_range<T: Scalar>(src: u32, dst: u32, len: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_COPY_RANGE, src, len, 0, dst, 0, T::ZERO)
}

/// GMRES step `j` of a cycle of `m` from slot `base`: rotate column `j`, `out = g[j + 1]²`.
pub(crate) fn givens<T: Scalar>(j: u32, m: u32, base: u32, out: u32, tag: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_GIVENS, j, m, base, out, tag, T::ZERO)
}

pub(crate) fn columns<T: Scalar>(count: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_COLUMNS, count, NO, 0, NO, 0, T::ZERO)
}

pub(crate) fn backsolve<T: Scalar>(m: u32, base: u32) -> ScalarOp<T> {
    op(KRYLOV_OP_BACKSOLVE, NO, m, base, NO, 0, T::ZERO)
}

pub(crate) fn end_cycle<T: Scalar>() -> ScalarOp<T> {
    op(KRYLOV_OP_END_CYCLE, NO, NO, 0, NO, 0, T::ZERO)
}
