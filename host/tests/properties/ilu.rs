//! ILU(0)'s and IC(0)'s CPU reference (`reference::ilu::IluFactors`) on any matrix: refused as
//! documented (not square; the first row without a diagonal entry; a zero or, for IC(0), a
//! non-positive pivot), else factors whose product is `A` (for IC(0), its lower triangle and that
//! triangle's mirror) on its pattern to within the rounding of the factors to `T`, and level schedules
//! that hold every row once, each after all the rows it reads and no later than it must. And the
//! device factorisation's pattern data (`reference::ilu_pattern::FactorPattern`) with its CPU model:
//! refused from the pattern alone as the oracle refuses it, else the oracle's schedules, and in f64
//! the oracle's factors or refusal.

use super::{min_normal, summed};
use gpu_spmv::reference::ilu::{IluFactors, Levels};
use gpu_spmv::reference::ilu_pattern::{FactorKind, FactorPattern};
use gpu_spmv::solve::SolveError;
use gpu_spmv::{CsrRef, Error, Scalar};
use std::collections::BTreeMap;

/// `IluFactors::new` on any matrix, and the properties of what it accepts.
pub fn check_ilu0<T: Scalar>(a: CsrRef<'_, T>) {
    let n = a.nrows();
    // A in f64, repeated entries summed: what the factors must reproduce on its pattern.
    let entries: BTreeMap<(usize, usize), f64> = summed(a).into_iter().map(|(r, c, v)| ((r, c), v)).collect();
    let first_without_diagonal = (0..n).find(|&r| !entries.contains_key(&(r, r)));
    let finite = entries.values().all(|v| v.is_finite());
    match IluFactors::new(a) {
        Err(Error::Solve(SolveError::NotSquare { .. })) => assert_ne!(a.nrows(), a.ncols()),
        Err(Error::InvalidNumber { what, value, .. }) => {
            assert_eq!(a.nrows(), a.ncols());
            assert!(!value.is_finite(), "{what}: {value}");
            assert!(!finite || what == "an ILU(0) factor entry", "{what}: {value}");
        }
        Err(Error::Solve(SolveError::ZeroPivot { row, value })) => {
            assert!(a.nrows() == a.ncols() && finite);
            match first_without_diagonal {
                Some(missing) => assert_eq!((row, value), (missing, 0.0)),
                None => assert!(
                    row < n
                        && (value == 0.0 || !value.is_finite() || value.abs() < 1e-30 || value.abs() > 1e30),
                    "row {row}: pivot {value}"
                ),
            }
        }
        Err(e) => panic!("unexpected refusal: {e}"),
        Ok(ilu) => {
            assert_eq!((a.nrows(), a.ncols(), ilu.n()), (n, n, n));
            assert!(finite);
            assert_eq!(first_without_diagonal, None);
            check_factors(&ilu, &entries);
        }
    }
}

/// `IluFactors::incomplete_cholesky` on any matrix, and the properties of what it accepts: only the
/// lower triangle is read, refused as documented (not square; an entry of the lower triangle not
/// finite; the first row without a diagonal entry; a pivot not positive), else factors whose product
/// is the lower triangle and its mirror on their pattern, with positive pivots.
pub fn check_ic0<T: Scalar>(a: CsrRef<'_, T>) {
    let n = a.nrows();
    let lower: BTreeMap<(usize, usize), f64> =
        summed(a).into_iter().filter(|&(r, c, _)| c <= r).map(|(r, c, v)| ((r, c), v)).collect();
    let first_without_diagonal = (0..n).find(|&r| !lower.contains_key(&(r, r)));
    let finite = lower.values().all(|v| v.is_finite());
    match IluFactors::incomplete_cholesky(a) {
        Err(Error::Solve(SolveError::NotSquare { .. })) => assert_ne!(a.nrows(), a.ncols()),
        Err(Error::InvalidNumber { what, value, .. }) => {
            assert_eq!(a.nrows(), a.ncols());
            assert!(!value.is_finite(), "{what}: {value}");
            assert!(!finite || what == "an IC(0) factor entry", "{what}: {value}");
        }
        Err(Error::Solve(SolveError::NonPositivePivot { row, value })) => {
            assert!(a.nrows() == a.ncols() && finite);
            match first_without_diagonal {
                Some(missing) => assert_eq!((row, value), (missing, 0.0)),
                None => assert!(row < n && !(1e-30..=1e30).contains(&value), "row {row}: pivot {value}"),
            }
        }
        Err(e) => panic!("unexpected refusal: {e}"),
        Ok(ic) => {
            assert_eq!((a.nrows(), a.ncols(), ic.n()), (n, n, n));
            assert!(finite);
            assert_eq!(first_without_diagonal, None);
            let mirrored: BTreeMap<(usize, usize), f64> =
                lower.iter().flat_map(|(&(r, c), &v)| [((r, c), v), ((c, r), v)]).collect();
            check_factors(&ic, &mirrored);
            let (_, _, values) = ic.csr();
            for &d in ic.diagonal_positions() {
                assert!(values[d].to_f64() > 0.0, "pivot {}", values[d].to_f64());
            }
        }
    }
}

/// The factors keep the pattern of `entries` and their product is `entries` on it, to within the
/// rounding of the factors to `T`; their level schedules are valid.
fn check_factors<T: Scalar>(ilu: &IluFactors<T>, entries: &BTreeMap<(usize, usize), f64>) {
    let n = ilu.n();
    let (offsets, cols, values) = ilu.csr();
    let pattern: Vec<(usize, usize)> = entries.keys().copied().collect();
    let got: Vec<(usize, usize)> =
        (0..n).flat_map(|r| cols[offsets[r]..offsets[r + 1]].iter().map(move |&c| (r, c))).collect();
    assert_eq!(got, pattern, "the factors keep the pattern");
    let entry = |i: usize, j: usize| {
        let row = &cols[offsets[i]..offsets[i + 1]];
        row.binary_search(&j).map_or(0.0, |k| values[offsets[i] + k].to_f64())
    };
    // Rounding a factor entry to `T` errs by at most ε of it, or, below `T`'s normal range, by up
    // to half the smallest subnormal whatever its size: that unit, times the factor it multiplies,
    // is the absolute term (a product of normal factors can round to zero).
    let subnormal = min_normal::<T>() * T::EPSILON;
    for (&(i, j), &aij) in entries {
        let (mut lu, mut size, mut spread) = (0.0, aij.abs(), 0.0);
        for k in 0..=i.min(j) {
            let l = if k == i { 1.0 } else { entry(i, k) };
            lu += l * entry(k, j);
            size += (l * entry(k, j)).abs();
            spread += l.abs() + entry(k, j).abs();
        }
        let allowed = 16.0 * (i.min(j) + 2) as f64 * (T::EPSILON * size + subnormal * spread);
        assert!((lu - aij).abs() <= allowed, "({i}, {j}): (LU) {lu} against {aij}, allowed {allowed}");
    }
    let lower = |r: usize| cols[offsets[r]..offsets[r + 1]].iter().copied().filter(move |&c| c < r);
    let upper = |r: usize| cols[offsets[r]..offsets[r + 1]].iter().copied().filter(move |&c| c > r);
    check_levels(&ilu.lower_levels(), n, &lower);
    check_levels(&ilu.upper_levels(), n, &upper);
}

/// Every row once; within a level in increasing order; each row's level one past the highest of the
/// rows it reads (0 for none), so after all of them and no later than it must be.
fn check_levels<I: Iterator<Item = usize>>(levels: &Levels, n: usize, reads: &dyn Fn(usize) -> I) {
    assert_eq!(levels.rows.len(), n);
    assert_eq!(levels.starts.first().copied(), Some(0));
    assert_eq!(levels.starts.last().copied(), Some(n));
    let mut level = vec![usize::MAX; n];
    for l in 0..levels.count() {
        let rows = &levels.rows[levels.starts[l]..levels.starts[l + 1]];
        assert!(!rows.is_empty() && rows.is_sorted(), "level {l}: {rows:?}");
        for &r in rows {
            assert_eq!(level[r as usize], usize::MAX, "row {r} twice");
            level[r as usize] = l;
        }
    }
    for r in 0..n {
        let needed = reads(r).map(|j| level[j] + 1).max().unwrap_or(0);
        assert_eq!(level[r], needed, "row {r}");
    }
}

/// `FactorPattern::new` and `factorise` of both kinds on any matrix: the pattern refused only as
/// documented (not square; the first row without a diagonal entry in the triangle read, with the
/// value 0), else its schedules are the oracle's factors', and the model of the device's
/// factorisation is the oracle: in f64 bit for bit, refusals included (a factor entry's value aside,
/// which each names in its own layout's order); in f32 the same pattern where both factorise.
pub fn check_device_pattern<T: Scalar>(a: CsrRef<'_, T>) {
    for kind in [FactorKind::Ilu0, FactorKind::Ic0] {
        let oracle =
            if kind == FactorKind::Ilu0 { IluFactors::new(a) } else { IluFactors::incomplete_cholesky(a) };
        let pattern = match FactorPattern::new(kind, a) {
            Ok(pattern) => pattern,
            Err(Error::Solve(SolveError::NotSquare { .. })) => {
                assert_ne!(a.nrows(), a.ncols());
                continue;
            }
            Err(Error::Solve(
                SolveError::ZeroPivot { row, value } | SolveError::NonPositivePivot { row, value },
            )) => {
                let read = |r: usize, c: usize| kind == FactorKind::Ilu0 || c <= r;
                let has = |r: usize| a.row(r).0.contains(&r) && read(r, r);
                assert_eq!((Some(row), value), ((0..a.nrows()).find(|&r| !has(r)), 0.0), "{kind:?}");
                continue;
            }
            Err(e) => panic!("{kind:?}: unexpected refusal of a pattern: {e}"),
        };
        assert_eq!((pattern.n(), pattern.a_nnz(), pattern.kind()), (a.nrows(), a.nnz(), kind));
        let model = pattern.factorise(a.values());
        match (&model, &oracle) {
            (Ok(model), Ok(oracle)) => {
                assert_eq!((model.csr().0, model.csr().1), (oracle.csr().0, oracle.csr().1), "{kind:?}");
                assert_eq!(pattern.levels(), (&oracle.lower_levels(), &oracle.upper_levels()));
                assert_eq!(pattern.factors_nnz(), oracle.csr().1.len());
                if T::NAME == "f64" {
                    let bits = |f: &IluFactors<T>| {
                        f.csr().2.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>()
                    };
                    assert_eq!(bits(model), bits(oracle), "{kind:?}");
                }
            }
            (Err(Error::InvalidNumber { what: m, .. }), Err(Error::InvalidNumber { what: o, .. }))
                if T::NAME == "f64" =>
            {
                assert_eq!(m, o, "{kind:?}");
            }
            (model, oracle) if T::NAME == "f64" => {
                assert_eq!(format!("{model:?}"), format!("{oracle:?}"), "{kind:?}");
            }
            // f32: the model rounds at every step, the oracle once, so either may refuse alone.
            (model, _) => {
                if let Err(e) = model {
                    assert!(
                        matches!(
                            e,
                            Error::InvalidNumber { .. }
                                | Error::Solve(
                                    SolveError::ZeroPivot { .. } | SolveError::NonPositivePivot { .. }
                                )
                        ),
                        "{kind:?}: {e}"
                    );
                }
            }
        }
    }
}
