//! What a check of CSR index arrays finds when it looks at every position at once, as the device
//! check does (`kernels-gpu/src/check.rs`: the first position of each kind of fault), and the error
//! [`CsrRef::try_new`](super::CsrRef::try_new) gives the same arrays, derived from those positions
//! alone: so a matrix built from device arrays is refused exactly as its host upload would be.
//! [`IndexFaults::find`] finds the positions on the host, as the model of the kernel.

use crate::error::CsrError;

/// An index type of CSR arrays: `u32` (this crate's kernels' own) or `i32` (cuSPARSE's).
pub trait CsrIndex: Copy + Ord + sealed::Sealed {
    /// The index as a `usize`; `None` where it is negative.
    fn to_usize(self) -> Option<usize>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
}

impl CsrIndex for u32 {
    fn to_usize(self) -> Option<usize> {
        usize::try_from(self).ok()
    }
}

impl CsrIndex for i32 {
    fn to_usize(self) -> Option<usize> {
        usize::try_from(self).ok()
    }
}

/// The first position of each kind of fault in CSR index arrays (`None`: there is none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexFaults {
    /// The first negative row offset.
    pub negative_offset: Option<usize>,
    /// The first negative column index.
    pub negative_column: Option<usize>,
    /// The first row `r` with `row_offsets[r] > row_offsets[r + 1]`.
    pub decrease: Option<usize>,
    /// The first entry whose column index is not negative and not below the column count.
    pub column: Option<usize>,
}

impl IndexFaults {
    /// The faults of the arrays, found on the host as the device check finds them.
    pub fn find<I: CsrIndex>(row_offsets: &[I], col_indices: &[I], ncols: usize) -> Self {
        let negative = |i: &I| i.to_usize().is_none();
        Self {
            negative_offset: row_offsets.iter().position(negative),
            negative_column: col_indices.iter().position(negative),
            decrease: row_offsets.windows(2).position(|w| w[0] > w[1]),
            column: col_indices.iter().position(|c| c.to_usize().is_some_and(|c| c >= ncols)),
        }
    }

    /// The error of the arrays these faults were found in (by [`IndexFaults::find`] or the device
    /// check; the arrays' lengths and their row offsets are given, and `column_at(entry)` is the
    /// column index at `entry`, asked for only the entry of `self.column`): that of
    /// [`CsrRef::try_new`](super::CsrRef::try_new) on the arrays widened to `usize`, after
    /// [`CsrError::IndexNotUsize`] for the first negative row offset, then column index, as the
    /// conversions from signed indices give it. Faults not found in these arrays give an error of
    /// no meaning, but no panic.
    pub fn verdict<I: CsrIndex>(
        &self,
        (nrows, ncols): (usize, usize),
        row_offsets: &[I],
        (cols_len, values_len): (usize, usize),
        column_at: impl FnOnce(usize) -> I,
    ) -> Result<(), CsrError> {
        if let Some(position) = self.negative_offset {
            return Err(CsrError::IndexNotUsize { what: "row_offsets", position });
        }
        if let Some(position) = self.negative_column {
            return Err(CsrError::IndexNotUsize { what: "col_indices", position });
        }
        if cols_len != values_len {
            return Err(CsrError::LengthMismatch { col_indices: cols_len, values: values_len });
        }
        if row_offsets.len().checked_sub(1) != Some(nrows) {
            return Err(CsrError::OffsetsLength { rows: nrows, got: row_offsets.len() });
        }
        // Not negative (no fault says so): a stand-in that no check accepts otherwise.
        let wide = |i: I| i.to_usize().unwrap_or(usize::MAX);
        let offset = |r: usize| row_offsets.get(r).copied().map_or(usize::MAX, wide);
        if offset(0) != 0 {
            return Err(CsrError::OffsetsStart(offset(0)));
        }
        if let Some(row) = self.decrease {
            return Err(CsrError::OffsetsDecrease { row, start: offset(row), end: offset(row + 1) });
        }
        let last = offset(nrows);
        if last != values_len {
            return Err(CsrError::OffsetsEnd { last, nnz: values_len });
        }
        if let Some(entry) = self.column {
            // The row holding `entry`: the first whose end is past it (offsets are valid here).
            let row = row_offsets.get(1..).unwrap_or_default().partition_point(|&o| wide(o) <= entry);
            return Err(CsrError::ColumnOutOfRange { row, entry, col: wide(column_at(entry)), ncols });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::CsrRef;
    use proptest::prelude::*;

    /// `CsrRef::try_new` on the arrays widened to `usize`, the first negative index refused first.
    fn host_check(
        nrows: usize,
        ncols: usize,
        offsets: &[i32],
        cols: &[i32],
        values: &[f32],
    ) -> Result<(), CsrError> {
        let widen = |what, a: &[i32]| -> Result<Vec<usize>, CsrError> {
            a.iter()
                .enumerate()
                .map(|(position, &i)| {
                    usize::try_from(i).map_err(|_| CsrError::IndexNotUsize { what, position })
                })
                .collect()
        };
        let (offsets, cols) = (widen("row_offsets", offsets)?, widen("col_indices", cols)?);
        CsrRef::try_new(nrows, ncols, &offsets, &cols, values).map(|_| ())
    }

    fn device_model(
        nrows: usize,
        ncols: usize,
        offsets: &[i32],
        cols: &[i32],
        values: &[f32],
    ) -> Result<(), CsrError> {
        IndexFaults::find(offsets, cols, ncols).verdict(
            (nrows, ncols),
            offsets,
            (cols.len(), values.len()),
            |k| cols[k],
        )
    }

    /// Small arrays, mostly near valid: offsets a running sum of small steps (sometimes negative),
    /// columns around the column count.
    fn arrays() -> impl Strategy<Value = (usize, usize, Vec<i32>, Vec<i32>, Vec<f32>)> {
        let start = prop_oneof![8 => Just(0i32), 1 => Just(1), 1 => Just(-1)];
        let extra = prop_oneof![8 => Just(0i32), 1 => Just(1), 1 => Just(-1)];
        let more_values = prop_oneof![8 => Just(0usize), 1 => Just(1)];
        (0usize..8, 0usize..6, prop::collection::vec(-1i32..4, 0..9), start, extra, more_values)
            .prop_flat_map(|(nrows, ncols, steps, start, extra, more_values)| {
                let mut offsets = vec![start];
                for s in steps.iter().take(nrows) {
                    offsets.push(offsets.last().copied().unwrap_or(0) + s);
                }
                let nnz = usize::try_from(offsets.last().copied().unwrap_or(0) + extra).unwrap_or(0);
                let cols = prop::collection::vec(-1i32..i32::try_from(ncols).unwrap_or(0) + 2, nnz..=nnz);
                let values = prop::collection::vec(-1.0f32..1.0, nnz + more_values..=nnz + more_values);
                (Just(nrows), Just(ncols), Just(offsets), cols, values)
            })
    }

    proptest! {
        #[test]
        fn the_model_answers_as_the_host_check((nrows, ncols, offsets, cols, values) in arrays()) {
            prop_assert_eq!(
                device_model(nrows, ncols, &offsets, &cols, &values),
                host_check(nrows, ncols, &offsets, &cols, &values)
            );
            let unsigned = |a: &[i32]| a.iter().map(|&i| i.max(0).unsigned_abs()).collect::<Vec<u32>>();
            let (offsets, cols) = (unsigned(&offsets), unsigned(&cols));
            let faults = IndexFaults::find(&offsets, &cols, ncols);
            let wide = |a: &[u32]| a.iter().map(|&i| i as usize).collect::<Vec<_>>();
            prop_assert_eq!(
                faults.verdict((nrows, ncols), &offsets, (cols.len(), values.len()), |k| cols[k]),
                CsrRef::try_new(nrows, ncols, &wide(&offsets), &wide(&cols), &values).map(|_| ())
            );
        }
    }

    #[test]
    fn each_fault_is_named_at_its_first_position() {
        let v = [1.0f32; 4];
        let model = |nrows, offsets: &[i32], cols: &[i32], values: &[f32]| {
            device_model(nrows, 3, offsets, cols, values)
        };
        assert_eq!(
            model(2, &[0, -1, 4], &[0, 1, -2, 5], &v),
            Err(CsrError::IndexNotUsize { what: "row_offsets", position: 1 })
        );
        assert_eq!(
            model(2, &[0, 2, 4], &[0, 1, -2, -5], &v),
            Err(CsrError::IndexNotUsize { what: "col_indices", position: 2 })
        );
        assert_eq!(
            model(2, &[0, 2, 4], &[0, 1, 2], &v),
            Err(CsrError::LengthMismatch { col_indices: 3, values: 4 })
        );
        assert_eq!(model(3, &[0, 2, 4], &[0, 1, 2, 0], &v), Err(CsrError::OffsetsLength { rows: 3, got: 3 }));
        assert_eq!(model(2, &[1, 2, 4], &[0, 1, 2, 0], &v), Err(CsrError::OffsetsStart(1)));
        assert_eq!(
            model(3, &[0, 3, 2, 4], &[0, 1, 2, 0], &v),
            Err(CsrError::OffsetsDecrease { row: 1, start: 3, end: 2 })
        );
        assert_eq!(model(2, &[0, 2, 3], &[0, 1, 2, 0], &v), Err(CsrError::OffsetsEnd { last: 3, nnz: 4 }));
        assert_eq!(
            model(3, &[0, 2, 2, 4], &[0, 1, 2, 3], &v),
            Err(CsrError::ColumnOutOfRange { row: 2, entry: 3, col: 3, ncols: 3 })
        );
        assert_eq!(model(0, &[0], &[], &[]), Ok(()));
        assert_eq!(model(0, &[], &[], &[]), Err(CsrError::OffsetsLength { rows: 0, got: 0 }));
    }
}
