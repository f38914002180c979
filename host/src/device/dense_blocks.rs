//! Dense blocks on the device ([`DeviceDenseBlocks`]), made by [`Gpu::upload_dense_blocks`].

use super::Gpu;
use super::coo::DeviceCoo;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::dense_blocks::DenseBlocks;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::DenseBlockArgs;

/// A [`DenseBlocks`] matrix on the device. Its product is the dense-block kernel, which writes `y =
/// alpha * A_blocks * x + beta * y` (every row, `y` unread when `beta == 0`), then, when the remainder
/// has entries, the COO kernel adding `alpha * A_rest * x`: two launches on the [`Gpu`]'s
/// stream, in order.
#[derive(Debug)]
pub struct DeviceDenseBlocks<T> {
    window_start: CudaSlice<u32>,
    row_offsets: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    values: CudaSlice<T>,
    remainder: DeviceCoo<T>,
    nnz: usize,
    args: DenseBlockArgs<T>,
}

impl Gpu {
    /// Uploads a matrix in dense blocks.
    pub fn upload_dense_blocks<T: Scalar>(&self, a: &DenseBlocks<T>) -> Result<DeviceDenseBlocks<T>> {
        let rows = narrow("the row count", a.nrows())?;
        let ncols = narrow("the column count", a.ncols())?;
        let window = narrow("the dense-block window", a.window())?;
        let window_start = self.upload(a.window_start())?;
        let row_offsets = self.upload(a.row_offsets())?;
        let cols = self.upload(a.cols())?;
        let values = self.upload(a.values())?;
        let args = DenseBlockArgs {
            window_start: addr(&window_start, self),
            row_offsets: addr(&row_offsets, self),
            cols: addr(&cols, self),
            values: addr(&values, self),
            rows,
            ncols,
            window,
        };
        let remainder = self.upload_coo(a.remainder())?;
        Ok(DeviceDenseBlocks { window_start, row_offsets, cols, values, remainder, nnz: a.nnz(), args })
    }
}

impl<T: Scalar> DeviceDenseBlocks<T> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.args.rows as usize, ncols: self.args.ncols as usize, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// Columns per window.
    pub fn window(&self) -> usize {
        self.args.window as usize
    }

    /// The entries outside the windows.
    pub fn remainder(&self) -> &DeviceCoo<T> {
        &self.remainder
    }

    /// Bytes of the matrix on the device, padding and remainder included.
    pub fn device_bytes(&self) -> usize {
        let words = self.window_start.len() + self.row_offsets.len() + self.cols.len();
        words * 4 + self.values.len() * size_of::<T>() + self.remainder.device_bytes()
    }

    pub(crate) fn args(&self) -> DenseBlockArgs<T> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context()) && self.remainder.belongs_to(gpu)
    }
}
