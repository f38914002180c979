//! The key table: every configuration the bench runs, with the short key reports and `--only` use.

use crate::cusparse::Algorithm;
use crate::formats::Format;
use gpu_spmv::reference::CpuKernel;
use gpu_spmv::rule::{AUTO_PANEL_BLOCK_SIZE, panels_timed};
use gpu_spmv::{Kernel, RowStats};

/// Who computes a product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// One of the library's kernels.
    Ours(Kernel),
    /// The baseline.
    Cusparse(Algorithm),
    /// A CPU kernel of the library.
    Cpu(CpuKernel),
    /// A storage format of the library beyond CSR.
    Format(Format),
}

impl Variant {
    /// The short, stable name of the variant in tables, JSON and plots.
    pub fn key(&self) -> String {
        match self {
            Variant::Ours(kernel) => kernel.to_string(),
            Variant::Cusparse(alg) => alg.name().to_owned(),
            Variant::Cpu(CpuKernel::Serial) => "cpu-serial".into(),
            Variant::Cpu(CpuKernel::Rayon) => "cpu-rayon".into(),
            Variant::Cpu(CpuKernel::Chunked { chunk_cols }) => format!("cpu-chunked-{chunk_cols}"),
            Variant::Format(format) => format.key(),
        }
    }

    pub fn family(&self) -> &'static str {
        match self {
            Variant::Ours(_) => "gpu-spmv",
            Variant::Cusparse(_) => "cuSPARSE",
            Variant::Cpu(_) => "CPU",
            Variant::Format(_) => "format",
        }
    }
}

/// Threads per block the aligned kernel is compared at (Baskaran & Bordawekar's range).
const ALIGNED_BLOCK_SIZES: [u32; 4] = [64, 128, 256, 512];

/// Threads per block the balanced kernel is compared at: Auto's 128, and twice that.
const BALANCED_BLOCK_SIZES: [u32; 2] = [128, 256];

/// Threads per block the merge-path kernel is compared at: Auto's 128, and twice that.
const MERGE_BLOCK_SIZES: [u32; 2] = [128, 256];

/// The library's GPU kernels the bench times on every matrix: Auto, thread per row, every cooperative
/// width, the aligned kernel at every group, x path and block size, the balanced kernel, the
/// merge-path kernel and, on a GPU that has it, the streaming engine. The paper's fixed rule (with
/// and without the long-row split), the tuner and the exhaustive search over the parametrised kernel
/// are added per matrix (`run`).
pub fn gpu_kernels(stream_engine: bool) -> Vec<Kernel> {
    let mut kernels = vec![Kernel::Auto, Kernel::CsrScalar { block_size: 128 }];
    kernels.extend(Kernel::VECTOR_COOPS.map(|coop| Kernel::CsrVector { coop, block_size: 128 }));
    for group in Kernel::ALIGNED_GROUPS {
        for cached_x in [true, false] {
            kernels.extend(ALIGNED_BLOCK_SIZES.map(|block_size| Kernel::CsrAligned {
                group,
                cached_x,
                block_size,
            }));
        }
    }
    kernels.extend(BALANCED_BLOCK_SIZES.map(|block_size| Kernel::CsrBalanced { block_size }));
    kernels.extend(MERGE_BLOCK_SIZES.map(|block_size| Kernel::CsrMerge { block_size }));
    if stream_engine {
        kernels.extend(Kernel::STREAM_STAGES.map(|stages| Kernel::CsrStream { stages }));
    }
    kernels
}

/// The column-panel kernel at every panel size, at Auto's block size
/// ([`AUTO_PANEL_BLOCK_SIZE`]: 16 warps, so that even one block of the widest panel per SM keeps a
/// quarter of its warp slots busy), for a matrix of `stats` with values of `value_bytes` bytes
/// where [`panels_timed`] says so (its rows hold enough entries per panel of the smallest size on
/// average: the short-wide matrix 30 in f32, 15 in f64), else none. A size the GPU refuses is a
/// note of the run.
pub fn panel_kernels(stats: &RowStats, value_bytes: usize) -> Vec<Kernel> {
    if !panels_timed(stats, value_bytes) {
        return Vec::new();
    }
    Kernel::PANEL_KIB
        .map(|panel_kib| Kernel::CsrPanels { panel_kib, block_size: AUTO_PANEL_BLOCK_SIZE })
        .to_vec()
}

/// A parametrised kernel with long rows left to one group: what the split saves.
pub fn without_split(kernel: Kernel) -> Option<Kernel> {
    match kernel {
        Kernel::CsrParam { coop, repeat, block_size, split_long_rows: true } => {
            Some(Kernel::CsrParam { coop, repeat, block_size, split_long_rows: false })
        }
        _ => None,
    }
}
