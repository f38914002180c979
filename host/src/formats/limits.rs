//! The limits on what an input may make this crate allocate on the host beyond what it holds.
//!
//! An array sized by the data of an input (its entries, its row offsets, the vectors given with it)
//! costs at most a fixed multiple of that input. An array sized by a count the input only *declares*
//! costs whatever the count says: the column count of a CSR matrix (the row offsets of its
//! transpose), the row count of a CSC matrix (the row offsets of its CSR copy), the node count of a
//! finite element operator, the number of parts of a row partition. Such a count is checked against
//! the limits here before anything is allocated, and refused with [`Error::TooLarge`], so that a
//! 61-byte file declaring 2^32 columns cannot ask for 32 GiB.

use crate::{Error, Result};

/// Rows (or columns, or nodes) an input may declare whatever its entry count: 2^24, 128 MiB of row
/// offsets (less than the vectors `x` and `y` of such a matrix take in f64).
pub const MAX_ROWS_WITHOUT_ENTRIES: usize = 1 << 24;

/// Rows (or columns, or nodes) an input may declare beyond [`MAX_ROWS_WITHOUT_ENTRIES`] per entry
/// it holds: 8, 64 bytes of offsets, four times the 16 bytes an entry of a CSR matrix in f64 takes.
/// Only a matrix of over 2^24 rows with fewer than one entry in 8 rows is refused.
pub const MAX_ROWS_PER_ENTRY: usize = 8;

/// The most parts of a row partition: 65,536 devices, more than one run of this crate drives, and
/// a few MiB of the per-part bookkeeping a split keeps (a few hundred bytes a part, for parts
/// without rows as for the others).
pub const MAX_PARTS: usize = 1 << 16;

/// The most rows (columns, nodes) an input holding `entries` entries may declare:
/// [`MAX_ROWS_WITHOUT_ENTRIES`] plus [`MAX_ROWS_PER_ENTRY`] per entry.
pub(crate) fn max_rows(entries: usize) -> usize {
    MAX_ROWS_WITHOUT_ENTRIES.saturating_add(entries.saturating_mul(MAX_ROWS_PER_ENTRY))
}

/// Refuses, with [`Error::TooLarge`] naming `what`, a declared count past [`max_rows`] of the
/// `entries` its input holds.
pub(crate) fn check_declared(what: &'static str, value: usize, entries: usize) -> Result<()> {
    let limit = max_rows(entries);
    if value > limit {
        return Err(Error::TooLarge { what, value, limit });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_grows_with_the_entries_and_saturates() {
        assert_eq!(max_rows(0), 1 << 24);
        assert_eq!(max_rows(3), (1 << 24) + 24);
        assert_eq!(max_rows(usize::MAX), usize::MAX);
        assert!(check_declared("the row count", 1 << 24, 0).is_ok());
        let e = check_declared("the row count", (1 << 24) + 9, 1).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the row count", value, limit } if value == limit + 1));
    }
}
