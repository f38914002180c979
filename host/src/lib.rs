//! Sparse matrix-vector products `y = alpha * A * x + beta * y` on NVIDIA GPUs, with every kernel
//! written in Rust (crate `kernels-gpu`, compiled to PTX by rustc's nvptx64 backend).
//!
//! ```no_run
//! use gpu_spmv::{Gpu, Kernel};
//! use nalgebra_sparse::{CooMatrix, CsrMatrix};
//!
//! # fn main() -> Result<(), gpu_spmv::Error> {
//! let mut coo = CooMatrix::new(3, 3);
//! coo.push(0, 0, 2.0f32);
//! coo.push(1, 2, 1.0);
//! coo.push(2, 1, -1.0);
//! let a = CsrMatrix::from(&coo);
//!
//! let gpu = Gpu::new()?;
//! let a = gpu.upload_csr(&a)?;
//! let x = gpu.upload_vector(&[1.0f32, 2.0, 3.0])?;
//! let mut y = gpu.zeros::<f32>(3)?;
//! gpu.spmv(1.0, &a, &x, 0.0, &mut y)?; // Kernel::Auto
//! let vector = gpu.plan(&a, Kernel::CsrVector { coop: 4, block_size: 128 })?;
//! vector.spmv(2.0, &x, 1.0, &mut y)?; // a plan: prepared once, for many products
//! assert_eq!(y.to_host(&gpu)?, vec![6.0, 9.0, -6.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Products are enqueued on the [`Gpu`]'s stream and return at once: no allocation, no host
//! synchronisation. Reading a vector back ([`DeviceVector::to_host`]) waits for them. Every argument
//! is checked before anything is launched, so an error leaves `y` as it was.
//!
//! The crate is built in layers, each importing only from those below it (`docs/ARCHITECTURE.md`):
//! host formats ([`formats`], [`io`], [`reference`](mod@reference)) → device data (`device`: the [`Gpu`], buffers,
//! device matrices) → enqueue (`enqueue`: [`DeviceMatrix`], [`Plan`], the launches) → choice by
//! measurement and solvers ([`select`], [`tune`], [`solve`]) → several GPUs ([`distributed`]) → this
//! facade.
//!
//! The two crates of its public API are re-exported, [`nalgebra_sparse`] (the matrices it takes) and
//! [`cudarc`] (streams and buffers, for interoperation), so that a user names the versions this
//! crate was built with: `gpu_spmv::nalgebra_sparse::CsrMatrix`.

// Sizes cross into the kernels' 32-bit indices: every narrowing must be a checked conversion.
#![warn(clippy::cast_possible_truncation)]
// On docs.rs (nightly, `--cfg docsrs`): each item behind a feature is marked with it.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use cudarc;
pub use nalgebra_sparse;

mod error;
mod iterative;
mod scalar;

pub mod formats;
pub mod io;
pub mod reference;

mod device;

mod enqueue;

pub mod select;
pub mod solve;
pub mod tune;

pub mod distributed;

/// The transposed product `y = alpha * Aᵀ * x + beta * y` of a [`DeviceCsr`]:
/// [`DeviceCsr::transposed`] gives the view, a [`DeviceMatrix`] that [`Gpu::spmv`] and [`Gpu::plan`]
/// take with its strategy [`transpose::TransposeKernel`].
pub mod transpose {
    pub use crate::enqueue::{TransposeKernel, Transposed};
}

/// Products with several vectors, `Y = alpha * A * X + beta * Y` for a [`DeviceCsr`] and dense
/// [`spmm::DeviceDense`] matrices: [`Gpu::spmm`], or [`Gpu::plan_spmm`] for many products.
pub mod spmm {
    pub use crate::device::{DeviceDense, Layout};
    pub use crate::enqueue::{SpmmKernel, SpmmPlan};
}

pub use device::{
    DeviceBrc, DeviceCompressed, DeviceCompressedEll, DeviceCoo, DeviceCsr, DeviceDenseBlocks, DeviceDia,
    DeviceEll, DeviceHyb, DeviceLma, DeviceSell, DeviceVector, Gpu, Graph, VectorMut, VectorRef,
};
pub use enqueue::{
    BrcCombine, CompressedKernel, CooAssembly, CooKernel, DeviceMatrix, FromDeviceError, HotLaunch, Kernel,
    LmaKernel, Plan, Regime, probe,
};

/// The rule [`Kernel::Auto`] stands for: a decision tree fitted to measurements per [`Regime`], over
/// features of the matrix and the GPU ([`Kernel::auto_for`]).
pub mod rule {
    pub use crate::enqueue::{
        AUTO_MIN_FILL, AUTO_PANEL_BLOCK_SIZE, COLD_RULE, COMPRESSED_COPY_MAX_COLUMN_BYTES,
        DIA_COPY_MAX_BYTES, ELL_COPY_MAX_PADDING, ELL_COPY_MAX_ROW, ELL_COPY_MIN_L2, Feature, Features,
        GRAPH_RULE, HOT_RULE, Node, PANELS_BENCH_MIN_SEGMENT, PANELS_MIN_BLOCKS_PER_SM, PANELS_MIN_SEGMENT,
        PANELS_MIN_X_L2, Rule, Target, auto_panel_kib, compressed_copy_term, dia_copy_term, ell_copy_term,
        panels_term, panels_timed, resolve_leaf, rule_for, width_kernel,
    };
}
pub use error::{CsrError, Error, FormatError, Result};
pub use formats::{CsrRef, RowStats, Shape};
pub use scalar::{Precision, Scalar};
