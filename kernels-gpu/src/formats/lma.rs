//! The local matrix approach (LMA, Reguly & Giles, "Efficient sparse matrix-vector multiplication on
//! cache-based GPUs", InPar 2012, section 8): the finite element operator applied from its element
//! matrices, `y += alpha * sum_e P_eᵀ K_e P_e x`, without assembling `A`.
//!
//! A group of `M` lanes per element, lane `r` computing row `r` of `K_e x_e` (the paper, and this
//! crate before it, used a thread per element: each thread kept its element's `M` gathered `x` and
//! walked all `M^2` values alone, which capped occupancy and left a Q4 kernel at 1.7-2.3 TB/s on an
//! H100, `docs/PERF.md` section 7). A warp holds [`lma_groups_per_warp`] groups and takes
//! [`lma_step_elements`] consecutive elements at each step, so that:
//! - the step's values, stored element after element, are one contiguous run: the 32 lanes load it
//!   coalesced, value `v` by lane `v % 32` ([`lma_step_loads`] loads each), whatever the storage, and
//!   store each value to the warp's slice of shared memory where a table at the start of the block's
//!   shared memory says (`index::lma_staged_positions`). A whole step's positions depend on the lane
//!   and the load alone, so the table, built once per block, stands for all the division and
//!   searching a position takes; only the last step of a range can be shorter, and it stages its last
//!   value again in place of the missing ones;
//! - lane `r` gathers `x` at its own node once and stages it beside the matrices, where the group
//!   reads it back (a broadcast);
//! - lane `r` reads row `r` of the staged matrix, `(r, 0)` to `(r, M - 1)`, at constant offsets, rows
//!   [`lma_row_stride`] (odd) values apart so that the lanes of a group hit different banks.
//!
//! Between the warp's two barriers of a step nothing branches on the lane but the guards of single
//! stores and of the final add: no shuffle sits in code that `ptxas` cannot prove converged (it
//! wraps each such one in a loop, which left the Q4 kernel issuing ~1,300 instructions and ~380
//! branches per element, at 30% of the H100's memory bandwidth).
//!
//! Two storages, one entry each (`_full`, `_sym`): every entry of the element matrix, or, for a
//! symmetric one, the upper triangle with the diagonal (`M (M + 1) / 2` values, 52% of the bytes at
//! Q4), each off-diagonal value staged twice, at `(i, j)` and at `(j, i)`, so that every row is read
//! whole. Either way lane `r` sums `K_e[r][j] * x_j` by `fma` from `j = 0` up, the order of the CPU's
//! `Lma::spmv`: the two storages of one operator give the same bits, and the coloured kernel gives
//! the CPU's.
//!
//! A slot without a node (`LMA_NO_NODE`, a Dirichlet node) reads no `x` (it passes 0) and writes no
//! `y`; its row and column of `K_e` hold zeros (the host stores them so), so the sums need no test.
//!
//! Two variants, both accumulating into a `y` already scaled by `beta` (`spmv_scale_*`):
//! - `spmv_lma_atomic_m<M>_<full|sym>_*`: every element in one launch, each row's result added with an atomic
//!   (f64 ones included: Hopper has them, the paper's Fermi did not). The order of the adds, and so
//!   the rounding of `y`, varies from run to run. The host gives it the colours as its ranges where
//!   they are about equal, so that the steps going round them keep the warps at work at any moment on
//!   neighbouring elements of every colour, whose shared `x` and `y` stay in L2.
//! - `spmv_lma_colour_m<M>_<full|sym>_*`: one launch per colour, over that colour's elements, which share no
//!   node: a plain read-modify-write of `y`. The colours run in order and each node gets one add per
//!   element, so `y` is the same on every run. An element that names a node twice adds its rows in
//!   slot order, one slot at a time (only for operators that have such an element).

use super::FormatReal;
use crate::abi::{
    LMA_NO_NODE, LMA_WARPS_PER_BLOCK, LmaParams, WARP_SIZE, lma_group_rounds, lma_groups_per_warp,
    lma_row_stride, lma_step_elements, lma_step_loads, lma_stored_values, lma_table_bytes, lma_warp_values,
};
use crate::arch::{
    Load, block_dim, block_idx, dynamic_shared, grid_dim, lane_id, sync_threads, sync_warp, thread_idx,
};
use crate::index::{lma_read_position, lma_staging_entry, lma_x_position};

/// The most [`lma_group_rounds`] of any element size.
const MAX_ROUNDS: usize = 4;

/// `$body` with `$k` bound to `0, 1, ..., $n - 1` in turn, as straight-line code (`$n` at most 32):
/// LLVM unrolls loops of these lengths only partly, which leaves the arrays they index in local
/// memory, and a closure called that many times is not always inlined (with the same effect); spelt
/// out by a macro, every index is a constant and the arrays stay in registers. `$n` is a constant,
/// so the guards fold away.
macro_rules! unroll {
    ($n:expr, $k:ident => $body:block) => {
        unroll!(@each $n, $k, $body;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@each $n:expr, $k:ident, $body:block; $($i:literal)*) => {{
        const { assert!($n <= 32, "unroll! spells out 32 steps") };
        $( if $i < $n { let $k: usize = $i; $body } )*
    }};
}

/// # Safety
/// `p` describes a validated LMA operator with `M` nodes per element stored as `SYM` says (every
/// node below the length of `x` and `y`, or `LMA_NO_NODE`; `ranges` holds `range_count + 1`
/// nondecreasing offsets, the last at most `elements`); launched with `LMA_BLOCK_SIZE` threads per
/// block and `lma_shared_bytes(M, SYM, size_of::<T>())` of dynamic shared memory. Without `ATOMIC`,
/// no two elements of a range share a node, and `repeated_nodes` is 1 if an element names a node
/// twice.
#[inline(always)]
unsafe fn lma<T: FormatReal, const M: usize, const SYM: bool, const ATOMIC: bool>(p: LmaParams<T>) {
    let m = M as u32;
    const {
        let m = M as u32;
        assert!(lma_group_rounds(m) as usize <= MAX_ROUNDS);
        assert!(lma_step_loads(m, SYM) <= 32);
    };
    let (groups, rounds, step) =
        (lma_groups_per_warp(m) as usize, lma_group_rounds(m) as usize, lma_step_elements(m) as usize);
    let stored = lma_stored_values(m, SYM) as usize;
    // Staged values per element.
    let square = M * lma_row_stride(m) as usize;
    // The loads of a step per lane, and the lanes whose last load is a value of a whole step.
    let loads = lma_step_loads(m, SYM) as usize;
    let tail = step * stored - (loads - 1) * WARP_SIZE as usize;

    // Declared as 16-byte words, so that the launch's shared memory starts 16-byte aligned.
    let shared = dynamic_shared::<u128>().cast::<u8>();
    let table = shared.cast::<u32>();
    let tid = thread_idx();
    let mut v = tid as usize;
    while v < loads * WARP_SIZE as usize {
        // SAFETY: `v < 32 * loads`, inside the table (`lma_table_bytes`); each thread writes its own
        // entries, and nobody reads them before the barrier below.
        unsafe { *table.add(v) = lma_staging_entry(v, M, SYM) };
        v += block_dim() as usize;
    }
    // SAFETY: every thread of the block reaches it: nothing before it depends on the thread but the
    // loop above, which every thread leaves.
    unsafe { sync_threads() };
    let warp = (tid / WARP_SIZE) as usize;
    // SAFETY: the shared memory holds the table, then `LMA_WARPS_PER_BLOCK` slices of
    // `lma_warp_values(M)` values (`lma_shared_bytes`); `warp < LMA_WARPS_PER_BLOCK`. The table's
    // size is a multiple of 16 bytes, so the slices are aligned for `T`.
    let staged = unsafe {
        shared.add(lma_table_bytes(m, SYM) as usize).cast::<T>().add(warp * lma_warp_values(m) as usize)
    };
    let (x, nodes, values, ranges) =
        (p.op.x.as_ptr(), p.a.nodes.as_ptr(), p.a.values.as_ptr(), p.ranges.as_ptr());

    if p.range_count == 0 {
        return;
    }
    // The warp's slots, `range + range_count * s` for step `s` of `range`, from
    // `block * LMA_WARPS_PER_BLOCK + warp` by the grid's warps: kept as the quotient and remainder,
    // so that a step divides nothing.
    let (range_count, steps) = (p.range_count as u64, p.steps as u64);
    let slot = block_idx() as u64 * LMA_WARPS_PER_BLOCK as u64 + warp as u64;
    let slot_stride = grid_dim() as u64 * LMA_WARPS_PER_BLOCK as u64;
    let (mut s, mut range) = (slot / range_count, slot % range_count);
    let (s_stride, range_stride) = (slot_stride / range_count, slot_stride % range_count);
    // The loop bound and `first < end` below are the same for every lane of the warp, so every lane
    // reaches the warp barriers, and the code between them has no branch that depends on the lane
    // but the guards of single stores and of the atomics.
    while s < steps {
        // SAFETY: `range < range_count`: `ranges` holds `range_count + 1` offsets.
        let (begin, end) = unsafe {
            let at = ranges.add(range as usize);
            (u32::load_nc(at) as u64, u32::load_nc(at.add(1)) as u64)
        };
        let first = begin + s * step as u64;
        if first < end {
            let count = (end - first).min(step as u64) as usize;
            let first = first as usize;
            // Read at each step (see `lane_id`): every lane-dependent address below is computed
            // where it is used rather than held in a register across the loop.
            let lane = lane_id() as usize;
            let (group, row) = (lane / M, lane % M);
            let in_group = group < groups;

            let mut node = [LMA_NO_NODE; MAX_ROUNDS];
            let mut xs = [T::ZERO; MAX_ROUNDS];
            unroll!(MAX_ROUNDS, t => {
                let e = t * groups + group;
                if t < rounds && in_group && e < count {
                    // SAFETY: `first + e < end <= elements` and `row < M`: inside the map. A node
                    // that is not `LMA_NO_NODE` is below the length of `x`.
                    unsafe {
                        node[t] = u32::load_nc(nodes.add((first + e) * M + row));
                        if node[t] != LMA_NO_NODE {
                            xs[t] = T::load_nc(x.add(node[t] as usize));
                        }
                    }
                }
            });

            // The step's values: `count * stored` of them from `first * stored`, value `v` by lane
            // `v % 32`, all issued before the first is stored. A whole step's addresses are the
            // lane's plus constants; a shorter one (the last of a range) reads its last value again
            // in place of those past its end.
            // SAFETY: `first * stored` is at most the number of values.
            let run = unsafe { values.add(first * stored) };
            let mut held = [T::ZERO; 32];
            if count == step {
                unroll!(32, k => {
                    if k < loads {
                        let v = k * WARP_SIZE as usize + lane;
                        let v = if k + 1 < loads { v } else { v.min(step * stored - 1) };
                        // SAFETY: `v < step * stored`: value `v` of the run lies in elements
                        // `first .. first + step`, inside the values.
                        held[k] = unsafe { T::load_nc(run.add(v)) };
                    }
                });
            } else {
                let last = count * stored - 1;
                unroll!(32, k => {
                    if k < loads {
                        let v = (k * WARP_SIZE as usize + lane).min(last);
                        // SAFETY: `v < count * stored`: inside elements `first .. first + count`.
                        held[k] = unsafe { T::load_nc(run.add(v)) };
                    }
                });
            }
            // The previous step's reads of the slice are done before it is overwritten.
            sync_warp();
            // Each value to its staged positions (`lma_staged_positions`), from the table. A step
            // shorter than a whole one stages the repeated values in its missing elements, which
            // only lanes without a row of the step read.
            unroll!(32, k => {
                if k < loads && (k + 1 < loads || lane < tail) {
                    let v = k * WARP_SIZE as usize + lane;
                    // SAFETY: `v < 32 * loads`, inside the table, which the barrier at the start
                    // made visible.
                    let entry = unsafe { *table.add(v) } as usize;
                    // SAFETY: `v < step * stored`, so both positions lie in the step's matrices
                    // (`lma_staged_positions`), inside this warp's slice, which no other warp
                    // touches.
                    unsafe {
                        *staged.add(entry & 0xffff) = held[k];
                        if SYM {
                            *staged.add(entry >> 16) = held[k];
                        }
                    }
                }
            });
            unroll!(MAX_ROUNDS, t => {
                if t < rounds && in_group {
                    // SAFETY: element `t * groups + group < step` and `row < M`: inside the slice.
                    unsafe { *staged.add(lma_x_position(t * groups + group, row, M)) = xs[t] };
                }
            });
            sync_warp();

            unroll!(MAX_ROUNDS, t => {
                if t < rounds {
                    // The lanes past the last group read the last group's element and write nothing.
                    let e = t * groups + group.min(groups - 1);
                    let live = in_group && e < count && node[t] != LMA_NO_NODE;
                    // Row `row` of element `e`, `x` of its nodes: staged above, every one of them.
                    let (matrix, xe) = (
                        staged.wrapping_add(e * square + lma_read_position(row, 0, M)),
                        staged.wrapping_add(lma_x_position(e, 0, M)),
                    );
                    let x_step = lma_x_position(0, 1, M) - lma_x_position(0, 0, M);
                    let mut sum = T::ZERO;
                    unroll!(M, j => {
                        // SAFETY: `e < step`, `row < M` and `j < M`: inside the slice, written
                        // before the barrier above.
                        sum = unsafe { (*matrix.add(j)).fma(*xe.add(j * x_step), sum) };
                    });
                    // SAFETY: a live lane's node is below the length of `y`; see `add_row`.
                    unsafe { add_row::<T, M, ATOMIC>(&p, sum, row, node[t], live) };
                }
            });
        }
        s += s_stride;
        range += range_stride;
        if range >= range_count {
            range -= range_count;
            s += 1;
        }
    }
}

/// Adds `alpha` times a `live` lane's `sum`, row `row` of its element's product, to `y[node]`.
/// Every lane of the warp calls it, with the same `p`.
///
/// # Safety
/// For a live lane, `node` is below the length of `y`; the contract of [`lma`] holds.
#[inline(always)]
unsafe fn add_row<T: FormatReal, const M: usize, const ATOMIC: bool>(
    p: &LmaParams<T>,
    sum: T,
    row: usize,
    node: u32,
    live: bool,
) {
    let out = p.op.y.as_mut_ptr().wrapping_add(node as usize);
    if ATOMIC {
        if live {
            // SAFETY: `node` is below the length of `y`; every update of `y` in this launch is atomic.
            unsafe { T::atomic_add(out, p.op.alpha * sum) };
        }
    } else if p.a.repeated_nodes == 0 {
        if live {
            // SAFETY: `node` is below the length of `y`; this launch's elements share no node and
            // this element names it once, so no other thread touches `y[node]`.
            unsafe { *out = p.op.alpha.fma(sum, *out) };
        }
    } else {
        // Slot by slot: lanes of one element naming the same node add in slot order, each after the
        // one before it has written (the warp barrier orders memory between the lanes).
        for slot in 0..M {
            if live && row == slot {
                // SAFETY: as above, but for the other lanes of this element that name the node,
                // which write before or after the barrier.
                unsafe { *out = p.op.alpha.fma(sum, *out) };
            }
            sync_warp();
        }
    }
}

/// Defines the four entries of one element size and storage.
macro_rules! lma_entries {
    ($m:literal, $sym:literal, $atomic_f32:ident, $atomic_f64:ident, $colour_f32:ident, $colour_f64:ident) => {
        crate::ptx_entry!($atomic_f32, LmaParams<f32>, lma::<f32, $m, $sym, true>);
        crate::ptx_entry!($atomic_f64, LmaParams<f64>, lma::<f64, $m, $sym, true>);
        crate::ptx_entry!($colour_f32, LmaParams<f32>, lma::<f32, $m, $sym, false>);
        crate::ptx_entry!($colour_f64, LmaParams<f64>, lma::<f64, $m, $sym, false>);
    };
}

lma_entries!(
    4,
    false,
    spmv_lma_atomic_m4_full_f32,
    spmv_lma_atomic_m4_full_f64,
    spmv_lma_colour_m4_full_f32,
    spmv_lma_colour_m4_full_f64
);
lma_entries!(
    9,
    false,
    spmv_lma_atomic_m9_full_f32,
    spmv_lma_atomic_m9_full_f64,
    spmv_lma_colour_m9_full_f32,
    spmv_lma_colour_m9_full_f64
);
lma_entries!(
    16,
    false,
    spmv_lma_atomic_m16_full_f32,
    spmv_lma_atomic_m16_full_f64,
    spmv_lma_colour_m16_full_f32,
    spmv_lma_colour_m16_full_f64
);
lma_entries!(
    25,
    false,
    spmv_lma_atomic_m25_full_f32,
    spmv_lma_atomic_m25_full_f64,
    spmv_lma_colour_m25_full_f32,
    spmv_lma_colour_m25_full_f64
);
lma_entries!(
    4,
    true,
    spmv_lma_atomic_m4_sym_f32,
    spmv_lma_atomic_m4_sym_f64,
    spmv_lma_colour_m4_sym_f32,
    spmv_lma_colour_m4_sym_f64
);
lma_entries!(
    9,
    true,
    spmv_lma_atomic_m9_sym_f32,
    spmv_lma_atomic_m9_sym_f64,
    spmv_lma_colour_m9_sym_f32,
    spmv_lma_colour_m9_sym_f64
);
lma_entries!(
    16,
    true,
    spmv_lma_atomic_m16_sym_f32,
    spmv_lma_atomic_m16_sym_f64,
    spmv_lma_colour_m16_sym_f32,
    spmv_lma_colour_m16_sym_f64
);
lma_entries!(
    25,
    true,
    spmv_lma_atomic_m25_sym_f32,
    spmv_lma_atomic_m25_sym_f64,
    spmv_lma_colour_m25_sym_f32,
    spmv_lma_colour_m25_sym_f64
);
