//! Matrices and vectors on the device, with the checked narrowing to the kernels' 32-bit indices.

use super::Gpu;
use super::long_rows::{DeviceLongRows, LongRowSplit};
use super::row_tasks::DeviceRowTasks;
use crate::formats::convert::narrow;
use crate::formats::csr::{CsrRef, RowStats};
use crate::rule::long_row_min_len;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{CsrArgs, DevicePtr as AbiPtr};
use nalgebra_sparse::CsrMatrix;

/// A CSR matrix on the device, with 32-bit row offsets and column indices, and the statistics of its
/// rows (kept for kernel selection, which then runs in constant time).
#[derive(Debug)]
pub struct DeviceCsr<T> {
    row_offsets: CudaSlice<u32>,
    col_indices: CudaSlice<u32>,
    values: CudaSlice<T>,
    stats: RowStats,
    /// The kernels' view of the arrays above, built once here rather than at every product.
    args: CsrArgs<T>,
    /// The rows the parametrised kernel splits into chunks, with its scratch for them.
    long_rows: DeviceLongRows<T>,
    /// The balanced kernel's row tasks and long-row split.
    row_tasks: DeviceRowTasks<T>,
}

/// A dense vector on the device.
#[derive(Debug)]
pub struct DeviceVector<T> {
    data: CudaSlice<T>,
}

/// The raw device address of a slice. Stable for the slice's lifetime.
pub(crate) fn device_addr<T>(slice: &CudaSlice<T>, gpu: &Gpu) -> u64 {
    // The returned guard only records an event when event tracking is on, which `Gpu` turns off.
    let (addr, _guard) = slice.device_ptr(gpu.stream());
    addr
}

impl<T: Scalar> DeviceCsr<T> {
    pub fn nrows(&self) -> usize {
        self.stats.rows
    }

    pub fn ncols(&self) -> usize {
        self.stats.cols
    }

    pub fn nnz(&self) -> usize {
        self.stats.nnz
    }

    /// Row-length statistics, computed at upload.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    /// The `nrows + 1` row offsets on the device.
    pub fn row_offsets(&self) -> &CudaSlice<u32> {
        &self.row_offsets
    }

    /// The `nnz` column indices on the device.
    pub fn col_indices(&self) -> &CudaSlice<u32> {
        &self.col_indices
    }

    /// The `nnz` values on the device.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
    }

    pub(crate) fn args(&self) -> CsrArgs<T> {
        self.args
    }

    /// How many rows the parametrised kernel (`Kernel::CsrParam`, and so `Kernel::Auto`) splits over
    /// several warps: rows long enough that one group would be the product's critical path.
    pub fn long_row_count(&self) -> usize {
        self.long_rows.count()
    }

    pub(crate) fn long_rows(&self) -> &DeviceLongRows<T> {
        &self.long_rows
    }

    pub(crate) fn row_tasks(&self) -> &DeviceRowTasks<T> {
        &self.row_tasks
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        std::sync::Arc::ptr_eq(self.values.context(), gpu.context())
    }
}

impl<T: Scalar> DeviceVector<T> {
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements on the device.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.data
    }

    /// Copies the vector to the host, after all work enqueued before on `gpu`'s stream.
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        self.check_gpu(gpu)?;
        if self.is_empty() {
            return Ok(Vec::new());
        }
        Ok(gpu.stream().clone_dtoh(&self.data)?)
    }

    /// Overwrites the vector with `values` (of the same length), in stream order.
    pub fn copy_from_host(&mut self, gpu: &Gpu, values: &[T]) -> Result<()> {
        self.check_gpu(gpu)?;
        if values.len() != self.len() {
            return Err(Error::DimensionMismatch {
                what: "host values",
                expected: self.len(),
                got: values.len(),
            });
        }
        if !values.is_empty() {
            gpu.stream().memcpy_htod(values, &mut self.data)?;
        }
        Ok(())
    }

    pub(crate) fn check_gpu(&self, gpu: &Gpu) -> Result<()> {
        if std::sync::Arc::ptr_eq(self.data.context(), gpu.context()) {
            Ok(())
        } else {
            Err(Error::ForeignBuffer("a vector"))
        }
    }

    pub(crate) fn addr(&self, gpu: &Gpu) -> AbiPtr<T> {
        AbiPtr::new(device_addr(&self.data, gpu))
    }
}

impl Gpu {
    /// Uploads a [`CsrMatrix`] (valid by construction).
    pub fn upload_csr<T: Scalar>(&self, a: &CsrMatrix<T>) -> Result<DeviceCsr<T>> {
        self.upload_csr_ref(CsrRef::from(a))
    }

    /// Checks raw CSR arrays (see [`CsrRef::try_new`]) and uploads them.
    pub fn upload_csr_parts<T: Scalar>(
        &self,
        nrows: usize,
        ncols: usize,
        row_offsets: &[usize],
        col_indices: &[usize],
        values: &[T],
    ) -> Result<DeviceCsr<T>> {
        self.upload_csr_ref(CsrRef::try_new(nrows, ncols, row_offsets, col_indices, values)?)
    }

    /// Uploads a checked CSR matrix, narrowing its indices to `u32`: refused with
    /// [`Error::TooLarge`] when a dimension or the entry count does not fit.
    pub fn upload_csr_ref<T: Scalar>(&self, a: CsrRef<'_, T>) -> Result<DeviceCsr<T>> {
        let rows = narrow("the row count", a.nrows())?;
        narrow("the column count", a.ncols())?;
        narrow("the entry count", a.nnz())?;
        // Offsets are at most nnz and column indices below ncols, so these cannot fail after the checks
        // above; they are checked anyway rather than cast.
        let offsets =
            a.row_offsets().iter().map(|&o| narrow("a row offset", o)).collect::<Result<Vec<_>>>()?;
        let cols =
            a.col_indices().iter().map(|&c| narrow("a column index", c)).collect::<Result<Vec<_>>>()?;
        let row_offsets = self.upload(&offsets)?;
        let col_indices = self.upload(&cols)?;
        let values = self.upload(a.values())?;
        let args = CsrArgs {
            row_offsets: AbiPtr::new(device_addr(&row_offsets, self)),
            col_indices: AbiPtr::new(device_addr(&col_indices, self)),
            values: AbiPtr::new(device_addr(&values, self)),
            rows,
        };
        let stats = a.stats();
        let split = LongRowSplit::new(&offsets, long_row_min_len(&stats, self.sm_count()))?;
        let long_rows = DeviceLongRows::upload(self, &split)?;
        let row_tasks = DeviceRowTasks::upload(self, &offsets)?;
        Ok(DeviceCsr { row_offsets, col_indices, values, stats, args, long_rows, row_tasks })
    }

    /// Uploads a dense vector.
    pub fn upload_vector<T: Scalar>(&self, values: &[T]) -> Result<DeviceVector<T>> {
        narrow("the vector length", values.len())?;
        Ok(DeviceVector { data: self.upload(values)? })
    }

    /// A device vector of `len` zeros.
    pub fn zeros<T: Scalar>(&self, len: usize) -> Result<DeviceVector<T>> {
        narrow("the vector length", len)?;
        Ok(DeviceVector { data: self.alloc_zeros(len)? })
    }

    /// Copies `data` to a new device buffer. Empty data gets cudarc's empty slice: the driver refuses
    /// allocations of zero bytes.
    pub(super) fn upload<E: DeviceRepr>(&self, data: &[E]) -> Result<CudaSlice<E>> {
        Ok(if data.is_empty() { self.stream().null()? } else { self.stream().clone_htod(data)? })
    }

    /// A new device buffer of `len` zeros; empty when `len == 0`, as for [`Gpu::upload`].
    pub(super) fn alloc_zeros<E: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<E>> {
        Ok(if len == 0 { self.stream().null()? } else { self.stream().alloc_zeros(len)? })
    }
}
