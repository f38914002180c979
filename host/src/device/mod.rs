//! Tier 3, device data: the [`Gpu`] (context, stream, the kernels' module and entry table), every
//! buffer the crate allocates, the device form of each format with the kernels' argument views of
//! it, the data of the CSR strategies that cut rows, the buffers of a CSR matrix's transpose, and
//! the dense matrices of the products with several vectors. Nothing here launches a kernel or
//! chooses one; it imports only the host formats and the crate's errors and scalars.

mod brc;
mod coo;
mod csr;
mod dense;
mod dense_blocks;
mod ell;
mod gpu;
mod graph;
mod hyb;
mod kernels;
mod lma;
mod long_rows;
mod memory;
mod merge_path;
mod row_tasks;
mod transpose;
mod vector;

pub use brc::DeviceBrc;
pub use coo::DeviceCoo;
pub use csr::DeviceCsr;
pub use dense::{DeviceDense, Layout};
pub use dense_blocks::DeviceDenseBlocks;
pub use ell::DeviceEll;
pub use gpu::Gpu;
pub use graph::Graph;
pub use hyb::DeviceHyb;
pub use lma::DeviceLma;
pub(crate) use memory::addr;
pub(crate) use transpose::TransposeBuffers;
pub(crate) use vector::sealed::{Operand, OperandMut};
pub use vector::{DeviceVector, VectorMut, VectorRef};
