//! ILU(0)'s triangular solves, `L y = r` then `U z = y`, a level of rows at a time (Anderson &
//! Saad 1989; the scheme of cuSPARSE's `csrsv`, Naumov 2011): the host launches one kernel per
//! level of the factor's schedule (`host/src/reference/ilu.rs` computes both), and every row of a
//! level reads only rows of the levels before, which earlier launches wrote. One thread per row,
//! its entries summed by `fma` in column order and, for `U`, divided by its pivot: the CPU oracle's
//! operations in its order, so the two agree bit for bit.
//!
//! The factors are one CSR matrix on `A`'s pattern: `L` left of each row's diagonal (its unit
//! diagonal implied), `U` from the diagonal on. The lower solve writes `y` into `z`; the upper one
//! works in place on it, each row reading its own `y` before writing its `z`.

use crate::abi::IluSolveParams;
use crate::arch::{Load, global_thread, grid_threads};
use crate::real::Real;
use core::ops::{Div, Neg};

/// Row `t` of the level: its index, its first entry, its diagonal's position and its end.
///
/// # Safety
/// `t < p.count`, and the level's rows, the offsets and the diagonal positions are as
/// [`lower`] states.
#[inline(always)]
unsafe fn row_of<T>(p: &IluSolveParams<T>, t: u64) -> (usize, usize, usize, usize) {
    // SAFETY: the caller's contract: `first + t < first + count <= n`, a row below `n`.
    unsafe {
        let row = u32::load_nc(p.rows.as_ptr().add((u64::from(p.first) + t) as usize)) as usize;
        let start = u32::load_nc(p.offsets.as_ptr().add(row)) as usize;
        let end = u32::load_nc(p.offsets.as_ptr().add(row + 1)) as usize;
        (row, start, u32::load_nc(p.diagonal.as_ptr().add(row)) as usize, end)
    }
}

/// `ilu_lower_*`: `z_i = r_i - Σ l_ik z_k` over row `i`'s entries left of its diagonal, for the
/// level's rows.
///
/// # Safety
/// `offsets` (`n + 1`), `cols`, `values` and `diagonal` (`n`) are ILU(0)'s factors of order `n`,
/// every column below `n`; `rows[first .. first + count]` are distinct rows below `n` whose entries
/// left of the diagonal name only rows that earlier launches wrote to `z`; `r` and `z` hold `n`
/// elements and do not overlap.
#[inline(always)]
unsafe fn lower<T: Real + Neg<Output = T>>(p: IluSolveParams<T>) {
    let (mut t, stride) = (global_thread(), grid_threads());
    while t < u64::from(p.count) {
        // SAFETY: the contract above: every index is inside its array, the `z` entries read were
        // written before this launch and are not written in it, and row `row` is this thread's.
        unsafe {
            let (row, start, diagonal, _) = row_of(&p, t);
            let mut sum = T::load_nc(p.r.as_ptr().add(row));
            for k in start..diagonal {
                let col = u32::load_nc(p.cols.as_ptr().add(k)) as usize;
                sum = (-T::load_nc(p.values.as_ptr().add(k))).fma(T::load_global(p.z.as_ptr().add(col)), sum);
            }
            *p.z.as_mut_ptr().add(row) = sum;
        }
        t += stride;
    }
}

/// `ilu_upper_*`: `z_i = (z_i - Σ u_ik z_k) / u_ii` over row `i`'s entries right of its diagonal,
/// for the level's rows, in place on the lower solve's `y`.
///
/// # Safety
/// As [`lower`], with the rows right of the diagonal written by earlier launches; `r` unread.
#[inline(always)]
unsafe fn upper<T: Real + Neg<Output = T> + Div<Output = T>>(p: IluSolveParams<T>) {
    let (mut t, stride) = (global_thread(), grid_threads());
    while t < u64::from(p.count) {
        // SAFETY: as in `lower`; `z[row]` is read and written by this thread alone.
        unsafe {
            let (row, _, diagonal, end) = row_of(&p, t);
            // An ordinary read: this thread writes the element below (`load_global` is for
            // elements no thread writes during the kernel).
            let mut sum = p.z.as_ptr().add(row).read();
            for k in diagonal + 1..end {
                let col = u32::load_nc(p.cols.as_ptr().add(k)) as usize;
                sum = (-T::load_nc(p.values.as_ptr().add(k))).fma(T::load_global(p.z.as_ptr().add(col)), sum);
            }
            *p.z.as_mut_ptr().add(row) = sum / T::load_nc(p.values.as_ptr().add(diagonal));
        }
        t += stride;
    }
}

crate::ptx_entry!(ilu_lower_f32, IluSolveParams<f32>, lower::<f32>);
crate::ptx_entry!(ilu_lower_f64, IluSolveParams<f64>, lower::<f64>);
crate::ptx_entry!(ilu_upper_f32, IluSolveParams<f32>, upper::<f32>);
crate::ptx_entry!(ilu_upper_f64, IluSolveParams<f64>, upper::<f64>);
