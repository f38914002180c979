//! SELL on the device ([`DeviceSell`]), made by [`Gpu::upload_sell`].

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::sell::Sell;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::SellArgs;

/// A [`Sell`] matrix on the device. Its product is one launch of `spmv_sell_*`, a warp per slice of
/// 32 rows.
#[derive(Debug)]
pub struct DeviceSell<T> {
    slice_ptr: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    values: CudaSlice<T>,
    ncols: usize,
    nnz: usize,
    args: SellArgs<T>,
}

impl Gpu {
    /// Uploads a SELL matrix.
    pub fn upload_sell<T: Scalar>(&self, a: &Sell<T>) -> Result<DeviceSell<T>> {
        let rows = narrow("the row count", a.nrows())?;
        let slices = narrow("SELL's slice count", a.slices())?;
        let slice_ptr = self.upload(a.slice_ptr())?;
        let cols = self.upload(a.cols())?;
        let values = self.upload(a.values())?;
        let args = SellArgs {
            slice_ptr: addr(&slice_ptr, self),
            cols: addr(&cols, self),
            values: addr(&values, self),
            rows,
            slices,
        };
        Ok(DeviceSell { slice_ptr, cols, values, ncols: a.ncols(), nnz: a.nnz(), args })
    }
}

impl<T: Scalar> DeviceSell<T> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.args.rows as usize, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// The slices of 32 rows.
    pub fn slices(&self) -> usize {
        self.args.slices as usize
    }

    /// The `slices + 1` offsets of the slices' slots on the device.
    pub fn slice_ptr(&self) -> &CudaSlice<u32> {
        &self.slice_ptr
    }

    /// The column indices of the slots on the device.
    pub fn cols(&self) -> &CudaSlice<u32> {
        &self.cols
    }

    /// The values of the slots on the device.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
    }

    /// Bytes of the matrix on the device, padding and slice offsets included.
    pub fn device_bytes(&self) -> usize {
        (self.slice_ptr.len() + self.cols.len()) * 4 + self.values.len() * size_of::<T>()
    }

    pub(crate) fn args(&self) -> SellArgs<T> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }
}
