//! The cuBLAS routines the host-driven baselines of the solver studies call ([`crate::cg_baseline`],
//! [`crate::solve_baseline`]), as a typical user calls them: on the [`Gpu`]'s stream, in the
//! handle's default host pointer mode, so that every scalar a routine returns (a dot product) comes
//! back to the host, which waits for the stream. Only the benchmark uses cuBLAS.

use anyhow::{Context, Result, anyhow, ensure};
use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys::{self, cublasHandle_t, cublasOperation_t, cublasSideMode_t, cublasStatus_t};
use cudarc::driver::{CudaSlice, DevicePtr};
use gpu_spmv::{Gpu, Scalar};
use std::ffi::c_int;

/// `cublas<t>dot`: `result = xᵀy`.
type DotFn<T> = unsafe fn(cublasHandle_t, c_int, *const T, c_int, *const T, c_int, *mut T) -> cublasStatus_t;
/// `cublas<t>axpy`: `y = alpha x + y`.
type AxpyFn<T> = unsafe fn(cublasHandle_t, c_int, *const T, *const T, c_int, *mut T, c_int) -> cublasStatus_t;
/// `cublas<t>scal`: `x = alpha x`.
type ScalFn<T> = unsafe fn(cublasHandle_t, c_int, *const T, *mut T, c_int) -> cublasStatus_t;
/// `cublas<t>copy`: `y = x`.
type CopyFn<T> = unsafe fn(cublasHandle_t, c_int, *const T, c_int, *mut T, c_int) -> cublasStatus_t;
/// `cublas<t>dgmm`: `C = diag(x) A` (left side) for an `m x n` matrix `A`.
type DgmmFn<T> = unsafe fn(
    cublasHandle_t,
    cublasSideMode_t,
    c_int,
    c_int,
    *const T,
    c_int,
    *const T,
    c_int,
    *mut T,
    c_int,
) -> cublasStatus_t;
/// `cublas<t>gemv`: `y = alpha op(A) x + beta y` for an `m x n` column-major `A`.
type GemvFn<T> = unsafe fn(
    cublasHandle_t,
    cublasOperation_t,
    c_int,
    c_int,
    *const T,
    *const T,
    c_int,
    *const T,
    c_int,
    *const T,
    *mut T,
    c_int,
) -> cublasStatus_t;

/// An element type with the cuBLAS routines the baselines need.
pub trait BlasScalar: Scalar {
    const DOT: DotFn<Self>;
    const AXPY: AxpyFn<Self>;
    const SCAL: ScalFn<Self>;
    const COPY: CopyFn<Self>;
    const DGMM: DgmmFn<Self>;
    const GEMV: GemvFn<Self>;
}

impl BlasScalar for f32 {
    const DOT: DotFn<f32> = sys::cublasSdot_v2;
    const AXPY: AxpyFn<f32> = sys::cublasSaxpy_v2;
    const SCAL: ScalFn<f32> = sys::cublasSscal_v2;
    const COPY: CopyFn<f32> = sys::cublasScopy_v2;
    const DGMM: DgmmFn<f32> = sys::cublasSdgmm;
    const GEMV: GemvFn<f32> = sys::cublasSgemv_v2;
}

impl BlasScalar for f64 {
    const DOT: DotFn<f64> = sys::cublasDdot_v2;
    const AXPY: AxpyFn<f64> = sys::cublasDaxpy_v2;
    const SCAL: ScalFn<f64> = sys::cublasDscal_v2;
    const COPY: CopyFn<f64> = sys::cublasDcopy_v2;
    const DGMM: DgmmFn<f64> = sys::cublasDdgmm;
    const GEMV: GemvFn<f64> = sys::cublasDgemv_v2;
}

/// A cuBLAS status as a `Result` naming the call.
fn check(status: cublasStatus_t, call: &str) -> Result<()> {
    status.result().map_err(|e| anyhow!("{call}: {e}"))
}

/// A cuBLAS handle on the [`Gpu`]'s stream, in the default host pointer mode.
/// The inverse diagonal a baseline's Jacobi preconditioner applies with `dgmm`: `1 / d` in f64 rounded
/// to `T`, as the library computes it, uploaded. Refused for a diagonal of another length than `n`, or
/// an entry `accept` refuses (`need` says what it must be: CG's positive, the others' non-zero and
/// finite).
pub fn inverse_diagonal<T: Scalar>(
    gpu: &Gpu,
    diagonal: &[T],
    n: usize,
    accept: impl Fn(T) -> bool,
    need: &str,
) -> Result<CudaSlice<T>> {
    ensure!(diagonal.len() == n, "the diagonal has {} entries, not {n}", diagonal.len());
    if let Some(row) = diagonal.iter().position(|&d| !accept(d)) {
        return Err(anyhow!("Jacobi: diagonal entry {row} is {}, not {need}", diagonal[row]));
    }
    let inverse: Vec<T> = diagonal.iter().map(|d| T::from_f64(1.0 / d.to_f64())).collect();
    Ok(gpu.stream().clone_htod(&inverse)?)
}

pub fn blas(gpu: &Gpu) -> Result<CudaBlas> {
    CudaBlas::new(gpu.stream().clone()).map_err(|e| anyhow!("cublasCreate (is libcublas installed?): {e}"))
}

/// The routines on vectors of one length `n`, each checking that its operands hold `n` elements
/// (the basis of `m` vectors, `m n`), so that no call reads or writes past a buffer.
#[derive(Debug, Clone, Copy)]
pub struct Vectors<'a> {
    gpu: &'a Gpu,
    handle: cublasHandle_t,
    n: c_int,
}

impl<'a> Vectors<'a> {
    /// Routines on `n`-element vectors through `blas`, whose stream is the `gpu`'s.
    pub fn new(gpu: &'a Gpu, blas: &'a CudaBlas, n: usize) -> Result<Self> {
        let n = c_int::try_from(n).context("more unknowns than cuBLAS' int")?;
        Ok(Self { gpu, handle: *blas.handle(), n })
    }

    /// The vectors' length.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Whether the vectors are empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The device address of `v`, after checking that it holds `count` vectors.
    fn ptr<T>(&self, v: &impl DevicePtr<T>, count: usize) -> Result<*mut T> {
        let need = count * self.len();
        ensure!(v.len() >= need, "a cuBLAS operand of {} elements, not the {need} the call reads", v.len());
        let (ptr, _record) = v.device_ptr(self.gpu.stream());
        Ok(ptr as *mut T)
    }

    /// `uᵀv`, read back to the host (this waits for the stream).
    pub fn dot<T: BlasScalar>(&self, u: &impl DevicePtr<T>, v: &impl DevicePtr<T>) -> Result<T> {
        let (u, v) = (self.ptr(u, 1)?, self.ptr(v, 1)?);
        let mut result = T::ZERO;
        // SAFETY: `u` and `v` hold `n` elements on the handle's stream (checked); in host pointer
        // mode `result` is written before the call returns.
        check(unsafe { T::DOT(self.handle, self.n, u, 1, v, 1, &mut result) }, "dot")?;
        Ok(result)
    }

    /// `y = alpha x + y`.
    pub fn axpy<T: BlasScalar>(&self, alpha: T, x: &impl DevicePtr<T>, y: &impl DevicePtr<T>) -> Result<()> {
        let (x, y) = (self.ptr(x, 1)?, self.ptr(y, 1)?);
        // SAFETY: `x` and `y` hold `n` elements (checked); `alpha` is a host value read during the call.
        check(unsafe { T::AXPY(self.handle, self.n, &alpha, x, 1, y, 1) }, "axpy")
    }

    /// `x = alpha x`.
    pub fn scal<T: BlasScalar>(&self, alpha: T, x: &impl DevicePtr<T>) -> Result<()> {
        let x = self.ptr(x, 1)?;
        // SAFETY: `x` holds `n` elements (checked); `alpha` is a host value read during the call.
        check(unsafe { T::SCAL(self.handle, self.n, &alpha, x, 1) }, "scal")
    }

    /// `y = x`.
    pub fn copy<T: BlasScalar>(&self, x: &impl DevicePtr<T>, y: &impl DevicePtr<T>) -> Result<()> {
        let (x, y) = (self.ptr(x, 1)?, self.ptr(y, 1)?);
        // SAFETY: `x` and `y` hold `n` elements (checked).
        check(unsafe { T::COPY(self.handle, self.n, x, 1, y, 1) }, "copy")
    }

    /// `z = diag(d) r`, elementwise: `dgmm` on the `n x 1` matrix `r` from the left, the elementwise
    /// product cuBLAS offers (the Jacobi preconditioner with `d` the inverse diagonal).
    pub fn diag_times<T: BlasScalar>(
        &self,
        d: &impl DevicePtr<T>,
        r: &impl DevicePtr<T>,
        z: &impl DevicePtr<T>,
    ) -> Result<()> {
        let (d, r, z) = (self.ptr(d, 1)?, self.ptr(r, 1)?, self.ptr(z, 1)?);
        // SAFETY: `r` and `z` are `n x 1` column-major matrices (leading dimension `n`) and `d` holds
        // `n` elements (checked).
        let status = unsafe {
            T::DGMM(self.handle, cublasSideMode_t::CUBLAS_SIDE_LEFT, self.n, 1, r, self.n, d, 1, z, self.n)
        };
        check(status, "dgmm")
    }

    /// `y = alpha Vᵀ x + beta y` (`transposed`, `x` of `n` elements, `y` of `columns`) or
    /// `y = alpha V x + beta y` (`x` of `columns` elements, `y` of `n`), for the `n x columns`
    /// column-major matrix `V` held in the first `columns n` elements of `v`.
    #[allow(clippy::too_many_arguments)]
    pub fn gemv<T: BlasScalar>(
        &self,
        transposed: bool,
        columns: usize,
        alpha: T,
        v: &impl DevicePtr<T>,
        x: &impl DevicePtr<T>,
        beta: T,
        y: &impl DevicePtr<T>,
    ) -> Result<()> {
        let cols = c_int::try_from(columns).context("more columns than cuBLAS' int")?;
        let (x_len, y_len) = if transposed { (self.len(), columns) } else { (columns, self.len()) };
        ensure!(x.len() >= x_len && y.len() >= y_len, "gemv: x or y is shorter than the product needs");
        let v = self.ptr(v, columns)?;
        let (x, _x_record) = x.device_ptr(self.gpu.stream());
        let (y, _y_record) = y.device_ptr(self.gpu.stream());
        let op = if transposed { cublasOperation_t::CUBLAS_OP_T } else { cublasOperation_t::CUBLAS_OP_N };
        // SAFETY: `V` is `n x columns` with leading dimension `n` (checked), `x` and `y` hold the
        // elements `op(V)` reads and writes (checked); `alpha` and `beta` are host values.
        let status = unsafe {
            T::GEMV(
                self.handle,
                op,
                self.n,
                cols,
                &alpha,
                v,
                self.n.max(1),
                x as *const T,
                1,
                &beta,
                y as *mut T,
                1,
            )
        };
        check(status, "gemv")
    }
}
