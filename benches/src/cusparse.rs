//! cuSPARSE's generic SpMV, the baseline, run on the same device buffers as our kernels and on the
//! same stream. Only the benchmark uses it: the library itself does not depend on cuSPARSE.

use anyhow::{Context, Result, anyhow};
use cudarc::cusparse::result as cs;
use cudarc::cusparse::sys;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaSlice, DevicePtr};
use gpu_spmv::{DeviceCsr, DeviceVector, Gpu, Precision, Scalar};
use std::ffi::{c_int, c_void};
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
/// solve has its analysis and work buffer made once in [`PreparedIluApply::new`] (or
/// [`PreparedIluApply::of_factorisation`], on cuSPARSE's own factors), so
/// [`PreparedIluApply::run`] is two `cusparseSpSV_solve` calls: `L y = r`, then `U z = y`; a solver
/// points `r` and `z` at the vectors of each apply ([`PreparedIluApply::set_operands`]).
#[derive(Debug)]
pub struct PreparedIluApply<'h, T> {
    handle: &'h Handle,
    /// The order: the elements [`PreparedIluApply::set_operands`] checks an operand for.
    n: usize,
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
        Self::with_values(gpu, handle, factors, factors.values(), r, y, z)
    }

    /// [`PreparedIluApply::new`] on the factors `csrilu02` wrote in `factorisation`'s buffer, read
    /// there in place (as NVIDIA's ILU(0) samples describe the factorisation's output to SpSV), on
    /// `A`'s pattern: what a cuSPARSE user applies. Call it after the factorisation's
    /// [`PreparedFactorisation::run`]: the analyses record the factors' values. Refused for
    /// csric02's factors, which are `L` alone over `A`'s lower triangle, not ILU(0)'s layout. The
    /// factorisation and the vectors must outlive the returned value.
    pub fn of_factorisation(
        gpu: &Gpu,
        factorisation: &PreparedFactorisation<'h, T>,
        r: &DeviceVector<T>,
        y: &DeviceVector<T>,
        z: &DeviceVector<T>,
    ) -> Result<Self> {
        let routine = factorisation.factorisation.routine();
        anyhow::ensure!(
            factorisation.factorisation == Factorisation::Ilu0,
            "{routine}'s factors are not in ILU(0)'s layout: PreparedFactorisation::factors converts them"
        );
        let (handle, pattern) = (factorisation.handle, factorisation.a);
        Self::with_values(gpu, handle, pattern, &factorisation.factors, r, y, z)
    }

    /// [`PreparedIluApply::new`] on `pattern`'s CSR arrays with the factors' `values`.
    fn with_values(
        gpu: &Gpu,
        handle: &'h Handle,
        pattern: &DeviceCsr<T>,
        values: &CudaSlice<T>,
        r: &DeviceVector<T>,
        y: &DeviceVector<T>,
        z: &DeviceVector<T>,
    ) -> Result<Self> {
        let n = pattern.nrows();
        anyhow::ensure!(pattern.ncols() == n, "factors of {n} x {} are not square", pattern.ncols());
        anyhow::ensure!(
            values.len() == pattern.nnz(),
            "{} factor values for {} entries",
            values.len(),
            pattern.nnz()
        );
        for (what, v) in [("r", r), ("y", y), ("z", z)] {
            anyhow::ensure!(v.len() == n, "{what} of {} elements, not {n}", v.len());
        }
        let ty = value_type::<T>();
        let mut prepared = Self {
            handle,
            n,
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
            (addr(gpu, pattern.row_offsets()), addr(gpu, pattern.col_indices()), addr(gpu, values));
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
                        pattern.nnz() as i64,
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

    /// Points the apply's `r` and `z` at `r` and `z` (`cusparseDnVecSetValues`), so that the next
    /// [`PreparedIluApply::run`] computes `z = U⁻¹ L⁻¹ r` on them through the same intermediate:
    /// what a solver does whose operand and result change from apply to apply (BiCGSTAB's `p` and
    /// `s`, GMRES's basis vectors), as NVIDIA's BiCGSTAB sample solves other vectors than its
    /// analyses were described with; the analyses depend on the factors alone. Both must hold at
    /// least the order's elements and be two buffers (checked: the solves read one and write the
    /// other; two views that overlap without starting at one address are not caught).
    ///
    /// # Safety
    /// The descriptors keep the two addresses: `r` and `z` must not overlap, and must stay allocated
    /// until every [`PreparedIluApply::run`] enqueued after this (until the next `set_operands`) has
    /// completed on the stream.
    pub unsafe fn set_operands(&self, gpu: &Gpu, r: &impl DevicePtr<T>, z: &impl DevicePtr<T>) -> Result<()> {
        let n = self.n;
        anyhow::ensure!(
            r.len() >= n && z.len() >= n,
            "operands of {} and {} elements, not {n}",
            r.len(),
            z.len()
        );
        let ((r, _r_record), (z, _z_record)) = (r.device_ptr(gpu.stream()), z.device_ptr(gpu.stream()));
        anyhow::ensure!(r != z, "the apply's operand and result are one buffer");
        for (descr, ptr, name) in
            [(self.r, r, "cusparseDnVecSetValues (r)"), (self.z, z, "cusparseDnVecSetValues (z)")]
        {
            // SAFETY: the descriptor was created in `new`; `ptr` is a live device buffer of the
            // value type `T` with at least the `n` elements the solves read or write (checked).
            check(unsafe { sys::cusparseDnVecSetValues(descr, ptr as *mut c_void) }, name)?;
        }
        Ok(())
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

/// Which incomplete factorisation of cuSPARSE's legacy preconditioners a [`PreparedFactorisation`]
/// computes (cuSPARSE documentation, "cuSPARSE Preconditioners Reference").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factorisation {
    /// `cusparse<t>csrilu02` ("Incomplete LU Factorization: level 0"): `A ≈ L U` on `A`'s pattern,
    /// `L`'s entries left of the diagonal (its unit diagonal implied) and `U`'s from the diagonal
    /// on, written over `A`'s values: `IluFactors::new`'s layout.
    Ilu0,
    /// `cusparse<t>csric02` ("Incomplete Cholesky Factorization: level 0"): `A ≈ L Lᵀ`, reading only
    /// `A`'s lower triangle and writing `L` (its diagonal included) over it; the upper triangle is
    /// left as it was.
    Ic0,
}

impl Factorisation {
    /// The routine's name, as errors and reports give it.
    pub fn routine(self) -> &'static str {
        match self {
            Factorisation::Ilu0 => "csrilu02",
            Factorisation::Ic0 => "csric02",
        }
    }
}

/// A zero pivot that cuSPARSE reported (`cusparseXcsrilu02_zeroPivot`, `cusparseXcsric02_zeroPivot`):
/// a structural one (a row without its diagonal entry) after the analysis, or a numerical one after
/// the factorisation, at `row` (0-based, the descriptor's index base).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZeroPivot {
    pub routine: &'static str,
    pub row: usize,
}

impl std::fmt::Display for ZeroPivot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: zero pivot at row {}", self.routine, self.row)
    }
}

impl std::error::Error for ZeroPivot {}

/// The opaque structure of a factorisation's analysis, one type per routine.
#[derive(Debug, Clone, Copy)]
enum Info {
    Ilu0(sys::csrilu02Info_t),
    Ic0(sys::csric02Info_t),
}

/// `$call` with `$f` bound to the one of `[ilu f32, ilu f64, ic f32, ic f64]` that fits `$info`'s
/// routine and the `precision`, `$i` to the routine's info and `$v` to `$values` cast to the
/// precision's element pointer: the legacy API has one C function per routine and element type,
/// where the generic API takes a `cudaDataType`.
macro_rules! per_routine {
    ($info:expr, $precision:expr, $values:expr, [$ilu_s:path, $ilu_d:path, $ic_s:path, $ic_d:path],
     |$f:ident, $i:ident, $v:ident| $call:expr) => {
        match ($info, $precision) {
            (Info::Ilu0($i), Precision::Single) => {
                let ($f, $v) = ($ilu_s, $values.cast::<f32>());
                $call
            }
            (Info::Ilu0($i), Precision::Double) => {
                let ($f, $v) = ($ilu_d, $values.cast::<f64>());
                $call
            }
            (Info::Ic0($i), Precision::Single) => {
                let ($f, $v) = ($ic_s, $values.cast::<f32>());
                $call
            }
            (Info::Ic0($i), Precision::Double) => {
                let ($f, $v) = ($ic_d, $values.cast::<f64>());
                $call
            }
        }
    };
}

/// cuSPARSE's device ILU(0) or IC(0) factorisation of a square `A` ([`Factorisation`]), the baseline
/// of the library's, which factorises on the CPU (`gpu_spmv::reference::ilu::IluFactors`) and
/// uploads (`gpu_spmv::solve::{Ilu0, Ic0}`). The legacy API with 32-bit indices, as NVIDIA's ILU(0)
/// and IC(0) samples call it: a general matrix descriptor of index base zero (the routines'
/// "The matrix type must be CUSPARSE_MATRIX_TYPE_GENERAL"), and the level policy
/// (`CUSPARSE_SOLVE_POLICY_USE_LEVEL`) in the analysis and the factorisation, which schedules the
/// rows by level as the library's solves do.
///
/// The routines factorise in place, so the factors are a copy of `A`'s values, which
/// [`PreparedFactorisation::run`] refreshes before each factorisation. [`PreparedFactorisation::new`]
/// makes the descriptor, the info and the work buffer and runs the analysis once; `run` is what a
/// Newton loop would repeat on new values of the same pattern. `A`'s columns must be sorted within
/// each row without repeats (the routines take "csrSorted" arrays), as the matrices the bench
/// uploads from `nalgebra_sparse` are.
#[derive(Debug)]
pub struct PreparedFactorisation<'a, T> {
    handle: &'a Handle,
    a: &'a DeviceCsr<T>,
    factorisation: Factorisation,
    descr: sys::cusparseMatDescr_t,
    info: Info,
    /// The order and the entries, as the routines' C ints.
    n: c_int,
    nnz: c_int,
    /// `A`'s values, then the factors written over them.
    factors: CudaSlice<T>,
    /// The work buffer of the analysis, which the factorisation uses: kept until the info goes.
    buffer: Option<CudaSlice<u8>>,
}

/// The level-scheduled policy of both steps (see [`PreparedFactorisation`]).
const POLICY: sys::cusparseSolvePolicy_t = sys::cusparseSolvePolicy_t::CUSPARSE_SOLVE_POLICY_USE_LEVEL;

impl<'a, T: Scalar> PreparedFactorisation<'a, T> {
    /// Describes `a` to cuSPARSE, copies its values into the factors' buffer and runs the analysis
    /// (`cusparse<t>csrilu02_bufferSize` and `_analysis`, or csric02's). Refused: `a` not square, an
    /// order or entry count past a C `int`, and a structural zero pivot (a row without its diagonal
    /// entry, which the analysis reports) as a [`ZeroPivot`] naming the row.
    pub fn new(
        gpu: &Gpu,
        handle: &'a Handle,
        factorisation: Factorisation,
        a: &'a DeviceCsr<T>,
    ) -> Result<Self> {
        let routine = factorisation.routine();
        anyhow::ensure!(a.ncols() == a.nrows(), "{routine}: {} x {} is not square", a.nrows(), a.ncols());
        let n = c_int::try_from(a.nrows()).with_context(|| format!("{routine}: the order past a C int"))?;
        let nnz = c_int::try_from(a.nnz()).with_context(|| format!("{routine}: the entries past a C int"))?;
        let info = match factorisation {
            Factorisation::Ilu0 => Info::Ilu0(std::ptr::null_mut()),
            Factorisation::Ic0 => Info::Ic0(std::ptr::null_mut()),
        };
        let factors = gpu.stream().clone_dtod(a.values())?;
        let mut prepared = Self {
            handle,
            a,
            factorisation,
            descr: std::ptr::null_mut(),
            info,
            n,
            nnz,
            factors,
            buffer: None,
        };
        // From here on a failure drops `prepared`, which destroys what was created (null is skipped).
        // SAFETY: places for the new descriptor and info, which Drop destroys; the setters take the
        // descriptor just created and C enums by value.
        unsafe {
            check(sys::cusparseCreateMatDescr(&mut prepared.descr), "cusparseCreateMatDescr")?;
            let base = sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;
            check(sys::cusparseSetMatIndexBase(prepared.descr, base), "cusparseSetMatIndexBase")?;
            let general = sys::cusparseMatrixType_t::CUSPARSE_MATRIX_TYPE_GENERAL;
            check(sys::cusparseSetMatType(prepared.descr, general), "cusparseSetMatType")?;
            match &mut prepared.info {
                Info::Ilu0(info) => {
                    check(sys::cusparseCreateCsrilu02Info(info), "cusparseCreateCsrilu02Info")?
                }
                Info::Ic0(info) => check(sys::cusparseCreateCsric02Info(info), "cusparseCreateCsric02Info")?,
            }
        }
        let (offsets, cols) = prepared.pattern(gpu);
        let values = addr(gpu, &prepared.factors);
        let mut size: c_int = 0;
        // SAFETY: the descriptor and info were created above; `offsets`, `cols` and `values` are live
        // device buffers of `n + 1`, `nnz` and `nnz` elements (u32 indices below 2^31, since `nnz`
        // fits a C int, are valid C ints), of the element type the routine is picked for; `size` is
        // a host int the call writes.
        let status = unsafe {
            per_routine!(
                prepared.info,
                T::PRECISION,
                values,
                [
                    sys::cusparseScsrilu02_bufferSize,
                    sys::cusparseDcsrilu02_bufferSize,
                    sys::cusparseScsric02_bufferSize,
                    sys::cusparseDcsric02_bufferSize
                ],
                |f, info, v| f(handle.0, n, nnz, prepared.descr, v, offsets, cols, info, &mut size)
            )
        };
        check(status, &format!("cusparse<t>{routine}_bufferSize"))?;
        let size = usize::try_from(size).with_context(|| format!("{routine}: a buffer of {size} bytes"))?;
        if size > 0 {
            prepared.buffer = Some(gpu.stream().alloc_zeros::<u8>(size)?);
        }
        let buffer = prepared.buffer_ptr(gpu);
        // SAFETY: as above, with the work buffer of the size cuSPARSE asked for (cudarc's
        // allocations are aligned past the 128 bytes the routines require), which `prepared` keeps
        // as long as the info that refers to it.
        let status = unsafe {
            per_routine!(
                prepared.info,
                T::PRECISION,
                values,
                [
                    sys::cusparseScsrilu02_analysis,
                    sys::cusparseDcsrilu02_analysis,
                    sys::cusparseScsric02_analysis,
                    sys::cusparseDcsric02_analysis
                ],
                |f, info, v| f(handle.0, n, nnz, prepared.descr, v, offsets, cols, info, POLICY, buffer)
            )
        };
        check(status, &format!("cusparse<t>{routine}_analysis"))?;
        prepared.zero_pivot()?;
        Ok(prepared)
    }

    /// `A`'s row offsets and column indices, as the routines' C ints.
    fn pattern(&self, gpu: &Gpu) -> (*const c_int, *const c_int) {
        (
            addr(gpu, self.a.row_offsets()).cast_const().cast(),
            addr(gpu, self.a.col_indices()).cast_const().cast(),
        )
    }

    fn buffer_ptr(&self, gpu: &Gpu) -> *mut c_void {
        self.buffer.as_ref().map_or(std::ptr::null_mut(), |b| addr(gpu, b))
    }

    /// Enqueues the factorisation on the `Gpu`'s stream (the handle's): `A`'s values copied into
    /// the factors, then `cusparse<t>csrilu02` (or `csric02`) over them. It does not wait: a
    /// numerical zero pivot shows at [`PreparedFactorisation::zero_pivot`].
    pub fn run(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.stream().memcpy_dtod(self.a.values(), &mut self.factors)?;
        let (offsets, cols) = self.pattern(gpu);
        let (values, buffer) = (addr(gpu, &self.factors), self.buffer_ptr(gpu));
        let (handle, n, nnz, descr) = (self.handle.0, self.n, self.nnz, self.descr);
        // SAFETY: the descriptor, info and work buffer were prepared in `new` for `A`'s pattern and
        // the element type the routine is picked for; `values` is the factors' buffer of `nnz`
        // elements, which the call overwrites.
        let status = unsafe {
            per_routine!(
                self.info,
                T::PRECISION,
                values,
                [
                    sys::cusparseScsrilu02,
                    sys::cusparseDcsrilu02,
                    sys::cusparseScsric02,
                    sys::cusparseDcsric02
                ],
                |f, info, v| f(handle, n, nnz, descr, v, offsets, cols, info, POLICY, buffer)
            )
        };
        check(status, &format!("cusparse<t>{}", self.factorisation.routine()))
    }

    /// Waits for the last analysis or factorisation and fails with a [`ZeroPivot`] naming the first
    /// row whose pivot it found zero (`cusparseXcsrilu02_zeroPivot`, `cusparseXcsric02_zeroPivot`: a
    /// blocking call in the handle's default host pointer mode).
    pub fn zero_pivot(&self) -> Result<()> {
        let mut position: c_int = -1;
        // SAFETY: the info was created in `new`; `position` is a host int the call writes.
        let status = unsafe {
            match self.info {
                Info::Ilu0(info) => sys::cusparseXcsrilu02_zeroPivot(self.handle.0, info, &mut position),
                Info::Ic0(info) => sys::cusparseXcsric02_zeroPivot(self.handle.0, info, &mut position),
            }
        };
        let routine = self.factorisation.routine();
        if status == sys::cusparseStatus_t::CUSPARSE_STATUS_ZERO_PIVOT {
            let row =
                usize::try_from(position).with_context(|| format!("{routine}: zero pivot at {position}"))?;
            return Err(ZeroPivot { routine, row }.into());
        }
        check(status, &format!("cusparseX{routine}_zeroPivot"))
    }

    /// The factors of the last [`PreparedFactorisation::run`], on the host, in the layout of
    /// `IluFactors::csr` on `A`'s pattern, which [`PreparedIluApply`] applies: csrilu02's output as
    /// it is; csric02's `L` as IC(0)'s factors in ILU(0)'s layout ([`cholesky_in_ilu_layout`]).
    pub fn factors(&self, gpu: &Gpu) -> Result<Vec<T>> {
        let values = gpu.stream().clone_dtoh(&self.factors)?;
        match self.factorisation {
            Factorisation::Ilu0 => Ok(values),
            Factorisation::Ic0 => {
                let offsets = gpu.stream().clone_dtoh(self.a.row_offsets())?;
                let cols = gpu.stream().clone_dtoh(self.a.col_indices())?;
                cholesky_in_ilu_layout(&offsets, &cols, &values)
            }
        }
    }
}

impl<T> Drop for PreparedFactorisation<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the info and descriptor were created in `new` (or are null, if `new` failed first)
        // and are destroyed once, the info before the work buffer it uses (dropped after this).
        unsafe {
            match self.info {
                Info::Ilu0(info) if !info.is_null() => {
                    let _ = sys::cusparseDestroyCsrilu02Info(info);
                }
                Info::Ic0(info) if !info.is_null() => {
                    let _ = sys::cusparseDestroyCsric02Info(info);
                }
                _ => {}
            }
            if !self.descr.is_null() {
                let _ = sys::cusparseDestroyMatDescr(self.descr);
            }
        }
    }
}

/// csric02's output (`L`, its diagonal included, over the lower triangle of the CSR arrays; the
/// upper triangle not read) in IC(0)'s layout of `IluFactors::incomplete_cholesky`: row `i` holds
/// `l_ic / l_cc` left of its diagonal, `l_ii²` on it and `l_ii l_ji` right of it, so that the same
/// two triangular solves apply it as ILU(0)'s. Computed in f64 from `L`, rounded once. Refused: a
/// row without its diagonal entry, and an entry right of a diagonal without its mirror (IC(0)'s
/// layout needs a symmetric pattern).
pub fn cholesky_in_ilu_layout<T: Scalar>(offsets: &[u32], cols: &[u32], values: &[T]) -> Result<Vec<T>> {
    let row = |i: usize| offsets[i] as usize..offsets[i + 1] as usize;
    let find = |i: usize, c: usize| {
        let range = row(i);
        cols[range.clone()].binary_search(&(c as u32)).ok().map(|k| range.start + k)
    };
    let n = offsets.len().saturating_sub(1);
    let diagonal: Vec<f64> = (0..n)
        .map(|i| {
            find(i, i).map(|k| values[k].to_f64()).with_context(|| format!("row {i} has no diagonal entry"))
        })
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(values.len());
    for i in 0..n {
        for k in row(i) {
            let c = cols[k] as usize;
            let v = match c.cmp(&i) {
                std::cmp::Ordering::Less => values[k].to_f64() / diagonal[c],
                std::cmp::Ordering::Equal => diagonal[i] * diagonal[i],
                std::cmp::Ordering::Greater => {
                    let mirror =
                        find(c, i).with_context(|| format!("({i}, {c}) has no mirror ({c}, {i})"))?;
                    diagonal[i] * values[mirror].to_f64()
                }
            };
            out.push(T::from_f64(v));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_spmv::CsrRef;
    use gpu_spmv::reference::ilu::IluFactors;
    use gpu_spmv::reference::problems::convection_diffusion;

    /// `a`'s arrays as the device's u32 indices.
    fn narrowed(indices: &[usize]) -> Vec<u32> {
        indices.iter().map(|&i| u32::try_from(i).unwrap()).collect()
    }

    #[test]
    fn cholesky_factors_convert_to_the_oracles_layout() {
        // [[4, 2], [2, 5]] = L Lᵀ with L = [[2, 0], [1, 2]]: csric02 writes L over the lower triangle
        // and leaves a_01; the oracle holds l̃_10 = 1/2, pivots 4 and 4, ũ_01 = l_00 l_10 = 2.
        let (offsets, cols) = ([0u32, 2, 4], [0u32, 1, 0, 1]);
        let converted = cholesky_in_ilu_layout(&offsets, &cols, &[2.0f64, 2.0, 1.0, 2.0]).unwrap();
        let a = CsrRef::try_new(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[4.0f64, 2.0, 2.0, 5.0]).unwrap();
        assert_eq!(converted, IluFactors::incomplete_cholesky(a).unwrap().csr().2);
        assert_eq!(converted, [4.0, 2.0, 0.5, 4.0]);
        // On a grid: the oracle's L (l_ic = l̃_ic √d_c, l_ii = √d_i) over A's lower triangle, A's
        // values above, converts back to the oracle's factors.
        let a = convection_diffusion::<f64>(7, 5, 0.0).unwrap();
        let oracle = IluFactors::incomplete_cholesky(CsrRef::from(&a)).unwrap();
        let (offsets, cols, expected) = oracle.csr();
        let pivot = |r: usize| expected[oracle.diagonal_positions()[r]];
        let written: Vec<f64> = (0..oracle.n())
            .flat_map(|i| (offsets[i]..offsets[i + 1]).map(move |k| (i, k)))
            .map(|(i, k)| match cols[k] {
                c if c < i => expected[k] * pivot(c).sqrt(),
                c if c == i => pivot(i).sqrt(),
                _ => a.values()[k],
            })
            .collect();
        let converted = cholesky_in_ilu_layout(&narrowed(offsets), &narrowed(cols), &written).unwrap();
        for (k, (c, e)) in converted.iter().zip(expected).enumerate() {
            assert!((c - e).abs() <= 1e-14 * e.abs(), "entry {k}: {c} against {e}");
        }
    }

    #[test]
    fn cholesky_conversion_refuses_a_missing_diagonal_or_mirror() {
        let no_diagonal = cholesky_in_ilu_layout(&[0u32, 1, 2], &[0, 0], &[1.0f64, 1.0]).unwrap_err();
        assert!(format!("{no_diagonal:#}").contains("row 1 has no diagonal entry"), "{no_diagonal:#}");
        let no_mirror = cholesky_in_ilu_layout(&[0u32, 2, 3], &[0, 1, 1], &[1.0f64, 1.0, 1.0]).unwrap_err();
        assert!(format!("{no_mirror:#}").contains("(0, 1) has no mirror (1, 0)"), "{no_mirror:#}");
    }
}
