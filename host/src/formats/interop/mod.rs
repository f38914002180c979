//! Inputs from the two most used sparse-matrix crates, behind cargo features that are off by
//! default: `sprs` (`CsMat`, CSR or CSC) and `faer` (`SparseRowMat`, `SparseColMat` and their
//! refs). A CSR matrix with `usize` indices is borrowed as a [`CsrRef`] without a copy (`TryFrom`);
//! any other (CSC, narrower or signed indices, faer's uncompressed form) is copied into an owned
//! [`Csr`] on the CPU, which a `CsrRef` then borrows.
//!
//! Both crates keep their matrices valid by construction (an unchecked constructor is `unsafe` in
//! each), so the conversions check only what the crates do not promise in the library's terms: that
//! indices fit in `usize`, and the [`CsrRef`] invariants once more (one pass, cheap next to the
//! upload, and what keeps a matrix built with `unsafe` from reaching a kernel unchecked). Unsorted
//! and repeated column indices are accepted, as [`CsrRef`] accepts them.

#[cfg(feature = "faer")]
mod faer_input;
#[cfg(feature = "sprs")]
mod sprs_input;

use super::csr::CsrRef;
use super::limits::check_declared;
use crate::error::{CsrError, Error};

/// A CSR matrix that owns its arrays, valid as a [`CsrRef`] is: what a conversion produces when the
/// input cannot be borrowed as CSR with `usize` indices. Upload it with
/// `gpu.upload_csr_ref(csr.as_ref())`.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr<T> {
    nrows: usize,
    ncols: usize,
    row_offsets: Vec<usize>,
    col_indices: Vec<usize>,
    values: Vec<T>,
}

impl<T> Csr<T> {
    /// Checks the arrays as [`CsrRef::try_new`] does and takes them.
    pub fn try_new(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<usize>,
        col_indices: Vec<usize>,
        values: Vec<T>,
    ) -> Result<Self, CsrError> {
        CsrRef::try_new(nrows, ncols, &row_offsets, &col_indices, &values)?;
        Ok(Self { nrows, ncols, row_offsets, col_indices, values })
    }

    /// The checked view the library's uploads take.
    pub fn as_ref(&self) -> CsrRef<'_, T> {
        CsrRef::from(self)
    }
}

impl<'a, T> From<&'a Csr<T>> for CsrRef<'a, T> {
    /// A [`Csr`] was checked when it was made.
    fn from(m: &'a Csr<T>) -> Self {
        CsrRef::from_valid(m.nrows, m.ncols, &m.row_offsets, &m.col_indices, &m.values)
    }
}

/// Which way compressed arrays run: `Rows` is CSR (offsets per row, column indices), `Columns` is
/// CSC (offsets per column, row indices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compressed {
    Rows,
    Columns,
}

/// Compressed arrays with `usize` indices, in either direction, as an owned CSR matrix. CSC is
/// transposed by a counting sort on the row index (one pass to count, one to place); the entries
/// are visited column by column, so each row's column indices come out increasing. The CSC arrays
/// are checked first as the CSR arrays of the transpose, so an error names a column as a row; and
/// its row count, which sizes the row offsets but no array of the input, is checked against
/// [`crate::formats::MAX_ROWS_WITHOUT_ENTRIES`] plus [`crate::formats::MAX_ROWS_PER_ENTRY`] per
/// entry before they are allocated ([`Error::TooLarge`]).
fn to_csr<T: Copy>(
    direction: Compressed,
    (nrows, ncols): (usize, usize),
    offsets: Vec<usize>,
    indices: Vec<usize>,
    values: &[T],
) -> Result<Csr<T>, Error> {
    if direction == Compressed::Rows {
        return Ok(Csr::try_new(nrows, ncols, offsets, indices, values.to_vec())?);
    }
    let csc = CsrRef::try_new(ncols, nrows, &offsets, &indices, values)?;
    check_declared("the row count of a column-major matrix", nrows, csc.nnz())?;
    let mut row_offsets = vec![0usize; nrows + 1];
    for &row in csc.col_indices() {
        row_offsets[row + 1] += 1;
    }
    for r in 0..nrows {
        row_offsets[r + 1] += row_offsets[r];
    }
    let mut next = row_offsets[..nrows].to_vec();
    let mut col_indices = vec![0usize; csc.nnz()];
    let mut row_values = values.to_vec();
    for col in 0..ncols {
        let (rows, vals) = csc.row(col);
        for (&row, &value) in rows.iter().zip(vals) {
            col_indices[next[row]] = col;
            row_values[next[row]] = value;
            next[row] += 1;
        }
    }
    Ok(Csr::try_new(nrows, ncols, row_offsets, col_indices, row_values)?)
}

/// `indices` widened to `usize`, or the position of the first that does not fit.
fn widen<I: Copy>(
    what: &'static str,
    indices: &[I],
    to_usize: impl Fn(I) -> Option<usize>,
) -> Result<Vec<usize>, CsrError> {
    indices
        .iter()
        .enumerate()
        .map(|(position, &i)| to_usize(i).ok_or(CsrError::IndexNotUsize { what, position }))
        .collect()
}
