//! The pattern data of ILU(0) and IC(0) factorised on the device (`kernels-gpu/src/ilu_factor.rs`),
//! computed on the host once per pattern, with no value read, and the CPU model of that
//! factorisation ([`FactorPattern::factorise`]), which the fuzz target and the tests compare with
//! the oracle ([`IluFactors`]).
//!
//! The device factorises row by row in the IKJ order (Saad, "Iterative Methods for Sparse Linear
//! Systems", 2nd ed., section 10.3.2, Algorithm 10.4), a level of the lower solve's schedule at a
//! time (Anderson & Saad 1989; Naumov 2011): a row is updated only by the rows its `L` part names,
//! which that schedule puts in earlier levels. It works in the *work pattern*, `A`'s pattern with each
//! row's columns sorted and repeats merged (IC(0): its lower triangle), where each row's final values
//! are read by the rows after it, and each thread writes its row straight into the layout the solves
//! read (each solve's triangle in its schedule's order, `enqueue/krylov.rs`'s `Scheduled`). What that
//! takes, all of it pattern: where each of `A`'s entries goes in the work pattern (and whether it
//! adds to a repeat), each row's diagonal, the level schedules of the factors, and where each row's
//! `L` entries, pivot and `U` entries (for IC(0), each `L` entry's mirror in `U`) sit in the solves'
//! layout. The entries of row `k` that update row `i` are found on the device by merging the two
//! sorted rows, not listed here: such a list (every pair of a row's entry and the entries of the
//! row it names) would cost the host the symbolic half of the factorisation the device is to take
//! over, and more memory than the factors.

use super::ilu::{IluFactors, Levels, lower_levels, upper_levels};
use super::operator::{negative, quotient, sqrt};
use crate::error::SolveError;
use crate::formats::convert::{index32, narrow};
use crate::formats::csr::CsrRef;
use crate::iterative::square_order;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{
    ILU_FAULT_ENTRY, ILU_FAULT_FACTOR, ILU_FAULT_PIVOT, ILU_FAULTS, ILU_SOURCE_ADD, ILU_SOURCE_POSITION,
    ILU_SOURCE_SKIP,
};

/// Which factorisation a pattern is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactorKind {
    /// ILU(0) ([`IluFactors::new`]).
    Ilu0,
    /// IC(0) of the lower triangle ([`IluFactors::incomplete_cholesky`]).
    Ic0,
}

/// The pattern data of a device factorisation of `A` (see the module doc): the work pattern and
/// where `A`'s entries go in it, the factors' pattern and level schedules, and where each row of the
/// work pattern is written in the solves' layout. Indices are `u32`, as the kernels read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactorPattern {
    kind: FactorKind,
    /// `A`'s row offsets, which bound each row's sources.
    a_offsets: Vec<u32>,
    /// For each entry of `A`, its position in the work pattern, with [`ILU_SOURCE_ADD`] where it
    /// repeats the entry before it there; [`ILU_SOURCE_SKIP`] for IC(0)'s upper triangle.
    sources: Vec<u32>,
    /// The work pattern: row offsets, sorted distinct columns, each row's diagonal position.
    offsets: Vec<u32>,
    cols: Vec<u32>,
    diagonal: Vec<u32>,
    /// The factors' pattern (ILU(0): the work pattern; IC(0): the lower triangle and its mirror).
    factors: (Vec<usize>, Vec<usize>, Vec<usize>),
    lower: Levels,
    upper: Levels,
    /// For each row, the first of its `L` entries in the lower solve's values, its pivot's slot
    /// (its position in the upper schedule) and the first of its `U` entries in the upper solve's.
    lower_at: Vec<u32>,
    pivot_at: Vec<u32>,
    upper_at: Vec<u32>,
    /// IC(0): for each entry `(j, c)` of the work pattern left of the diagonal, the slot of its
    /// mirror `(c, j)` in the upper solve's values (zero at the diagonal, never read); ILU(0): empty.
    mirror: Vec<u32>,
}

/// A CSR index array's element.
trait Index: Copy {
    fn at(self) -> usize;
}

impl Index for u32 {
    fn at(self) -> usize {
        self as usize
    }
}

impl Index for usize {
    fn at(self) -> usize {
        self
    }
}

impl FactorPattern {
    /// The pattern data of `a`'s factorisation; its values are not read. Refused as the host
    /// factorisation refuses a pattern ([`IluFactors::new`], [`IluFactors::incomplete_cholesky`]):
    /// not square, an order past `u32` ([`Error::TooLarge`]), a row without a diagonal entry
    /// (ILU(0): [`SolveError::ZeroPivot`], IC(0): [`SolveError::NonPositivePivot`], naming the
    /// row, with the value 0); and for more entries than the kernels' sources address (`2³¹ - 1`)
    /// or factors of more entries than `u32` counts ([`Error::TooLarge`]). Unlike the host
    /// factorisation, which checks the values first, a missing diagonal is refused whatever the
    /// values hold, since none are read here.
    pub fn new<T>(kind: FactorKind, a: CsrRef<'_, T>) -> Result<Self> {
        Self::build(kind, a.nrows(), a.ncols(), a.row_offsets(), a.col_indices())
    }

    /// [`FactorPattern::new`] of a device matrix's index arrays (valid CSR: its own invariant).
    pub(crate) fn of_device(
        kind: FactorKind,
        nrows: usize,
        ncols: usize,
        offsets: &[u32],
        cols: &[u32],
    ) -> Result<Self> {
        Self::build(kind, nrows, ncols, offsets, cols)
    }

    fn build<I: Index>(
        kind: FactorKind,
        nrows: usize,
        ncols: usize,
        offsets: &[I],
        cols: &[I],
    ) -> Result<Self> {
        let n = square_order(nrows, ncols)?;
        narrow("the order of the factors", n)?;
        let limit = ILU_SOURCE_POSITION as usize;
        if cols.len() > limit {
            return Err(Error::TooLarge {
                what: "the entries of a matrix factorised on the device",
                value: cols.len(),
                limit,
            });
        }
        // Below 2³¹ entries from here: every count and position fits `u32`, with its flag bit.
        let mut sources = vec![ILU_SOURCE_SKIP; cols.len()];
        let (mut w_offsets, mut w_cols, mut diagonal) =
            (Vec::with_capacity(n + 1), Vec::new(), Vec::with_capacity(n));
        w_offsets.push(0);
        let mut row: Vec<(usize, usize)> = Vec::new();
        for r in 0..n {
            row.clear();
            let entries = offsets[r].at()..offsets[r + 1].at();
            row.extend(
                entries.map(|e| (cols[e].at(), e)).filter(|&(c, _)| kind == FactorKind::Ilu0 || c <= r),
            );
            // Most matrices' rows are sorted already; a stable sort keeps repeats in `A`'s order,
            // the order the host sums them in.
            if !row.windows(2).all(|w| w[0].0 < w[1].0) {
                row.sort_by_key(|&(c, _)| c);
            }
            let mut diagonal_at = None;
            for (k, &(c, e)) in row.iter().enumerate() {
                let repeat = k > 0 && row[k - 1].0 == c;
                if !repeat {
                    if c == r {
                        diagonal_at = Some(index32(w_cols.len()));
                    }
                    w_cols.push(index32(c));
                }
                sources[e] = index32(w_cols.len() - 1) | if repeat { ILU_SOURCE_ADD } else { 0 };
            }
            match diagonal_at {
                Some(d) => diagonal.push(d),
                None if kind == FactorKind::Ilu0 => {
                    return Err(SolveError::ZeroPivot { row: r, value: 0.0 }.into());
                }
                None => return Err(SolveError::NonPositivePivot { row: r, value: 0.0 }.into()),
            }
            w_offsets.push(index32(w_cols.len()));
        }
        let factors = factors_pattern(kind, &w_offsets, &w_cols, &diagonal)?;
        let (lower, upper) = (
            lower_levels(&factors.0, &factors.1, &factors.2),
            upper_levels(&factors.0, &factors.1, &factors.2),
        );
        let (f_offsets, _, f_diagonal) = &factors;
        // Each solve's triangle in its schedule's order: a row's entries follow the previous
        // position's (`Scheduled`), so its first slot is the running count.
        let (mut lower_at, mut pivot_at, mut upper_at) = (vec![0u32; n], vec![0u32; n], vec![0u32; n]);
        let mut next = 0usize;
        for &r in &lower.rows {
            let r = r as usize;
            lower_at[r] = index32(next);
            next += f_diagonal[r] - f_offsets[r];
        }
        next = 0;
        for (position, &r) in upper.rows.iter().enumerate() {
            let r = r as usize;
            pivot_at[r] = index32(position);
            upper_at[r] = index32(next);
            next += f_offsets[r + 1] - f_diagonal[r] - 1;
        }
        let mirror = match kind {
            FactorKind::Ilu0 => Vec::new(),
            // Row c's mirrored entries in the order of their rows j, as the oracle fills them.
            FactorKind::Ic0 => {
                let mut mirror = vec![0u32; w_cols.len()];
                let mut filled = vec![0u32; n];
                for j in 0..n {
                    for k in w_offsets[j] as usize..diagonal[j] as usize {
                        let c = w_cols[k] as usize;
                        mirror[k] = upper_at[c] + filled[c];
                        filled[c] += 1;
                    }
                }
                mirror
            }
        };
        Ok(Self {
            kind,
            a_offsets: offsets[..=n].iter().map(|o| index32(o.at())).collect(),
            sources,
            offsets: w_offsets,
            cols: w_cols,
            diagonal,
            factors,
            lower,
            upper,
            lower_at,
            pivot_at,
            upper_at,
            mirror,
        })
    }

    /// Which factorisation this is for.
    pub fn kind(&self) -> FactorKind {
        self.kind
    }

    /// The order.
    pub fn n(&self) -> usize {
        self.diagonal.len()
    }

    /// The entries of `A` the pattern was made of.
    pub fn a_nnz(&self) -> usize {
        self.sources.len()
    }

    /// The work pattern's entries.
    pub fn work_nnz(&self) -> usize {
        self.cols.len()
    }

    /// The factors' entries: `L`'s, `U`'s and the pivots.
    pub fn factors_nnz(&self) -> usize {
        self.factors.1.len()
    }

    /// The work pattern's diagonal positions, a row each.
    pub(crate) fn diagonal(&self) -> &[u32] {
        &self.diagonal
    }

    /// The level schedules of the lower and the upper solve; the lower one is the factorisation's.
    pub fn levels(&self) -> (&Levels, &Levels) {
        (&self.lower, &self.upper)
    }

    /// The arrays the kernels read: sources, work offsets, columns, diagonal positions, and each
    /// row's slots (`lower_at`, `pivot_at`, and `upper_at` for ILU(0) or the mirrors' slots for
    /// IC(0), as `IluFactorParams::upper_slots` reads them).
    pub(crate) fn device_arrays(&self) -> [&[u32]; 7] {
        let upper_slots = match self.kind {
            FactorKind::Ilu0 => &self.upper_at,
            FactorKind::Ic0 => &self.mirror,
        };
        [
            &self.sources,
            &self.offsets,
            &self.cols,
            &self.diagonal,
            &self.lower_at,
            &self.pivot_at,
            upper_slots,
        ]
    }

    /// The factors with every value zero: the pattern and schedules the solves are laid out by,
    /// before the device writes the values.
    pub(crate) fn zero_factors<T: Scalar>(&self) -> IluFactors<T> {
        let (offsets, cols, diagonal) = self.factors.clone();
        IluFactors::from_parts(offsets, cols, vec![T::from_f64(0.0); self.factors.1.len()], diagonal)
    }

    /// The device's factorisation on the CPU, in `T`, row by row in the lower schedule's order, with
    /// its faults turned into errors as the device's are; the factors read back from the solves'
    /// layout into the oracle's. `values` are `A`'s, in its entries' order. In f64 the result is
    /// [`IluFactors::new`]'s (or `incomplete_cholesky`'s) bit for bit, errors included (a row without
    /// a diagonal aside, which [`FactorPattern::new`] refused); in f32 it is rounded at every step where the oracle rounds once. Refused:
    /// `values` of another length than `A`'s entries ([`Error::DimensionMismatch`]).
    pub fn factorise<T: Scalar>(&self, values: &[T]) -> Result<IluFactors<T>> {
        if values.len() != self.a_nnz() {
            return Err(Error::DimensionMismatch {
                what: "the matrix's values",
                expected: self.a_nnz(),
                got: values.len(),
            });
        }
        let zero = T::from_f64(0.0);
        let (lower_len, upper_len) = self.solve_lengths();
        let mut model = Model {
            pattern: self,
            values,
            work: vec![zero; self.work_nnz()],
            lower: vec![zero; lower_len],
            upper: vec![zero; upper_len],
            pivots: vec![zero; self.n()],
            faults: [0; ILU_FAULTS],
        };
        for &row in &self.lower.rows {
            match self.kind {
                FactorKind::Ilu0 => model.ilu_row(row as usize),
                FactorKind::Ic0 => model.ic_row(row as usize),
            }
        }
        let Model { work, lower, upper, pivots, faults, .. } = model;
        let first_nonfinite = || {
            let all = lower.iter().chain(&pivots).chain(&upper);
            Ok(all.map(|v| v.to_f64()).find(|v| !v.is_finite()).unwrap_or(f64::NAN))
        };
        verdict(self.kind, &self.diagonal, faults, |k| Ok(work[k].to_f64()), first_nonfinite)?;
        let (offsets, cols, diagonal) = self.factors.clone();
        let mut out = Vec::with_capacity(cols.len());
        for r in 0..self.n() {
            let (l, u) = (diagonal[r] - offsets[r], offsets[r + 1] - diagonal[r] - 1);
            let (l_at, u_at) = (self.lower_at[r] as usize, self.upper_at[r] as usize);
            out.extend_from_slice(&lower[l_at..l_at + l]);
            out.push(pivots[self.pivot_at[r] as usize]);
            out.extend_from_slice(&upper[u_at..u_at + u]);
        }
        Ok(IluFactors::from_parts(offsets, cols, out, diagonal))
    }

    /// The lengths of the lower and the upper solve's values.
    pub(crate) fn solve_lengths(&self) -> (usize, usize) {
        let (offsets, cols, diagonal) = &self.factors;
        let lower: usize = (0..self.n()).map(|r| diagonal[r] - offsets[r]).sum();
        (lower, cols.len() - lower - self.n())
    }
}

/// The error of a factorisation of `kind` over a work pattern whose rows' diagonal positions are
/// `diagonal`, whose fault slots hold `faults` (`u32::MAX - index`, zero for none;
/// `abi::ILU_FAULT_*`), in the oracle's order of checks: an entry of `A` not finite (its summed
/// value, `work(position)`), then the first row whose pivot is refused (the pivot, `work` at its
/// diagonal), then a factor entry not finite (`first_nonfinite()`: the oracle names the first in its
/// CSR order, the device the first in the solves' layout).
pub(crate) fn verdict(
    kind: FactorKind,
    diagonal: &[u32],
    faults: [u32; ILU_FAULTS],
    mut work: impl FnMut(usize) -> Result<f64>,
    first_nonfinite: impl FnOnce() -> Result<f64>,
) -> Result<()> {
    let index = |slot: usize| (faults[slot] != 0).then(|| (u32::MAX - faults[slot]) as usize);
    let expected = "finite in the element type";
    if let Some(k) = index(ILU_FAULT_ENTRY) {
        return Err(Error::InvalidNumber { what: "an entry of the matrix", value: work(k)?, expected });
    }
    if let Some(row) = index(ILU_FAULT_PIVOT) {
        let value = work(diagonal[row] as usize)?;
        return Err(match kind {
            FactorKind::Ilu0 => SolveError::ZeroPivot { row, value },
            FactorKind::Ic0 => SolveError::NonPositivePivot { row, value },
        }
        .into());
    }
    if index(ILU_FAULT_FACTOR).is_some() {
        let what = match kind {
            FactorKind::Ilu0 => "an ILU(0) factor entry",
            FactorKind::Ic0 => "an IC(0) factor entry",
        };
        return Err(Error::InvalidNumber { what, value: first_nonfinite()?, expected });
    }
    Ok(())
}

/// The factors' pattern of a work pattern: ILU(0)'s is the work pattern; IC(0)'s is each row's
/// lower triangle, then its diagonal, then the mirror of the column below it (the rows `j > i` whose
/// lower part holds column `i`, in order), as [`IluFactors::incomplete_cholesky`] lays it out.
/// Refused: more entries than `u32` counts.
fn factors_pattern(
    kind: FactorKind,
    offsets: &[u32],
    cols: &[u32],
    diagonal: &[u32],
) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    let widen = |v: &[u32]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
    if kind == FactorKind::Ilu0 {
        return Ok((widen(offsets), widen(cols), widen(diagonal)));
    }
    let n = diagonal.len();
    let strict = cols.len() - n;
    narrow("the entries of the IC(0) factors", 2 * strict + n)?;
    let mut below: Vec<Vec<usize>> = vec![Vec::new(); n];
    for j in 0..n {
        for &c in &cols[offsets[j] as usize..diagonal[j] as usize] {
            below[c as usize].push(j);
        }
    }
    let (mut f_offsets, mut f_cols, mut f_diagonal) =
        (Vec::with_capacity(n + 1), Vec::with_capacity(2 * strict + n), Vec::with_capacity(n));
    f_offsets.push(0);
    for i in 0..n {
        f_cols.extend(cols[offsets[i] as usize..diagonal[i] as usize].iter().map(|&c| c as usize));
        f_diagonal.push(f_cols.len());
        f_cols.push(i);
        f_cols.extend_from_slice(&below[i]);
        f_offsets.push(f_cols.len());
    }
    Ok((f_offsets, f_cols, f_diagonal))
}

/// The CPU model's state: the kernel's arrays on the host.
struct Model<'a, T> {
    pattern: &'a FactorPattern,
    values: &'a [T],
    work: Vec<T>,
    lower: Vec<T>,
    upper: Vec<T>,
    pivots: Vec<T>,
    faults: [u32; ILU_FAULTS],
}

impl<T: Scalar> Model<'_, T> {
    fn fault(&mut self, slot: usize, index: usize) {
        self.faults[slot] = self.faults[slot].max(u32::MAX - index32(index));
    }

    /// `ilu_factor.rs`'s `gather`.
    fn gather(&mut self, i: usize) -> bool {
        let p = self.pattern;
        for e in p.a_offsets[i] as usize..p.a_offsets[i + 1] as usize {
            let source = p.sources[e];
            if source == ILU_SOURCE_SKIP {
                continue;
            }
            let (at, v) = ((source & ILU_SOURCE_POSITION) as usize, self.values[e]);
            self.work[at] = if source & ILU_SOURCE_ADD != 0 { self.work[at] + v } else { v };
        }
        let row = p.offsets[i] as usize..p.offsets[i + 1] as usize;
        if let Some(k) = row.clone().find(|&k| !self.work[k].to_f64().is_finite()) {
            self.fault(ILU_FAULT_ENTRY, k);
            return false;
        }
        true
    }

    /// `ilu_factor.rs`'s `ilu_row`.
    fn ilu_row(&mut self, i: usize) {
        if !self.gather(i) {
            return;
        }
        let p = self.pattern;
        let (cols, w) = (&p.cols, &mut self.work);
        let (begin, d, end) = (p.offsets[i] as usize, p.diagonal[i] as usize, p.offsets[i + 1] as usize);
        for k in begin..d {
            let c = cols[k] as usize;
            let factor = quotient(w[k], w[p.diagonal[c] as usize]);
            w[k] = factor;
            let mut to = k + 1;
            for j in p.diagonal[c] as usize + 1..p.offsets[c + 1] as usize {
                while to < end && cols[to] < cols[j] {
                    to += 1;
                }
                if to == end {
                    break;
                }
                if cols[to] == cols[j] {
                    w[to] = w[to] + negative(factor * w[j]);
                }
            }
        }
        let pivot = w[d];
        if refused(pivot, false) {
            self.fault(ILU_FAULT_PIVOT, i);
        }
        let (l_at, u_at) = (p.lower_at[i] as usize, p.upper_at[i] as usize);
        self.lower[l_at..l_at + (d - begin)].copy_from_slice(&self.work[begin..d]);
        self.pivots[p.pivot_at[i] as usize] = pivot;
        self.upper[u_at..u_at + (end - d - 1)].copy_from_slice(&self.work[d + 1..end]);
        if !self.work[begin..end].iter().all(|v| v.to_f64().is_finite()) {
            self.fault(ILU_FAULT_FACTOR, i);
        }
    }

    /// `ilu_factor.rs`'s `ic_row`.
    fn ic_row(&mut self, i: usize) {
        if !self.gather(i) {
            return;
        }
        let p = self.pattern;
        let (begin, d) = (p.offsets[i] as usize, p.diagonal[i] as usize);
        let mut finite = true;
        for k in begin..d {
            let c = p.cols[k] as usize;
            let mut sum = self.work[k];
            let mut from = begin;
            for j in p.offsets[c] as usize..p.diagonal[c] as usize {
                while from < k && p.cols[from] < p.cols[j] {
                    from += 1;
                }
                if from == k {
                    break;
                }
                if p.cols[from] == p.cols[j] {
                    sum = sum + negative(self.work[from] * self.work[j]);
                }
            }
            let root = sqrt(self.work[p.diagonal[c] as usize]);
            let l = quotient(sum, root);
            self.work[k] = l;
            let (scaled, mirrored) = (quotient(l, root), root * l);
            finite &= scaled.to_f64().is_finite() && mirrored.to_f64().is_finite();
            self.lower[p.lower_at[i] as usize + (k - begin)] = scaled;
            self.upper[p.mirror[k] as usize] = mirrored;
        }
        let squares = self.work[begin..d].iter().fold(T::from_f64(0.0), |s, &l| s + l * l);
        let pivot = self.work[d] + negative(squares);
        if refused(pivot, true) {
            self.fault(ILU_FAULT_PIVOT, i);
        }
        self.work[d] = pivot;
        self.pivots[p.pivot_at[i] as usize] = pivot;
        if !(finite && pivot.to_f64().is_finite()) {
            self.fault(ILU_FAULT_FACTOR, i);
        }
    }
}

/// `ilu_factor.rs`'s `refused`: zero, not finite, with an inverse not finite in `T`, or (IC(0))
/// not positive.
fn refused<T: Scalar>(pivot: T, positive: bool) -> bool {
    let v = pivot.to_f64();
    (positive && (v.is_nan() || v <= 0.0))
        || v == 0.0
        || !v.is_finite()
        || !quotient(T::from_f64(1.0), pivot).to_f64().is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::problems::convection_diffusion;

    fn bits<T: Scalar>(factors: &IluFactors<T>) -> Vec<u64> {
        factors.csr().2.iter().map(|v| v.to_f64().to_bits()).collect()
    }

    /// The oracle of `kind`.
    fn oracle<T: Scalar>(kind: FactorKind, a: CsrRef<'_, T>) -> Result<IluFactors<T>> {
        match kind {
            FactorKind::Ilu0 => IluFactors::new(a),
            FactorKind::Ic0 => IluFactors::incomplete_cholesky(a),
        }
    }

    #[test]
    fn the_model_in_f64_is_the_oracle_bit_for_bit() {
        // Grids off every multiple of a warp or a level run, from symmetric to convection-dominated.
        for (nx, ny, peclet) in [(37, 29, 0.0), (41, 23, 100.0), (19, 53, 1000.0), (1, 7, 0.0)] {
            let a = convection_diffusion::<f64>(nx, ny, peclet).unwrap();
            let a = CsrRef::from(&a);
            for kind in [FactorKind::Ilu0, FactorKind::Ic0] {
                let pattern = FactorPattern::new(kind, a).unwrap();
                let (model, expected) = match (pattern.factorise(a.values()), oracle(kind, a)) {
                    (Ok(model), Ok(expected)) => (model, expected),
                    // IC(0) of a convection-dominated matrix's lower triangle breaks down: the same row.
                    (model, expected) => {
                        assert_eq!(
                            format!("{model:?}"),
                            format!("{expected:?}"),
                            "{kind:?} {nx}x{ny} Pe {peclet}"
                        );
                        continue;
                    }
                };
                assert_eq!(model.csr().0, expected.csr().0, "{kind:?} {nx}x{ny}");
                assert_eq!(model.csr().1, expected.csr().1);
                assert_eq!(model.diagonal_positions(), expected.diagonal_positions());
                assert_eq!(bits(&model), bits(&expected), "{kind:?} {nx}x{ny} Pe {peclet}");
                assert_eq!(pattern.levels(), (&expected.lower_levels(), &expected.upper_levels()));
            }
        }
    }

    #[test]
    fn unsorted_rows_and_repeats_are_merged_in_the_oracles_order() {
        // Rows out of order, a repeated diagonal (summed: 3 + 1) and a repeat in the upper triangle.
        let (offsets, cols) = ([0, 3, 7, 9], [2, 0, 0, 1, 0, 1, 2, 2, 1]);
        let values = [-1.0f64, 3.0, 1.0, 5.0, -2.0, 0.5, 1.0, 6.0, -1.0];
        let a = CsrRef::try_new(3, 3, &offsets, &cols, &values).unwrap();
        for kind in [FactorKind::Ilu0, FactorKind::Ic0] {
            let pattern = FactorPattern::new(kind, a).unwrap();
            assert_eq!(
                bits(&pattern.factorise(&values).unwrap()),
                bits(&oracle(kind, a).unwrap()),
                "{kind:?}"
            );
        }
        let ilu = FactorPattern::new(FactorKind::Ilu0, a).unwrap();
        // Entry 2 repeats entry 1's (0, 0); IC(0) skips the upper triangle.
        assert_eq!(ilu.sources[..3], [1, 0, ILU_SOURCE_ADD]);
        let ic = FactorPattern::new(FactorKind::Ic0, a).unwrap();
        assert_eq!(ic.sources[..3], [ILU_SOURCE_SKIP, 0, ILU_SOURCE_ADD]);
        assert_eq!((ic.work_nnz(), ic.factors_nnz(), ic.a_nnz()), (5, 7, 9));
    }

    #[test]
    fn f32_factors_differ_from_the_oracles_by_rounding() {
        let a = convection_diffusion::<f32>(31, 17, 0.0).unwrap();
        let a = CsrRef::from(&a);
        for kind in [FactorKind::Ilu0, FactorKind::Ic0] {
            let pattern = FactorPattern::new(kind, a).unwrap();
            let (model, expected) = (pattern.factorise(a.values()).unwrap(), oracle(kind, a).unwrap());
            let levels = pattern.levels().0.count() as f64;
            for (m, e) in model.csr().2.iter().zip(expected.csr().2) {
                let (m, e) = (m.to_f64(), e.to_f64());
                assert!(
                    (m - e).abs() <= 8.0 * levels * f64::from(f32::EPSILON) * e.abs().max(1.0),
                    "{m} against {e}"
                );
            }
        }
    }

    #[test]
    fn refusals_are_the_oracles() {
        // u_11 = 1 - 1·1 = 0: the same row and pivot.
        let singular = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 1.0, 1.0, 1.0]).unwrap();
        let indefinite = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 2.0, 2.0, 1.0]).unwrap();
        let nan = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0f64, f64::NAN]).unwrap();
        for (kind, a) in
            [(FactorKind::Ilu0, singular), (FactorKind::Ic0, indefinite), (FactorKind::Ilu0, nan)]
        {
            let got = FactorPattern::new(kind, a).unwrap().factorise(a.values()).unwrap_err();
            assert_eq!(format!("{got:?}"), format!("{:?}", oracle(kind, a).unwrap_err()), "{kind:?}");
        }
        let no_diagonal = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0f64, 1.0]).unwrap();
        assert!(matches!(
            FactorPattern::new(FactorKind::Ilu0, no_diagonal),
            Err(Error::Solve(SolveError::ZeroPivot { row: 1, value })) if value == 0.0
        ));
        assert!(matches!(
            FactorPattern::new(FactorKind::Ic0, no_diagonal),
            Err(Error::Solve(SolveError::NonPositivePivot { row: 1, value })) if value == 0.0
        ));
        let wide = CsrRef::try_new(1, 2, &[0, 1], &[0], &[1.0f32]).unwrap();
        assert!(matches!(
            FactorPattern::new(FactorKind::Ilu0, wide),
            Err(Error::Solve(SolveError::NotSquare { .. }))
        ));
        let pattern = FactorPattern::new(FactorKind::Ilu0, singular).unwrap();
        assert!(matches!(
            pattern.factorise(&[1.0f64]),
            Err(Error::DimensionMismatch { expected: 4, got: 1, .. })
        ));
    }
}
