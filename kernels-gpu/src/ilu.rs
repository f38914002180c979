//! ILU(0)'s triangular solves, `L y = r` then `U z = y`, a level of rows at a time (Anderson &
//! Saad 1989; the scheme of cuSPARSE's `csrsv`, Naumov 2011): every row of a level reads only rows
//! of the levels before (`host/src/reference/ilu.rs` computes the schedules). A wide level is a
//! launch of its own over the grid; a run of consecutive narrow levels (at most `ILU_RUN_ROWS` rows
//! each, as a 2-D grid's anti-diagonals are) is one launch of one block, which waits at a barrier
//! between levels: a barrier costs far less than a launch. One thread per row,
//! its entries summed by `fma` in column order and, for `U`, divided by its pivot: the CPU oracle's
//! operations in its order, so the two agree bit for bit.
//!
//! The factors are one CSR matrix on `A`'s pattern: `L` left of each row's diagonal (its unit
//! diagonal implied), `U` from the diagonal on. The lower solve writes `y` into `z`; the upper one
//! works in place on it, each row reading its own `y` before writing its `z`.

use crate::abi::IluSolveParams;
use crate::arch::{Load, global_thread, grid_threads, sync_threads};
use crate::real::Real;
use core::ops::{Div, Neg};

/// Row `k` of the schedule (`rows[k]`): its index, its first entry, its diagonal's position and
/// its end.
///
/// # Safety
/// `k` is below the schedule's length, and the rows, the offsets and the diagonal positions are as
/// [`lower`] states.
#[inline(always)]
unsafe fn row_of<T>(p: &IluSolveParams<T>, k: usize) -> (usize, usize, usize, usize) {
    // SAFETY: the caller's contract: `rows[k]` is a row below `n`.
    unsafe {
        let row = u32::load_nc(p.rows.as_ptr().add(k)) as usize;
        let start = u32::load_nc(p.offsets.as_ptr().add(row)) as usize;
        let end = u32::load_nc(p.offsets.as_ptr().add(row + 1)) as usize;
        (row, start, u32::load_nc(p.diagonal.as_ptr().add(row)) as usize, end)
    }
}

/// Calls `solve(k)` for every schedule position `k` of the launch's levels, a level after the other:
/// the grid's threads stride over a level's positions, and with several levels (one block, the
/// host's contract) the block waits at a barrier before the next, so that a row reads only rows
/// written before it.
///
/// # Safety
/// `starts[first_level ..= first_level + levels]` are positions of the schedule, non-decreasing;
/// with `levels > 1` the grid is one block, every thread of which calls this.
#[inline(always)]
unsafe fn by_levels<T>(p: &IluSolveParams<T>, mut solve: impl FnMut(usize)) {
    let (first, stride) = (global_thread(), grid_threads());
    for l in 0..p.levels {
        let level = (p.first_level + l) as usize;
        // SAFETY: the caller's contract for `starts`.
        let (begin, end) = unsafe {
            (u32::load_nc(p.starts.as_ptr().add(level)), u32::load_nc(p.starts.as_ptr().add(level + 1)))
        };
        let mut k = u64::from(begin) + first;
        while k < u64::from(end) {
            solve(k as usize);
            k += stride;
        }
        if l + 1 < p.levels {
            // SAFETY: one block, every thread reaches it (the level loop's count is the launch's).
            unsafe { sync_threads() };
        }
    }
}

/// `ilu_lower_*`: `z_i = r_i - Σ l_ik z_k` over row `i`'s entries left of its diagonal, for the
/// launch's levels' rows.
///
/// # Safety
/// `offsets` (`n + 1`), `cols`, `values` and `diagonal` (`n`) are ILU(0)'s factors of order `n`,
/// every column below `n`; the schedule's rows are distinct rows below `n`, each level's reading
/// left of the diagonal only rows of earlier levels (written by earlier launches, or by this one
/// before a barrier); `r` and `z` hold `n` elements and do not overlap; [`by_levels`]'s contract.
#[inline(always)]
unsafe fn lower<T: Real + Neg<Output = T>>(p: IluSolveParams<T>) {
    // SAFETY: the contract above: every index is inside its array; the `z` entries a row reads were
    // written before it (in this launch, before a barrier: ordinary loads, not the read-only path),
    // and row `row` is this thread's alone.
    unsafe {
        by_levels(&p, |k| {
            let (row, start, diagonal, _) = row_of(&p, k);
            let mut sum = T::load_nc(p.r.as_ptr().add(row));
            for e in start..diagonal {
                let col = u32::load_nc(p.cols.as_ptr().add(e)) as usize;
                sum = (-T::load_nc(p.values.as_ptr().add(e))).fma(p.z.as_ptr().add(col).read(), sum);
            }
            *p.z.as_mut_ptr().add(row) = sum;
        });
    }
}

/// `ilu_upper_*`: `z_i = (z_i - Σ u_ik z_k) / u_ii` over row `i`'s entries right of its diagonal,
/// for the launch's levels' rows, in place on the lower solve's `y`.
///
/// # Safety
/// As [`lower`], with the rows right of the diagonal written before; `r` unread.
#[inline(always)]
unsafe fn upper<T: Real + Neg<Output = T> + Div<Output = T>>(p: IluSolveParams<T>) {
    // SAFETY: as in `lower`; `z[row]` is read and written by this thread alone.
    unsafe {
        by_levels(&p, |k| {
            let (row, _, diagonal, end) = row_of(&p, k);
            let mut sum = p.z.as_ptr().add(row).read();
            for e in diagonal + 1..end {
                let col = u32::load_nc(p.cols.as_ptr().add(e)) as usize;
                sum = (-T::load_nc(p.values.as_ptr().add(e))).fma(p.z.as_ptr().add(col).read(), sum);
            }
            *p.z.as_mut_ptr().add(row) = sum / T::load_nc(p.values.as_ptr().add(diagonal));
        });
    }
}

crate::ptx_entry!(ilu_lower_f32, IluSolveParams<f32>, lower::<f32>);
crate::ptx_entry!(ilu_lower_f64, IluSolveParams<f64>, lower::<f64>);
crate::ptx_entry!(ilu_upper_f32, IluSolveParams<f32>, upper::<f32>);
crate::ptx_entry!(ilu_upper_f64, IluSolveParams<f64>, upper::<f64>);
