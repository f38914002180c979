//! Index arithmetic shared by the kernels and the host: how many blocks a launch gets and which row a
//! thread works on. Plain functions, so they are unit-tested on the host.

use crate::abi::{
    CG_BLOCK_THREADS, CG_MAX_BLOCKS, MAX_GRID_X, RADIX_BITS, RADIX_TILE, WARP_SIZE, lma_row_stride,
    lma_step_elements, lma_stored_values,
};

/// Blocks for `items` work items of `per_block` items each, capped at [`MAX_GRID_X`]. Every kernel
/// walks its items with a grid stride, so the cap bounds the launch without losing work.
pub const fn grid_blocks(items: u64, per_block: u32) -> u32 {
    let blocks = items.div_ceil(per_block as u64);
    if blocks > MAX_GRID_X as u64 { MAX_GRID_X } else { blocks as u32 }
}

/// Blocks of a CG vector kernel over `n` elements: one element per thread up to [`CG_MAX_BLOCKS`]
/// blocks, a grid stride beyond. A function of `n` alone, so that which block sums which elements,
/// and hence every rounding of the dot products, is the same on every run and every GPU. 0 for
/// `n == 0`: the host launches nothing then.
pub const fn cg_blocks(n: u32) -> u32 {
    let blocks = n.div_ceil(CG_BLOCK_THREADS);
    if blocks > CG_MAX_BLOCKS { CG_MAX_BLOCKS } else { blocks }
}

/// Threads a cooperative kernel needs to give each of `rows` rows a group of `coop` threads.
pub const fn coop_threads(rows: u32, coop: u32) -> u64 {
    rows as u64 * coop as u64
}

/// Where a thread sits in a cooperative launch: `group` is the first row of the thread's warp plus its
/// group within the warp, `lane` its place in the group. Rows are assigned warp by warp, so the loop
/// bound of a warp's groups is uniform across the warp and every lane reaches the reductions'
/// `shfl.sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoopSlot {
    /// The row of the warp's first group in the first grid-stride step.
    pub warp_first_row: u64,
    /// The group of this thread inside its warp: `0 .. WARP_SIZE / coop`.
    pub group_in_warp: u32,
    /// The lane of this thread inside its group: `0 .. coop`.
    pub lane: u32,
    /// How far the warp's first row moves at each grid-stride step.
    pub row_stride: u64,
}

/// The [`CoopSlot`] of global thread `thread` in a grid of `grid_threads` threads (a multiple of the warp
/// size) with `coop` threads per row (a power of two up to the warp size).
pub const fn coop_slot(thread: u64, grid_threads: u64, coop: u32) -> CoopSlot {
    let groups_per_warp = (WARP_SIZE / coop) as u64;
    let warp = thread / WARP_SIZE as u64;
    let lane_in_warp = (thread % WARP_SIZE as u64) as u32;
    CoopSlot {
        warp_first_row: warp * groups_per_warp,
        group_in_warp: lane_in_warp / coop,
        lane: lane_in_warp % coop,
        row_stride: grid_threads / WARP_SIZE as u64 * groups_per_warp,
    }
}

/// Radix passes that sort column indices below `cols`: one per [`RADIX_BITS`] of the largest,
/// `cols - 1`; none for at most one column, where every key is 0 and the entries are in order.
pub const fn radix_passes(cols: u32) -> u32 {
    let bits = if cols <= 1 { 0 } else { u32::BITS - (cols - 1).leading_zeros() };
    bits.div_ceil(RADIX_BITS)
}

/// Tiles of [`RADIX_TILE`] entries that cover `nnz` entries.
pub const fn radix_tiles(nnz: u32) -> u32 {
    nnz.div_ceil(RADIX_TILE)
}

/// Where the LMA kernels stage value `v` of a warp's step (`formats/lma.rs`), the values of
/// [`lma_step_elements`]`(m)` consecutive elements, [`lma_stored_values`] each, taken as one run:
/// entry `(i, j)` of the step's element `e` goes to `e * m * stride + i * stride + j` of the warp's
/// slice, `stride` = [`lma_row_stride`]`(m)`. Stored whole, value `p` of an element is `(p / m, p % m)`
/// (`LmaArgs`); stored as the upper triangle of a symmetric matrix (`symmetric`), row `i` holds the
/// `m - i` entries `(i, i ..)` from `i * m - i * (i - 1) / 2`, and each is staged twice, at `(i, j)`
/// and at its mirror `(j, i)`, so that every row is read whole. Returns the two positions (the same
/// one twice for an entry of the diagonal or a matrix stored whole).
pub const fn lma_staged_positions(v: usize, m: usize, symmetric: bool) -> (usize, usize) {
    let stride = lma_row_stride(m as u32) as usize;
    let stored = lma_stored_values(m as u32, symmetric) as usize;
    let (e, p) = (v / stored, v % stored);
    let (i, j) = if symmetric {
        let (mut i, mut start) = (0, 0);
        while p >= start + (m - i) {
            start += m - i;
            i += 1;
        }
        (i, i + (p - start))
    } else {
        (p / m, p % m)
    };
    let square = e * m * stride;
    let at = square + i * stride + j;
    (at, if symmetric { square + j * stride + i } else { at })
}

/// The staging table's entry for value `v` of a warp's step: [`lma_staged_positions`] as the low and
/// high halves of a `u32` (`abi::lma_shared_bytes` checks that every position fits 16 bits); 0 for
/// the values past a step's `lma_step_elements(m) * lma_stored_values(m, symmetric)`, which the
/// kernels load (the last load of a lane) but never stage.
pub const fn lma_staging_entry(v: usize, m: usize, symmetric: bool) -> u32 {
    let values = (lma_step_elements(m as u32) * lma_stored_values(m as u32, symmetric)) as usize;
    if v >= values {
        return 0;
    }
    let (at, mirror) = lma_staged_positions(v, m, symmetric);
    at as u32 | (mirror as u32) << 16
}

/// Where lane `row` of an LMA group reads entry `(row, j)` of its element's staged matrix, from the
/// element's first value.
pub const fn lma_read_position(row: usize, j: usize, m: usize) -> usize {
    row * lma_row_stride(m as u32) as usize + j
}

/// Where the LMA kernels stage `x` at node `j` of a step's element `e`, in the warp's slice: in the
/// padding column of row `j` when `m` is even (rows `m + 1` values apart), else after the step's
/// matrices (`abi::lma_warp_values`).
pub const fn lma_x_position(e: usize, j: usize, m: usize) -> usize {
    let stride = lma_row_stride(m as u32) as usize;
    if stride > m {
        (e * m + j) * stride + m
    } else {
        lma_step_elements(m as u32) as usize * m * stride + e * m + j
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_items_and_caps() {
        assert_eq!(grid_blocks(0, 128), 0);
        assert_eq!(grid_blocks(1, 128), 1);
        assert_eq!(grid_blocks(128, 128), 1);
        assert_eq!(grid_blocks(129, 128), 2);
        assert_eq!(grid_blocks(u32::MAX as u64 * 32, 32), MAX_GRID_X);
    }

    #[test]
    fn coop_slots_cover_every_row_once() {
        for coop in [1, 2, 4, 8, 16, 32] {
            let rows = 1000u64;
            let grid_threads = 8 * 32; // far fewer threads than rows * coop: several stride steps
            let mut hits = vec![0u32; rows as usize];
            for t in 0..grid_threads {
                let s = coop_slot(t, grid_threads, coop);
                assert!(s.lane < coop && s.group_in_warp < WARP_SIZE / coop);
                let mut first = s.warp_first_row;
                while first < rows {
                    let row = first + s.group_in_warp as u64;
                    if row < rows && s.lane == 0 {
                        hits[row as usize] += 1;
                    }
                    first += s.row_stride;
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "coop {coop}");
        }
    }

    #[test]
    fn cg_grid_covers_small_vectors_and_caps_large_ones() {
        assert_eq!(cg_blocks(0), 0);
        assert_eq!(cg_blocks(1), 1);
        assert_eq!(cg_blocks(CG_BLOCK_THREADS), 1);
        assert_eq!(cg_blocks(CG_BLOCK_THREADS + 1), 2);
        assert_eq!(cg_blocks(CG_MAX_BLOCKS * CG_BLOCK_THREADS + 1), CG_MAX_BLOCKS);
        assert_eq!(cg_blocks(u32::MAX), CG_MAX_BLOCKS);
    }

    #[test]
    fn radix_passes_cover_the_largest_column() {
        assert_eq!(radix_passes(0), 0);
        assert_eq!(radix_passes(1), 0);
        assert_eq!(radix_passes(2), 1);
        assert_eq!(radix_passes(256), 1);
        assert_eq!(radix_passes(257), 2);
        assert_eq!(radix_passes(1 << 16), 2);
        assert_eq!(radix_passes((1 << 16) + 1), 3);
        assert_eq!(radix_passes(u32::MAX), 4);
        assert_eq!(radix_tiles(0), 0);
        assert_eq!(radix_tiles(1), 1);
        assert_eq!(radix_tiles(RADIX_TILE), 1);
        assert_eq!(radix_tiles(RADIX_TILE + 1), 2);
    }

    #[test]
    fn coop_threads_do_not_overflow() {
        assert_eq!(coop_threads(u32::MAX, 32), u32::MAX as u64 * 32);
    }

    #[test]
    fn lma_staging_puts_every_entry_where_its_rows_read_it() {
        use crate::abi::{LMA_NODES_PER_ELEMENT, lma_step_loads, lma_warp_values};
        for m in LMA_NODES_PER_ELEMENT {
            for symmetric in [false, true] {
                let (step, stored, loads) = (
                    lma_step_elements(m) as usize,
                    lma_stored_values(m, symmetric) as usize,
                    lma_step_loads(m, symmetric) as usize,
                );
                let slice = lma_warp_values(m) as usize;
                let (m, square) = (m as usize, m as usize * lma_row_stride(m) as usize);
                // Entry `(i, j)` of element `e`, distinct everywhere but at mirrored entries of a
                // symmetric matrix; stored as `LmaArgs` documents.
                let entry = |e: usize, i: usize, j: usize| {
                    let (i, j) = if symmetric && i > j { (j, i) } else { (i, j) };
                    1 + (e * m + i) * m + j
                };
                let stored_at = |e: usize, p: usize| {
                    let (mut i, mut start) = (0, 0);
                    if symmetric {
                        while p >= start + (m - i) {
                            start += m - i;
                            i += 1;
                        }
                        entry(e, i, i + p - start)
                    } else {
                        entry(e, p / m, p % m)
                    }
                };
                // A warp's step: value `v` of the run to its staged positions, through the table's
                // entry as the kernel reads it; every position written once (twice by the same
                // value for an entry of the diagonal) and inside its element's matrix.
                let mut staged = vec![0usize; slice];
                for v in 0..loads * WARP_SIZE as usize {
                    let table = lma_staging_entry(v, m, symmetric);
                    if v >= step * stored {
                        assert_eq!(table, 0);
                        continue;
                    }
                    let (e, p) = (v / stored, v % stored);
                    let (at, mirror) = ((table & 0xffff) as usize, (table >> 16) as usize);
                    assert_eq!((at, mirror), lma_staged_positions(v, m, symmetric));
                    for (k, at) in [at, mirror].into_iter().enumerate() {
                        assert!((e * square..(e + 1) * square).contains(&at), "m {m}: value {v} at {at}");
                        assert!(
                            staged[at] == 0
                                || (k == 1 && at == mirror && mirror == (table & 0xffff) as usize),
                            "m {m} symmetric {symmetric}: value {v} at {at} twice"
                        );
                        staged[at] = stored_at(e, p);
                    }
                }
                // `x` beside them, where no value is staged.
                for e in 0..step {
                    for j in 0..m {
                        let at = lma_x_position(e, j, m);
                        assert!(at < slice && staged[at] == 0, "m {m}: x {j} of element {e} at {at}");
                        staged[at] = usize::MAX;
                    }
                }
                for e in 0..step {
                    for row in 0..m {
                        for j in 0..m {
                            let at = e * square + lma_read_position(row, j, m);
                            assert_eq!(
                                staged[at],
                                entry(e, row, j),
                                "m {m} symmetric {symmetric}: ({row}, {j})"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A warp's step as `formats/lma.rs` takes it, lane by lane: the loads (a short step clamped to
    /// its last value), the stores through the table (the last load only up to `tail`), `x` beside
    /// the matrices, and the rows read back by the lanes of the step's elements.
    #[test]
    fn lma_steps_whole_and_short_give_every_row_its_entries() {
        use crate::abi::{LMA_NODES_PER_ELEMENT, lma_groups_per_warp, lma_step_loads, lma_warp_values};
        for m in LMA_NODES_PER_ELEMENT {
            for symmetric in [false, true] {
                let (step, stored, loads, groups) = (
                    lma_step_elements(m) as usize,
                    lma_stored_values(m, symmetric) as usize,
                    lma_step_loads(m, symmetric) as usize,
                    lma_groups_per_warp(m) as usize,
                );
                let (slice, m) = (lma_warp_values(m) as usize, m as usize);
                let square = m * lma_row_stride(m as u32) as usize;
                let tail = step * stored - (loads - 1) * 32;
                // Entry `(i, j)` of element `e` and `x` at its node `j`, as values.
                let entry = |e: usize, i: usize, j: usize| {
                    let (i, j) = if symmetric && i > j { (j, i) } else { (i, j) };
                    (1 + (e * m + i) * m + j) as f64
                };
                let x = |e: usize, j: usize| -((e * m + j) as f64) - 0.5;
                for count in 1..=step {
                    // The run of `count` elements, stored as `LmaArgs` documents.
                    let mut run = Vec::new();
                    for e in 0..count {
                        for i in 0..m {
                            for j in if symmetric { i..m } else { 0..m } {
                                run.push(entry(e, i, j));
                            }
                        }
                    }
                    let mut staged = vec![f64::NAN; slice];
                    for lane in 0..32 {
                        for k in 0..loads {
                            let v = k * 32 + lane;
                            let at = if count == step {
                                if k + 1 < loads { v } else { v.min(step * stored - 1) }
                            } else {
                                v.min(count * stored - 1)
                            };
                            let held = run[at];
                            if k + 1 < loads || lane < tail {
                                let table = lma_staging_entry(v, m, symmetric);
                                staged[(table & 0xffff) as usize] = held;
                                if symmetric {
                                    staged[(table >> 16) as usize] = held;
                                }
                            }
                        }
                        let (group, row) = (lane / m, lane % m);
                        if group < groups {
                            for t in 0..step / groups {
                                let e = t * groups + group;
                                staged[lma_x_position(e, row, m)] = if e < count { x(e, row) } else { 0.0 };
                            }
                        }
                    }
                    for lane in 0..32 {
                        let (group, row) = (lane / m, lane % m);
                        for t in 0..step / groups {
                            let e = t * groups + group.min(groups - 1);
                            if group >= groups || e >= count {
                                continue;
                            }
                            for j in 0..m {
                                let (a, xj) = (
                                    staged[e * square + lma_read_position(row, j, m)],
                                    staged[lma_x_position(e, 0, m)
                                        + j * (lma_x_position(0, 1, m) - lma_x_position(0, 0, m))],
                                );
                                assert_eq!(
                                    (a, xj),
                                    (entry(e, row, j), x(e, j)),
                                    "m {m} symmetric {symmetric} count {count}: element {e} ({row}, {j})"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
