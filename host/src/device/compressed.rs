//! A [`CompressedCsr`] on the device ([`DeviceCompressed`]), made by [`Gpu::upload_compressed`].

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::compressed::{CompressedCsr, ValueStorage, column_bytes};
use crate::formats::convert::narrow;
use crate::formats::csr::RowStats;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{CompressedArgs, CsrArgs};
use std::marker::PhantomData;

/// A CSR matrix of `T` with compressed column indices and values stored as `V` on the device. Its
/// product is one launch of `spmv_compressed_c<coop>_*`: `coop` threads per row, the summation
/// order of the cooperative CSR kernels.
#[derive(Debug)]
pub struct DeviceCompressed<T, V = T> {
    row_offsets: CudaSlice<u32>,
    segments: CudaSlice<u32>,
    deltas: CudaSlice<u16>,
    escapes: CudaSlice<u32>,
    values: CudaSlice<V>,
    stats: RowStats,
    max_rounding: f64,
    device_bytes: usize,
    args: CompressedArgs<V>,
    _matrix: PhantomData<fn() -> T>,
}

impl Gpu {
    /// Uploads a matrix with compressed column indices (its conversion checked every dimension).
    pub fn upload_compressed<T: Scalar, V: ValueStorage<T>>(
        &self,
        a: &CompressedCsr<T, V>,
    ) -> Result<DeviceCompressed<T, V>> {
        let row_offsets = self.upload(a.row_offsets())?;
        let segments = self.upload(a.segments())?;
        let deltas = self.upload(a.deltas())?;
        let escapes = self.upload(a.escapes())?;
        let values = self.upload(a.values())?;
        let args = CompressedArgs {
            row_offsets: addr(&row_offsets, self),
            segments: addr(&segments, self),
            deltas: addr(&deltas, self),
            escapes: addr(&escapes, self),
            values: addr(&values, self),
            rows: narrow("the row count", a.nrows())?,
        };
        Ok(DeviceCompressed {
            row_offsets,
            segments,
            deltas,
            escapes,
            values,
            stats: *a.stats(),
            max_rounding: a.max_rounding(),
            device_bytes: a.device_bytes(),
            args,
            _matrix: PhantomData,
        })
    }
}

impl<T: Scalar, V: ValueStorage<T>> DeviceCompressed<T, V> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.stats.rows, ncols: self.stats.cols, nnz: self.stats.nnz }
    }

    crate::formats::shape_accessors!();

    /// The row statistics of the matrix it was built from.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    /// The conversion's largest relative rounding of a value (see
    /// [`CompressedCsr::max_rounding`]).
    pub fn max_rounding(&self) -> f64 {
        self.max_rounding
    }

    /// The `nrows + 1` row offsets on the device.
    pub fn row_offsets(&self) -> &CudaSlice<u32> {
        &self.row_offsets
    }

    /// The two words per segment on the device (see [`CompressedCsr::segments`]).
    pub fn segments(&self) -> &CudaSlice<u32> {
        &self.segments
    }

    /// The 16-bit column offsets of the compressed segments on the device.
    pub fn deltas(&self) -> &CudaSlice<u16> {
        &self.deltas
    }

    /// The plain columns of the other segments on the device.
    pub fn escapes(&self) -> &CudaSlice<u32> {
        &self.escapes
    }

    /// The `nnz` values on the device, stored as `V`.
    pub fn values(&self) -> &CudaSlice<V> {
        &self.values
    }

    /// Bytes of the matrix on the device.
    pub fn device_bytes(&self) -> usize {
        self.device_bytes
    }

    pub(crate) fn args(&self) -> CompressedArgs<V> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.row_offsets.context())
    }
}

/// The column indices of a [`DeviceCsr`](crate::DeviceCsr) compressed as [`CompressedCsr`]
/// compresses them, built on the device (`Kernel::CsrCompressedCopy`, `enqueue/csr/compressed_copy.rs`):
/// the segment table, the 16-bit offsets and the plain columns. Its product reads the CSR matrix's
/// own row offsets and values, so the copy costs no more than its columns (about 2 bytes an entry
/// where they compress) and new values need no refresh.
#[derive(Debug)]
pub(crate) struct CompressedColumns<T> {
    segments: CudaSlice<u32>,
    deltas: CudaSlice<u16>,
    escapes: CudaSlice<u32>,
    args: CompressedArgs<T>,
}

impl<T: Copy> CompressedColumns<T> {
    /// The copy of the matrix `csr` describes, from its filled streams; `csr`'s arrays must outlive
    /// it (the matrix keeps it).
    pub(crate) fn from_device_parts(
        gpu: &Gpu,
        csr: CsrArgs<T>,
        segments: CudaSlice<u32>,
        deltas: CudaSlice<u16>,
        escapes: CudaSlice<u32>,
    ) -> Self {
        let args = CompressedArgs {
            row_offsets: csr.row_offsets,
            segments: addr(&segments, gpu),
            deltas: addr(&deltas, gpu),
            escapes: addr(&escapes, gpu),
            values: csr.values,
            rows: csr.rows,
        };
        Self { segments, deltas, escapes, args }
    }

    /// The compressed-index kernels' view: the copy's columns, the matrix's offsets and values.
    pub(crate) fn args(&self) -> CompressedArgs<T> {
        self.args
    }

    /// Bytes of the copy on the device (the columns alone).
    pub(crate) fn device_bytes(&self) -> usize {
        column_bytes(self.segments.len() / 2, self.deltas.len(), self.escapes.len())
    }
}
