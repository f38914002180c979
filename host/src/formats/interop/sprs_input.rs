//! `sprs::CsMat` (feature `sprs`): CSR with `usize` indices borrowed, anything else copied.

use super::{Compressed, Csr, to_csr, widen};
use crate::error::Error;
use crate::formats::csr::CsrRef;
use sprs::{CompressedStorage, CsMatI, SpIndex};
use std::borrow::Cow;

impl<'a, T> TryFrom<&'a CsMatI<T, usize, usize>> for CsrRef<'a, T> {
    type Error = Error;

    /// Borrows a CSR matrix without a copy. Refused with [`Error::Unsupported`] for CSC storage
    /// (use [`Csr::try_from`], which transposes it), and with [`Error::InvalidCsr`] where the arrays
    /// break an invariant of [`CsrRef`].
    fn try_from(m: &'a CsMatI<T, usize, usize>) -> Result<Self, Error> {
        if m.storage() != CompressedStorage::CSR {
            return Err(Error::Unsupported(
                "a CSC sprs matrix cannot be borrowed as CSR: convert it with Csr::try_from",
            ));
        }
        // Borrowed where the offsets start at 0, as they do but in a view of later rows.
        let Cow::Borrowed(offsets) = m.proper_indptr() else {
            return Err(Error::Unsupported(
                "the sprs matrix's row offsets do not start at 0: convert it with Csr::try_from",
            ));
        };
        Ok(CsrRef::try_new(m.rows(), m.cols(), offsets, m.indices(), m.data())?)
    }
}

impl<T: Copy, I: SpIndex, Iptr: SpIndex> TryFrom<&CsMatI<T, I, Iptr>> for Csr<T> {
    type Error = Error;

    /// Copies a matrix of either storage (CSC is transposed on the CPU) and any index type; refused
    /// with [`crate::CsrError::IndexNotUsize`] for an index that does not fit in `usize`, and with
    /// [`Error::TooLarge`] for a CSC matrix of more rows than the limit of declared counts
    /// ([`crate::formats::MAX_ROWS_WITHOUT_ENTRIES`] plus [`crate::formats::MAX_ROWS_PER_ENTRY`]
    /// per entry), checked before the row offsets are allocated.
    fn try_from(m: &CsMatI<T, I, Iptr>) -> Result<Self, Error> {
        let offsets = widen("indptr", &m.proper_indptr(), SpIndex::try_index)?;
        let indices = widen("indices", m.indices(), SpIndex::try_index)?;
        let direction = match m.storage() {
            CompressedStorage::CSR => Compressed::Rows,
            CompressedStorage::CSC => Compressed::Columns,
        };
        to_csr(direction, (m.rows(), m.cols()), offsets, indices, m.data())
    }
}
