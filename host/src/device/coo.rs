//! COO on the device ([`DeviceCoo`]), made by [`Gpu::upload_coo`], and the choice of its kernel.

use super::Gpu;
use super::upload::device_addr;
use crate::Result;
use crate::formats::convert::narrow;
use crate::formats::coo::Coo;
use crate::launch::formats::{coo, scale_vector};
use crate::operator::DeviceMatrix;
use crate::operator::sealed::{Launch, Operands};
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{CooArgs, DevicePtr as AbiPtr};
use std::sync::Arc;

/// How the COO kernel adds the entries' products to `y` (`kernels-gpu/src/formats/coo.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CooKernel {
    /// One atomic add per entry: the baseline of the papers.
    Atomic,
    /// A warp per interval of entries, a segmented reduction of each run of equal rows, one atomic
    /// per run (Bell & Garland 2008).
    #[default]
    Segmented,
}

/// A [`Coo`] matrix on the device. Its product is two launches on the [`Gpu`]'s stream: `y = beta *
/// y` (`spmv_scale_*`, which does not read `y` when `beta == 0`), then the atomic additions of the
/// chosen [`CooKernel`]. The order of the additions varies from run to run, and so may the last bits.
#[derive(Debug)]
pub struct DeviceCoo<T> {
    rows: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    values: CudaSlice<T>,
    nrows: usize,
    ncols: usize,
    kernel: CooKernel,
    args: CooArgs<T>,
}

impl Gpu {
    /// Uploads a COO matrix, to be multiplied with [`CooKernel::Segmented`] until
    /// [`DeviceCoo::set_kernel`] says otherwise.
    pub fn upload_coo<T: Scalar>(&self, a: &Coo<T>) -> Result<DeviceCoo<T>> {
        narrow("the row count", a.nrows())?;
        let nnz = narrow("the entry count", a.nnz())?;
        let rows = self.upload(a.rows())?;
        let cols = self.upload(a.cols())?;
        let values = self.upload(a.values())?;
        let args = CooArgs {
            rows: AbiPtr::new(device_addr(&rows, self)),
            cols: AbiPtr::new(device_addr(&cols, self)),
            values: AbiPtr::new(device_addr(&values, self)),
            nnz,
        };
        let (nrows, ncols) = (a.nrows(), a.ncols());
        Ok(DeviceCoo { rows, cols, values, nrows, ncols, kernel: CooKernel::default(), args })
    }
}

impl<T: Scalar> DeviceCoo<T> {
    /// The kernel products use.
    pub fn kernel(&self) -> CooKernel {
        self.kernel
    }

    /// Chooses the kernel of later products.
    pub fn set_kernel(&mut self, kernel: CooKernel) {
        self.kernel = kernel;
    }

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
}

impl<T: Scalar> Launch<T> for DeviceCoo<T> {
    fn belongs_to(&self, gpu: &Gpu) -> bool {
        Arc::ptr_eq(self.values.context(), gpu.context())
    }

    fn launch(&self, gpu: &Gpu, op: Operands<'_, T>) -> Result<()> {
        scale_vector(gpu, &mut *op.y, op.beta)?;
        coo(gpu, self, self.kernel, &op)
    }
}

impl<T: Scalar> DeviceMatrix<T> for DeviceCoo<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }

    fn ncols(&self) -> usize {
        self.ncols
    }

    fn nnz(&self) -> usize {
        self.args.nnz as usize
    }
}
