//! The PTX entries of the formats beyond CSR, for one element type.

use crate::Result;
use cudarc::driver::{CudaFunction, CudaModule};
use std::sync::Arc;

/// Looked up once when the module loads, like the CSR entries of `KernelTable`.
#[derive(Debug)]
pub(crate) struct FormatKernels {
    pub ell: CudaFunction,
    pub coo_atomic: CudaFunction,
    pub coo_segmented: CudaFunction,
    pub brc_atomic: CudaFunction,
    pub brc_partials: CudaFunction,
    pub brc_prescale: CudaFunction,
    pub brc_combine: CudaFunction,
    pub dense_blocks: CudaFunction,
}

impl FormatKernels {
    /// The entries whose names end in `_{ty}`.
    pub(super) fn load(module: &Arc<CudaModule>, ty: &str) -> Result<Self> {
        let entry = |name: &str| module.load_function(&format!("spmv_{name}_{ty}"));
        Ok(Self {
            ell: entry("ell")?,
            coo_atomic: entry("coo_atomic")?,
            coo_segmented: entry("coo_segmented")?,
            brc_atomic: entry("brc_atomic")?,
            brc_partials: entry("brc_partials")?,
            brc_prescale: entry("brc_prescale")?,
            brc_combine: entry("brc_combine")?,
            dense_blocks: entry("dense_blocks")?,
        })
    }
}
