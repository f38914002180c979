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
//! gpu.spmv_with(Kernel::CsrVector { coop: 4, block_size: 128 }, 2.0, &a, &x, 1.0, &mut y)?;
//! assert_eq!(y.to_host(&gpu)?, vec![6.0, 9.0, -6.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Products are enqueued on the [`Gpu`]'s stream and return at once: no allocation, no host
//! synchronisation, one launch. Reading a vector back ([`DeviceVector::to_host`]) waits for them.
//! Every argument is checked before anything is launched, so an error leaves `y` as it was.

// Sizes cross into the kernels' 32-bit indices: every narrowing must be a checked conversion.
#![warn(clippy::cast_possible_truncation)]

mod device;
mod error;
pub mod formats;
pub mod io;
mod launch;
mod operator;
mod plan;
pub mod probe;
pub mod reference;
mod rule;
mod scalar;
mod select;
mod spmv;
mod tune;

pub use device::{
    BrcCombine, CooKernel, DeviceBrc, DeviceCoo, DeviceCsr, DeviceDenseBlocks, DeviceEll, DeviceHyb,
    DeviceVector, Gpu,
};
pub use error::{CsrError, Error, FormatError};
pub use formats::brc::{Brc, brc_b2_candidates, brc_model_b2};
pub use formats::coo::Coo;
pub use formats::csr::{CsrRef, RowStats};
pub use formats::dense_blocks::{
    DENSE_MAX_WINDOW_BYTES, DENSE_MIN_CAPTURE, DENSE_WINDOW, DENSE_WINDOW_ALIGN, DenseBlocks,
};
pub use formats::ell::{ELL_MAX_PADDING_RATIO, Ell};
pub use formats::hyb::{HYB_BREAKEVEN_ROWS, HYB_ELL_SPEEDUP, Hyb, hyb_ell_width};
pub use operator::DeviceMatrix;
pub use plan::{BALANCED_MAX_BLOCK_SIZE, Kernel};
pub use scalar::{Precision, Scalar};
pub use select::{
    AutoFormat, AutoMatrix, FormatCost, MIN_PLANNED_PRODUCTS, Outcome, PLAN_TIMED_PRODUCTS,
    PLAN_WARMUP_PRODUCTS, Reason, Selection, Trial, break_even_products, cheapest_format, could_pay_off,
};
pub use tune::TunedSpmv;

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
