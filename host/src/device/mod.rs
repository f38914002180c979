//! The GPU side: context and module ([`Gpu`]), and data uploaded to it.

mod brc;
mod context;
mod coo;
mod dense_blocks;
mod ell;
mod format_kernels;
mod hyb;
mod long_rows;
mod row_tasks;
mod upload;

pub use brc::{BrcCombine, DeviceBrc};
pub use context::Gpu;
pub use coo::{CooKernel, DeviceCoo};
pub use dense_blocks::DeviceDenseBlocks;
pub use ell::DeviceEll;
pub use hyb::DeviceHyb;
pub use upload::{DeviceCsr, DeviceVector};
