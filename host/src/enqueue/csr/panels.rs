//! The plan of the column-panel kernel ([`Kernel::CsrPanels`](super::Kernel::CsrPanels);
//! `kernels-gpu/src/csr/panels.rs`): the panel width checked against the GPU's shared memory, the
//! row groups sized from the GPU's occupancy, the panel table built on the device (refusing rows
//! whose columns decrease), and the two launches of each product.

use super::CsrLaunch;
use crate::device::{DeviceColumnPanels, DeviceCsr, Gpu, PanelLayout, panel_count};
use crate::enqueue::launch::{Prepared, launch, unset_axpby};
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use kernels_gpu::abi::{
    self as abi, CSR_PANELS_AUX_BLOCK_SIZE, CSR_PANELS_COOPS, CSR_PANELS_STEPS, CsrPanelTableParams,
    CsrPanelsParams, MAX_GRID_X, WARP_SIZE, csr_panel_cols,
};

/// The launches of a column-panel product and the data they point to, which they own.
#[derive(Debug)]
pub struct PanelLaunches<T> {
    pub(super) tiles: Prepared<CsrPanelsParams<T>>,
    pub(super) combine: Prepared<CsrPanelsParams<T>>,
    // Held so that the table and scratch live as long as the launches that point to them.
    _data: DeviceColumnPanels<T>,
}

/// Waves of blocks a product's (panel, row group) items make at most: two, so that a block that
/// runs long (a panel where the group's rows are denser) has a second wave to hide behind, while the
/// panels of `x` staged per product stay at two GPU-fulls of shared memory (26 MB on an H100, against
/// the 90 MB of short-wide's arrays in f32).
const PANELS_WAVES: u64 = 2;

/// Shared memory a block gets without opting in, on every GPU since Volta.
const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

/// Prepares the column-panel product of `a` with panels of `panel_kib` KiB and blocks of
/// `block_size` threads (both checked by `Kernel::check`): builds the plan's table and scratch.
///
/// Refused with [`Error::InvalidKernel`] where the GPU gives a block less shared memory than the
/// panel or cannot hold one such block on an SM, with [`Error::UnsortedRow`] where a row's column
/// indices decrease (the panel's entries of a row would not be one run), and with
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
    let groups = row_group_count(resident, panels, panel_cols, nnz);
    let layout = PanelLayout::new(a.host_offsets(), ncols, panel_cols, groups)?;
    let data = DeviceColumnPanels::<T>::alloc(gpu, &layout)?;
    let csr = a.args();
    build_table(gpu, csr, &data, panel_cols, panels)?;
    if let Some(row) = data.unsorted_row(gpu)? {
        return Err(Error::UnsortedRow { kernel: "the column-panel kernel (Kernel::CsrPanels)", row });
    }
    let params = CsrPanelsParams { a: csr, op: unset_axpby(), panels: data.args() };
    let items = u64::from(panels) * u64::from(layout.groups());
    let grid = u32::try_from(items.min(u64::from(MAX_GRID_X))).unwrap_or(MAX_GRID_X);
    // SAFETY: the table was built for this very matrix, whose columns the table launch found
    // non-decreasing in every row, so each (row, panel) segment's columns lie in its panel; the
    // table, row groups and scratch are owned by the launch (`data`, moved into it below); the block
    // is whole warps (`Kernel::check`) with the panel's shared memory, within what the entry was
    // opted into above; the grid walks the `panels x groups` items with a stride.
    let tiles = unsafe { Prepared::new(f, grid, block_size, shared, params) };
    let combine_f = gpu.kernel::<T>(abi::CSR_PANELS_COMBINE)?;
    // SAFETY: as above; a warp per row with a grid stride, enqueued after the panels' launch on the
    // same stream, so it reads every partial sum that launch wrote.
    let combine =
        unsafe { Prepared::new(combine_f, warp_grid(csr.rows), CSR_PANELS_AUX_BLOCK_SIZE, 0, params) };
    Ok(CsrLaunch::Panels(Box::new(PanelLaunches { tiles, combine, _data: data })))
}

/// The narrowest group of [`CSR_PANELS_COOPS`] whose lanes' [`CSR_PANELS_STEPS`] loads cover a row's
/// mean entries in a panel, so that few lanes idle on short segments and long ones take one round.
fn panels_coop(mean_segment: f64) -> u32 {
    CSR_PANELS_COOPS
        .iter()
        .copied()
        .find(|&coop| f64::from(coop * CSR_PANELS_STEPS) >= mean_segment)
        .unwrap_or(WARP_SIZE)
}

/// Row groups for `panels` panels of `panel_cols` columns, on a GPU that keeps `resident` blocks
/// at once: enough that the items fill [`PANELS_WAVES`] waves, but no more than leaves each block,
/// on average, at least as many entries as its panel has columns (else staging `x` would cost more
/// than the gathers it saves); at least one.
fn row_group_count(resident: u64, panels: u32, panel_cols: u32, nnz: usize) -> u32 {
    let fill = (PANELS_WAVES * resident).div_ceil(u64::from(panels));
    let worth = nnz as u64 / (u64::from(panels) * u64::from(panel_cols));
    u32::try_from(fill.min(worth).max(1)).unwrap_or(u32::MAX)
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
        unsorted: data.unsorted_ptr(gpu),
    };
    let f = gpu.untyped_kernel(abi::CSR_PANELS_TABLE)?;
    // SAFETY: the offsets and columns are the matrix's (valid CSR); `data` was laid out for its rows
    // and these panels (`rows * (panels + 1)` table entries) and holds the one `unsorted` word.
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
    fn groups_are_as_wide_as_the_entries_allow() {
        // Short-wide in f32 at 48 KiB: 89 panels of 12,288 columns, 132 SMs x 4 blocks.
        let panel_cols = csr_panel_cols(48, 4);
        assert_eq!(panel_cols, 12_288);
        let panels = panel_count(1_092_610, panel_cols);
        assert_eq!(panels, 89);
        // Two waves would ask for 12 groups; 11.3 M entries give each block its panel's worth at 10.
        assert_eq!(row_group_count(132 * 4, panels, panel_cols, 11_300_000), 10);
        // A small matrix: one group, never none.
        assert_eq!(row_group_count(528, panels, panel_cols, 1000), 1);
        assert_eq!(row_group_count(528, 1, 16, 1_000_000), 1056);
    }

    #[test]
    fn coop_covers_the_mean_segment() {
        assert_eq!(panels_coop(0.0), 4);
        assert_eq!(panels_coop(16.0), 4);
        assert_eq!(panels_coop(16.5), 8);
        assert_eq!(panels_coop(29.6), 8);
        assert_eq!(panels_coop(64.0), 16);
        assert_eq!(panels_coop(114.0), 32);
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
