//! CSR kernels, one variant per file, and the row walk they share.

mod aligned;
mod param;
mod scalar;
mod vector;

use crate::abi::CsrArgs;
use crate::arch::Load;
use crate::real::Real;

/// The half-open range of entries of `row`.
///
/// # Safety
/// `row < a.rows`.
#[inline(always)]
unsafe fn row_range<T>(a: &CsrArgs<T>, row: usize) -> (usize, usize) {
    let offsets = a.row_offsets.as_ptr();
    // SAFETY: `row + 1 <= rows`, and the offsets array has `rows + 1` elements.
    unsafe { (u32::load_nc(offsets.add(row)) as usize, u32::load_nc(offsets.add(row + 1)) as usize) }
}

/// `sum + A[k] * x[col[k]]`, x read through the read-only data cache.
///
/// # Safety
/// `k < nnz`, and the host validated every column index against the length of `x`.
#[inline(always)]
unsafe fn entry_product<T: Real>(a: &CsrArgs<T>, x: *const T, k: usize, sum: T) -> T {
    // SAFETY: guaranteed by the caller.
    unsafe { entry_product_via::<T, ReadOnlyX>(a, x, k, sum) }
}

/// `sum + A[k] * x[col[k]]`, x read the way `X` says; the matrix always through the read-only cache.
///
/// # Safety
/// As [`entry_product`].
#[inline(always)]
unsafe fn entry_product_via<T: Real, X: XLoad>(a: &CsrArgs<T>, x: *const T, k: usize, sum: T) -> T {
    // SAFETY: guaranteed by the caller.
    unsafe {
        let col = u32::load_nc(a.col_indices.as_ptr().add(k)) as usize;
        T::load_nc(a.values.as_ptr().add(k)).fma(X::load(x.add(col)), sum)
    }
}

/// How a kernel reads `x`: a type parameter, so that one kernel source yields the variants that
/// Baskaran & Bordawekar compare (x through the texture cache or not).
trait XLoad {
    /// # Safety
    /// `p` is a valid, aligned global address that no thread writes during the kernel.
    unsafe fn load<T: Real>(p: *const T) -> T;
}

/// `x` through the read-only data cache (`ld.global.nc`), the successor of the texture path.
struct ReadOnlyX;

/// `x` through the ordinary global load path (`ld.global`).
struct PlainX;

impl XLoad for ReadOnlyX {
    #[inline(always)]
    unsafe fn load<T: Real>(p: *const T) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { T::load_nc(p) }
    }
}

impl XLoad for PlainX {
    #[inline(always)]
    unsafe fn load<T: Real>(p: *const T) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { T::load_global(p) }
    }
}
