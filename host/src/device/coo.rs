//! COO on the device ([`DeviceCoo`]), made by [`Gpu::upload_coo`].

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::coo::Coo;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::CooArgs;

/// A [`Coo`] matrix on the device. Its product is two launches on the [`Gpu`]'s stream: `y = beta *
/// y` (`spmv_scale_*`, which does not read `y` when `beta == 0`), then the atomic additions of the
/// chosen [`CooKernel`](crate::CooKernel). The order of the additions varies from run to run, and so
/// may the last bits.
#[derive(Debug)]
pub struct DeviceCoo<T> {
    rows: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    values: CudaSlice<T>,
    nrows: usize,
    ncols: usize,
    args: CooArgs<T>,
}

impl Gpu {
    /// Uploads a COO matrix.
    pub fn upload_coo<T: Scalar>(&self, a: &Coo<T>) -> Result<DeviceCoo<T>> {
        narrow("the row count", a.nrows())?;
        let nnz = narrow("the entry count", a.nnz())?;
        let rows = self.upload(a.rows())?;
        let cols = self.upload(a.cols())?;
        let values = self.upload(a.values())?;
        let args =
            CooArgs { rows: addr(&rows, self), cols: addr(&cols, self), values: addr(&values, self), nnz };
        Ok(DeviceCoo { rows, cols, values, nrows: a.nrows(), ncols: a.ncols(), args })
    }
}

impl<T: Scalar> DeviceCoo<T> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.args.nnz as usize }
    }

    crate::formats::shape_accessors!();

    /// The row of each entry on the device.
    pub fn rows(&self) -> &CudaSlice<u32> {
        &self.rows
    }

    /// The column of each entry on the device.
    pub fn cols(&self) -> &CudaSlice<u32> {
        &self.cols
    }

    /// The value of each entry on the device.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
    }

    /// Bytes of the matrix on the device.
    pub fn device_bytes(&self) -> usize {
        (self.rows.len() + self.cols.len()) * 4 + self.values.len() * size_of::<T>()
    }

    pub(crate) fn args(&self) -> CooArgs<T> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }
}
