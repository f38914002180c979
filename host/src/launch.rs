//! The launch layer: one typed function per PTX entry, and the crate's only kernel launches.
//!
//! Each function takes a [`Product`], whose constructor has checked everything the kernels rely on:
//! the matrix arrays are a valid CSR matrix (by construction of `DeviceCsr`), `x` has `ncols` and `y`
//! `nrows` elements, and all buffers live in the launching context.

use crate::device::{DeviceCsr, DeviceVector, Gpu};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaFunction, result};
use kernels_gpu::abi::{Axpby, CSR_VECTOR_COOPS, CsrParams, ScaleParams};
use kernels_gpu::index::{coop_threads, grid_blocks};
use std::ffi::c_void;

/// The operands of one product, checked against each other.
#[derive(Debug)]
pub(crate) struct Product<'a, T> {
    pub a: &'a DeviceCsr<T>,
    pub op: Axpby<T>,
}

impl<'a, T: Scalar> Product<'a, T> {
    pub fn new(
        gpu: &Gpu,
        alpha: T,
        a: &'a DeviceCsr<T>,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> Result<Self> {
        if !a.belongs_to(gpu) {
            return Err(Error::ForeignBuffer("the matrix"));
        }
        x.check_gpu(gpu)?;
        y.check_gpu(gpu)?;
        if x.len() != a.ncols() {
            return Err(Error::DimensionMismatch { what: "x", expected: a.ncols(), got: x.len() });
        }
        if y.len() != a.nrows() {
            return Err(Error::DimensionMismatch { what: "y", expected: a.nrows(), got: y.len() });
        }
        Ok(Self { a, op: Axpby { x: x.addr(gpu), y: y.addr(gpu), alpha, beta } })
    }
}

/// Launches `f` with `params` as its single by-value parameter.
///
/// # Safety
/// `f` is the PTX entry whose parameter struct is `P`, and `params` satisfies that kernel's contract
/// (every address valid for the accesses the kernel makes, given the sizes in `params`).
unsafe fn launch<P>(gpu: &Gpu, f: &CudaFunction, grid: u32, block: u32, params: &P) -> Result<()> {
    if grid == 0 {
        return Ok(());
    }
    let mut args = [params as *const P as *mut c_void];
    // SAFETY: `args` points at one parameter of the layout the entry declares (the caller's
    // contract); the driver copies it before `launch_kernel` returns, so the borrow suffices.
    unsafe {
        result::launch_kernel(
            f.cu_function(),
            (grid, 1, 1),
            (block, 1, 1),
            0,
            gpu.stream().cu_stream(),
            &mut args,
        )?;
    }
    Ok(())
}

/// `spmv_csr_scalar_*`: a thread per row.
pub(crate) fn csr_scalar<T: Scalar>(gpu: &Gpu, p: &Product<'_, T>, block: u32) -> Result<()> {
    let params = CsrParams { a: p.a.args(), op: p.op };
    let grid = grid_blocks(u64::from(params.a.rows), block);
    // SAFETY: `Product` checked the operands; the kernel grid-strides over `rows`.
    unsafe { launch(gpu, &gpu.kernels::<T>().csr_scalar, grid, block, &params) }
}

/// `spmv_csr_vector_c<coop>_*`: `coop` threads per row. `coop` is one of [`CSR_VECTOR_COOPS`] and
/// `block` a multiple of the warp size (checked by `Kernel::resolve`).
pub(crate) fn csr_vector<T: Scalar>(gpu: &Gpu, p: &Product<'_, T>, coop: u32, block: u32) -> Result<()> {
    let index = CSR_VECTOR_COOPS
        .iter()
        .position(|&c| c == coop)
        .ok_or_else(|| Error::InvalidKernel(format!("no cooperative kernel for {coop} threads per row")))?;
    let params = CsrParams { a: p.a.args(), op: p.op };
    let grid = grid_blocks(coop_threads(params.a.rows, coop), block);
    // SAFETY: as for `csr_scalar`; whole warps per block keep the shuffles' member mask full.
    unsafe { launch(gpu, &gpu.kernels::<T>().csr_vector[index], grid, block, &params) }
}

/// `spmv_scale_*`: `y = beta * y`, for products in which `A * x` contributes nothing.
pub(crate) fn scale<T: Scalar>(gpu: &Gpu, p: &Product<'_, T>) -> Result<()> {
    const BLOCK: u32 = 256;
    let params = ScaleParams { y: p.op.y, beta: p.op.beta, len: p.a.args().rows };
    let grid = grid_blocks(u64::from(params.len), BLOCK);
    // SAFETY: `y` has `rows` elements (checked by `Product`).
    unsafe { launch(gpu, &gpu.kernels::<T>().scale, grid, BLOCK, &params) }
}
