//! Tier 3, device data: the [`Gpu`] (context, stream, the kernels' module and entry table), every
//! buffer the crate allocates, the device form of each format with the kernels' argument views of
//! it, the data of the CSR strategies that cut rows (and of SpMM's split of long rows), the buffers of a CSR matrix's transpose, and
//! the dense matrices of the products with several vectors. Nothing here launches a kernel or
//! chooses one; it imports only the host formats and the crate's errors and scalars.

mod brc;
mod column_panels;
mod compressed;
mod compressed_ell;
mod coo;
mod csr;
mod dense;
mod dense_blocks;
mod dia;
mod ell;
mod gather;
mod gpu;
mod graph;
mod hyb;
mod kernels;
mod lma;
mod long_rows;
mod memory;
mod merge_path;
mod peer;
mod ranks;
mod row_tasks;
mod sell;
mod stream_windows;
mod transpose;
mod vector;

pub use brc::DeviceBrc;
pub(crate) use column_panels::{DeviceColumnPanels, PanelLayout, panel_count};
pub(crate) use compressed::CompressedColumns;
pub use compressed::DeviceCompressed;
pub use compressed_ell::DeviceCompressedEll;
pub use coo::DeviceCoo;
pub use csr::DeviceCsr;
pub(crate) use csr::EllCopy;
pub use dense::{DeviceDense, Layout};
pub use dense_blocks::DeviceDenseBlocks;
pub use dia::DeviceDia;
pub use ell::DeviceEll;
pub(crate) use gather::{DeviceGather, DeviceScatter};
pub use gpu::Gpu;
pub(crate) use gpu::Sibling;
pub use graph::Graph;
pub use hyb::DeviceHyb;
pub use lma::DeviceLma;
pub(crate) use long_rows::SpmmScratch;
pub(crate) use memory::{addr, nonnegative_as_u32};
pub(crate) use peer::PeerAccess;
pub use ranks::{Member, Ranks, UniqueId};
pub use sell::DeviceSell;
pub(crate) use transpose::{BuiltTranspose, TransposeBuffers};
pub(crate) use vector::sealed::{Operand, OperandMut};
pub use vector::{DeviceVector, VectorMut, VectorRef};
