//! cuSPARSE's generic SpMV, the baseline, run on the same device buffers as our kernels and on the
//! same stream. Only the benchmark uses it: the library itself does not depend on cuSPARSE.

use anyhow::{Context, Result, anyhow};
use cudarc::cusparse::result as cs;
use cudarc::cusparse::sys;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaSlice, DevicePtr};
use gpu_spmv::{DeviceCsr, DeviceVector, Gpu, Precision, Scalar};
use std::ffi::c_void;
use std::marker::PhantomData;

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

/// One prepared apply of ILU(0) or IC(0) factors, `z = U⁻¹ L⁻¹ r`, through cuSPARSE's generic
/// triangular solve (`cusparseSpSV`): the baseline of the library's level-scheduled solves
/// (`gpu_spmv::solve::{Ilu0, Ic0}`) on the same factors.
///
/// The factors are one CSR matrix on `A`'s pattern, as
/// `gpu_spmv::reference::ilu::IluFactors::csr` gives them: `L`'s entries left of the diagonal (its
/// unit diagonal implied), `U`'s from the diagonal on. Two sparse-matrix descriptors share its
/// arrays, one with fill mode lower and a unit diagonal, one with fill mode upper and a non-unit
/// diagonal; the generic SpSV reads only the triangle its fill mode names (and not the diagonal
/// where it is unit), as NVIDIA's ILU(0) samples use one `csrilu02` output for both solves. Each
/// solve has its analysis and work buffer made once in [`PreparedIluApply::new`], so
/// [`PreparedIluApply::run`] is two `cusparseSpSV_solve` calls: `L y = r`, then `U z = y`.
#[derive(Debug)]
pub struct PreparedIluApply<'h, T> {
    handle: &'h Handle,
    lower: sys::cusparseSpMatDescr_t,
    upper: sys::cusparseSpMatDescr_t,
    r: sys::cusparseDnVecDescr_t,
    y: sys::cusparseDnVecDescr_t,
    z: sys::cusparseDnVecDescr_t,
    lower_solve: sys::cusparseSpSVDescr_t,
    upper_solve: sys::cusparseSpSVDescr_t,
    /// The work buffers of the analyses, which the solves use: kept until the descriptors go.
    lower_buffer: Option<CudaSlice<u8>>,
    upper_buffer: Option<CudaSlice<u8>>,
    value_type: sys::cudaDataType,
    scalar: PhantomData<T>,
}

/// `cusparseSpMatSetAttribute(mat, attribute, &value, size_of value)`: the attribute's value is a
/// host C enum (`repr(u32)`, as C's `int` enums), read before the call returns.
///
/// # Safety
/// `mat` is a live sparse-matrix descriptor and `V` the type cuSPARSE reads for `attribute`.
unsafe fn set_attribute<V>(
    mat: sys::cusparseSpMatDescr_t,
    attribute: sys::cusparseSpMatAttribute_t,
    mut value: V,
) -> Result<()> {
    let size = std::mem::size_of::<V>();
    // SAFETY: the caller's contract; `value` lives across the call.
    let status =
        unsafe { sys::cusparseSpMatSetAttribute(mat, attribute, (&raw mut value).cast::<c_void>(), size) };
    check(status, &format!("cusparseSpMatSetAttribute({attribute:?})"))
}

impl<'h, T: Scalar> PreparedIluApply<'h, T> {
    /// Describes the `n × n` factors `factors` and the vectors `r`, `y` (the intermediate `L⁻¹ r`)
    /// and `z` (of `n` elements each) to cuSPARSE, and runs both solves' analysis. All buffers must
    /// outlive the returned value, and hold still: the analyses recorded the factors' values.
    pub fn new(
        gpu: &Gpu,
        handle: &'h Handle,
        factors: &DeviceCsr<T>,
        r: &DeviceVector<T>,
        y: &DeviceVector<T>,
        z: &DeviceVector<T>,
    ) -> Result<Self> {
        let n = factors.nrows();
        anyhow::ensure!(factors.ncols() == n, "factors of {n} x {} are not square", factors.ncols());
        for (what, v) in [("r", r), ("y", y), ("z", z)] {
            anyhow::ensure!(v.len() == n, "{what} of {} elements, not {n}", v.len());
        }
        let ty = value_type::<T>();
        let mut prepared = Self {
            handle,
            lower: std::ptr::null_mut(),
            upper: std::ptr::null_mut(),
            r: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            z: std::ptr::null_mut(),
            lower_solve: std::ptr::null_mut(),
            upper_solve: std::ptr::null_mut(),
            lower_buffer: None,
            upper_buffer: None,
            value_type: ty,
            scalar: PhantomData,
        };
        // From here on a failure drops `prepared`, which destroys what was created (null is skipped).
        let i32_index = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
        let base = sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;
        let (offsets, col_indices, values) =
            (addr(gpu, factors.row_offsets()), addr(gpu, factors.col_indices()), addr(gpu, factors.values()));
        let triangles = [
            (
                &mut prepared.lower,
                sys::cusparseFillMode_t::CUSPARSE_FILL_MODE_LOWER,
                sys::cusparseDiagType_t::CUSPARSE_DIAG_TYPE_UNIT,
            ),
            (
                &mut prepared.upper,
                sys::cusparseFillMode_t::CUSPARSE_FILL_MODE_UPPER,
                sys::cusparseDiagType_t::CUSPARSE_DIAG_TYPE_NON_UNIT,
            ),
        ];
        for (mat, fill, diag) in triangles {
            // SAFETY: the pointers are live device buffers of the factors, of `n + 1` offsets and
            // `nnz` indices and values (u32 indices below 2^31, as the library's uploads narrow
            // them, are valid 32-bit signed indices); cuSPARSE only records them here. The
            // attributes are read from host values of the C enums' size (`repr(u32)`, as C's `int`
            // enums) for the size passed, before the call returns.
            unsafe {
                check(
                    sys::cusparseCreateCsr(
                        mat,
                        n as i64,
                        n as i64,
                        factors.nnz() as i64,
                        offsets,
                        col_indices,
                        values,
                        i32_index,
                        i32_index,
                        base,
                        ty,
                    ),
                    "cusparseCreateCsr",
                )?;
                set_attribute(*mat, sys::cusparseSpMatAttribute_t::CUSPARSE_SPMAT_FILL_MODE, fill)?;
                set_attribute(*mat, sys::cusparseSpMatAttribute_t::CUSPARSE_SPMAT_DIAG_TYPE, diag)?;
            }
        }
        for (descr, v) in [(&mut prepared.r, r), (&mut prepared.y, y), (&mut prepared.z, z)] {
            // SAFETY: a live device buffer of `n` elements of the value type; cuSPARSE records it.
            let status = unsafe { sys::cusparseCreateDnVec(descr, n as i64, addr(gpu, v.as_slice()), ty) };
            check(status, "cusparseCreateDnVec")?;
        }
        for descr in [&mut prepared.lower_solve, &mut prepared.upper_solve] {
            // SAFETY: `descr` is a place for the new descriptor, which Drop destroys.
            check(unsafe { sys::cusparseSpSV_createDescr(descr) }, "cusparseSpSV_createDescr")?;
        }
        let one = T::from_f64(1.0);
        let alpha = &one as *const T as *const c_void;
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let alg = sys::cusparseSpSVAlg_t::CUSPARSE_SPSV_ALG_DEFAULT;
        let solves = [
            (prepared.lower, prepared.r, prepared.y, prepared.lower_solve),
            (prepared.upper, prepared.y, prepared.z, prepared.upper_solve),
        ];
        for (k, (mat, x, out, solve)) in solves.into_iter().enumerate() {
            let mut size = 0usize;
            // SAFETY: descriptors created above for the value type `ty`; alpha points at a host
            // value of it (the handle's default host pointer mode), read before the call returns.
            let status = unsafe {
                sys::cusparseSpSV_bufferSize(handle.0, op, alpha, mat, x, out, ty, alg, solve, &mut size)
            };
            check(status, "cusparseSpSV_bufferSize")?;
            let buffer = if size > 0 { Some(gpu.stream().alloc_zeros::<u8>(size)?) } else { None };
            let buffer_ptr = buffer.as_ref().map_or(std::ptr::null_mut(), |b| addr(gpu, b));
            // Kept in `prepared` before the analysis, so that the solves find it and Drop outlives it.
            if k == 0 {
                prepared.lower_buffer = buffer;
            } else {
                prepared.upper_buffer = buffer;
            }
            // SAFETY: as above, with the work buffer of the size cuSPARSE asked for, which `prepared`
            // keeps as long as the SpSV descriptor that refers to it.
            let status = unsafe {
                sys::cusparseSpSV_analysis(handle.0, op, alpha, mat, x, out, ty, alg, solve, buffer_ptr)
            };
            check(status, "cusparseSpSV_analysis")?;
        }
        Ok(prepared)
    }

    /// Enqueues `L y = r`, then `U z = y`, on the handle's stream (the `Gpu`'s it was made with), in
    /// the thread's current context (the one `Handle::new` bound).
    pub fn run(&self) -> Result<()> {
        let one = T::from_f64(1.0);
        let alpha = &one as *const T as *const c_void;
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let alg = sys::cusparseSpSVAlg_t::CUSPARSE_SPSV_ALG_DEFAULT;
        for (mat, x, out, solve, name) in [
            (self.lower, self.r, self.y, self.lower_solve, "cusparseSpSV_solve (L)"),
            (self.upper, self.y, self.z, self.upper_solve, "cusparseSpSV_solve (U)"),
        ] {
            // SAFETY: descriptors, analyses and work buffers were prepared in `new` for this value
            // type (`T`, the struct's); alpha is a host value of it, read before the call returns.
            let status = unsafe {
                sys::cusparseSpSV_solve(self.handle.0, op, alpha, mat, x, out, self.value_type, alg, solve)
            };
            check(status, name)?;
        }
        Ok(())
    }
}

impl<T> Drop for PreparedIluApply<'_, T> {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created in `new` (or is null, if `new` failed first) and is
        // destroyed once, the SpSV descriptors before the work buffers they use (dropped after this).
        unsafe {
            for solve in [self.lower_solve, self.upper_solve] {
                if !solve.is_null() {
                    let _ = sys::cusparseSpSV_destroyDescr(solve);
                }
            }
            for mat in [self.lower, self.upper] {
                if !mat.is_null() {
                    let _ = sys::cusparseDestroySpMat(mat);
                }
            }
            for v in [self.r, self.y, self.z] {
                if !v.is_null() {
                    let _ = sys::cusparseDestroyDnVec(v);
                }
            }
        }
    }
}
