//! ELL on the device ([`DeviceEll`]), made by [`Gpu::upload_ell`].

use super::Gpu;
use super::upload::device_addr;
use crate::Result;
use crate::formats::convert::narrow;
use crate::formats::ell::Ell;
use crate::launch::formats::ell;
use crate::operator::DeviceMatrix;
use crate::operator::sealed::{Launch, Operands};
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{DevicePtr as AbiPtr, EllArgs};
use std::sync::Arc;

/// An [`Ell`] matrix on the device. Its product is one launch of `spmv_ell_*`.
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
        let args = EllArgs {
            cols: AbiPtr::new(device_addr(&cols, self)),
            values: AbiPtr::new(device_addr(&values, self)),
            rows,
            width,
        };
        Ok(DeviceEll { cols, values, ncols: a.ncols(), nnz: a.nnz(), args })
    }
}

impl<T: Scalar> DeviceEll<T> {
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
}

impl<T: Scalar> Launch<T> for DeviceEll<T> {
    fn belongs_to(&self, gpu: &Gpu) -> bool {
        Arc::ptr_eq(self.values.context(), gpu.context())
    }

    fn launch(&self, gpu: &Gpu, op: Operands<'_, T>) -> Result<()> {
        ell(gpu, self, &op)
    }
}

impl<T: Scalar> DeviceMatrix<T> for DeviceEll<T> {
    fn nrows(&self) -> usize {
        self.args.rows as usize
    }

    fn ncols(&self) -> usize {
        self.ncols
    }

    fn nnz(&self) -> usize {
        self.nnz
    }
}
