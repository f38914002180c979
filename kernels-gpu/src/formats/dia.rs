//! DIA with a presence word per row (`DiaArgs`): one thread per row, its diagonals a batch of 8 at
//! a time (Bell & Garland, "Efficient Sparse Matrix-Vector Multiplication on CUDA", NVIDIA TR 2008,
//! section 4.1).
//!
//! Why: ELL's walk, even with 2-byte column offsets (`compressed_ell.rs`), waits twice a row: for
//! the slots' columns, then for the gathers of `x` they address. On a stencil's rows of 5-7 slots
//! that wait, not the bytes, sets the pace: bfloat16 values ran no faster than f32 there (docs/PERF.md,
//! section 30). A matrix whose entries lie on a few diagonals needs no column per entry: entry `d` of
//! row `r` is column `r + offsets[d]`, the offsets being one small array every warp reads from L1.
//! So a row's value loads, its presence word and its gathers of `x` all leave at once, and only the
//! values and one word a row stream from memory (4 bytes a row, where ELL's offsets take 2 a slot).
//!
//! Bell & Garland store a zero where a row has no entry on a diagonal and multiply it like any
//! other; here the presence word keeps such a slot out of the sum, so an infinite or NaN `x` there
//! cannot turn the row's result into NaN (the rule every format of the crate keeps). Its gather is
//! still issued (in bounds), since waiting for the word first would bring the second wait back.

use super::widen::Widen;
use crate::abi::{Bf16, DiaParams, F16};
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::{Real, store_axpby};

/// Diagonals a thread loads together: their values, offsets and gathers all in flight at once.
const BATCH: usize = 8;

/// # Safety
/// `p` describes a DIA matrix built by the host (`diagonals <= DIA_MAX_DIAGONALS` increasing
/// offsets, `diagonals * rows` values, `rows` presence words with no bit at or past `diagonals`,
/// every present entry's column inside `0 .. cols`) and vectors of matching lengths.
#[inline(always)]
unsafe fn dia<V: Widen<T>, T: Real>(p: DiaParams<V, T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    let (rows, cols) = (p.a.rows as usize, i64::from(p.a.cols));
    while row < u64::from(p.a.rows) {
        let r = row as usize;
        // SAFETY: `r < rows` presence words exist.
        let present = unsafe { u32::load_nc(p.a.present.as_ptr().add(r)) };
        let mut sum = T::ZERO;
        let mut first = 0u32;
        while first < p.a.diagonals {
            let mut values = [T::ZERO; BATCH];
            let mut xs = [T::ZERO; BATCH];
            for j in 0..BATCH {
                let d = first + j as u32;
                let live = d < p.a.diagonals;
                // A dead step addresses the last diagonal (in bounds) and loads nothing.
                let d = d.min(p.a.diagonals - 1) as usize;
                // SAFETY: `d < diagonals` offsets and `d * rows + r < diagonals * rows` values
                // exist; a column outside `0 .. cols` is not loaded (its address is not formed
                // from `x` beyond the check).
                unsafe {
                    let offset = i64::load_nc_or_zero(p.a.offsets.as_ptr().add(d), live);
                    values[j] = V::load_widened_or_zero(p.a.values.as_ptr().add(d * rows + r), live);
                    let col = r as i64 + offset;
                    let inside = live && (0..cols).contains(&col);
                    let col = if inside { col as usize } else { 0 };
                    xs[j] = T::load_nc_or_zero(p.op.x.as_ptr().add(col), inside);
                }
            }
            for j in 0..BATCH {
                let next = values[j].fma(xs[j], sum);
                let bit = first + j as u32;
                sum = if bit < 32 && present >> bit & 1 != 0 { next } else { sum };
            }
            first += BATCH as u32;
        }
        // SAFETY: `r < rows`, and row `r` belongs to this thread alone.
        unsafe { store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, sum, p.op.beta) };
        row += stride;
    }
}

/// The entries of one storage type and product type.
macro_rules! dia_entries {
    ($($name:ident: $v:ty, $t:ty);+ $(;)?) => {$(
        crate::ptx_entry!($name, DiaParams<$v, $t>, dia::<$v, $t>);
    )+};
}

dia_entries!(
    spmv_dia_f32: f32, f32;
    spmv_dia_f64: f64, f64;
    spmv_dia_f32_f64: f32, f64;
    spmv_dia_f16_f32: F16, f32;
    spmv_dia_f16_f64: F16, f64;
    spmv_dia_bf16_f32: Bf16, f32;
    spmv_dia_bf16_f64: Bf16, f64;
);
