//! faer's sparse matrices (feature `faer`): a compressed row-major matrix with `usize` indices
//! borrowed, anything else (column-major, other index types, the uncompressed form with a count of
//! entries per row or column) copied.

use super::{Compressed, Csr, to_csr, widen};
use crate::error::{CsrError, Error};
use crate::formats::csr::CsrRef;
use faer::Index;
use faer::sparse::{SparseColMat, SparseColMatRef, SparseRowMat, SparseRowMatRef};

impl<'a, T> TryFrom<SparseRowMatRef<'a, usize, T>> for CsrRef<'a, T> {
    type Error = Error;

    /// Borrows a compressed row-major matrix without a copy. Refused with [`Error::Unsupported`] for
    /// the uncompressed form (use [`Csr::try_from`]), and with [`Error::InvalidCsr`] where the
    /// arrays break an invariant of [`CsrRef`].
    fn try_from(m: SparseRowMatRef<'a, usize, T>) -> Result<Self, Error> {
        let s = m.symbolic();
        if s.row_nnz().is_some() {
            return Err(Error::Unsupported(
                "an uncompressed faer matrix cannot be borrowed as CSR: convert it with Csr::try_from",
            ));
        }
        Ok(CsrRef::try_new(s.nrows(), s.ncols(), s.row_ptr(), s.col_idx(), m.val())?)
    }
}

/// A faer matrix's arrays, widened to `usize`, as an owned CSR matrix. With a count per outer index
/// (`nnz`), only the first `nnz[i]` entries of outer slice `i` are the matrix's; the slack after
/// them is dropped.
fn to_csr_compressed<T: Copy>(
    direction: Compressed,
    shape: (usize, usize),
    (ptr, nnz): (Vec<usize>, Option<Vec<usize>>),
    indices: Vec<usize>,
    values: &[T],
) -> Result<Csr<T>, CsrError> {
    let Some(nnz) = nnz else { return to_csr(direction, shape, ptr, indices, values) };
    let (mut offsets, mut kept, mut kept_values) = (vec![0], Vec::new(), Vec::new());
    for (&start, &count) in ptr.iter().zip(&nnz) {
        let end = start.saturating_add(count);
        let (Some(inner), Some(vals)) = (indices.get(start..end), values.get(start..end)) else {
            return Err(CsrError::OffsetsEnd { last: end, nnz: indices.len() });
        };
        kept.extend_from_slice(inner);
        kept_values.extend_from_slice(vals);
        offsets.push(kept.len());
    }
    to_csr(direction, shape, offsets, kept, &kept_values)
}

impl<T: Copy, I: Index> TryFrom<SparseRowMatRef<'_, I, T>> for Csr<T> {
    type Error = CsrError;

    /// Copies a row-major matrix of any index type, compressed or not.
    fn try_from(m: SparseRowMatRef<'_, I, T>) -> Result<Self, CsrError> {
        let s = m.symbolic();
        let zx = |i: I| Some(i.zx());
        let nnz = s.row_nnz().map(|n| widen("row_nnz", n, zx)).transpose()?;
        let ptr = (widen("row_ptr", s.row_ptr(), zx)?, nnz);
        let indices = widen("col_idx", s.col_idx(), zx)?;
        to_csr_compressed(Compressed::Rows, (s.nrows(), s.ncols()), ptr, indices, m.val())
    }
}

impl<T: Copy, I: Index> TryFrom<SparseColMatRef<'_, I, T>> for Csr<T> {
    type Error = CsrError;

    /// Copies a column-major matrix of any index type, compressed or not, transposing it on the CPU.
    fn try_from(m: SparseColMatRef<'_, I, T>) -> Result<Self, CsrError> {
        let s = m.symbolic();
        let zx = |i: I| Some(i.zx());
        let nnz = s.col_nnz().map(|n| widen("col_nnz", n, zx)).transpose()?;
        let ptr = (widen("col_ptr", s.col_ptr(), zx)?, nnz);
        let indices = widen("row_idx", s.row_idx(), zx)?;
        to_csr_compressed(Compressed::Columns, (s.nrows(), s.ncols()), ptr, indices, m.val())
    }
}

impl<T: Copy, I: Index> TryFrom<&SparseRowMat<I, T>> for Csr<T> {
    type Error = CsrError;

    fn try_from(m: &SparseRowMat<I, T>) -> Result<Self, CsrError> {
        Csr::try_from(m.as_ref())
    }
}

impl<T: Copy, I: Index> TryFrom<&SparseColMat<I, T>> for Csr<T> {
    type Error = CsrError;

    fn try_from(m: &SparseColMat<I, T>) -> Result<Self, CsrError> {
        Csr::try_from(m.as_ref())
    }
}
