//! faer's sparse matrices (feature `faer`): a compressed row-major matrix with `usize` indices whose
//! pointers start at 0 borrowed, anything else copied (column-major, other index types, pointers
//! that start further on, the uncompressed form with a count of entries per row or column).
//!
//! What is taken is what faer's checked constructors (`new_checked`, `new_unsorted_checked`) accept:
//! outer slice `i` is `ptr[i] .. ptr[i + 1]` of the inner indices and values, or
//! `ptr[i] .. ptr[i] + nnz[i]` in the uncompressed form, so the arrays may hold entries before
//! `ptr[0]`, after the last pointer, and between slices, none of which is the matrix's.

use super::{Compressed, Csr, to_csr, widen};
use crate::error::{CsrError, Error};
use crate::formats::csr::CsrRef;
use faer::Index;
use faer::sparse::{SparseColMat, SparseColMatRef, SparseRowMat, SparseRowMatRef};

impl<'a, T> TryFrom<SparseRowMatRef<'a, usize, T>> for CsrRef<'a, T> {
    type Error = Error;

    /// Borrows a compressed row-major matrix without a copy (entries past the last row pointer are
    /// left out of the view). Refused with [`Error::Unsupported`] for the uncompressed form and for
    /// row pointers that do not start at 0 (use [`Csr::try_from`], which copies them), and with
    /// [`Error::InvalidCsr`] where the arrays break an invariant of [`CsrRef`].
    fn try_from(m: SparseRowMatRef<'a, usize, T>) -> Result<Self, Error> {
        let s = m.symbolic();
        if s.row_nnz().is_some() {
            return Err(Error::Unsupported(
                "an uncompressed faer matrix cannot be borrowed as CSR: convert it with Csr::try_from",
            ));
        }
        let ptr = s.row_ptr();
        if ptr.first() != Some(&0) {
            return Err(Error::Unsupported(
                "the faer matrix's row pointers do not start at 0: convert it with Csr::try_from",
            ));
        }
        // Past the last pointer: spare capacity. A pointer past the arrays is `CsrRef`'s to refuse.
        let end = ptr[s.nrows()];
        let (cols, values) = match (s.col_idx().get(..end), m.val().get(..end)) {
            (Some(cols), Some(values)) => (cols, values),
            _ => (s.col_idx(), m.val()),
        };
        Ok(CsrRef::try_new(s.nrows(), s.ncols(), ptr, cols, values)?)
    }
}

/// A faer matrix's arrays, widened to `usize`, as an owned CSR matrix: the entries of each outer
/// slice (`ptr[i] .. ptr[i + 1]`, or the first `nnz[i]` from `ptr[i]`) gathered into compressed
/// arrays that start at 0, unless they already are. A slice that runs backwards or past the
/// arrays (possible only through faer's unchecked constructors) is refused, naming it.
fn to_csr_compressed<T: Copy>(
    direction: Compressed,
    shape: (usize, usize),
    (ptr, nnz): (Vec<usize>, Option<Vec<usize>>),
    indices: Vec<usize>,
    values: &[T],
) -> Result<Csr<T>, Error> {
    if nnz.is_none() && ptr.first() == Some(&0) && ptr.last() == Some(&indices.len()) {
        return to_csr(direction, shape, ptr, indices, values);
    }
    let slice = |i: usize| -> Result<(usize, usize), CsrError> {
        let start = ptr[i];
        let end = match &nnz {
            Some(nnz) => {
                let count = nnz.get(i).ok_or(CsrError::OffsetsLength { rows: nnz.len(), got: ptr.len() })?;
                start.saturating_add(*count)
            }
            None => ptr[i + 1],
        };
        if end < start {
            return Err(CsrError::OffsetsDecrease { row: i, start, end });
        }
        if end > indices.len() {
            return Err(CsrError::OffsetsEnd { last: end, nnz: indices.len() });
        }
        Ok((start, end))
    };
    let outer = ptr.len().saturating_sub(1);
    let (mut offsets, mut kept, mut kept_values) = (vec![0], Vec::new(), Vec::new());
    for i in 0..outer {
        let (start, end) = slice(i)?;
        kept.extend_from_slice(&indices[start..end]);
        kept_values.extend_from_slice(&values[start..end]);
        offsets.push(kept.len());
    }
    to_csr(direction, shape, offsets, kept, &kept_values)
}

impl<T: Copy, I: Index> TryFrom<SparseRowMatRef<'_, I, T>> for Csr<T> {
    type Error = Error;

    /// Copies a row-major matrix of any index type, compressed or not.
    fn try_from(m: SparseRowMatRef<'_, I, T>) -> Result<Self, Error> {
        let s = m.symbolic();
        let zx = |i: I| Some(i.zx());
        let nnz = s.row_nnz().map(|n| widen("row_nnz", n, zx)).transpose()?;
        let ptr = (widen("row_ptr", s.row_ptr(), zx)?, nnz);
        let indices = widen("col_idx", s.col_idx(), zx)?;
        to_csr_compressed(Compressed::Rows, (s.nrows(), s.ncols()), ptr, indices, m.val())
    }
}

impl<T: Copy, I: Index> TryFrom<SparseColMatRef<'_, I, T>> for Csr<T> {
    type Error = Error;

    /// Copies a column-major matrix of any index type, compressed or not, transposing it on the
    /// CPU; refused with [`Error::TooLarge`] for more rows than the limit of declared counts
    /// ([`crate::formats::MAX_ROWS_WITHOUT_ENTRIES`] plus [`crate::formats::MAX_ROWS_PER_ENTRY`]
    /// per entry), checked before the row offsets are allocated.
    fn try_from(m: SparseColMatRef<'_, I, T>) -> Result<Self, Error> {
        let s = m.symbolic();
        let zx = |i: I| Some(i.zx());
        let nnz = s.col_nnz().map(|n| widen("col_nnz", n, zx)).transpose()?;
        let ptr = (widen("col_ptr", s.col_ptr(), zx)?, nnz);
        let indices = widen("row_idx", s.row_idx(), zx)?;
        to_csr_compressed(Compressed::Columns, (s.nrows(), s.ncols()), ptr, indices, m.val())
    }
}

impl<T: Copy, I: Index> TryFrom<&SparseRowMat<I, T>> for Csr<T> {
    type Error = Error;

    fn try_from(m: &SparseRowMat<I, T>) -> Result<Self, Error> {
        Csr::try_from(m.as_ref())
    }
}

impl<T: Copy, I: Index> TryFrom<&SparseColMat<I, T>> for Csr<T> {
    type Error = Error;

    fn try_from(m: &SparseColMat<I, T>) -> Result<Self, Error> {
        Csr::try_from(m.as_ref())
    }
}
