//! [`DeviceDense`]: a dense matrix on the device, the `X` and `Y` of the products with several
//! vectors, `Y = alpha * A * X + beta * Y`.

use super::Gpu;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

/// How a dense matrix lies in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Element `(r, c)` at `r * ld + c`: each row contiguous (C's order).
    RowMajor,
    /// Element `(r, c)` at `c * ld + r`: each column contiguous (Fortran's and BLAS's order).
    ColMajor,
}

/// A dense `rows x cols` matrix on the device in a [`Layout`], with a leading dimension `ld` (the
/// distance between consecutive rows of a row-major matrix, columns of a column-major one), so that
/// a caller's buffer with padding, or a block of a larger matrix, can be used in place.
#[derive(Debug)]
pub struct DeviceDense<T> {
    data: CudaSlice<T>,
    rows: usize,
    cols: usize,
    layout: Layout,
    ld: u32,
}

impl<T: Scalar> DeviceDense<T> {
    /// Wraps a caller's buffer (no copy): checked that `ld` is at least the length of a row
    /// (row-major) or column (column-major), that the buffer holds every element, and that sizes fit
    /// the kernels' 32-bit counts.
    pub fn from_slice(
        data: CudaSlice<T>,
        rows: usize,
        cols: usize,
        layout: Layout,
        ld: usize,
    ) -> Result<Self> {
        let (inner, outer) = match layout {
            Layout::RowMajor => (cols, rows),
            Layout::ColMajor => (rows, cols),
        };
        narrow("the dense row count", rows)?;
        narrow("the dense column count", cols)?;
        let ld32 = narrow("the leading dimension", ld)?;
        if ld < inner {
            return Err(Error::DimensionMismatch { what: "the leading dimension", expected: inner, got: ld });
        }
        let needed = if outer == 0 || inner == 0 { 0 } else { (outer - 1) * ld + inner };
        if data.len() < needed {
            return Err(Error::DimensionMismatch {
                what: "the dense buffer",
                expected: needed,
                got: data.len(),
            });
        }
        Ok(Self { data, rows, cols, layout, ld: ld32 })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The leading dimension.
    pub fn ld(&self) -> usize {
        self.ld as usize
    }

    pub(crate) fn ld32(&self) -> u32 {
        self.ld
    }

    /// The address for reads enqueued on `stream`; the guard must live until they are enqueued (as
    /// for a [`VectorRef`](crate::VectorRef)).
    pub(crate) fn read<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.data.device_ptr(stream)
    }

    /// As [`DeviceDense::read`], for reads and writes.
    pub(crate) fn write<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.data.device_ptr_mut(stream)
    }

    /// The buffer, for interoperation.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.data
    }

    /// The buffer, for interoperation.
    pub fn as_mut_slice(&mut self) -> &mut CudaSlice<T> {
        &mut self.data
    }

    /// The buffer back.
    pub fn into_slice(self) -> CudaSlice<T> {
        self.data
    }

    /// Copies the whole buffer to the host (padding between rows or columns included), after all
    /// work enqueued before on `gpu`'s stream.
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        gpu.check_context("a dense matrix", &self.data)?;
        if self.data.is_empty() {
            return Ok(Vec::new());
        }
        Ok(gpu.stream().clone_dtoh(&self.data)?)
    }
}

impl Gpu {
    /// Uploads a dense matrix held in `values` in `layout` with leading dimension `ld` (checked as
    /// for [`DeviceDense::from_slice`]).
    pub fn upload_dense<T: Scalar>(
        &self,
        rows: usize,
        cols: usize,
        layout: Layout,
        ld: usize,
        values: &[T],
    ) -> Result<DeviceDense<T>> {
        DeviceDense::from_slice(self.upload(values)?, rows, cols, layout, ld)
    }

    /// A dense matrix of zeros, packed (`ld` the length of a row or column).
    pub fn dense_zeros<T: Scalar>(&self, rows: usize, cols: usize, layout: Layout) -> Result<DeviceDense<T>> {
        let ld = match layout {
            Layout::RowMajor => cols,
            Layout::ColMajor => rows,
        };
        let len = rows.checked_mul(cols).ok_or(Error::TooLarge {
            what: "the dense element count",
            value: usize::MAX,
            limit: usize::MAX,
        })?;
        DeviceDense::from_slice(self.alloc_zeros(len)?, rows, cols, layout, ld)
    }
}
