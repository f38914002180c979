//! The launch ABI shared by the kernels and the host: one `#[repr(C)]` parameter struct per kernel,
//! passed by value as the kernel's only parameter, and the constants both sides must agree on.
//!
//! Device addresses travel as [`DevicePtr`] (a `u64` tagged with its element type), so the structs have
//! the same layout on the host and on the device and carry no host pointers.

use core::marker::PhantomData;

/// Threads per warp on every NVIDIA GPU this crate targets.
pub const WARP_SIZE: u32 = 32;

/// The largest `gridDim.x` CUDA accepts. Kernels loop over their work with a grid stride, so a grid is
/// capped at this size rather than failing on very large matrices.
pub const MAX_GRID_X: u32 = (1 << 31) - 1;

/// Threads per row the cooperative CSR kernel is compiled for; one PTX entry per value.
pub const CSR_VECTOR_COOPS: [u32; 5] = [2, 4, 8, 16, 32];

/// A device address of `T` elements, as the kernel sees it.
#[repr(transparent)]
#[derive(Debug)]
pub struct DevicePtr<T> {
    addr: u64,
    _elem: PhantomData<*const T>,
}

impl<T> DevicePtr<T> {
    /// Wraps a raw device address (`CUdeviceptr`).
    pub const fn new(addr: u64) -> Self {
        Self { addr, _elem: PhantomData }
    }

    /// The raw device address.
    pub const fn addr(self) -> u64 {
        self.addr
    }

    /// The address as a pointer; only meaningful on the device.
    pub const fn as_ptr(self) -> *const T {
        self.addr as *const T
    }

    /// The address as a mutable pointer; only meaningful on the device.
    pub const fn as_mut_ptr(self) -> *mut T {
        self.addr as *mut T
    }
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}

/// A CSR matrix on the device: `rows + 1` row offsets, `nnz` column indices and values, all with 32-bit
/// indices (the host refuses matrices that do not fit).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrArgs<T> {
    pub row_offsets: DevicePtr<u32>,
    pub col_indices: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub rows: u32,
}

/// The dense operands of `y = alpha * A * x + beta * y`. When `beta == 0`, `y` is not read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Axpby<T> {
    pub x: DevicePtr<T>,
    pub y: DevicePtr<T>,
    pub alpha: T,
    pub beta: T,
}

/// `spmv_csr_scalar_*` (one thread per row) and `spmv_csr_vector_c<coop>_*` (`coop` threads per row,
/// a compile-time value that is part of the entry's name): kernels whose only tunable is the launch
/// shape.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
}

/// `spmv_scale_*`: `y = beta * y` over `len` elements (or `y = 0` when `beta == 0`, without reading
/// `y`). The host uses it where `A * x` contributes nothing: `alpha == 0` or a matrix with no entries.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ScaleParams<T> {
    pub y: DevicePtr<T>,
    pub beta: T,
    pub len: u32,
}
