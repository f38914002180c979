//! CSR balanced: row blocks of about equal work, one per warp (the row blocks of CSR-Adaptive:
//! Greathouse & Daga, "Efficient Sparse Matrix-Vector Multiplication on GPUs using the CSR Storage
//! Format", SC 2014, section 3; done per warp and with shuffles instead of per block through shared
//! memory), so that a warp never waits for the longest of rows it happens to hold.
//!
//! At upload the host cuts the rows into tasks of consecutive rows (`task_starts`, one
//! [`TaskStart`] per task: its first row and that row's offset, so that the warp's first round trip
//! gives it both its rows and its entries): at most [`BALANCED_TASK_ROWS`] rows holding at most
//! [`BALANCED_TASK_ENTRIES`] entries in all, or a single row, longer than that or not fitting beside
//! its neighbours. Rows of
//! [`BALANCED_LONG_ROW`](crate::abi::BALANCED_LONG_ROW) entries or more are a task of their own that
//! the task warps skip: they are cut into chunks for the long-row path shared with the parametrised
//! kernel (`long_rows.rs`), whose warps are the first `chunk_blocks` blocks of the same launch. First,
//! so that the last warp of a huge row sums its partial sums while the tasks still run rather than
//! after them (blocks start roughly in index order).
//!
//! Thread mapping of a task of more than 4 rows `r0 .. r0 + n` with entries `k0 .. k1`:
//! 1. lane `l` owns rows `r0 + 2 l` and `r0 + 2 l + 1` (those below `r0 + n`) and reads their
//!    ranges; every lane loads the products of entries `k0 + l + 32 j`, all loads issued before the
//!    first product (`span_loads`), for 4 steps when the task has at most 128 entries, else 8;
//! 2. per step `j` (32 consecutive entries): each owner sets the bit of the first entry of each of its
//!    rows that starts in the step; an OR over the warp gives the segment heads (bit 0 always set); an
//!    inclusive segmented scan of shuffles sums each row's products up to each lane; for each of its
//!    rows with entries in the step, an owner takes by an indexed shuffle the scan at the row's last
//!    entry there, and adds it to the row's sum;
//! 3. owners write `y = alpha * sum + beta * y`, two stores covering the task's rows.
//!
//! A task of one row is summed by the whole warp (CSR vector: lanes stride by 32, then a butterfly);
//! a task of 2 to 4 rows the same way, each lane adding each of its products into its row's sum, one
//! butterfly a row: a step then costs a few instructions a row instead of a scan.
//! Every shuffle is on a path whose bounds depend on the task only, so the whole warp reaches it.
//! A row's sum never depends on timing: the scan, the steps and the chunks' partial sums all add in a
//! fixed order.
//!
//! Versus CSR-Adaptive: its row blocks belong to a workgroup, whose threads stage the block's products
//! in local memory and meet at a barrier; here a warp's registers hold its task, so no shared memory
//! limits occupancy and no barrier stalls a block. Its "CSR-Stream" (a thread per row summing from
//! local memory) becomes per-lane row ownership with a segmented scan, which stays balanced when the
//! rows of a task differ in length; its "CSR-VectorL" for very long rows becomes the chunk path.

use super::long_rows::{Batched, long_row_chunk};
use super::warp_scan::{Words, segmented_scan, warp_or};
use super::{SPAN_STEPS, span_loads, span_sum, warp_row_store};
use crate::abi::{BALANCED_TASK_ENTRIES, BALANCED_TASK_ROWS, CsrBalancedParams, TaskStart, WARP_SIZE};
use crate::arch::{Load, block_dim, block_idx, grid_dim, shfl_idx_b32, thread_idx};
use crate::real::{Real, store_axpby};

const WARP: usize = WARP_SIZE as usize;

/// # Safety
/// `p` describes a validated CSR matrix, vectors of matching lengths, tasks built by the host as
/// [`CsrBalancedParams`] says, and the matrix's long-row split at the balanced kernel's length; the
/// block size is a multiple of 32; the grid has `chunk_blocks` blocks, enough for one warp per chunk,
/// then at least one block for the tasks.
#[inline(always)]
unsafe fn csr_balanced<T: Words>(p: CsrBalancedParams<T>) {
    let block = block_idx();
    let warps = u64::from(block_dim() / WARP_SIZE);
    let warp = u64::from(thread_idx() / WARP_SIZE);
    // SAFETY: forwarded from the caller.
    unsafe {
        if block < p.chunk_blocks {
            let chunk = u64::from(block) * warps + warp;
            if chunk < u64::from(p.long.chunks) {
                long_row_chunk::<T, Batched>(&p.a, &p.op, &p.long, chunk as usize);
            }
        } else {
            let stride = u64::from(grid_dim() - p.chunk_blocks) * warps;
            let mut task = u64::from(block - p.chunk_blocks) * warps + warp;
            while task < u64::from(p.tasks) {
                row_task(&p, task as usize);
                task += stride;
            }
        }
    }
}

/// Task `task`, by the calling warp.
///
/// # Safety
/// As [`csr_balanced`], and `task < p.tasks`; the whole warp calls it.
#[inline(always)]
unsafe fn row_task<T: Words>(p: &CsrBalancedParams<T>, task: usize) {
    let lane = (thread_idx() % WARP_SIZE) as usize;
    // SAFETY: `task + 1 <= tasks`, and `task_starts` has `tasks + 1` ascending starts up to `rows`
    // and `nnz`, each entry its row's offset.
    unsafe {
        // `TaskStart` wraps the `u64` it is loaded as.
        let row_and_entry = |t: usize| {
            let start = TaskStart(u64::load_nc(p.task_starts.as_ptr().cast::<u64>().add(t)));
            (start.row(), start.entry())
        };
        let (first, k0) = row_and_entry(task);
        let (last, k1) = row_and_entry(task + 1);
        let (first, rows) = (first as usize, (last - first) as usize);
        let (k0, k1) = (k0 as usize, k1 as usize);
        if rows == 1 {
            return one_row(p, first, k0, k1, lane);
        }
        if rows <= FEW_ROWS {
            few_rows(p, first, rows, k0, k1, lane);
        } else if k1 - k0 <= BALANCED_TASK_ENTRIES as usize / 2 {
            // Half the steps for tasks that fit them: no loads or scan steps that cannot hold an entry.
            short_rows::<T, { SPAN_STEPS / 2 }>(p, first, rows, k0, k1, lane);
        } else {
            short_rows::<T, SPAN_STEPS>(p, first, rows, k0, k1, lane);
        }
    }
}

/// A task of one row: the whole warp sums it, span by span, unless it is long (the chunk warps own
/// it then, `y` included).
///
/// # Safety
/// As [`row_task`], `row < rows`, and `start .. end` are the row's entries.
#[inline(always)]
unsafe fn one_row<T: Real>(p: &CsrBalancedParams<T>, row: usize, start: usize, end: usize, lane: usize) {
    const SPAN: usize = SPAN_STEPS * WARP;
    // SAFETY: `row < rows`; entries and columns are in range (host validation).
    unsafe {
        // A row has at most nnz <= u32::MAX entries.
        if p.long.is_long((end - start) as u32) {
            return;
        }
        let mut sum = T::ZERO;
        let mut from = start;
        while from < end {
            sum = span_sum(&p.a, p.op.x.as_ptr(), from, end.min(from + SPAN), lane, sum);
            from += SPAN;
        }
        warp_row_store(&p.op, row, sum, lane);
    }
}

/// The most rows of a task that [`few_rows`] sums, rather than [`short_rows`]' scan. A step costs
/// it a compare and an add for each row's end, and an FMA and a select for each row (23
/// instructions in f32), and the task a butterfly a row at the end; the scan costs about 45
/// instructions a step in f32, 60 in f64, however few rows end in it. At 4 rows the sums fit in as
/// many registers; tasks of rows of 64 entries or more (4 of them fill a task) take it, and the
/// real set's matrices of such rows (facebook_MIT8, Maragal_6, bundle1) ran 4-10% faster in a graph
/// in f64, 1-6% in f32 (docs/PERF.md, section 44).
const FEW_ROWS: usize = 4;

/// A task of `rows` (2 to [`FEW_ROWS`]) rows from `first`, entries `k0 .. k1` with `k1 - k0 <=
/// SPAN_STEPS * 32`: each lane adds the products of its entries (`k0 + lane + 32 j`, loaded as
/// [`short_rows`] loads them) into the sum of the row that holds each, told by the rows' ends, which
/// every lane reads; then the warp adds each row's lane sums with a butterfly, and lane 0 writes it.
/// The tasks of rows of tens of entries (a social graph's, a linear program's: rows of 64-250
/// entries make tasks of 2-4) then skip the scan, whose steps mostly cross no row's end.
///
/// # Safety
/// As [`row_task`]; `k0` and `k1` are the offsets of rows `first` and `first + rows`, `2 <= rows <=
/// FEW_ROWS`, `k1 - k0 <= SPAN_STEPS * 32` (entries past it would be dropped).
#[inline(always)]
unsafe fn few_rows<T: Real>(
    p: &CsrBalancedParams<T>,
    first: usize,
    rows: usize,
    k0: usize,
    k1: usize,
    lane: usize,
) {
    // Relative to `k0`, the end of each of the task's rows, slots past its last row at the task's end
    // (so the last is the task's end: `rows <= FEW_ROWS`). Entry `k0 + e` is in row `first + i` for
    // `i` the number of ends at or below `e`, and in no row (`i == FEW_ROWS`) past the task.
    let ends: [u32; FEW_ROWS] = core::array::from_fn(|i| {
        // SAFETY: `first + rows <= rows of the matrix` (the caller).
        unsafe { task_offset(p, first, rows, k0, i + 1) }
    });
    let mut sums = [T::ZERO; FEW_ROWS];
    if k0 < k1 {
        // SAFETY: `k0 < k1 <= nnz`; columns are in range (host validation).
        let (vals, xs) = unsafe { span_loads::<T, SPAN_STEPS>(&p.a, p.op.x.as_ptr(), k0, k1, lane) };
        for j in 0..SPAN_STEPS {
            let e = j as u32 * WARP_SIZE + lane as u32;
            let row: u32 = ends.iter().map(|&end| u32::from(end <= e)).sum();
            for (i, sum) in sums.iter_mut().enumerate() {
                // The FMA before the test, which then only selects (see `span_sum`).
                let next = vals[j].fma(xs[j], *sum);
                *sum = if row == i as u32 { next } else { *sum };
            }
        }
    }
    // `rows` is the task's, so the whole warp takes each butterfly or none.
    let finish = |i: usize, sum: T| {
        if i < rows {
            // SAFETY: `first + i` is a row of the task, and the task is this warp's alone.
            unsafe { warp_row_store(&p.op, first + i, sum, lane) };
        }
    };
    // Written out, each sum by a constant index: LLVM does not unroll the f64 butterflies' loop, and
    // indexing `sums` by its counter puts them in local memory.
    let [s0, s1, s2, s3] = sums;
    finish(0, s0);
    finish(1, s1);
    finish(2, s2);
    finish(3, s3);
}

/// The offset of the task's row `first + j` relative to the task's first entry `k0`, rows past the
/// task's last (`j >= rows`) at the task's end: a few-row task's row ends and a scan task's owned
/// rows' bounds. A task holds at most `SPAN_STEPS * 32` entries, so it fits in u32.
///
/// # Safety
/// `first + rows <= rows of the matrix`, and `k0` is row `first`'s offset.
#[inline(always)]
unsafe fn task_offset<T>(p: &CsrBalancedParams<T>, first: usize, rows: usize, k0: usize, j: usize) -> u32 {
    // SAFETY: the row is at most `first + rows`, and the offsets have `rows + 1` elements.
    let offset = unsafe { u32::load_nc(p.a.row_offsets.as_ptr().add(first + j.min(rows))) };
    (offset as usize - k0) as u32
}

/// Rows each lane owns in a task of several rows.
const ROWS_PER_LANE: usize = (BALANCED_TASK_ROWS / WARP_SIZE) as usize;

/// A row a lane owns in a task, located by steps and lanes from the task's first entry: worked out
/// once, so that each step only compares them with its own (constant) number.
#[derive(Clone, Copy)]
struct OwnedRow {
    /// The step of the row's first entry, and that entry's bit in the step's segment heads.
    first_step: u32,
    head: u32,
    /// The step of the row's last entry, and its lane there.
    last_step: u32,
    last_lane: u32,
}

impl OwnedRow {
    /// The row of entries `start .. end` of the task; an empty row is in no step.
    #[inline(always)]
    fn new(start: u32, end: u32) -> Self {
        if start < end {
            let last = end - 1;
            OwnedRow {
                first_step: start / WARP_SIZE,
                head: 1 << (start % WARP_SIZE),
                last_step: last / WARP_SIZE,
                last_lane: last % WARP_SIZE,
            }
        } else {
            OwnedRow { first_step: u32::MAX, head: 0, last_step: 0, last_lane: 0 }
        }
    }
}

/// A task of `rows` (more than [`FEW_ROWS`], up to [`BALANCED_TASK_ROWS`]) rows from `first`,
/// entries `k0 .. k1`: lane `l` owns rows `first + 2 l` and `first + 2 l + 1` (see the module doc).
///
/// # Safety
/// As [`row_task`]; `k0` and `k1` are the offsets of rows `first` and `first + rows`, `k1 - k0 <=
/// STEPS * 32` (entries past it would be dropped).
#[inline(always)]
unsafe fn short_rows<T: Words, const STEPS: usize>(
    p: &CsrBalancedParams<T>,
    first: usize,
    rows: usize,
    k0: usize,
    k1: usize,
    lane: usize,
) {
    // The lane's rows are entries `bounds[i] .. bounds[i + 1]`; rows past the task's are empty at
    // `k1`. Relative to `k0`, all fit in u32: a task holds at most STEPS * 32 entries.
    let mut bounds = [0u32; ROWS_PER_LANE + 1];
    for (i, bound) in bounds.iter_mut().enumerate() {
        // SAFETY: `first + rows <= rows of the matrix` (the caller).
        *bound = unsafe { task_offset(p, first, rows, k0, ROWS_PER_LANE * lane + i) };
    }
    let owned: [OwnedRow; ROWS_PER_LANE] = core::array::from_fn(|i| OwnedRow::new(bounds[i], bounds[i + 1]));
    let mut sums = [T::ZERO; ROWS_PER_LANE];
    if k0 < k1 {
        let len = (k1 - k0) as u32;
        // SAFETY: `k0 < k1 <= nnz`; columns are in range (host validation).
        let (vals, xs) = unsafe { span_loads::<T, STEPS>(&p.a, p.op.x.as_ptr(), k0, k1, lane) };
        let mut products = [T::ZERO; STEPS];
        for (j, product) in products.iter_mut().enumerate() {
            // Multiplied before the test, which then only selects (see `span_sum`).
            let v = vals[j] * xs[j];
            *product = if j as u32 * WARP_SIZE + (lane as u32) < len { v } else { T::ZERO };
        }
        // The steps written out, each with a constant index: LLVM does not unroll a loop with a body
        // of this size, and indexing `products` by a loop counter would put it in local memory.
        // Steps past `k1` add nothing (no row of the task has entries there); running them anyway
        // keeps the steps in one basic block, so the scheduler overlaps their shuffle chains.
        macro_rules! steps {
            ($($j:literal)+) => {$(
                if let Some(&product) = products.get($j) {
                    row_step(&mut sums, product, $j, &owned, lane as u32);
                }
            )+};
        }
        const _: () = assert!(SPAN_STEPS <= 8, "write out more steps");
        steps!(0 1 2 3 4 5 6 7);
    }
    for (i, &sum) in sums.iter().enumerate() {
        let row = ROWS_PER_LANE * lane + i;
        if row < rows {
            // SAFETY: `first + row` is a row of the matrix, written by its owner lane only.
            unsafe { store_axpby(p.op.y.as_mut_ptr(), first + row, p.op.alpha, sum, p.op.beta) };
        }
    }
}

/// Adds to `sums[i]` the products of the lane's row `owned[i]` among the 32 entries of step `step`,
/// one per lane (`product`): the segment heads, the segmented scan, and for each row the shuffle
/// from its last entry in the step. Every lane of the warp must call it.
#[inline(always)]
fn row_step<T: Words>(
    sums: &mut [T; ROWS_PER_LANE],
    product: T,
    step: u32,
    owned: &[OwnedRow; ROWS_PER_LANE],
    lane: u32,
) {
    let mut heads = 1;
    for row in owned {
        heads |= if row.first_step == step { row.head } else { 0 };
    }
    let scan = segmented_scan(product, warp_or(heads), lane);
    for (row, sum) in owned.iter().zip(sums.iter_mut()) {
        // A row that goes on past the step has its step's last entry at lane 31.
        let src = if row.last_step == step { row.last_lane } else { WARP_SIZE - 1 };
        let part = scan.shuffle(|w| shfl_idx_b32(w, src));
        if row.first_step <= step && step <= row.last_step {
            *sum = *sum + part;
        }
    }
}

// In both modules: the sm_90 module's, which the host takes on Hopper (`abi::SM90_ENTRIES`), have
// one `redux.sync` for each step's warp-wide OR (`warp_or`) and wait for the grids ahead of them
// first, so that they can be launched before those end (`ptx_entry!`).
crate::ptx_entry!(both spmv_csr_balanced_f32, CsrBalancedParams<f32>, csr_balanced::<f32>);
crate::ptx_entry!(both spmv_csr_balanced_f64, CsrBalancedParams<f64>, csr_balanced::<f64>);
