//! HYB (Bell & Garland, NVIDIA TR 2008, section 4.5): the first `K` entries of every row in ELL, the
//! rest in COO, so that a few long rows do not pad every row. Its product is the ELL product followed
//! by the accumulating COO product, on one stream.

use super::coo::Coo;
use super::ell::{Ell, check_padding};
use super::shape::Shape;
use crate::Result;
use crate::formats::convert::{canonical_csr, check_u32_dims};
use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use nalgebra_sparse::CsrMatrix;

/// How much faster ELL is than COO per entry, in the model that picks `K`: a column of ELL slots
/// pays for its padding while at least 1 / `HYB_ELL_SPEEDUP` of the rows fill it. Bell & Garland's
/// value (cusp's `relative_speed`, chosen on a GTX 280).
pub const HYB_ELL_SPEEDUP: usize = 3;

/// The fewest rows that must fill a column of ELL slots for it to beat COO, whatever the fraction:
/// below it the ELL kernel has too few threads to be faster. Bell & Garland's value (cusp's
/// `breakeven_threshold`).
pub const HYB_BREAKEVEN_ROWS: usize = 4096;

/// The ELL width `K` of Bell & Garland's model for rows described by CSR offsets: the largest `K` such
/// that at least `max(HYB_BREAKEVEN_ROWS, ceil(rows / HYB_ELL_SPEEDUP))` rows have `K` entries or
/// more (0 when there are fewer rows than that). Offsets that decrease (not CSR) give a width of no
/// use but no panic: a decrease counts as an empty row. Takes one `usize` per row of memory.
pub fn hyb_ell_width(row_offsets: &[usize]) -> usize {
    let mut lengths: Vec<usize> = row_offsets.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    let threshold = HYB_BREAKEVEN_ROWS.max(lengths.len().div_ceil(HYB_ELL_SPEEDUP));
    if lengths.len() < threshold {
        return 0;
    }
    // The threshold-th longest row: exactly the rows at least this long number `threshold` or more.
    let (_, &mut k, _) = lengths.select_nth_unstable_by(threshold - 1, |a, b| b.cmp(a));
    k
}

/// A HYB matrix: an [`Ell`] part of width `K` and a [`Coo`] part with the entries past `K`.
#[derive(Debug, Clone)]
pub struct Hyb<T> {
    ell: Ell<T>,
    coo: Coo<T>,
}

impl<T: Scalar> Hyb<T> {
    /// Converts `a` with the ELL width of [`hyb_ell_width`]; refused with [`crate::Error::TooLarge`]
    /// when a dimension or the entry count does not fit 32 bits, before the row lengths are read.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        Self::try_from_csr_with_width(a, hyb_ell_width(a.row_offsets()))
    }

    /// Converts `a` with an ELL part of `width` slots per row (at most the longest row); refused
    /// like [`Ell::try_from_csr`] when those slots take too much memory (the error gives the width
    /// and, apart, the longest row).
    pub fn try_from_csr_with_width(a: CsrRef<'_, T>, width: usize) -> Result<Self> {
        check_u32_dims(&a)?;
        let width = width.min(a.stats().max);
        check_padding(&a, width)?;
        Ok(Self { ell: Ell::truncated(a, width), coo: Coo::beyond(a, width) })
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.ell.nrows(), ncols: self.ell.ncols(), nnz: self.ell.nnz() + self.coo.nnz() }
    }

    crate::formats::shape_accessors!();

    /// The first `K` entries of every row.
    pub fn ell(&self) -> &Ell<T> {
        &self.ell
    }

    /// The entries past the first `K` of every row.
    pub fn coo(&self) -> &Coo<T> {
        &self.coo
    }

    /// The entries as a CSR matrix, sorted, with repeated positions summed.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut entries = self.ell.entries();
        entries.extend(self.coo.entries());
        canonical_csr(self.nrows(), self.ncols(), entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(lengths: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut offsets = vec![0];
        for len in lengths {
            offsets.push(offsets[offsets.len() - 1] + len);
        }
        offsets
    }

    #[test]
    fn width_follows_bell_and_garland() {
        let rows = |runs: &[(usize, usize)]| {
            offsets(runs.iter().flat_map(|&(count, len)| std::iter::repeat_n(len, count)))
        };
        // Too few rows for ELL to pay off at all.
        assert_eq!(hyb_ell_width(&rows(&[(4095, 10)])), 0);
        assert_eq!(hyb_ell_width(&[0]), 0);
        // Uniform rows: all of them go to ELL.
        assert_eq!(hyb_ell_width(&rows(&[(5000, 7)])), 7);
        // 30000 rows: a third (10000) must reach K. 9000 rows of 50, 2000 of 20, 19000 of 3:
        // 11000 rows have 20 or more, so K = 20.
        assert_eq!(hyb_ell_width(&rows(&[(9000, 50), (2000, 20), (19000, 3)])), 20);
        // 6000 rows, 4096 of them with 5 entries: the breakeven count decides, not the third.
        assert_eq!(hyb_ell_width(&rows(&[(4096, 5), (1904, 1)])), 5);
        assert_eq!(hyb_ell_width(&rows(&[(4095, 5), (1905, 1)])), 1);
    }
}
