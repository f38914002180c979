//! cuSPARSE's generic SpMV, the baseline, run on the same device buffers as our kernels and on the
//! same stream. Only the benchmark uses it: the library itself does not depend on cuSPARSE.

use anyhow::{Context, Result, anyhow};
use cudarc::cusparse::result as cs;
use cudarc::cusparse::sys;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaSlice, DevicePtr};
use gpu_spmv::{DeviceCsr, DeviceVector, Gpu, Precision, Scalar};
use std::ffi::c_void;

/// The cuSPARSE algorithms the bench compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    CsrAlg1,
    CsrAlg2,
    CooAlg1,
}

impl Algorithm {
    pub const ALL: [Algorithm; 3] = [Algorithm::CsrAlg1, Algorithm::CsrAlg2, Algorithm::CooAlg1];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::CsrAlg1 => "cusparse-csr-alg1",
            Algorithm::CsrAlg2 => "cusparse-csr-alg2",
            Algorithm::CooAlg1 => "cusparse-coo-alg1",
        }
    }

    fn sys(self) -> sys::cusparseSpMVAlg_t {
        match self {
            Algorithm::CsrAlg1 => sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1,
            Algorithm::CsrAlg2 => sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG2,
            Algorithm::CooAlg1 => sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_COO_ALG1,
        }
    }
}

/// A cuSPARSE handle bound to the [`Gpu`]'s stream.
#[derive(Debug)]
pub struct Handle(sys::cusparseHandle_t);

impl Handle {
    pub fn new(gpu: &Gpu) -> Result<Self> {
        gpu.context().bind_to_thread()?;
        let handle =
            cs::create().map_err(|e| anyhow!("cusparseCreate (is libcusparse installed?): {e:?}"))?;
        // SAFETY: `handle` was just created; the stream outlives it (the bench keeps `gpu` alive).
        let status = unsafe { sys::cusparseSetStream(handle, gpu.stream().cu_stream() as sys::cudaStream_t) };
        check(status, "cusparseSetStream")?;
        Ok(Self(handle))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is valid and dropped once; a failure here has nowhere to go.
        let _ = unsafe { cs::destroy(self.0) };
    }
}

/// One prepared product `y = alpha A x + beta y` through cuSPARSE: descriptors and work buffer are
/// created once, so [`Prepared::run`] is a single `cusparseSpMV` call, as our own products are.
#[derive(Debug)]
pub struct Prepared<'h> {
    handle: &'h Handle,
    mat: sys::cusparseSpMatDescr_t,
    x: sys::cusparseDnVecDescr_t,
    y: sys::cusparseDnVecDescr_t,
    buffer: Option<CudaSlice<u8>>,
    alg: sys::cusparseSpMVAlg_t,
    value_type: sys::cudaDataType,
    op: sys::cusparseOperation_t,
    /// The elements of `x`, which [`Prepared::set_x`] checks a new `x` against.
    x_len: usize,
}

/// The signature `cusparseSpMV` and `cusparseSpMV_preprocess` share.
type SpmvCall = unsafe fn(
    sys::cusparseHandle_t,
    sys::cusparseOperation_t,
    *const c_void,
    sys::cusparseConstSpMatDescr_t,
    sys::cusparseConstDnVecDescr_t,
    *const c_void,
    sys::cusparseDnVecDescr_t,
    sys::cudaDataType,
    sys::cusparseSpMVAlg_t,
    *mut c_void,
) -> sys::cusparseStatus_t;

/// A cuSPARSE status as a `Result` naming the call.
fn check(status: sys::cusparseStatus_t, call: &str) -> Result<()> {
    status.result().map_err(|e| anyhow!("{call}: {e:?}"))
}

fn value_type<T: Scalar>() -> sys::cudaDataType {
    match T::PRECISION {
        Precision::Single => sys::cudaDataType::CUDA_R_32F,
        Precision::Double => sys::cudaDataType::CUDA_R_64F,
    }
}

/// The device address of `s`, as the C APIs take it.
pub(crate) fn addr<T>(gpu: &Gpu, s: &CudaSlice<T>) -> *mut c_void {
    let (ptr, _guard) = s.device_ptr(gpu.stream());
    ptr as *mut c_void
}

impl<'h> Prepared<'h> {
    /// Describes `a`, `x` and `y` to cuSPARSE for `alg`; `coo_rows` (a row index per entry) is needed by
    /// the COO algorithm only. All buffers must outlive the returned value.
    pub fn new<T: Scalar>(
        gpu: &Gpu,
        handle: &'h Handle,
        alg: Algorithm,
        a: &DeviceCsr<T>,
        coo_rows: Option<&CudaSlice<u32>>,
        x: &DeviceVector<T>,
        y: &DeviceVector<T>,
    ) -> Result<Self> {
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        Self::with_operation(gpu, handle, alg, a, coo_rows, x, y, op)
    }

    /// `y = alpha Aᵀ x + beta y` (`CUSPARSE_OPERATION_TRANSPOSE`): `x` has a row count of elements,
    /// `y` a column count.
    pub fn transposed<T: Scalar>(
        gpu: &Gpu,
        handle: &'h Handle,
        alg: Algorithm,
        a: &DeviceCsr<T>,
        x: &DeviceVector<T>,
        y: &DeviceVector<T>,
    ) -> Result<Self> {
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_TRANSPOSE;
        Self::with_operation(gpu, handle, alg, a, None, x, y, op)
    }

    #[allow(clippy::too_many_arguments)]
    fn with_operation<T: Scalar>(
        gpu: &Gpu,
        handle: &'h Handle,
        alg: Algorithm,
        a: &DeviceCsr<T>,
        coo_rows: Option<&CudaSlice<u32>>,
        x: &DeviceVector<T>,
        y: &DeviceVector<T>,
        op: sys::cusparseOperation_t,
    ) -> Result<Self> {
        let transposed = op == sys::cusparseOperation_t::CUSPARSE_OPERATION_TRANSPOSE;
        let ty = value_type::<T>();
        let i32_index = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
        let base = sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;
        let (rows, cols, nnz) = (a.nrows() as i64, a.ncols() as i64, a.nnz() as i64);
        let mut mat = std::ptr::null_mut();
        let mut xd = std::ptr::null_mut();
        let mut yd = std::ptr::null_mut();
        let (offsets, col_indices, values) =
            (addr(gpu, a.row_offsets()), addr(gpu, a.col_indices()), addr(gpu, a.values()));
        // SAFETY: the pointers are live device buffers of the stated lengths and types (u32 indices
        // below 2^31 are valid 32-bit signed indices for matrices the library accepts and the bench
        // generates); cuSPARSE only records them here.
        unsafe {
            let status = match alg {
                Algorithm::CooAlg1 => {
                    let rows_idx = addr(gpu, coo_rows.context("the COO algorithm needs row indices")?);
                    sys::cusparseCreateCoo(
                        &mut mat,
                        rows,
                        cols,
                        nnz,
                        rows_idx,
                        col_indices,
                        values,
                        i32_index,
                        base,
                        ty,
                    )
                }
                _ => sys::cusparseCreateCsr(
                    &mut mat,
                    rows,
                    cols,
                    nnz,
                    offsets,
                    col_indices,
                    values,
                    i32_index,
                    i32_index,
                    base,
                    ty,
                ),
            };
            check(status, "cusparseCreateCsr/Coo")?;
            let (x_len, y_len) = if transposed { (rows, cols) } else { (cols, rows) };
            check(
                sys::cusparseCreateDnVec(&mut xd, x_len, addr(gpu, x.as_slice()), ty),
                "cusparseCreateDnVec",
            )?;
            check(
                sys::cusparseCreateDnVec(&mut yd, y_len, addr(gpu, y.as_slice()), ty),
                "cusparseCreateDnVec",
            )?;
        }
        let x_len = if transposed { a.nrows() } else { a.ncols() };
        let mut prepared =
            Self { handle, mat, x: xd, y: yd, buffer: None, alg: alg.sys(), value_type: ty, op, x_len };
        let (one, zero) = (T::from_f64(1.0), T::ZERO);
        let mut size = 0usize;
        // SAFETY: descriptors created above; alpha and beta point at host values of the value type
        // (the handle's default host pointer mode).
        let status = unsafe {
            sys::cusparseSpMV_bufferSize(
                handle.0,
                op,
                &one as *const T as *const c_void,
                prepared.mat,
                prepared.x,
                &zero as *const T as *const c_void,
                prepared.y,
                ty,
                prepared.alg,
                &mut size,
            )
        };
        check(status, "cusparseSpMV_bufferSize")?;
        if size > 0 {
            prepared.buffer = Some(gpu.stream().alloc_zeros::<u8>(size)?);
        }
        prepared.call(gpu, sys::cusparseSpMV_preprocess, "cusparseSpMV_preprocess", one, zero)?;
        Ok(prepared)
    }

    /// Points the product's `x` at `x` (`cusparseDnVecSetValues`), as a solver whose operand moves
    /// from vector to vector (GMRES's basis) does instead of copying each into a fixed one. `x` must
    /// hold at least the elements of the `x` described in `new`, and outlive its use.
    pub fn set_x<T: Scalar>(&self, gpu: &Gpu, x: &impl DevicePtr<T>) -> Result<()> {
        anyhow::ensure!(value_type::<T>() == self.value_type, "scalar type differs from the prepared one");
        anyhow::ensure!(x.len() >= self.x_len, "x of {} elements, not {}", x.len(), self.x_len);
        let (ptr, _record) = x.device_ptr(gpu.stream());
        // SAFETY: the descriptor was created in `new`; `x` is a live device buffer of the value type
        // with at least the elements the product reads (checked).
        check(unsafe { sys::cusparseDnVecSetValues(self.x, ptr as *mut c_void) }, "cusparseDnVecSetValues")
    }

    fn buffer_ptr(&self, gpu: &Gpu) -> *mut c_void {
        self.buffer.as_ref().map_or(std::ptr::null_mut(), |b| addr(gpu, b))
    }

    /// Enqueues `y = alpha A x + beta y` on the `Gpu`'s stream.
    pub fn run<T: Scalar>(&self, gpu: &Gpu, alpha: T, beta: T) -> Result<()> {
        self.call(gpu, sys::cusparseSpMV, "cusparseSpMV", alpha, beta)
    }

    /// `products` calls of [`Prepared::run`] captured from the `Gpu`'s stream into a CUDA graph (after
    /// the preprocess `new` ran, as a solver would capture its iterations), replayed by
    /// [`CudaGraph::launch`] on the same stream. On error the capture is ended and dropped.
    pub fn capture<T: Scalar>(&self, gpu: &Gpu, products: usize, alpha: T, beta: T) -> Result<CudaGraph> {
        let stream = gpu.stream();
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let captured = (0..products).try_for_each(|_| self.run(gpu, alpha, beta));
        let ended = stream.end_capture(CUgraphInstantiate_flags(0));
        captured?;
        ended?.context("the capture of cusparseSpMV recorded no graph")
    }

    /// `cusparseSpMV` or `cusparseSpMV_preprocess`, which take the same arguments, on the prepared
    /// descriptors and work buffer.
    fn call<T: Scalar>(&self, gpu: &Gpu, f: SpmvCall, name: &str, alpha: T, beta: T) -> Result<()> {
        anyhow::ensure!(value_type::<T>() == self.value_type, "scalar type differs from the prepared one");
        // SAFETY: descriptors and work buffer were prepared in `new` for this value type; alpha and
        // beta are host values of it (the handle's default host pointer mode), read before `f` returns.
        let status = unsafe {
            f(
                self.handle.0,
                self.op,
                &alpha as *const T as *const c_void,
                self.mat,
                self.x,
                &beta as *const T as *const c_void,
                self.y,
                self.value_type,
                self.alg,
                self.buffer_ptr(gpu),
            )
        };
        check(status, name)
    }
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created in `new` and is destroyed once.
        unsafe {
            let _ = sys::cusparseDestroySpMat(self.mat);
            let _ = sys::cusparseDestroyDnVec(self.x);
            let _ = sys::cusparseDestroyDnVec(self.y);
        }
    }
}

/// cuSPARSE's CSR algorithms of `cusparseSpMM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpmmAlgorithm {
    CsrAlg1,
    CsrAlg2,
    CsrAlg3,
}

impl SpmmAlgorithm {
    pub const ALL: [SpmmAlgorithm; 3] =
        [SpmmAlgorithm::CsrAlg1, SpmmAlgorithm::CsrAlg2, SpmmAlgorithm::CsrAlg3];

    pub fn name(self) -> &'static str {
        match self {
            SpmmAlgorithm::CsrAlg1 => "cusparse-spmm-csr-alg1",
            SpmmAlgorithm::CsrAlg2 => "cusparse-spmm-csr-alg2",
            SpmmAlgorithm::CsrAlg3 => "cusparse-spmm-csr-alg3",
        }
    }

    fn sys(self) -> sys::cusparseSpMMAlg_t {
        match self {
            SpmmAlgorithm::CsrAlg1 => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG1,
            SpmmAlgorithm::CsrAlg2 => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG2,
            SpmmAlgorithm::CsrAlg3 => sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_CSR_ALG3,
        }
    }
}

/// One prepared `Y = alpha A X + beta Y` through `cusparseSpMM` on the library's dense matrices
/// (packed), descriptors and work buffer made once. An algorithm that does not support the layout
/// fails in `new`, which the bench reports as a note.
#[derive(Debug)]
pub struct PreparedSpmm<'h> {
    handle: &'h Handle,
    mat: sys::cusparseSpMatDescr_t,
    x: sys::cusparseDnMatDescr_t,
    y: sys::cusparseDnMatDescr_t,
    buffer: Option<CudaSlice<u8>>,
    alg: sys::cusparseSpMMAlg_t,
    value_type: sys::cudaDataType,
}

impl<'h> PreparedSpmm<'h> {
    pub fn new<T: Scalar>(
        gpu: &Gpu,
        handle: &'h Handle,
        alg: SpmmAlgorithm,
        a: &DeviceCsr<T>,
        x: &gpu_spmv::spmm::DeviceDense<T>,
        y: &gpu_spmv::spmm::DeviceDense<T>,
    ) -> Result<Self> {
        let ty = value_type::<T>();
        let i32_index = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
        let base = sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;
        let order = match x.layout() {
            gpu_spmv::spmm::Layout::RowMajor => sys::cusparseOrder_t::CUSPARSE_ORDER_ROW,
            gpu_spmv::spmm::Layout::ColMajor => sys::cusparseOrder_t::CUSPARSE_ORDER_COL,
        };
        let (mut mat, mut xd, mut yd) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: live device buffers of the stated shapes, types and leading dimensions; cuSPARSE
        // only records them here.
        unsafe {
            check(
                sys::cusparseCreateCsr(
                    &mut mat,
                    a.nrows() as i64,
                    a.ncols() as i64,
                    a.nnz() as i64,
                    addr(gpu, a.row_offsets()),
                    addr(gpu, a.col_indices()),
                    addr(gpu, a.values()),
                    i32_index,
                    i32_index,
                    base,
                    ty,
                ),
                "cusparseCreateCsr",
            )?;
            let dense = |d: &mut sys::cusparseDnMatDescr_t, m: &gpu_spmv::spmm::DeviceDense<T>| {
                let ptr = addr(gpu, m.as_slice());
                check(
                    sys::cusparseCreateDnMat(
                        d,
                        m.rows() as i64,
                        m.cols() as i64,
                        m.ld() as i64,
                        ptr,
                        ty,
                        order,
                    ),
                    "cusparseCreateDnMat",
                )
            };
            dense(&mut xd, x)?;
            dense(&mut yd, y)?;
        }
        let mut prepared = Self { handle, mat, x: xd, y: yd, buffer: None, alg: alg.sys(), value_type: ty };
        let (one, zero) = (T::from_f64(1.0), T::ZERO);
        let mut size = 0usize;
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        // SAFETY: descriptors created above; alpha and beta are host values of the value type.
        let status = unsafe {
            sys::cusparseSpMM_bufferSize(
                handle.0,
                op,
                op,
                &one as *const T as *const c_void,
                prepared.mat,
                prepared.x,
                &zero as *const T as *const c_void,
                prepared.y,
                ty,
                prepared.alg,
                &mut size,
            )
        };
        check(status, "cusparseSpMM_bufferSize")?;
        if size > 0 {
            prepared.buffer = Some(gpu.stream().alloc_zeros::<u8>(size)?);
        }
        // SAFETY: as above, with the work buffer of the size cuSPARSE asked for.
        let status = unsafe {
            sys::cusparseSpMM_preprocess(
                handle.0,
                op,
                op,
                &one as *const T as *const c_void,
                prepared.mat,
                prepared.x,
                &zero as *const T as *const c_void,
                prepared.y,
                ty,
                prepared.alg,
                prepared.buffer.as_ref().map_or(std::ptr::null_mut(), |b| addr(gpu, b)),
            )
        };
        check(status, "cusparseSpMM_preprocess")?;
        Ok(prepared)
    }

    /// Enqueues `Y = alpha A X + beta Y` on the `Gpu`'s stream.
    pub fn run<T: Scalar>(&self, gpu: &Gpu, alpha: T, beta: T) -> Result<()> {
        anyhow::ensure!(value_type::<T>() == self.value_type, "scalar type differs from the prepared one");
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        // SAFETY: descriptors and work buffer prepared in `new` for this value type.
        let status = unsafe {
            sys::cusparseSpMM(
                self.handle.0,
                op,
                op,
                &alpha as *const T as *const c_void,
                self.mat,
                self.x,
                &beta as *const T as *const c_void,
                self.y,
                self.value_type,
                self.alg,
                self.buffer.as_ref().map_or(std::ptr::null_mut(), |b| addr(gpu, b)),
            )
        };
        check(status, "cusparseSpMM")
    }
}

impl Drop for PreparedSpmm<'_> {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created in `new` and is destroyed once.
        unsafe {
            let _ = sys::cusparseDestroySpMat(self.mat);
            let _ = sys::cusparseDestroyDnMat(self.x);
            let _ = sys::cusparseDestroyDnMat(self.y);
        }
    }
}
