//! ELL on the device ([`DeviceEll`]), made by [`Gpu::upload_ell`].

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::ell::Ell;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::EllArgs;

/// An [`Ell`] matrix on the device. Its product is one launch of `spmv_ell_*`, a thread per row.
#[derive(Debug)]
pub struct DeviceEll<T> {
    cols: CudaSlice<u32>,
    values: CudaSlice<T>,
    ncols: usize,
    nnz: usize,
    args: EllArgs<T>,
}

impl Gpu {
    /// Uploads an ELL matrix.
    pub fn upload_ell<T: Scalar>(&self, a: &Ell<T>) -> Result<DeviceEll<T>> {
        let rows = narrow("the row count", a.nrows())?;
        let width = narrow("the ELL width", a.width())?;
        let cols = self.upload(a.cols())?;
        let values = self.upload(a.values())?;
        let args = EllArgs { cols: addr(&cols, self), values: addr(&values, self), rows, width };
        Ok(DeviceEll { cols, values, ncols: a.ncols(), nnz: a.nnz(), args })
    }
}

impl<T: Scalar> DeviceEll<T> {
    /// An ELL matrix of `rows` rows of `width` slots over `cols` and `values` (`rows * width`
    /// elements each), `ncols` columns and `nnz` entries, whose slots the caller fills on the stream
    /// before any product reads them (the ELL copy of a CSR matrix, `enqueue/csr/ell_copy.rs`).
    pub(crate) fn from_device_parts(
        gpu: &Gpu,
        cols: CudaSlice<u32>,
        values: CudaSlice<T>,
        (rows, width): (u32, u32),
        (ncols, nnz): (usize, usize),
    ) -> Self {
        let args = EllArgs { cols: addr(&cols, gpu), values: addr(&values, gpu), rows, width };
        DeviceEll { cols, values, ncols, nnz, args }
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

    /// The `width * nrows` column indices on the device.
    pub fn cols(&self) -> &CudaSlice<u32> {
        &self.cols
    }

    /// The `width * nrows` values on the device.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
    }

    /// Bytes of the matrix on the device, padding included.
    pub fn device_bytes(&self) -> usize {
        self.cols.len() * 4 + self.values.len() * size_of::<T>()
    }

    pub(crate) fn args(&self) -> EllArgs<T> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }
}
