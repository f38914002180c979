//! A [`CompressedEll`] on the device ([`DeviceCompressedEll`]), made by
//! [`Gpu::upload_compressed_ell`], or built from a CSR matrix on the device for
//! `Kernel::CsrEllCopy` (`enqueue/csr/ell_copy.rs`).

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::compressed::ValueStorage;
use crate::formats::compressed_ell::CompressedEll;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::CompressedEllArgs;
use std::marker::PhantomData;

/// An ELL matrix of `T` with 16-bit column offsets from the row and values stored as `V` on the
/// device. Its product is one launch of `spmv_compressed_ell_*`, a thread per row.
#[derive(Debug)]
pub struct DeviceCompressedEll<T, V = T> {
    deltas: CudaSlice<i16>,
    values: CudaSlice<V>,
    ncols: usize,
    nnz: usize,
    max_rounding: f64,
    args: CompressedEllArgs<V>,
    _matrix: PhantomData<fn() -> T>,
}

impl Gpu {
    /// Uploads a compressed ELL matrix (its conversion checked every dimension and offset).
    pub fn upload_compressed_ell<T: Scalar, V: ValueStorage<T>>(
        &self,
        a: &CompressedEll<T, V>,
    ) -> Result<DeviceCompressedEll<T, V>> {
        let shape = (narrow("the row count", a.nrows())?, narrow("the ELL width", a.width())?);
        let deltas = self.upload(a.deltas())?;
        let values = self.upload(a.values())?;
        let sizes = (a.ncols(), a.nnz());
        Ok(DeviceCompressedEll::from_device_parts(self, deltas, values, shape, sizes, a.max_rounding()))
    }
}

impl<T: Scalar, V: ValueStorage<T>> DeviceCompressedEll<T, V> {
    /// A compressed ELL matrix of `rows` rows of `width` slots over `deltas` and `values`
    /// (`rows * width` elements each), `ncols` columns and `nnz` entries, its values rounded by at
    /// most `max_rounding`, whose slots the caller has filled or fills on the stream before any
    /// product reads them.
    pub(crate) fn from_device_parts(
        gpu: &Gpu,
        deltas: CudaSlice<i16>,
        values: CudaSlice<V>,
        (rows, width): (u32, u32),
        (ncols, nnz): (usize, usize),
        max_rounding: f64,
    ) -> Self {
        let args = CompressedEllArgs { deltas: addr(&deltas, gpu), values: addr(&values, gpu), rows, width };
        DeviceCompressedEll { deltas, values, ncols, nnz, max_rounding, args, _matrix: PhantomData }
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.args.rows as usize, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// Slots per row.
    pub fn width(&self) -> usize {
        self.args.width as usize
    }

    /// The conversion's largest relative rounding of a value (see
    /// [`CompressedEll::max_rounding`]).
    pub fn max_rounding(&self) -> f64 {
        self.max_rounding
    }

    /// The `width * nrows` column offsets on the device.
    pub fn deltas(&self) -> &CudaSlice<i16> {
        &self.deltas
    }

    /// The `width * nrows` values on the device, stored as `V`.
    pub fn values(&self) -> &CudaSlice<V> {
        &self.values
    }

    /// Bytes of the matrix on the device, padding included.
    pub fn device_bytes(&self) -> usize {
        self.deltas.len() * 2 + self.values.len() * size_of::<V>()
    }

    pub(crate) fn args(&self) -> CompressedEllArgs<V> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.deltas.context())
    }
}
