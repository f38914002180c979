//! ELL with 16-bit column offsets from the row and optionally narrower values
//! (`CompressedEllArgs`): one thread per row, the ELL kernel's batched walk (`slots.rs`) over 2-byte
//! offsets and 2-, 4- or 8-byte values.
//!
//! Why: ELL's walk reaches the CSR floor on matrices of equal rows (PERF section 28), so its time is
//! its bytes. A slot of ELL moves a 4-byte column and a value; here the column takes 2 bytes, which
//! cuts an f32 slot from 8 bytes to 6 and a bfloat16 slot to 4, with no dependent load added: the
//! column is the thread's own row plus the offset. Segment bases, as `compressed.rs` keeps for CSR,
//! would cost a header load per warp and a long span per 32 rows; an offset from the row needs
//! neither, and stencils, bands and finite elements numbered along a grid keep their columns within
//! `2^15` of the diagonal (stencil3d-7's farthest is `n^2 = 20,164`).
//!
//! With values in the product's type the sums are those of `spmv_ell_*` bit for bit: the same walk,
//! the same order, the same `fma`s.

use super::slots::{RowDeltas, ell_rows, ell_rows_from_csr};
use super::widen::Widen;
use crate::abi::{Bf16, CompressedEllFromCsrParams, CompressedEllParams, F16};
use crate::real::Real;

/// # Safety
/// `p` describes a compressed ELL matrix built by the host (every slot's offset [`PAD_DELTA`](crate::abi::PAD_DELTA) or one
/// that takes its row to a column below the length of `x`) and vectors of matching lengths.
#[inline(always)]
unsafe fn compressed_ell<V: Widen<T>, T: Real>(p: CompressedEllParams<V, T>) {
    let deltas = p.a.deltas.as_ptr();
    // SAFETY: the arrays hold `width * rows` slots (host validation), each `PAD_DELTA` or an offset
    // that takes its row to a column of `x`.
    unsafe { ell_rows(p.a.rows, p.a.width, |row| RowDeltas { deltas, row }, p.a.values.as_ptr(), &p.op) }
}

/// Writes the compressed ELL copy of a CSR matrix (or, with `pattern == 0`, the values of its
/// entries alone): [`ell_rows_from_csr`] with each column stored as its offset from the row. A column
/// farther than [`MAX_ROW_DELTA`](crate::abi::MAX_ROW_DELTA) from its row raises `*misfit` (the
/// copy is then unusable, and the host discards it).
///
/// # Safety
/// As `ell_from_csr`'s, and `p.misfit` is a valid `u32` that the kernel changes only atomically.
#[inline(always)]
unsafe fn compressed_ell_from_csr<T: Real>(p: CompressedEllFromCsrParams<T>) {
    let deltas = p.ell.deltas.as_ptr();
    let slots = (p.ell.deltas.as_mut_ptr(), p.ell.values.as_mut_ptr());
    let shape = (p.ell.rows, p.ell.width);
    // SAFETY: forwarded.
    unsafe {
        ell_rows_from_csr(
            &p.csr,
            shape,
            |row| RowDeltas { deltas, row },
            slots,
            p.pattern != 0,
            p.misfit.as_mut_ptr(),
        )
    }
}

/// The product's entries of one storage type and product type.
macro_rules! compressed_ell_entries {
    ($($name:ident: $v:ty, $t:ty);+ $(;)?) => {$(
        crate::ptx_entry!($name, CompressedEllParams<$v, $t>, compressed_ell::<$v, $t>);
    )+};
}

compressed_ell_entries!(
    spmv_compressed_ell_f32: f32, f32;
    spmv_compressed_ell_f64: f64, f64;
    spmv_compressed_ell_f32_f64: f32, f64;
    spmv_compressed_ell_f16_f32: F16, f32;
    spmv_compressed_ell_f16_f64: F16, f64;
    spmv_compressed_ell_bf16_f32: Bf16, f32;
    spmv_compressed_ell_bf16_f64: Bf16, f64;
);
crate::ptx_entry!(
    compressed_ell_from_csr_f32,
    CompressedEllFromCsrParams<f32>,
    compressed_ell_from_csr::<f32>
);
crate::ptx_entry!(
    compressed_ell_from_csr_f64,
    CompressedEllFromCsrParams<f64>,
    compressed_ell_from_csr::<f64>
);
