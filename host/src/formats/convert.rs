//! What the conversions from CSR share: the check that a matrix fits the kernels' 32-bit indices, the
//! parallel fill of an array segment by segment, and the canonical CSR their `to_csr` returns.

use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use crate::{Error, Result};
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;

/// Largest count the kernels' `u32` indices hold.
const U32_LIMIT: usize = u32::MAX as usize;

/// `value` as the kernels' `u32`, or [`Error::TooLarge`] naming `what`.
pub(crate) fn narrow(what: &'static str, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::TooLarge { what, value, limit: U32_LIMIT })
}

/// Refuses, with [`crate::Error::TooLarge`], a matrix whose dimensions or entry count do not fit the
/// kernels' `u32` indices. After it, every row and column index converts with [`index32`].
pub(crate) fn check_u32_dims<T>(a: &CsrRef<'_, T>) -> Result<()> {
    narrow("the row count", a.nrows())?;
    narrow("the column count", a.ncols())?;
    narrow("the entry count", a.nnz())?;
    Ok(())
}

/// A row or column index as the kernels' `u32`.
#[allow(clippy::cast_possible_truncation)] // an index below a dimension that `check_u32_dims` passed
pub(crate) fn index32(i: usize) -> u32 {
    i as u32
}

/// Calls `fill(i, segment)` for every segment `i` of `out`, in parallel: segment `i` is
/// `out[offsets[i] - offsets[0] .. offsets[i + 1] - offsets[0]]`, for non-decreasing `offsets` that
/// span `out` exactly. Rayon gets `per_task` consecutive segments at a time.
pub(crate) fn par_fill_segments<E: Send>(
    offsets: &[usize],
    out: &mut [E],
    per_task: usize,
    fill: impl Fn(usize, &mut [E]) + Sync,
) {
    let segments = offsets.len().saturating_sub(1);
    let per_task = per_task.max(1);
    let mut tasks = Vec::with_capacity(segments.div_ceil(per_task));
    let mut rest = out;
    for first in (0..segments).step_by(per_task) {
        let last = (first + per_task).min(segments);
        let (head, tail) = rest.split_at_mut(offsets[last] - offsets[first]);
        tasks.push((first, last, head));
        rest = tail;
    }
    tasks.into_par_iter().for_each(|(first, last, mut part)| {
        for i in first..last {
            let (segment, tail) = part.split_at_mut(offsets[i + 1] - offsets[i]);
            fill(i, segment);
            part = tail;
        }
    });
}

/// The matrix holding `entries` (row, column, value), with the values of a repeated position summed:
/// sorted rows without repeats, the form every format's `to_csr` returns, so that round trips compare
/// as matrices whatever order a format keeps its entries in.
pub(crate) fn canonical_csr<T: Scalar>(
    nrows: usize,
    ncols: usize,
    mut entries: Vec<(usize, usize, T)>,
) -> CsrMatrix<T> {
    entries.sort_by_key(|&(r, c, _)| (r, c));
    let mut offsets = vec![0; nrows + 1];
    let mut cols: Vec<usize> = Vec::with_capacity(entries.len());
    let mut values: Vec<T> = Vec::with_capacity(entries.len());
    let mut last = None;
    for (r, c, v) in entries {
        if last == Some((r, c)) {
            if let Some(sum) = values.last_mut() {
                *sum = *sum + v;
            }
        } else {
            offsets[r + 1] += 1;
            cols.push(c);
            values.push(v);
            last = Some((r, c));
        }
    }
    for r in 0..nrows {
        offsets[r + 1] += offsets[r];
    }
    CsrMatrix::try_from_csr_data(nrows, ncols, offsets, cols, values)
        .expect("sorted, distinct, in-range entries form a valid CSR matrix")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_filled_once_each() {
        let offsets = [3, 3, 5, 5, 9, 10, 10];
        let mut out = vec![usize::MAX; 7];
        for per_task in [1, 2, 4, 100] {
            par_fill_segments(&offsets, &mut out, per_task, |i, seg| seg.fill(i));
            assert_eq!(out, [1, 1, 3, 3, 3, 3, 4], "per_task {per_task}");
        }
        par_fill_segments::<u8>(&[0], &mut [], 4, |_, _| unreachable!());
        par_fill_segments::<u8>(&[], &mut [], 4, |_, _| unreachable!());
    }

    #[test]
    fn canonical_csr_sorts_and_sums_repeats() {
        let m = canonical_csr(3, 4, vec![(2, 1, 1.0), (0, 3, 2.0), (0, 1, 3.0), (2, 1, 4.0), (0, 3, -2.0)]);
        let (offsets, cols, values) = m.csr_data();
        assert_eq!(offsets, [0, 2, 2, 3]);
        assert_eq!(cols, [1, 3, 1]);
        assert_eq!(values, [3.0, 0.0, 5.0]);
    }
}
