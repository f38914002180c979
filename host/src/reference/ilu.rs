//! ILU(0), the incomplete LU factorisation that keeps `A`'s own sparsity pattern (Saad, "Iterative
//! Methods for Sparse Linear Systems", 2nd ed., section 10.3.2, Algorithm 10.4): `A ≈ L U` with `L`
//! unit lower triangular and `U` upper triangular, both on `A`'s pattern, and `(L U)_ij = a_ij` on
//! it. Applied as a preconditioner by two triangular solves, `L y = r` then `U z = y`.
//!
//! A triangular solve is sequential row by row, but a row waits only for the rows it reads: the
//! [`Levels`] of a factor group the rows that can be solved together, each level after the one before
//! (Anderson & Saad, "Solving sparse triangular linear systems on parallel computers", 1989; the
//! scheme of cuSPARSE's `csrsv`, Naumov 2011). This module is the CPU oracle of the factorisation,
//! the solves and the schedules that a GPU preconditioner solves a level at a time; and of IC(0), the
//! incomplete Cholesky factorisation of a symmetric positive definite matrix, kept in the same layout
//! ([`IluFactors::incomplete_cholesky`]) so that the same solves apply it.

use super::operator::{negative, quotient};
use crate::error::SolveError;
use crate::formats::convert::{canonical_csr, index32, narrow};
use crate::formats::csr::CsrRef;
use crate::iterative::square_order;
use crate::scalar::Scalar;
use crate::{Error, Result};

/// `L` and `U` of ILU(0) (or of IC(0), see [`IluFactors::incomplete_cholesky`]) in one CSR matrix on
/// `A`'s pattern (columns sorted, repeated entries of `A` summed): `L`'s entries left of the diagonal
/// (its unit diagonal implied), `U`'s from the diagonal on. Factorised in f64, rounded once to `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct IluFactors<T> {
    offsets: Vec<usize>,
    cols: Vec<usize>,
    values: Vec<T>,
    /// The position of each row's diagonal entry in `cols`.
    diagonal: Vec<usize>,
}

impl<T: Scalar> IluFactors<T> {
    /// Factorises `a`. Refused, before anything is allocated past a copy of the pattern: `a` not
    /// square ([`SolveError::NotSquare`]), an order past the kernels' `u32`
    /// ([`Error::TooLarge`]); then an entry (repeats summed) that is not
    /// finite ([`Error::InvalidNumber`]); a row without a diagonal entry, or a pivot `u_ii` that is
    /// zero, not finite, or whose inverse is not finite in `T` ([`SolveError::ZeroPivot`], naming
    /// its row): ILU(0)
    /// exists for M-matrices and diagonally dominant ones, not for every nonsingular matrix; and a
    /// factor entry not finite in `T` ([`Error::InvalidNumber`]), which would make the solves so.
    pub fn new(a: CsrRef<'_, T>) -> Result<Self> {
        let n = square_order(a.nrows(), a.ncols())?;
        narrow("the order of the ILU(0) factors", n)?;
        // A's pattern with each row's columns sorted and repeated entries summed, in f64.
        let entries = (0..n)
            .flat_map(|r| {
                let (cols, values) = a.row(r);
                cols.iter().zip(values).map(move |(&c, v)| (r, c, v.to_f64()))
            })
            .collect();
        let (offsets, cols, mut work) = canonical_csr(n, n, entries).disassemble();
        finite("an entry of the matrix", &work)?;
        let mut diagonal = Vec::with_capacity(n);
        for (r, range) in offsets.windows(2).enumerate() {
            match cols[range[0]..range[1]].binary_search(&r) {
                Ok(k) => diagonal.push(range[0] + k),
                Err(_) => return Err(SolveError::ZeroPivot { row: r, value: 0.0 }.into()),
            }
        }
        // Algorithm 10.4 (IKJ): row i's entries left of the diagonal, in column order, each
        // divided by its column's pivot and used to eliminate along row k's upper part, on the
        // pattern of row i only. `position[c]` finds column c in row i.
        let mut position = vec![usize::MAX; n];
        for i in 0..n {
            let row = offsets[i]..offsets[i + 1];
            for k in row.clone() {
                position[cols[k]] = k;
            }
            for k in offsets[i]..diagonal[i] {
                let col = cols[k];
                let pivot = work[diagonal[col]];
                work[k] /= pivot;
                let factor = work[k];
                for j in diagonal[col] + 1..offsets[col + 1] {
                    let at = position[cols[j]];
                    if at != usize::MAX {
                        work[at] -= factor * work[j];
                    }
                }
            }
            for k in row {
                position[cols[k]] = usize::MAX;
            }
            let pivot = work[diagonal[i]];
            let representable = |v: f64| T::from_f64(v).to_f64().is_finite();
            if pivot == 0.0 || !representable(pivot) || !representable(1.0 / pivot) {
                return Err(SolveError::ZeroPivot { row: i, value: pivot }.into());
            }
        }
        let values: Vec<T> = work.into_iter().map(T::from_f64).collect();
        finite("an ILU(0) factor entry", &values.iter().map(|v| v.to_f64()).collect::<Vec<_>>())?;
        Ok(Self { offsets, cols, values, diagonal })
    }

    /// IC(0), the incomplete Cholesky factorisation of a symmetric positive definite `a` (Meijerink &
    /// van der Vorst 1977; Saad, section 10.3.5): `A ≈ L Lᵀ` with `L` lower triangular on the
    /// pattern of `A`'s lower triangle, and `(L Lᵀ)_ij = a_ij` on it. Only the lower triangle of `a`
    /// is read, as cuSPARSE's `csric02` reads it: the upper one is taken to mirror it. The factors
    /// are kept in ILU(0)'s layout, `L̃ = L D⁻¹` (unit diagonal) and `Ũ = D Lᵀ` with `D = diag(L)`,
    /// so that `L̃ Ũ = L Lᵀ` and the apply and its GPU kernels are ILU(0)'s; the pattern is the lower
    /// triangle's and its mirror, and `Ũ`'s pivots are IC(0)'s, `l_ii²`. Factorised in f64, rounded
    /// once to `T`.
    ///
    /// Refused as [`IluFactors::new`] refuses (not square, an order past `u32`, an entry of the lower
    /// triangle not finite, a factor entry not finite in `T`), and for a pivot `a_ii - Σ l_ij²` that
    /// is not positive, or a row without a diagonal entry ([`SolveError::NonPositivePivot`], naming
    /// its row).
    pub fn incomplete_cholesky(a: CsrRef<'_, T>) -> Result<Self> {
        let n = square_order(a.nrows(), a.ncols())?;
        narrow("the order of the IC(0) factors", n)?;
        let entries = (0..n)
            .flat_map(|r| {
                let (cols, values) = a.row(r);
                cols.iter().zip(values).filter(move |&(&c, _)| c <= r).map(move |(&c, v)| (r, c, v.to_f64()))
            })
            .collect();
        // The lower triangle, columns sorted and repeats summed: each row ends at its diagonal.
        let (offsets, cols, mut l) = canonical_csr(n, n, entries).disassemble();
        finite("an entry of the matrix", &l)?;
        for (r, range) in offsets.windows(2).enumerate() {
            if range[0] == range[1] || cols[range[1] - 1] != r {
                return Err(SolveError::NonPositivePivot { row: r, value: 0.0 }.into());
            }
        }
        let diagonal = |r: usize| offsets[r + 1] - 1;
        // Row by row (the IKJ order of Algorithm 10.4): l_ic = (a_ic - Σ_{j<c} l_ij l_cj) / l_cc over
        // the pattern of row i, in column order, then l_ii = √(a_ii - Σ_{j<i} l_ij²).
        // `position[c]` finds column c in row i.
        let mut position = vec![usize::MAX; n];
        let mut pivots = Vec::with_capacity(n);
        for i in 0..n {
            for k in offsets[i]..diagonal(i) {
                position[cols[k]] = k;
            }
            for k in offsets[i]..diagonal(i) {
                let c = cols[k];
                let mut sum = l[k];
                for j in offsets[c]..diagonal(c) {
                    let at = position[cols[j]];
                    if at != usize::MAX {
                        sum -= l[at] * l[j];
                    }
                }
                l[k] = sum / l[diagonal(c)];
            }
            for k in offsets[i]..diagonal(i) {
                position[cols[k]] = usize::MAX;
            }
            let pivot = l[diagonal(i)] - l[offsets[i]..diagonal(i)].iter().map(|v| v * v).sum::<f64>();
            let representable = |v: f64| T::from_f64(v).to_f64().is_finite();
            if pivot.is_nan() || pivot <= 0.0 || !representable(pivot) || !representable(1.0 / pivot) {
                return Err(SolveError::NonPositivePivot { row: i, value: pivot }.into());
            }
            l[diagonal(i)] = pivot.sqrt();
            pivots.push(pivot);
        }
        // ILU(0)'s layout: row i holds l̃_ic = l_ic / l_cc left of its diagonal, the pivot l_ii², then
        // ũ_ij = l_ii l_ji for the rows j > i whose lower pattern holds column i (the transpose of
        // L's strict lower part, counted, then filled in row order so each row's columns are sorted).
        let mut upper_counts = vec![0usize; n + 1];
        for &c in (0..n).flat_map(|r| &cols[offsets[r]..diagonal(r)]) {
            upper_counts[c + 1] += 1;
        }
        let mut upper_offsets = upper_counts;
        for c in 0..n {
            upper_offsets[c + 1] += upper_offsets[c];
        }
        let mut upper = vec![(0usize, 0.0f64); upper_offsets[n]];
        let mut next = upper_offsets.clone();
        for (r, range) in offsets.windows(2).enumerate() {
            // Up to the row's last entry, its diagonal.
            for k in range[0]..range[1] - 1 {
                upper[next[cols[k]]] = (r, l[k]);
                next[cols[k]] += 1;
            }
        }
        let nnz = offsets[n] + upper_offsets[n];
        let (mut out_offsets, mut out_cols, mut work) =
            (Vec::with_capacity(n + 1), Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        let mut out_diagonal = Vec::with_capacity(n);
        out_offsets.push(0);
        for i in 0..n {
            for k in offsets[i]..diagonal(i) {
                out_cols.push(cols[k]);
                work.push(l[k] / l[diagonal(cols[k])]);
            }
            out_diagonal.push(out_cols.len());
            out_cols.push(i);
            work.push(pivots[i]);
            for &(j, l_ji) in &upper[upper_offsets[i]..upper_offsets[i + 1]] {
                out_cols.push(j);
                work.push(l[diagonal(i)] * l_ji);
            }
            out_offsets.push(out_cols.len());
        }
        let values: Vec<T> = work.into_iter().map(T::from_f64).collect();
        finite("an IC(0) factor entry", &values.iter().map(|v| v.to_f64()).collect::<Vec<_>>())?;
        Ok(Self { offsets: out_offsets, cols: out_cols, values, diagonal: out_diagonal })
    }

    /// The order.
    pub fn n(&self) -> usize {
        self.diagonal.len()
    }

    /// The factors' CSR arrays: row offsets, column indices, values (`L` left of each row's
    /// diagonal, `U` from it on).
    pub fn csr(&self) -> (&[usize], &[usize], &[T]) {
        (&self.offsets, &self.cols, &self.values)
    }

    /// The position of each row's diagonal entry in the column indices.
    pub fn diagonal_positions(&self) -> &[usize] {
        &self.diagonal
    }

    /// `z = U⁻¹ L⁻¹ r`: `L y = r` row by row from the first, `U z = y` from the last, each row
    /// `fma(-l_ij, y_j, s)` over its entries in column order, then (for `U`) divided by its pivot,
    /// each rounded in `T` as a kernel rounds it. Refused: `r` or `z` of another length than the
    /// order ([`Error::DimensionMismatch`]), with `z` untouched.
    pub fn apply(&self, r: &[T], z: &mut [T]) -> Result<()> {
        let n = self.n();
        for (what, got) in [("r", r.len()), ("z", z.len())] {
            if got != n {
                return Err(Error::DimensionMismatch { what, expected: n, got });
            }
        }
        for i in 0..n {
            let mut sum = r[i];
            for k in self.offsets[i]..self.diagonal[i] {
                sum = negative(self.values[k]).mul_add(z[self.cols[k]], sum);
            }
            z[i] = sum;
        }
        for i in (0..n).rev() {
            let mut sum = z[i];
            for k in self.diagonal[i] + 1..self.offsets[i + 1] {
                sum = negative(self.values[k]).mul_add(z[self.cols[k]], sum);
            }
            z[i] = quotient(sum, self.values[self.diagonal[i]]);
        }
        Ok(())
    }

    /// Factors of the pattern `offsets`, `cols` (sorted rows), `diagonal` with `values`: what the
    /// device factorisation computed, read back in this layout (`reference::ilu_pattern`).
    pub(crate) fn from_parts(
        offsets: Vec<usize>,
        cols: Vec<usize>,
        values: Vec<T>,
        diagonal: Vec<usize>,
    ) -> Self {
        Self { offsets, cols, values, diagonal }
    }

    /// The level schedule of the solve with `L`: a row's level is one past the highest level of the
    /// rows left of its diagonal (0 for a row that reads none).
    pub fn lower_levels(&self) -> Levels {
        lower_levels(&self.offsets, &self.cols, &self.diagonal)
    }

    /// The level schedule of the solve with `U`, from the last row: a row's level is one past the
    /// highest level of the rows right of its diagonal.
    pub fn upper_levels(&self) -> Levels {
        upper_levels(&self.offsets, &self.cols, &self.diagonal)
    }
}

/// [`IluFactors::lower_levels`] of the pattern `offsets`, `cols`, `diagonal` (a row's diagonal
/// position), values or none.
pub(crate) fn lower_levels(offsets: &[usize], cols: &[usize], diagonal: &[usize]) -> Levels {
    let n = diagonal.len();
    let mut level = vec![0usize; n];
    for i in 0..n {
        let reads = cols[offsets[i]..diagonal[i]].iter();
        level[i] = reads.map(|&j| level[j] + 1).max().unwrap_or(0);
    }
    Levels::of(&level)
}

/// [`IluFactors::upper_levels`] of the pattern, as [`lower_levels`].
pub(crate) fn upper_levels(offsets: &[usize], cols: &[usize], diagonal: &[usize]) -> Levels {
    let n = diagonal.len();
    let mut level = vec![0usize; n];
    for i in (0..n).rev() {
        let reads = cols[diagonal[i] + 1..offsets[i + 1]].iter();
        level[i] = reads.map(|&j| level[j] + 1).max().unwrap_or(0);
    }
    Levels::of(&level)
}

impl<T: Scalar> super::CpuPrecondition<T> for IluFactors<T> {
    fn order(&self) -> usize {
        self.n()
    }

    fn apply(&self, r: &[T], z: &mut [T]) -> Result<()> {
        IluFactors::apply(self, r, z)
    }
}

/// Refused with the first value of `values` that is not finite ([`Error::InvalidNumber`]).
fn finite(what: &'static str, values: &[f64]) -> Result<()> {
    match values.iter().find(|v| !v.is_finite()) {
        Some(&value) => Err(Error::InvalidNumber { what, value, expected: "finite in the element type" }),
        None => Ok(()),
    }
}

/// The rows of a triangular solve grouped by level: the rows of level `l` are
/// `rows[starts[l]..starts[l + 1]]`, in increasing order, and read only rows of lower levels, so a
/// level's rows can be solved at once (on the GPU, a launch for a wide level, a barrier in one
/// block's launch for each of a run of narrow ones) once the levels before are done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels {
    pub rows: Vec<u32>,
    pub starts: Vec<usize>,
}

impl Levels {
    /// The schedule of rows whose levels are `level` (each below the row count).
    fn of(level: &[usize]) -> Self {
        let count = level.iter().max().map_or(0, |&l| l + 1);
        let mut starts = vec![0usize; count + 1];
        for &l in level {
            starts[l + 1] += 1;
        }
        for l in 0..count {
            starts[l + 1] += starts[l];
        }
        let mut next = starts.clone();
        // Orders below `u32::MAX` (checked when the factors were made).
        let mut rows = vec![0u32; level.len()];
        for (row, &l) in level.iter().enumerate() {
            rows[next[l]] = index32(row);
            next[l] += 1;
        }
        Self { rows, starts }
    }

    /// The number of levels, the solve's sequential steps.
    pub fn count(&self) -> usize {
        self.starts.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::LinearOperator;
    use crate::reference::problems::convection_diffusion;

    #[test]
    fn a_tridiagonal_matrix_is_factorised_exactly() {
        // No fill-in outside the pattern: ILU(0) is the LU factorisation, its apply the solve.
        let (n, (offsets, cols, values)) = (50, tridiagonal(50, -1.2));
        let a = CsrRef::try_new(n, n, &offsets, &cols, &values).unwrap();
        let ilu = IluFactors::new(a).unwrap();
        assert_solves(a, &ilu, |i| (i % 7) as f64 - 3.0);
        assert_eq!((ilu.lower_levels().count(), ilu.upper_levels().count()), (n, n));
    }

    /// `tridiag(-1, 2.5 + i mod 3, upper)` of order `n`: diagonally dominant, so both factorisations
    /// exist, and with no fill-in, so both are exact.
    fn tridiagonal(n: usize, upper: f64) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
        for i in 0..n {
            for (c, v) in [(i.wrapping_sub(1), -1.0), (i, 2.5 + (i % 3) as f64), (i + 1, upper)] {
                if c < n {
                    cols.push(c);
                    values.push(v);
                }
            }
            offsets.push(cols.len());
        }
        (offsets, cols, values)
    }

    /// `factors` solve `a z = r` to 1e-12 for `r_i = r(i)`: exact factors.
    fn assert_solves(a: CsrRef<'_, f64>, factors: &IluFactors<f64>, r: impl Fn(usize) -> f64) {
        let n = a.nrows();
        let r: Vec<f64> = (0..n).map(r).collect();
        let mut z = vec![0.0; n];
        factors.apply(&r, &mut z).unwrap();
        let mut az = vec![0.0; n];
        a.apply(&z, &mut az).unwrap();
        assert!(az.iter().zip(&r).all(|(l, r)| (l - r).abs() < 1e-12), "{az:?}");
    }

    #[test]
    fn the_product_of_the_factors_is_a_on_its_pattern() {
        let a = convection_diffusion::<f64>(9, 7, 30.0).unwrap();
        let a = CsrRef::from(&a);
        let ilu = IluFactors::new(a).unwrap();
        let (offsets, cols, values) = ilu.csr();
        let n = ilu.n();
        let entry = |i: usize, j: usize| {
            let row = &cols[offsets[i]..offsets[i + 1]];
            row.binary_search(&j).map_or(0.0, |k| values[offsets[i] + k])
        };
        for i in 0..n {
            for (&j, &aij) in a.row(i).0.iter().zip(a.row(i).1) {
                // (L U)_ij = Σ_k l_ik u_kj, with l_ii = 1.
                let lu: f64 = (0..=i.min(j))
                    .map(|k| if k == i { 1.0 } else { entry(i, k) } * if k <= j { entry(k, j) } else { 0.0 })
                    .sum();
                assert!((lu - aij).abs() < 1e-12, "({i}, {j}): {lu} against {aij}");
            }
        }
        // The 5-point grid's wavefronts: row (x, y) at level x + y below and above.
        assert_eq!((ilu.lower_levels().count(), ilu.upper_levels().count()), (9 + 7 - 1, 9 + 7 - 1));
    }

    #[test]
    fn ic0_of_a_tridiagonal_matrix_is_its_cholesky_factorisation() {
        // No fill-in: IC(0) is L Lᵀ exactly, its apply the solve.
        let (n, (offsets, cols, values)) = (40, tridiagonal(40, -1.0));
        let a = CsrRef::try_new(n, n, &offsets, &cols, &values).unwrap();
        let ic = IluFactors::incomplete_cholesky(a).unwrap();
        assert_solves(a, &ic, |i| (i % 5) as f64 - 2.0);
    }

    #[test]
    fn ic0_of_a_symmetric_m_matrix_is_its_ilu0() {
        // On a symmetric matrix ILU(0)'s U is D L̃ᵀ in exact arithmetic: the two factorisations agree
        // to rounding, in IC(0)'s layout.
        let a = convection_diffusion::<f64>(11, 6, 0.0).unwrap();
        let a = CsrRef::from(&a);
        let (ilu, ic) = (IluFactors::new(a).unwrap(), IluFactors::incomplete_cholesky(a).unwrap());
        assert_eq!((ilu.csr().0, ilu.csr().1), (ic.csr().0, ic.csr().1));
        assert_eq!(ilu.diagonal_positions(), ic.diagonal_positions());
        for (u, c) in ilu.csr().2.iter().zip(ic.csr().2) {
            assert!((u - c).abs() <= 1e-13 * u.abs().max(1.0), "{u} against {c}");
        }
    }

    #[test]
    fn ic0_reads_the_lower_triangle_only_and_names_the_row_it_breaks_down_at() {
        // [[4, 1], [1, 3]] with its upper entry spoilt: the same factors as the symmetric one.
        let symmetric = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[4.0f64, 1.0, 1.0, 3.0]).unwrap();
        let spoilt = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[4.0f64, f64::NAN, 1.0, 3.0]).unwrap();
        let ic = IluFactors::incomplete_cholesky(symmetric).unwrap();
        assert_eq!(IluFactors::incomplete_cholesky(spoilt).unwrap(), ic);
        // l_00 = 2, l_10 = 1/2, pivot 3 - 1/4: ũ_01 = l_00 l_10 = 1, l̃_10 = l_10 / l_00 = 1/4.
        assert_eq!(ic.csr().2, &[4.0, 1.0, 0.25, 2.75]);
        // [[1, 2], [2, 1]] is indefinite: the second pivot is 1 - 4.
        let indefinite = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 2.0, 2.0, 1.0]).unwrap();
        assert!(matches!(
            IluFactors::incomplete_cholesky(indefinite),
            Err(Error::Solve(SolveError::NonPositivePivot { row: 1, value })) if value == -3.0
        ));
        let no_diagonal = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0f64, 1.0]).unwrap();
        assert!(matches!(
            IluFactors::incomplete_cholesky(no_diagonal),
            Err(Error::Solve(SolveError::NonPositivePivot { row: 1, value })) if value == 0.0
        ));
    }

    #[test]
    fn refusals_name_the_row() {
        let no_diagonal = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0f64, 1.0]).unwrap();
        assert!(matches!(
            IluFactors::new(no_diagonal),
            Err(Error::Solve(SolveError::ZeroPivot { row: 1, .. }))
        ));
        // u_11 = 1 - 1·1 = 0.
        let singular = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 1.0, 1.0, 1.0]).unwrap();
        assert!(matches!(IluFactors::new(singular), Err(Error::Solve(SolveError::ZeroPivot { row: 1, .. }))));
        let wide = CsrRef::try_new(1, 2, &[0, 1], &[0], &[1.0f32]).unwrap();
        assert!(matches!(IluFactors::new(wide), Err(Error::Solve(SolveError::NotSquare { .. }))));
        let ilu = IluFactors::new(CsrRef::try_new(1, 1, &[0, 1], &[0], &[2.0f32]).unwrap()).unwrap();
        let mut z = [5.0f32];
        assert!(matches!(ilu.apply(&[1.0, 2.0], &mut z), Err(Error::DimensionMismatch { what: "r", .. })));
        assert_eq!(z, [5.0]);
    }
}
