//! The PTX entries the host launches, looked up once when the module loads, by the names of
//! `kernels_gpu::abi`'s tables (the kernels export exactly those; a test below checks the PTX).

use crate::Result;
use crate::scalar::{Precision, Scalar};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaModule};
use kernels_gpu::abi::{self, Entry, STREAM_BLOCK_SIZE, STREAM_STAGES, StreamStage};
use std::sync::Arc;

/// The entries of one element type. Generic over what an entry is looked up as: a [`CudaFunction`]
/// when the module loads, its name in the test that compares the table with the PTX.
#[derive(Debug)]
pub(crate) struct KernelTable<F = CudaFunction> {
    pub csr_scalar: F,
    /// Indexed like `abi::CSR_VECTOR_COOPS`.
    pub csr_vector: Vec<F>,
    /// Indexed like `abi::CSR_ALIGNED_GROUPS`; x through the read-only data cache.
    pub csr_aligned_nc: Vec<F>,
    /// Indexed like `abi::CSR_ALIGNED_GROUPS`; x with plain global loads.
    pub csr_aligned_plain: Vec<F>,
    /// Indexed like `abi::CSR_PARAM_COOPS`.
    pub csr_param: Vec<F>,
    pub csr_balanced: F,
    pub csr_merge: F,
    pub csr_merge_fixup: F,
    pub scale: F,
    pub gather: F,
    pub scatter_add: F,
    pub ell: F,
    pub coo_atomic: F,
    pub coo_segmented: F,
    pub brc_partials: F,
    pub brc_combine: F,
    pub brc_prescale: F,
    pub brc_atomic: F,
    pub dense_blocks: F,
    /// Indexed like `abi::LMA_NODES_PER_ELEMENT`.
    pub lma_atomic: Vec<F>,
    /// Indexed like `abi::LMA_NODES_PER_ELEMENT`.
    pub lma_colour: Vec<F>,
    pub cg: CgKernels<F>,
    pub krylov: KrylovKernels<F>,
    /// Indexed like `abi::CSRT_ATOMIC_COOPS`.
    pub csrt_atomic: Vec<F>,
    pub csrt_build_gather: F,
    pub coo_assemble_sum: F,
    /// Indexed like `abi::SPMM_ROW_MAJOR_WIDTHS`.
    pub spmm_row_major: Vec<F>,
    /// Indexed like `abi::SPMM_COL_MAJOR_COOPS`.
    pub spmm_col_major: Vec<F>,
    pub spmm_long_rows: F,
    pub spmm_scale: F,
    pub compressed: CompressedKernels<F>,
}

/// The compressed-index kernels of one product type, one family per storage type of the values,
/// each indexed like `abi::COMPRESSED_COOPS`.
#[derive(Debug)]
pub(crate) struct CompressedKernels<F = CudaFunction> {
    /// Values in the product's type.
    pub full: Vec<F>,
    /// Values in f32: for f32 products the same entries as `full`.
    pub f32: Vec<F>,
    pub f16: Vec<F>,
    pub bf16: Vec<F>,
}

/// The kernels of the transpose's construction that do not depend on the element type
/// (`kernels-gpu/src/transpose/build.rs`).
#[derive(Debug)]
pub(crate) struct TransposeBuild<F = CudaFunction> {
    pub init: F,
    pub histogram: F,
    pub scatter: F,
    pub scan: F,
    pub offsets: F,
}

impl<F> TransposeBuild<F> {
    fn load<E>(
        mut lookup: impl FnMut(&'static str) -> std::result::Result<F, E>,
    ) -> std::result::Result<Self, E> {
        Ok(Self {
            init: lookup(abi::CSRT_BUILD_INIT)?,
            histogram: lookup(abi::CSRT_BUILD_HISTOGRAM)?,
            scatter: lookup(abi::CSRT_BUILD_SCATTER)?,
            scan: lookup(abi::CSRT_BUILD_SCAN)?,
            offsets: lookup(abi::CSRT_BUILD_OFFSETS)?,
        })
    }
}

/// The kernels of a CSR matrix's assembly from COO triples that do not depend on the element type
/// (`kernels-gpu/src/assemble.rs`); its sort, scan and row offsets are [`TransposeBuild`]'s.
#[derive(Debug)]
pub(crate) struct CooAssemble<F = CudaFunction> {
    pub iota: F,
    pub keys: F,
    pub heads: F,
    pub compact: F,
}

impl<F> CooAssemble<F> {
    fn load<E>(
        mut lookup: impl FnMut(&'static str) -> std::result::Result<F, E>,
    ) -> std::result::Result<Self, E> {
        Ok(Self {
            iota: lookup(abi::COO_ASSEMBLE_IOTA)?,
            keys: lookup(abi::COO_ASSEMBLE_KEYS)?,
            heads: lookup(abi::COO_ASSEMBLE_HEADS)?,
            compact: lookup(abi::COO_ASSEMBLE_COMPACT)?,
        })
    }
}

/// The check of CSR index arrays on the device, one entry per index type
/// (`kernels-gpu/src/check.rs`).
#[derive(Debug)]
pub(crate) struct CheckKernels<F = CudaFunction> {
    pub u32: F,
    pub i32: F,
}

impl<F> CheckKernels<F> {
    fn load<E>(
        mut lookup: impl FnMut(&'static str) -> std::result::Result<F, E>,
    ) -> std::result::Result<Self, E> {
        Ok(Self { u32: lookup(abi::CSR_CHECK_U32)?, i32: lookup(abi::CSR_CHECK_I32)? })
    }
}

/// The conjugate-gradient kernels of one element type (`kernels-gpu/src/cg.rs`).
#[derive(Debug)]
pub(crate) struct CgKernels<F = CudaFunction> {
    pub init_plain: F,
    pub init_jacobi: F,
    pub iterate_plain: F,
    pub iterate_jacobi: F,
    pub step_plain: F,
    pub step_jacobi: F,
    pub init_plain_local: F,
    pub init_jacobi_local: F,
    pub pq_local: F,
    pub update_plain_local: F,
    pub update_jacobi_local: F,
    pub finish_init: F,
    pub finish_pq: F,
    pub finish_update_plain: F,
    pub finish_update_jacobi: F,
}

/// The Krylov solvers' kernels of one element type (`kernels-gpu/src/krylov.rs`).
#[derive(Debug)]
pub(crate) struct KrylovKernels<F = CudaFunction> {
    pub vector: F,
    pub dots: F,
    pub basis_dots: F,
    pub basis_combine: F,
    pub scalars: F,
    /// Block-Jacobi's apply (`kernels-gpu/src/block_jacobi.rs`).
    pub block_jacobi: F,
    /// ILU(0)'s triangular solves, a level a launch (`kernels-gpu/src/ilu.rs`).
    pub ilu_lower: F,
    pub ilu_upper: F,
}

impl<F> KernelTable<F> {
    /// Looks up every entry for the element type whose name `pick` takes from an [`Entry`].
    fn load<E>(
        pick: fn(&Entry) -> &'static str,
        mut lookup: impl FnMut(&'static str) -> std::result::Result<F, E>,
    ) -> std::result::Result<Self, E> {
        let mut all = |entries: &[Entry]| {
            entries.iter().map(|e| lookup(pick(e))).collect::<std::result::Result<Vec<F>, E>>()
        };
        Ok(Self {
            csr_vector: all(&abi::CSR_VECTOR)?,
            csr_aligned_nc: all(&abi::CSR_ALIGNED_NC)?,
            csr_aligned_plain: all(&abi::CSR_ALIGNED_PLAIN)?,
            csr_param: all(&abi::CSR_PARAM)?,
            lma_atomic: all(&abi::LMA_ATOMIC)?,
            lma_colour: all(&abi::LMA_COLOUR)?,
            csrt_atomic: all(&abi::CSRT_ATOMIC)?,
            spmm_row_major: all(&abi::SPMM_ROW_MAJOR)?,
            spmm_col_major: all(&abi::SPMM_COL_MAJOR)?,
            compressed: CompressedKernels {
                full: all(&abi::COMPRESSED)?,
                f32: all(&abi::COMPRESSED_F32)?,
                f16: all(&abi::COMPRESSED_F16)?,
                bf16: all(&abi::COMPRESSED_BF16)?,
            },
            csrt_build_gather: lookup(pick(&abi::CSRT_BUILD_GATHER))?,
            coo_assemble_sum: lookup(pick(&abi::COO_ASSEMBLE_SUM))?,
            spmm_long_rows: lookup(pick(&abi::SPMM_LONG_ROWS))?,
            spmm_scale: lookup(pick(&abi::SPMM_SCALE))?,
            csr_scalar: lookup(pick(&abi::CSR_SCALAR))?,
            csr_balanced: lookup(pick(&abi::CSR_BALANCED))?,
            csr_merge: lookup(pick(&abi::CSR_MERGE))?,
            csr_merge_fixup: lookup(pick(&abi::CSR_MERGE_FIXUP))?,
            scale: lookup(pick(&abi::SCALE))?,
            gather: lookup(pick(&abi::DIST_GATHER))?,
            scatter_add: lookup(pick(&abi::DIST_SCATTER_ADD))?,
            ell: lookup(pick(&abi::ELL))?,
            coo_atomic: lookup(pick(&abi::COO_ATOMIC))?,
            coo_segmented: lookup(pick(&abi::COO_SEGMENTED))?,
            brc_partials: lookup(pick(&abi::BRC_PARTIALS))?,
            brc_combine: lookup(pick(&abi::BRC_COMBINE))?,
            brc_prescale: lookup(pick(&abi::BRC_PRESCALE))?,
            brc_atomic: lookup(pick(&abi::BRC_ATOMIC))?,
            dense_blocks: lookup(pick(&abi::DENSE_BLOCKS))?,
            cg: CgKernels {
                init_plain: lookup(pick(&abi::CG_INIT_PLAIN))?,
                init_jacobi: lookup(pick(&abi::CG_INIT_JACOBI))?,
                iterate_plain: lookup(pick(&abi::CG_ITERATE_PLAIN))?,
                iterate_jacobi: lookup(pick(&abi::CG_ITERATE_JACOBI))?,
                step_plain: lookup(pick(&abi::CG_STEP_PLAIN))?,
                step_jacobi: lookup(pick(&abi::CG_STEP_JACOBI))?,
                init_plain_local: lookup(pick(&abi::CG_INIT_PLAIN_LOCAL))?,
                init_jacobi_local: lookup(pick(&abi::CG_INIT_JACOBI_LOCAL))?,
                pq_local: lookup(pick(&abi::CG_PQ_LOCAL))?,
                update_plain_local: lookup(pick(&abi::CG_UPDATE_PLAIN_LOCAL))?,
                update_jacobi_local: lookup(pick(&abi::CG_UPDATE_JACOBI_LOCAL))?,
                finish_init: lookup(pick(&abi::CG_FINISH_INIT))?,
                finish_pq: lookup(pick(&abi::CG_FINISH_PQ))?,
                finish_update_plain: lookup(pick(&abi::CG_FINISH_UPDATE_PLAIN))?,
                finish_update_jacobi: lookup(pick(&abi::CG_FINISH_UPDATE_JACOBI))?,
            },
            krylov: KrylovKernels {
                vector: lookup(pick(&abi::KRYLOV_VECTOR))?,
                dots: lookup(pick(&abi::KRYLOV_DOTS))?,
                basis_dots: lookup(pick(&abi::KRYLOV_BASIS_DOTS))?,
                basis_combine: lookup(pick(&abi::KRYLOV_BASIS_COMBINE))?,
                scalars: lookup(pick(&abi::KRYLOV_SCALARS))?,
                block_jacobi: lookup(pick(&abi::BLOCK_JACOBI))?,
                ilu_lower: lookup(pick(&abi::ILU_LOWER))?,
                ilu_upper: lookup(pick(&abi::ILU_UPPER))?,
            },
        })
    }
}

/// The streaming engine's entry of one element type, from the sm_90 module, with the launch facts
/// the driver knows: it takes more than the 48 KiB of shared memory a block gets without opting in.
#[derive(Debug)]
pub(crate) struct StreamKernel {
    pub csr: CudaFunction,
    /// Blocks of `csr` an SM holds at once (shared memory and registers allow), at least 1, for each
    /// ring depth of `abi::STREAM_STAGES`, in its order.
    pub blocks_per_sm: [u32; STREAM_STAGES.len()],
}

/// The sm_90 module's entries (`kernels-gpu/src/stream/`), both element types.
#[derive(Debug)]
pub(crate) struct StreamKernels {
    f32: StreamKernel,
    f64: StreamKernel,
}

impl StreamKernels {
    /// Looks the entries up and opts each into its deepest ring's shared memory.
    pub fn load(module: &Arc<CudaModule>) -> Result<Self> {
        let load = |name: &'static str, elem: u32| -> Result<StreamKernel> {
            let csr = module.load_function(name)?;
            let deepest = STREAM_STAGES.iter().copied().max().unwrap_or(1);
            // A ring is tens of KiB: it fits an i32.
            let bytes = i32::try_from(StreamStage::block_bytes(elem, deepest)).unwrap_or(i32::MAX);
            csr.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)?;
            let mut blocks_per_sm = [1; STREAM_STAGES.len()];
            for (blocks, &stages) in blocks_per_sm.iter_mut().zip(&STREAM_STAGES) {
                let bytes = StreamStage::block_bytes(elem, stages) as usize;
                *blocks = csr
                    .occupancy_max_active_blocks_per_multiprocessor(STREAM_BLOCK_SIZE, bytes, None)?
                    .max(1);
            }
            Ok(StreamKernel { csr, blocks_per_sm })
        };
        Ok(Self { f32: load(abi::CSR_STREAM.f32, 4)?, f64: load(abi::CSR_STREAM.f64, 8)? })
    }

    pub fn of<T: Scalar>(&self) -> &StreamKernel {
        match T::PRECISION {
            Precision::Single => &self.f32,
            Precision::Double => &self.f64,
        }
    }
}

/// The entries of both element types.
#[derive(Debug)]
pub(crate) struct Kernels {
    f32: KernelTable,
    f64: KernelTable,
    transpose_build: TransposeBuild,
    coo_assemble: CooAssemble,
    check: CheckKernels,
}

impl Kernels {
    pub fn load(module: &Arc<CudaModule>) -> Result<Self> {
        Ok(Self {
            f32: KernelTable::load(|e| e.f32, |name| module.load_function(name))?,
            f64: KernelTable::load(|e| e.f64, |name| module.load_function(name))?,
            transpose_build: TransposeBuild::load(|name| module.load_function(name))?,
            coo_assemble: CooAssemble::load(|name| module.load_function(name))?,
            check: CheckKernels::load(|name| module.load_function(name))?,
        })
    }

    pub fn transpose_build(&self) -> &TransposeBuild {
        &self.transpose_build
    }

    pub fn coo_assemble(&self) -> &CooAssemble {
        &self.coo_assemble
    }

    pub fn check(&self) -> &CheckKernels {
        &self.check
    }

    pub fn of<T: Scalar>(&self) -> &KernelTable {
        match T::PRECISION {
            Precision::Single => &self.f32,
            Precision::Double => &self.f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::gpu::{PTX, PTX_SM90};
    use std::collections::BTreeSet;

    /// Every name in the table, both element types.
    fn table_names() -> BTreeSet<&'static str> {
        let mut names = BTreeSet::new();
        for pick in [(|e: &Entry| e.f32) as fn(&Entry) -> &'static str, |e: &Entry| e.f64] {
            KernelTable::load(pick, |name| {
                names.insert(name);
                Ok::<_, ()>(())
            })
            .unwrap();
        }
        TransposeBuild::load(|name| {
            names.insert(name);
            Ok::<_, ()>(())
        })
        .unwrap();
        CooAssemble::load(|name| {
            names.insert(name);
            Ok::<_, ()>(())
        })
        .unwrap();
        CheckKernels::load(|name| {
            names.insert(name);
            Ok::<_, ()>(())
        })
        .unwrap();
        names
    }

    /// The `.entry` names of a committed PTX module.
    fn ptx_entries(ptx: &'static str) -> BTreeSet<&'static str> {
        ptx.lines()
            .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
            .map(|rest| rest.split('(').next().unwrap_or(rest).trim())
            .collect()
    }

    /// A name the host looks up that the kernels do not export would fail only at `Gpu::new`, and a
    /// kernel no table names is dead code: both are caught here, without a GPU.
    #[test]
    fn the_tables_name_every_ptx_entry_and_nothing_else() {
        let mut host = table_names();
        host.insert(abi::PROBE_STREAM_READ);
        let ptx = ptx_entries(PTX);
        assert!(ptx.len() > 40, "no entries parsed from the PTX: {ptx:?}");
        let missing: Vec<_> = host.difference(&ptx).collect();
        let unused: Vec<_> = ptx.difference(&host).collect();
        assert!(missing.is_empty(), "looked up but not in the PTX: {missing:?}");
        assert!(unused.is_empty(), "in the PTX but looked up by no table: {unused:?}");
    }

    /// The sm_90 module exports the streaming engine's entries and nothing else.
    #[test]
    fn the_sm90_module_exports_the_stream_entries() {
        let expected: BTreeSet<_> = [abi::CSR_STREAM.f32, abi::CSR_STREAM.f64].into();
        assert_eq!(ptx_entries(PTX_SM90), expected);
    }
}
