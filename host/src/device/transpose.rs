//! The buffers of the transpose's construction on the device (`kernels-gpu/src/transpose/build.rs`
//! describes it): the scratch of the radix sort, freed when the construction ends but for the final
//! permutation, and the arrays of `Aᵀ`, which become a [`DeviceCsr`]; the permutation stays with it
//! ([`BuiltTranspose`]), so that new values of `A` reach `Aᵀ` by one gather.

use super::memory::addr;
use super::{DeviceCsr, Gpu};
use crate::Result;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::DevicePtr as AbiPtr;

/// `Aᵀ` as built, with `sources`: the entry of `A` that each entry of `Aᵀ` copies.
#[derive(Debug)]
pub(crate) struct BuiltTranspose<T> {
    pub csr: DeviceCsr<T>,
    /// `nnz` indices into `A`'s values (the buffer below; its address for the gather).
    pub sources: AbiPtr<u32>,
    sources_buffer: CudaSlice<u32>,
}

impl<T: Scalar> BuiltTranspose<T> {
    pub fn device_bytes(&self) -> usize {
        self.csr.device_bytes() + self.sources_buffer.len() * 4
    }
}

/// The construction's buffers for a matrix of `nnz` entries and `ncols` columns.
#[derive(Debug)]
pub(crate) struct TransposeBuffers<T> {
    entry_rows: CudaSlice<u32>,
    keys: [CudaSlice<u32>; 2],
    perm: [CudaSlice<u32>; 2],
    counts: CudaSlice<u32>,
    row_offsets: CudaSlice<u32>,
    col_indices: CudaSlice<u32>,
    values: CudaSlice<T>,
    ncols: usize,
}

/// The kernels' view of [`TransposeBuffers`]: addresses valid while the buffers live.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TransposeAddrs<T> {
    /// `nnz` elements: each entry's row of `A`.
    pub entry_rows: AbiPtr<u32>,
    /// Two buffers of `nnz` sort keys, ping-ponged between radix passes.
    pub keys: [AbiPtr<u32>; 2],
    /// Two buffers of `nnz` entry indices, ping-ponged with the keys.
    pub perm: [AbiPtr<u32>; 2],
    /// `RADIX_DIGITS * tiles` per-tile digit counts.
    pub counts: AbiPtr<u32>,
    /// `ncols + 1`: the row offsets of `Aᵀ`.
    pub row_offsets: AbiPtr<u32>,
    /// `nnz`: the column indices of `Aᵀ` (rows of `A`).
    pub col_indices: AbiPtr<u32>,
    /// `nnz`: the values of `Aᵀ`.
    pub values: AbiPtr<T>,
}

impl<T: Scalar> TransposeBuffers<T> {
    /// Allocates the buffers: `5 nnz + counts` `u32`s of scratch beside `Aᵀ`'s own arrays.
    pub fn alloc(gpu: &Gpu, nnz: usize, ncols: usize, counts: usize) -> Result<Self> {
        Ok(Self {
            entry_rows: gpu.alloc_zeros(nnz)?,
            keys: [gpu.alloc_zeros(nnz)?, gpu.alloc_zeros(nnz)?],
            perm: [gpu.alloc_zeros(nnz)?, gpu.alloc_zeros(nnz)?],
            counts: gpu.alloc_zeros(counts)?,
            row_offsets: gpu.alloc_zeros(ncols + 1)?,
            col_indices: gpu.alloc_zeros(nnz)?,
            values: gpu.alloc_zeros(nnz)?,
            ncols,
        })
    }

    pub fn addrs(&self, gpu: &Gpu) -> TransposeAddrs<T> {
        TransposeAddrs {
            entry_rows: addr(&self.entry_rows, gpu),
            keys: [addr(&self.keys[0], gpu), addr(&self.keys[1], gpu)],
            perm: [addr(&self.perm[0], gpu), addr(&self.perm[1], gpu)],
            counts: addr(&self.counts, gpu),
            row_offsets: addr(&self.row_offsets, gpu),
            col_indices: addr(&self.col_indices, gpu),
            values: addr(&self.values, gpu),
        }
    }

    /// `Aᵀ`, once the construction's launches are enqueued, for a matrix `A` of `nrows` rows, with
    /// `perm[last_perm]`, the permutation the last radix pass wrote: waits for the launches to copy
    /// `Aᵀ`'s row offsets to the host (its statistics, and the strategies that cut rows, read them
    /// there), and frees the rest of the scratch.
    pub fn finish(self, gpu: &Gpu, nrows: usize, last_perm: usize) -> Result<BuiltTranspose<T>> {
        let host_offsets = gpu.stream().clone_dtoh(&self.row_offsets)?;
        debug_assert_eq!(host_offsets.len(), self.ncols + 1);
        let [first, second] = self.perm;
        let sources_buffer = if last_perm == 0 { first } else { second };
        let indices = [self.row_offsets, self.col_indices];
        let rows = narrow("the row count of the transpose", self.ncols)?;
        let csr = DeviceCsr::from_device_parts(gpu, (rows, nrows), host_offsets, indices, self.values);
        Ok(BuiltTranspose { csr, sources: addr(&sources_buffer, gpu), sources_buffer })
    }
}
