//! The plan of the column-panel kernel ([`Kernel::CsrPanels`](super::Kernel::CsrPanels);
//! `kernels-gpu/src/csr/panels.rs`): the panel width checked against the GPU's shared memory, the
//! row groups sized from the GPU's occupancy, the panel table built on the device (enqueued with
//! the plan, never waited for: rows whose columns decrease get no panel segments and are summed
//! whole by the combine), and the two launches of each product.

use super::CsrLaunch;
use crate::device::{DeviceColumnPanels, DeviceCsr, Gpu, PanelLayout, panel_count};
use crate::enqueue::launch::{Prepared, launch, unset_axpby};
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use kernels_gpu::abi::{
    self as abi, CSR_PANELS_AUX_BLOCK_SIZE, CSR_PANELS_COOPS, CsrPanelTableParams, CsrPanelsParams,
    MAX_GRID_X, WARP_SIZE, csr_panel_cols,
};

/// The launches of a column-panel product and the data they point to, which they own.
#[derive(Debug)]
pub struct PanelLaunches<T> {
    pub(super) tiles: Prepared<CsrPanelsParams<T>>,
    pub(super) combine: Prepared<CsrPanelsParams<T>>,
    // Held so that the table and scratch live as long as the launches that point to them.
    _data: DeviceColumnPanels<T>,
}

/// Row groups per block's share of a panel, about: each block's contiguous range of (panel, row
/// group) items holds this many times the groups of its share, so that the ranges, cut at group
/// boundaries, differ from the even share by at most one group in this many.
const PANELS_FINE_GROUPS: u64 = 16;

/// Shared memory a block gets without opting in, on every GPU since Volta.
const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

/// Prepares the column-panel product of `a` with panels of `panel_kib` KiB and blocks of
/// `block_size` threads (both checked by `Kernel::check`): builds the plan's table and scratch.
///
/// Refused with [`Error::InvalidKernel`] where the GPU gives a block less shared memory than the
/// panel or cannot hold one such block on an SM, and with
/// [`Error::TooLarge`] where the table's `rows x (panels + 1)` entries pass 32-bit indices.
pub(super) fn prepare<T: Scalar>(
    a: &DeviceCsr<T>,
    gpu: &Gpu,
    panel_kib: u32,
    block_size: u32,
) -> Result<CsrLaunch<T>> {
    let elem = element_bytes::<T>();
    let shared = panel_kib * 1024;
    let optin =
        gpu.context().attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    let optin = u32::try_from(optin).unwrap_or(0).max(DEFAULT_SHARED_BYTES);
    if shared > optin {
        return Err(Error::InvalidKernel(format!(
            "panel_kib {panel_kib}: this GPU gives a block at most {} KiB of shared memory",
            optin / 1024
        )));
    }
    let nnz = a.nnz();
    let ncols = narrow("the column count", a.ncols())?;
    let panel_cols = csr_panel_cols(panel_kib, elem);
    let panels = panel_count(ncols, panel_cols);
    let mean_segment = nnz as f64 / (a.nrows().max(1) as f64 * f64::from(panels));
    let coop = panels_coop(mean_segment);
    let f =
        gpu.kernel::<T>(abi::CSR_PANELS[CSR_PANELS_COOPS.iter().position(|&c| c == coop).unwrap_or(0)])?;
    if shared > DEFAULT_SHARED_BYTES {
        // The GPU's whole opt-in limit, whatever this plan's panel: the same value from every plan,
        // so that no plan lowers it below another's panel.
        let limit = i32::try_from(optin).unwrap_or(i32::MAX);
        f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, limit)?;
    }
    let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(block_size, shared as usize, None)?;
    if per_sm == 0 {
        return Err(Error::InvalidKernel(format!(
            "block size {block_size} with {panel_kib} KiB panels: no such block fits an SM of this GPU"
        )));
    }
    let resident = u64::from(gpu.sm_count()) * u64::from(per_sm);
    let blocks = panel_blocks(resident, panel_cols, nnz);
    let groups = row_group_count(blocks, panels, a.nrows());
    let layout = PanelLayout::new(a.host_offsets(), ncols, panel_cols, groups)?;
    let data = DeviceColumnPanels::<T>::alloc(gpu, &layout)?;
    let csr = a.args();
    // Enqueued, not waited for: the plan needs no answer from the device (a row whose columns
    // decrease is summed whole by the combine, see `kernels-gpu/src/csr/panels.rs`).
    build_table(gpu, csr, &data, panel_cols, panels)?;
    let params = CsrPanelsParams { a: csr, op: unset_axpby(), panels: data.args() };
    let items = u64::from(panels) * u64::from(layout.groups());
    let grid = u32::try_from(blocks.min(items).clamp(1, u64::from(MAX_GRID_X))).unwrap_or(MAX_GRID_X);
    // SAFETY: the table was built for this very matrix by the launch enqueued above on the same
    // stream, so each (row, panel) segment it gives holds columns of that panel (none for a row
    // whose columns decrease, which the combine sums whole); the
    // table, row groups and scratch are owned by the launch (`data`, moved into it below), and the
    // groups are at most the rows (`row_groups`), whose table `PanelLayout::new` kept within 32-bit
    // indices; the block is whole warps (`Kernel::check`) with the panel's shared memory, within
    // what the entry was opted into above; each block takes its contiguous range of the
    // `panels x groups` items, whatever the grid.
    let tiles = unsafe { Prepared::new(f, grid, block_size, shared, params) };
    let combine_f = gpu.kernel::<T>(abi::CSR_PANELS_COMBINE)?;
    // SAFETY: as above; a warp per row with a grid stride, enqueued after the panels' launch on the
    // same stream, so it reads every partial sum that launch wrote.
    let combine =
        unsafe { Prepared::new(combine_f, warp_grid(csr.rows), CSR_PANELS_AUX_BLOCK_SIZE, 0, params) };
    Ok(CsrLaunch::Panels(Box::new(PanelLaunches { tiles, combine, _data: data })))
}

/// Mean entries of a row's panel segment a lane of the column-panel kernel takes: the group is the
/// width of [`CSR_PANELS_COOPS`] nearest (as a ratio) to a lane per this many entries. Measured on
/// short-wide at the 48, 64 and 96 KiB panels in both precisions (H100, docs/PERF.md section 33):
/// the width nearest 2 entries a lane was the fastest in all six, e.g. f64 in 96 KiB panels (29
/// entries a segment) 88 µs at 16 lanes against 96 µs at 8; one lane-width narrower (3-7 entries
/// a lane) lost 13-22%, one wider (about 1 entry a lane) 6-16%. At 192 KiB the widths tied.
const PANELS_ENTRIES_PER_LANE: f64 = 2.0;

/// The group of [`CSR_PANELS_COOPS`] nearest to a lane per [`PANELS_ENTRIES_PER_LANE`] entries of
/// a row's mean segment; the narrowest for empty segments.
fn panels_coop(mean_segment: f64) -> u32 {
    let lanes = mean_segment / PANELS_ENTRIES_PER_LANE;
    // Empty (or not a number: no rows, columns or entries): the narrowest.
    if lanes.is_nan() || lanes <= 0.0 {
        return CSR_PANELS_COOPS[0];
    }
    let off_by = |coop: u32| (f64::from(coop) / lanes).ln().abs();
    CSR_PANELS_COOPS.iter().copied().min_by(|&a, &b| off_by(a).total_cmp(&off_by(b))).unwrap_or(WARP_SIZE)
}

/// Blocks of a product on a GPU that keeps `resident` blocks of it at once: all of them, each
/// taking an even share of the (panel, row) plane in one wave, but no more than leaves each block,
/// on average, at least as many entries as its panel has columns (else staging `x` would cost more
/// than the gathers it saves); at least one.
fn panel_blocks(resident: u64, panel_cols: u32, nnz: usize) -> u64 {
    let worth = nnz as u64 / u64::from(panel_cols.max(1));
    resident.min(worth).max(1)
}

/// Row groups for `blocks` blocks over `panels` panels of a matrix of `rows` rows: enough that a
/// block's share of the items, `panels * groups / blocks`, holds about [`PANELS_FINE_GROUPS`]
/// groups of each panel it touches; at least one, at most the rows.
fn row_group_count(blocks: u64, panels: u32, rows: usize) -> u32 {
    let per_panel = (PANELS_FINE_GROUPS * blocks).div_ceil(u64::from(panels.max(1)));
    let rows = u64::try_from(rows).unwrap_or(u64::MAX);
    u32::try_from(per_panel.max(PANELS_FINE_GROUPS).min(rows).max(1)).unwrap_or(u32::MAX)
}

/// A grid of a warp per row, [`CSR_PANELS_AUX_BLOCK_SIZE`] threads a block, within [`MAX_GRID_X`].
fn warp_grid(rows: u32) -> u32 {
    rows.div_ceil(CSR_PANELS_AUX_BLOCK_SIZE / WARP_SIZE).min(MAX_GRID_X)
}

/// Launches `spmv_csr_panels_table` over the matrix of `csr` into `data`'s table.
fn build_table<T: Scalar>(
    gpu: &Gpu,
    csr: abi::CsrArgs<T>,
    data: &DeviceColumnPanels<T>,
    panel_cols: u32,
    panels: u32,
) -> Result<()> {
    let params = CsrPanelTableParams {
        row_offsets: csr.row_offsets,
        col_indices: csr.col_indices,
        rows: csr.rows,
        panel_cols,
        panels,
        table: data.args().table,
    };
    let f = gpu.untyped_kernel(abi::CSR_PANELS_TABLE)?;
    // SAFETY: the offsets and columns are the matrix's (valid CSR); `data` was laid out for its rows
    // and these panels (`rows * (panels + 1)` table entries).
    unsafe { launch(gpu, f, warp_grid(csr.rows), CSR_PANELS_AUX_BLOCK_SIZE, 0, &params) }
}

/// Bytes of an element: 4 or 8.
fn element_bytes<T>() -> u32 {
    #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
    let bytes = size_of::<T>() as u32;
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fill_the_gpu_where_the_entries_allow() {
        // Short-wide in f64 at 64 KiB: 134 panels of 8,192 columns, 132 SMs x 3 blocks.
        let panel_cols = csr_panel_cols(64, 8);
        assert_eq!(panel_cols, 8_192);
        let panels = panel_count(1_092_610, panel_cols);
        assert_eq!(panels, 134);
        assert_eq!(panel_blocks(132 * 3, panel_cols, 11_300_000), 396);
        // A small matrix: as many blocks as it has panels' worth of entries, never none.
        assert_eq!(panel_blocks(396, panel_cols, 100_000), 12);
        assert_eq!(panel_blocks(396, panel_cols, 1_000), 1);
        assert_eq!(panel_blocks(0, panel_cols, 1_000_000), 1);
    }

    #[test]
    fn groups_give_each_block_many_of_its_panels_rows() {
        // 396 blocks over 134 panels: 48 groups a panel, 16 in each block's range of 6,432 items.
        assert_eq!(row_group_count(396, 134, 4_284), 48);
        assert_eq!(u64::from(134 * row_group_count(396, 134, 4_284)) / 396, 16);
        // One panel: the groups of all blocks; a few blocks over many panels: still 16 a panel.
        assert_eq!(row_group_count(396, 1, 1_000_000), 6_336);
        assert_eq!(row_group_count(2, 134, 4_284), 16);
        // Never more groups than rows, never none.
        assert_eq!(row_group_count(396, 1, 50), 50);
        assert_eq!(row_group_count(396, 134, 0), 1);
    }

    #[test]
    fn coop_is_nearest_two_entries_a_lane() {
        assert_eq!(panels_coop(0.0), 4);
        assert_eq!(panels_coop(f64::NAN), 4);
        assert_eq!(panels_coop(9.6), 4);
        // Short-wide's segments: f64 in 48, 64 and 96 KiB panels, f32 in 64 and 96 KiB.
        assert_eq!(panels_coop(14.5), 8);
        assert_eq!(panels_coop(19.2), 8);
        assert_eq!(panels_coop(28.8), 16);
        assert_eq!(panels_coop(38.5), 16);
        assert_eq!(panels_coop(57.4), 32);
        // The boundaries, at the geometric means of neighbouring widths: 2 * sqrt(4 * 8).
        assert_eq!(panels_coop(11.3), 4);
        assert_eq!(panels_coop(11.4), 8);
        assert_eq!(panels_coop(1e6), 32);
    }

    #[test]
    fn every_panel_width_is_whole_16_byte_units() {
        for kib in abi::CSR_PANEL_KIB {
            for elem in [4, 8] {
                assert_eq!(csr_panel_cols(kib, elem) * elem % 16, 0);
                assert_eq!(csr_panel_cols(kib, elem) % 4, 0);
            }
        }
    }
}
