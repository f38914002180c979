//! The data of the column-panel CSR kernel (`kernels-gpu/src/csr/panels.rs`, whose doc describes
//! the scheme): its layout (panels of `x`, row groups balanced by entries, both from the row offsets
//! and the GPU), its panel table (filled on the device by `spmv_csr_panels_table`, which the enqueue
//! tier launches, since only the device holds the column indices) and its scratch of partial sums.
//! Owned by the plan, not the matrix: the panel width is the plan's parameter, and each width has a
//! table of its own.

use super::Gpu;
use super::memory::addr;
use crate::formats::convert::narrow;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::CsrPanelArgs;

/// The shape of a column-panel product: how many panels cover the columns and where the row groups
/// start, with the lengths of the arrays they need, checked before anything is allocated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PanelLayout {
    pub ncols: u32,
    pub panel_cols: u32,
    /// At least 1, so that a matrix without columns still has a (empty) panel and its rows a sum.
    pub panels: u32,
    /// `groups + 1` ascending rows, from 0 to the row count.
    pub group_rows: Vec<u32>,
    /// `rows * (panels + 1)`: the table's length.
    pub table_len: usize,
    /// `rows * panels`: the scratch's length.
    pub partials_len: usize,
}

impl PanelLayout {
    /// The layout of a matrix of row offsets `offsets` (valid CSR offsets) and `ncols` columns, in
    /// panels of `panel_cols` columns (at least 1), with about `groups` row groups (at least 1, at
    /// most the row count).
    ///
    /// Refused with [`Error::TooLarge`] when the table's `rows * (panels + 1)` entries do not fit
    /// the kernels' 32-bit indices: the kernel then has a table larger than the matrix's entries
    /// would reasonably allow, and is the wrong strategy anyway.
    pub fn new(offsets: &[u32], ncols: u32, panel_cols: u32, groups: u32) -> Result<Self> {
        let rows = offsets.len().saturating_sub(1);
        let panels = panel_count(ncols, panel_cols);
        let table_len = rows.checked_mul(panels as usize + 1).filter(|&len| len <= u32::MAX as usize).ok_or(
            Error::TooLarge {
                what: "the column-panel table (rows x (panels + 1))",
                value: rows.saturating_mul(panels as usize + 1),
                limit: u32::MAX as usize,
            },
        )?;
        let partials_len = rows * panels as usize;
        Ok(Self {
            ncols,
            panel_cols,
            panels,
            group_rows: row_groups(offsets, groups)?,
            table_len,
            partials_len,
        })
    }

    /// How many row groups there are.
    pub fn groups(&self) -> u32 {
        // `group_rows` has at most `rows + 1` elements, and the rows fit a u32.
        u32::try_from(self.group_rows.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }
}

/// Panels of `panel_cols` columns (at least 1) that cover `ncols` columns: at least one, so that a
/// matrix without columns still gives each row a (zero) sum.
pub(crate) fn panel_count(ncols: u32, panel_cols: u32) -> u32 {
    ncols.div_ceil(panel_cols.max(1)).max(1)
}

/// The first row of each of at most `groups` row groups of about equal entries, then the row count:
/// group `g` starts at the first row whose entries start at or after `g * nnz / groups`. Boundaries
/// that meet (a row longer than a group's share) are merged, so no group is empty; a matrix without
/// rows has no group, and one without entries a single group of all its rows.
pub(crate) fn row_groups(offsets: &[u32], groups: u32) -> Result<Vec<u32>> {
    let rows = offsets.len().saturating_sub(1);
    let nnz = u64::from(offsets.last().copied().unwrap_or(0));
    let groups = u64::from(groups.max(1));
    let mut starts = vec![0u32];
    if rows == 0 {
        return Ok(starts);
    }
    for g in 1..groups {
        let share = g * nnz / groups;
        // The first row whose entries start at or after `share`, at most the last row.
        let row = offsets[..rows].partition_point(|&o| u64::from(o) < share);
        let row = narrow("a row", row)?;
        if row < narrow("the row count", rows)? && starts.last() != Some(&row) {
            starts.push(row);
        }
    }
    starts.push(narrow("the row count", rows)?);
    Ok(starts)
}

/// The column panels of one matrix on the device, for one plan: the table (written by the table
/// launch the enqueue tier makes right after this is allocated), the row groups and the scratch.
///
/// Public only as a field of the public plan type; nothing outside the crate can name or use it.
#[derive(Debug)]
pub struct DeviceColumnPanels<T> {
    // Held so that they live as long as the plan; the kernels reach them through `args` alone.
    _table: CudaSlice<u32>,
    _group_rows: CudaSlice<u32>,
    _partials: CudaSlice<T>,
    args: CsrPanelArgs<T>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> DeviceColumnPanels<T> {
    /// Allocates the table and scratch of `layout` and uploads its row groups.
    pub(crate) fn alloc(gpu: &Gpu, layout: &PanelLayout) -> Result<Self> {
        let table = gpu.alloc_zeros::<u32>(layout.table_len)?;
        let group_rows = gpu.upload(&layout.group_rows)?;
        let partials = gpu.alloc_zeros::<T>(layout.partials_len)?;
        let args = CsrPanelArgs {
            ncols: layout.ncols,
            panel_cols: layout.panel_cols,
            panels: layout.panels,
            groups: layout.groups(),
            table: addr(&table, gpu),
            group_rows: addr(&group_rows, gpu),
            partials: addr(&partials, gpu),
        };
        Ok(Self { _table: table, _group_rows: group_rows, _partials: partials, args })
    }

    /// The kernels' view.
    pub(crate) fn args(&self) -> CsrPanelArgs<T> {
        self.args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_groups_split_the_entries_evenly() {
        // Four rows of 10 entries: two groups of two rows, four of one.
        let offsets = [0, 10, 20, 30, 40];
        assert_eq!(row_groups(&offsets, 1).unwrap(), vec![0, 4]);
        assert_eq!(row_groups(&offsets, 2).unwrap(), vec![0, 2, 4]);
        assert_eq!(row_groups(&offsets, 4).unwrap(), vec![0, 1, 2, 3, 4]);
        // More groups than rows: one row each, no empty group.
        assert_eq!(row_groups(&offsets, 9).unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn row_groups_merge_around_a_long_row() {
        // Row 1 holds 100 of 103 entries: the three boundaries inside it meet at row 2.
        let offsets = [0, 1, 101, 102, 103];
        assert_eq!(row_groups(&offsets, 4).unwrap(), vec![0, 2, 4]);
        // Empty rows and no entries at all: one group of every row.
        assert_eq!(row_groups(&[0, 0, 0, 0], 3).unwrap(), vec![0, 3]);
        assert_eq!(row_groups(&[0], 3).unwrap(), vec![0]);
    }

    #[test]
    fn every_row_lies_in_exactly_one_group() {
        let offsets: Vec<u32> = (0..=97u32).map(|r| r * r / 3).collect();
        for groups in [1, 2, 3, 7, 50, 96, 97, 200] {
            let starts = row_groups(&offsets, groups).unwrap();
            assert_eq!(starts[0], 0);
            assert_eq!(*starts.last().unwrap(), 97);
            assert!(starts.windows(2).all(|w| w[0] < w[1]), "{groups}: {starts:?}");
            assert!(starts.len() - 1 <= groups as usize);
        }
    }

    #[test]
    fn layouts_cover_the_columns() {
        let offsets = [0, 3, 5];
        for (ncols, panels) in [(0, 1), (1, 1), (99, 1), (100, 1), (101, 2), (307, 4)] {
            let layout = PanelLayout::new(&offsets, ncols, 100, 1).unwrap();
            assert_eq!(layout.panels, panels, "{ncols}");
            assert_eq!(layout.table_len, 2 * (panels as usize + 1));
            assert_eq!(layout.partials_len, 2 * panels as usize);
            assert!(u64::from(layout.panels) * 100 >= u64::from(ncols));
        }
        // No rows: nothing to allocate, no group.
        let empty = PanelLayout::new(&[0], 500, 100, 4).unwrap();
        assert_eq!((empty.table_len, empty.partials_len, empty.groups()), (0, 0, 0));
    }

    #[test]
    fn a_table_past_32_bit_indices_is_refused() {
        // 2^20 rows and 2^12 panels of one column: over 2^32 table entries.
        let offsets = vec![0u32; (1 << 20) + 1];
        let refused = PanelLayout::new(&offsets, 1 << 12, 1, 1);
        assert!(matches!(refused, Err(Error::TooLarge { .. })), "{refused:?}");
    }
}
