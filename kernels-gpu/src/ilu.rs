//! ILU(0)'s triangular solves, `L y = r` then `U z = y`, a level of rows at a time (Anderson &
//! Saad 1989; the scheme of cuSPARSE's `csrsv`, Naumov 2011): every row of a level reads only rows
//! of the levels before (`host/src/reference/ilu.rs` computes the schedules). A wide level is a
//! launch of its own over the grid; a run of consecutive narrow levels (at most `ILU_RUN_ROWS` rows
//! each, as a 2-D grid's anti-diagonals are) is one launch of one block, which waits at a barrier
//! between levels: a barrier costs far less than a launch. One thread per row,
//! its entries summed by `fma` in column order and, for `U`, divided by its pivot: the CPU oracle's
//! operations in its order, so the two agree bit for bit.
//!
//! Each solve reads its own copy of its triangle, laid out by the host in the schedule's order
//! ([`IluSolveParams`]): position `k`'s extent and pivot sit at `k` and its entries follow those of
//! position `k - 1`, so that the threads of a level read them at consecutive addresses, and the row
//! index is needed only for `r`, `z` and the columns. The lower solve writes `y` into `z`; the upper
//! one works in place on it, each row reading its own `y` before writing its `z`.
//!
//! Software-pipelined across the levels of a run (the loads of an iteration issued an iteration
//! or more ahead, as any software pipeline does). In a level only the gathers of `z` depend on
//! the level before; everything else a row needs is known before the run starts, but read in turn
//! it is a chain of dependent loads (the level's start, then the row's extent, then its columns,
//! then `z`), each a trip to L2, since the factors are read once an apply: measured on an H100,
//! about 1.45 µs a level with the CSR's layout, five such trips. So each thread carries its first
//! positions of the next three levels through three stages, one a level: the level's start
//! ([`slot`]), then the position's row and extent ([`head`]), then the start of its sum and its
//! first [`STAGED`] columns ([`body`]); each stage's loads independent of each other, issued
//! right after the current level's gathers and before its barrier. After the barrier a level costs
//! one trip: the row's `z` gathers, its values and pivot, issued together ([`gathered`]), then its
//! `fma`s in column order ([`finish`]). The stages read only what no other thread of the launch
//! writes (`z[row]` of a later level is written by the thread that stages it, when it solves it),
//! so the results are those of the unpipelined solve. A one-level launch (a wide level) runs the
//! same code with nothing to stage ahead.
//!
//! Few instructions a level, since one warp's dependent instructions cost as much as its trip
//! (PERF.md section 22: about 220 issued a level at 8.5 cycles each, half the stalls the trip's).
//! Positions, levels and the thread's index are 32-bit, so a level's offsets are one `mul.wide`
//! from a base, not 64-bit sums; stage one walks `starts` with a [`Cursor`] and loads one word a
//! level (a level's end is the next one's start); a row's columns and values are addressed from one
//! base, `cols + begin` and `values + begin`, each entry a constant offset from it; and a row costs
//! its own entries ([`each`]: a test past the last, straight-line code before it), not six
//! predicated slots with a select each whatever its length. The loads of a row still go out
//! together before its first `fma`, so a level is still one trip.

use crate::abi::IluSolveParams;
use crate::arch::{Load, global_thread, grid_threads, sync_threads};
use crate::real::Real;
use core::ops::{Div, Neg};

/// The columns of a row a thread holds in registers ahead of its level, and the width of a chunk of
/// a longer row's rest (columns, then `z`: two trips a chunk). Six cover in one chunk the strict
/// triangle of a 5-, 7- or 9-point stencil's row (2 to 4 entries), and a Q2 element's rows (4, 7 or
/// 12) in at most two. The values wait for the gathers, which they join after the barrier
/// (independent loads, the same trip), rather than hold two more registers an entry in f64. Register
/// counts (ptxas 13.5, sm_90, f64; PERF.md section 22): 96 (lower) and 104 (upper) as it is, 118
/// with eight columns, 128 with eight columns and their values staged (the last two measured with
/// six predicated slots); a run's block may have 512 threads, which allows 128 a thread, so this
/// leaves a margin for the driver's own compiler.
const STAGED: usize = 6;

/// Up to [`STAGED`] consecutive entries' columns, from entry `begin`: the first `count` are set,
/// the others zero and never read. Zero rather than uninitialised: with `MaybeUninit` here and in
/// [`Gathered`], ptxas 13.5 (sm_90, f64) gave the kernel 152 registers instead of 96, past the 128
/// a 512-thread block allows (undefined values live around the level loop).
#[derive(Clone, Copy)]
struct Columns {
    begin: u32,
    count: u32,
    cols: [u32; STAGED],
}

/// `f(j)` for `j` in `0 .. min(count, STAGED)`, in order, unrolled by hand: a test and a branch
/// past the last entry, then straight-line code, so that a row of two entries (a 5-point
/// stencil's triangle) costs two entries' instructions and three tests, not [`STAGED`] predicated
/// slots. Written out because LLVM turns a loop with a `break` at `count` into a counted loop it
/// does not unroll, and the slots' arrays then go to local memory.
#[inline(always)]
fn each(count: u32, mut f: impl FnMut(usize)) {
    const { assert!(STAGED == 6) };
    if count > 0 {
        f(0);
        if count > 1 {
            f(1);
            if count > 2 {
                f(2);
                if count > 3 {
                    f(3);
                    if count > 4 {
                        f(4);
                        if count > 5 {
                            f(5);
                        }
                    }
                }
            }
        }
    }
}

/// The calling thread's first position of a level, `k`, below `end`, the level's end: stage one.
#[derive(Clone, Copy)]
struct Slot {
    k: u32,
    end: u32,
}

/// Stage one's walk over the launch's levels: the next level's start, a pointer to its end, and
/// how many of the launch's levels are left from it. A level's end is the next one's start, so a
/// level costs one load of `starts`, not two.
struct Cursor {
    start: u32,
    end: *const u32,
    left: u32,
}

/// A position's row and its entries `begin .. end`: stage two.
#[derive(Clone, Copy)]
struct Head {
    slot: Slot,
    row: u32,
    begin: u32,
    end: u32,
}

/// A position ready to be solved once the levels before it are: its head, the start of its sum
/// (`r[row]`, or `y[row]` for the upper solve) and its first entries' columns: stage three.
#[derive(Clone, Copy)]
struct Body<T> {
    head: Head,
    sum: T,
    first: Columns,
}

/// What a row's sum needs after the barrier, loaded together: the `z` of some of its entries'
/// columns, those entries' values (the first `count` of each set, the rest zero, as in
/// [`Columns`]) and (upper solve) its pivot.
struct Gathered<T> {
    z: [T; STAGED],
    values: [T; STAGED],
    pivot: T,
}

impl Cursor {
    /// At the launch's first level.
    ///
    /// # Safety
    /// [`solve`]'s contract for `starts`.
    #[inline(always)]
    unsafe fn new<T>(p: &IluSolveParams<T>) -> Self {
        // SAFETY: the caller's contract: `starts[first_level ..= first_level + levels]` are the
        // schedule's, so `first_level + 1` is inside it or one past its end.
        unsafe {
            let first = p.starts.as_ptr().add(p.first_level as usize);
            Self { start: u32::load_nc(first), end: first.add(1), left: p.levels }
        }
    }

    /// Stage one: the calling thread's (`thread`, its index in the grid) position of the next
    /// level, `None` past the launch's levels or the level's end; then the cursor moves on.
    ///
    /// # Safety
    /// The cursor is [`Cursor::new`]'s, moved on only by this.
    #[inline(always)]
    unsafe fn next(&mut self, thread: u32) -> Option<Slot> {
        if self.left == 0 {
            return None;
        }
        // SAFETY: a level left, so `end` points at its end in `starts`, and one past it stays
        // inside the array or one past its end ([`Cursor::new`]).
        let end = unsafe {
            let end = u32::load_nc(self.end);
            self.end = self.end.add(1);
            end
        };
        self.left -= 1;
        // `starts` is non-decreasing: `end - start` is the level's width, and `start + thread` a
        // position below `end` when `thread` is below it (no 32-bit overflow either way).
        let slot = (thread < end - self.start).then_some(Slot { k: self.start + thread, end });
        self.start = end;
        slot
    }
}

/// Stage two: the row at position `slot.k` and its entries' extent.
///
/// # Safety
/// `slot.k` is a position of the schedule; [`solve`]'s contract.
#[inline(always)]
unsafe fn head<T>(p: &IluSolveParams<T>, slot: Slot) -> Head {
    // SAFETY: the caller's contract: `rows` and `offsets[..= k + 1]` hold every position's.
    unsafe {
        let offsets = p.offsets.as_ptr().add(slot.k as usize);
        Head {
            slot,
            row: u32::load_nc(p.rows.as_ptr().add(slot.k as usize)),
            begin: u32::load_nc(offsets),
            end: u32::load_nc(offsets.add(1)),
        }
    }
}

/// Stage three: the start of the position's sum and its first [`STAGED`] entries' columns.
///
/// # Safety
/// `head` is a position's ([`head`]); [`solve`]'s contract.
#[inline(always)]
unsafe fn body<T: Real, const UPPER: bool>(p: &IluSolveParams<T>, head: Head) -> Body<T> {
    let row = head.row as usize;
    // SAFETY: `row` is below `n`, and `begin .. end` inside the entries (the caller's contract).
    // The upper solve's `z[row]` is its `y`, written before the launch and next written by this
    // thread when it solves the row: an ordinary load, read before it changes.
    unsafe {
        let sum = if UPPER { p.z.as_ptr().add(row).read() } else { T::load_nc(p.r.as_ptr().add(row)) };
        Body { head, sum, first: columns(p, head.begin, head.end) }
    }
}

/// The columns of entries `begin .. min(end, begin + STAGED)`, loaded together: addressed from one
/// base, `cols + begin`, so that each is the base and a constant offset (no 64-bit arithmetic an
/// entry), and only the row's own (a 5-point stencil's triangle has two), not [`STAGED`] guarded
/// slots whatever the row.
///
/// # Safety
/// `begin <= end`, both inside the entries ([`solve`]'s contract).
#[inline(always)]
unsafe fn columns<T>(p: &IluSolveParams<T>, begin: u32, end: u32) -> Columns {
    let count = (end - begin).min(STAGED as u32);
    let mut cols = [0; STAGED];
    // SAFETY: `begin` is an entry or the end of the entries (the caller's contract).
    let base = unsafe { p.cols.as_ptr().add(begin as usize) };
    // SAFETY: `begin + j < end`, inside the entries (the caller's contract).
    each(count, |j| cols[j] = unsafe { u32::load_nc(base.add(j)) });
    Columns { begin, count, cols }
}

/// The `z` of `c`'s columns and `c`'s values, and for the upper solve the pivot of position `k`:
/// every load issued before any is used, so a row's gathers make one trip to memory, not one each.
/// The values are addressed from one base, `values + begin`, as [`columns`] does.
///
/// # Safety
/// `c`'s columns are rows of earlier levels, written before this launch or before the last
/// barrier ([`solve`]'s contract): ordinary loads of `z`, not the read-only path; `k` is a position.
#[inline(always)]
unsafe fn gathered<T: Real, const UPPER: bool>(p: &IluSolveParams<T>, c: &Columns, k: u32) -> Gathered<T> {
    let mut g = Gathered { z: [T::ZERO; STAGED], values: [T::ZERO; STAGED], pivot: T::ZERO };
    // SAFETY: `begin` is an entry or the end of the entries (the caller's contract).
    let values = unsafe { p.values.as_ptr().add(c.begin as usize) };
    each(c.count, |j| {
        // SAFETY: the caller's contract; `cols[j]` is one of the first `count`, set by `columns`,
        // a column below `n`; `begin + j` an entry.
        unsafe {
            g.z[j] = p.z.as_ptr().add(c.cols[j] as usize).read();
            g.values[j] = T::load_nc(values.add(j));
        }
    });
    if UPPER {
        // SAFETY: `pivots` holds every position's (the caller's contract).
        g.pivot = unsafe { T::load_nc(p.pivots.as_ptr().add(k as usize)) };
    }
    g
}

/// `sum - Σ value_j z_j` over `c`'s entries, one `fma` each in column order (the oracle's): only
/// the row's `count`, not a predicated `fma` and select for each of [`STAGED`] slots.
#[inline(always)]
fn accumulate<T: Real + Neg<Output = T>>(c: &Columns, g: &Gathered<T>, mut sum: T) -> T {
    // SAFETY: the first `count` values and `z` are set ([`gathered`] over the same `c`).
    each(c.count, |j| sum = (-g.values[j]).fma(g.z[j], sum));
    sum
}

/// Stage four, after the barrier: the row's sum over its first entries (with what `first`
/// gathered), then over any past [`STAGED`], a chunk at a time (few rows have them), the division
/// by the pivot for the upper solve, and the store of `z[row]`.
///
/// # Safety
/// `body` is a position of the level being solved ([`body`]), `first` what [`gathered`] loaded for
/// its first entries; [`solve`]'s contract.
#[inline(always)]
unsafe fn finish<T: Real + Neg<Output = T> + Div<Output = T>, const UPPER: bool>(
    p: &IluSolveParams<T>,
    body: &Body<T>,
    first: &Gathered<T>,
) {
    let Head { slot, row, end, .. } = body.head;
    let mut sum = accumulate(&body.first, first, body.sum);
    let mut e = body.first.begin + body.first.count;
    while e < end {
        // SAFETY: `e < end`, inside the row's entries, whose columns are rows solved before.
        unsafe {
            let rest = columns(p, e, end);
            sum = accumulate(&rest, &gathered::<T, false>(p, &rest, slot.k), sum);
            e += rest.count;
        }
    }
    // SAFETY: row `row` is this thread's alone, below `n`.
    unsafe { *p.z.as_mut_ptr().add(row as usize) = if UPPER { sum / first.pivot } else { sum } };
}

/// Solves the launch's levels, a level after the other: the grid's threads stride over a level's
/// positions, and with several levels (one block, the host's contract) the block waits at a
/// barrier before the next, so that a row reads only rows written before it. A thread's first
/// position of a level is staged three levels ahead (the module's pipeline); any further one (a
/// grid narrower than its level) is loaded and solved on the spot. Positions, levels and the
/// thread's index are 32-bit (the host's schedule is indexed by `u32`); a grid of more than
/// `u32::MAX` threads is read as `u32::MAX` of them, which changes nothing, since no level is that
/// wide.
///
/// # Safety
/// `rows` holds the schedule's positions, distinct rows below `n`; `offsets` (positions `+ 1`),
/// `cols`, `values` and, for the upper solve, `pivots` (a position each) are its triangle in the
/// schedule's order, every column below `n` and a row of an earlier level (written by earlier
/// launches, or by this one before a barrier); `starts[first_level ..= first_level + levels]` are
/// positions, non-decreasing; `r` (read by the lower solve) and `z` hold `n` elements and do not
/// overlap; with `levels > 1` the grid is one block, every thread of which calls this.
#[inline(always)]
unsafe fn solve<T: Real + Neg<Output = T> + Div<Output = T>, const UPPER: bool>(p: IluSolveParams<T>) {
    let thread = global_thread().min(u64::from(u32::MAX)) as u32;
    let stride = grid_threads().min(u64::from(u32::MAX)) as u32;
    // SAFETY: the contract above, which each stage states for its part; the barrier is reached by
    // every thread of the one block (the level loop's count is the launch's).
    unsafe {
        let mut cursor = Cursor::new(&p);
        let mut now = cursor.next(thread).map(|s| body::<T, UPPER>(&p, head(&p, s)));
        let mut ahead1 = cursor.next(thread).map(|s| head(&p, s));
        let mut ahead2 = cursor.next(thread);
        for l in 0..p.levels {
            let g = now.as_ref().map(|b| gathered::<T, UPPER>(&p, &b.first, b.head.slot.k));
            let next =
                (ahead1.map(|h| body::<T, UPPER>(&p, h)), ahead2.map(|s| head(&p, s)), cursor.next(thread));
            if let (Some(b), Some(g)) = (&now, &g) {
                finish::<T, UPPER>(&p, b, g);
                let Slot { mut k, end } = b.head.slot;
                while end - k > stride {
                    k += stride;
                    let b = body::<T, UPPER>(&p, head(&p, Slot { k, end }));
                    finish::<T, UPPER>(&p, &b, &gathered::<T, UPPER>(&p, &b.first, k));
                }
            }
            if l + 1 < p.levels {
                sync_threads();
            }
            (now, ahead1, ahead2) = next;
        }
    }
}

/// `ilu_lower_*`: `z_i = r_i - Σ l_ik z_k` over row `i`'s entries left of its diagonal, for the
/// launch's levels' rows.
///
/// # Safety
/// [`solve`]'s contract, over `L`'s entries.
#[inline(always)]
unsafe fn lower<T: Real + Neg<Output = T> + Div<Output = T>>(p: IluSolveParams<T>) {
    // SAFETY: the caller's contract.
    unsafe { solve::<T, false>(p) }
}

/// `ilu_upper_*`: `z_i = (z_i - Σ u_ik z_k) / u_ii` over row `i`'s entries right of its diagonal,
/// for the launch's levels' rows, in place on the lower solve's `y`.
///
/// # Safety
/// [`solve`]'s contract, over `U`'s entries and pivots; `r` unread.
#[inline(always)]
unsafe fn upper<T: Real + Neg<Output = T> + Div<Output = T>>(p: IluSolveParams<T>) {
    // SAFETY: the caller's contract.
    unsafe { solve::<T, true>(p) }
}

crate::ptx_entry!(ilu_lower_f32, IluSolveParams<f32>, lower::<f32>);
crate::ptx_entry!(ilu_lower_f64, IluSolveParams<f64>, lower::<f64>);
crate::ptx_entry!(ilu_upper_f32, IluSolveParams<f32>, upper::<f32>);
crate::ptx_entry!(ilu_upper_f64, IluSolveParams<f64>, upper::<f64>);
