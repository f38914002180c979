//! Tier 4, enqueue: a product on the device, checked once and launched. [`DeviceMatrix`] is what
//! every device format implements to enqueue itself: its strategy type (how its products can run),
//! a launch prepared once per [`Plan`], and the launches. [`Gpu::plan`] prepares, [`Plan::spmv`]
//! runs the one product path (`product::run`: the checks, the degenerate products, the format's
//! launches), and [`Gpu::spmv`] is a plan of the format's default strategy used once.
//!
//! The strategies that need only the matrix's statistics to choose (CSR's [`Kernel::Auto`] and
//! Reguly & Giles' fixed rule, `csr/rule.rs`) live with the kernels they choose from; choices that
//! measure (the tuner, the format planner) are the layer above. Imports only the layers below.

mod assemble;
pub(crate) mod cg;
mod compressed;
mod csr;
mod formats;
mod from_device;
mod gather;
pub(crate) mod ilu_factor;
pub(crate) mod krylov;
mod launch;
mod plan;
pub mod probe;
mod product;
mod replay;
mod spmm;
mod transpose;
mod update;

pub use assemble::CooAssembly;
pub use compressed::CompressedKernel;
pub(crate) use csr::auto_per_row;
pub use csr::{
    AUTO_MIN_FILL, AUTO_PANEL_BLOCK_SIZE, COLD_RULE, COMPRESSED_COPY_MAX_COLUMN_BYTES, DIA_COPY_MAX_BYTES,
    ELL_COPY_MAX_PADDING, ELL_COPY_MAX_ROW, ELL_COPY_MIN_L2, Feature, Features, GRAPH_RULE, HOT_RULE, Kernel,
    Node, PANELS_BENCH_MIN_SEGMENT, PANELS_MIN_BLOCKS_PER_SM, PANELS_MIN_SEGMENT, PANELS_MIN_X_L2, Rule,
    Target, auto_panel_kib, compressed_copy_term, dia_copy_term, ell_copy_term, panels_term, panels_timed,
    resolve_leaf, rule_for, width_kernel,
};
pub use formats::{BrcCombine, CooKernel, LmaKernel};
pub use from_device::FromDeviceError;
pub use plan::{Plan, Regime};
pub use replay::HotLaunch;
pub use spmm::{SpmmKernel, SpmmPlan};
pub use transpose::{TransposeKernel, Transposed};

use crate::Result;
use crate::device::Gpu;
use crate::formats::Shape;
use crate::scalar::Scalar;
use std::fmt::Debug;

pub(crate) mod sealed {
    pub use super::product::Product;
    use super::*;

    /// The crate-private half of [`DeviceMatrix`]: it cannot be named outside the crate, so no other
    /// type implements it, and its [`Enqueue::enqueue`] takes a [`Product`], which only the checked
    /// product path makes.
    pub trait Enqueue<T: Scalar> {
        /// How the format's products can run: [`Kernel`] for CSR, [`CooKernel`] for COO (and for
        /// the COO part of HYB and dense blocks), [`BrcCombine`] for BRC, [`LmaKernel`] for the
        /// local matrix approach, [`CompressedKernel`] for compressed column indices, `()` for ELL,
        /// compressed ELL, DIA and SELL.
        /// The default is what [`Gpu::spmv`] uses.
        type Kernel: Copy + Debug + Default + PartialEq;

        /// A product's launches, prepared once: the resolved kernel's entries, grids and argument
        /// structs, pointing into the matrix's buffers.
        type Launch: Debug;

        /// Whether every buffer of the matrix lives in `gpu`'s context.
        fn belongs_to(&self, gpu: &Gpu) -> bool;

        /// How many times the matrix's values were replaced since it was made
        /// ([`DeviceCsr::values_generation`](crate::DeviceCsr::values_generation)): what holds data
        /// derived from them compares it with the count it was derived at. Formats whose values
        /// cannot be replaced keep 0.
        fn values_generation(&self) -> u64 {
            0
        }

        /// Checks `kernel`, resolves it (a CSR `Kernel::Auto` becomes its choice), builds the data
        /// the strategy needs if the matrix has none yet, and prepares the launches.
        fn prepare(&self, gpu: &Gpu, kernel: Self::Kernel) -> Result<(Self::Kernel, Self::Launch)>;

        /// Enqueues the product `p` with the launches `prepare` made for this matrix.
        fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()>;
    }
}

/// A matrix on the device in one of the crate's formats: CSR ([`DeviceCsr`](crate::DeviceCsr)),
/// ELL, SELL, COO, HYB, BRC, dense blocks, compressed column indices
/// ([`DeviceCompressed`](crate::DeviceCompressed)), compressed ELL
/// ([`DeviceCompressedEll`](crate::DeviceCompressedEll)), DIA ([`DeviceDia`](crate::DeviceDia)), or
/// the planner's
/// [`AutoMatrix`](crate::select::AutoMatrix).
/// [`Gpu::spmv`] and [`Gpu::plan`] take any of them; every product returns `y` in the caller's row
/// order, whatever order the format keeps its rows in. Sealed: implemented by this crate's device
/// types only. Each type's doc says its strategy type (`Kernel`) and its launches.
///
/// ```no_run
/// use gpu_spmv::formats::{Brc, brc_model_b2};
/// use gpu_spmv::{BrcCombine, CsrRef, Gpu};
/// use nalgebra_sparse::{CooMatrix, CsrMatrix};
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// let mut coo = CooMatrix::new(2, 3);
/// coo.push(0, 0, 2.0f64);
/// coo.push(1, 2, -1.0);
/// let csr = CsrMatrix::from(&coo);
/// let a = CsrRef::from(&csr);
///
/// let gpu = Gpu::new()?;
/// let brc = gpu.upload_brc(&Brc::try_from_csr(a, brc_model_b2(&a.stats(), gpu.sm_count()))?)?;
/// let x = gpu.upload_vector(&[1.0, 2.0, 3.0])?;
/// let mut y = gpu.zeros::<f64>(2)?;
/// gpu.spmv(1.0, &brc, &x, 0.0, &mut y)?; // BrcCombine::Deterministic, the default
/// gpu.spmv_with(BrcCombine::Atomic, 1.0, &brc, &x, 1.0, &mut y)?;
/// assert_eq!(y.to_host(&gpu)?, vec![4.0, -6.0]);
/// # Ok(())
/// # }
/// ```
pub trait DeviceMatrix<T: Scalar>: sealed::Enqueue<T> {
    /// Its rows, columns and entries (those of the matrix it was built from, padding not counted).
    fn shape(&self) -> Shape;

    fn nrows(&self) -> usize {
        self.shape().nrows
    }

    fn ncols(&self) -> usize {
        self.shape().ncols
    }

    /// Entries of the matrix it was built from (padding not counted).
    fn nnz(&self) -> usize {
        self.shape().nnz
    }
}
