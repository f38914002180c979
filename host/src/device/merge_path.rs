//! The tiles of the merge-path CSR kernel (`kernels-gpu/src/csr/merge.rs`, whose doc describes the
//! scheme): where each tile of [`MERGE_TILE`] merge items starts, and the rows that cross tiles,
//! found in one pass over the row offsets when the kernel is first planned for the matrix; with the
//! scratch slots the tiles leave their parts of those rows in.

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::convert::narrow;
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{DevicePtr as AbiPtr, MERGE_TILE, merge_fixup_warps};

/// The tiles of one matrix's merge path, on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MergeTiles {
    /// `tiles + 1` rows: tile `t` starts on diagonal `t * MERGE_TILE` at this row, the last is the
    /// row count.
    pub tile_rows: Vec<u32>,
    /// The rows whose entries lie in more than one tile, ascending, with the tile where their first
    /// carry is left and the tile holding their row end (after the first).
    pub split_rows: Vec<u32>,
    pub split_first: Vec<u32>,
    pub split_last: Vec<u32>,
}

impl MergeTiles {
    /// The tiles of `offsets` (valid CSR row offsets, at least one row).
    ///
    /// Merrill & Garland's diagonal search (SC16, section 4.2): diagonal `d` of the merge of the row
    /// ends with the entries crosses the path at the first row `i` whose end comes after the entries
    /// before it, `offsets[i + 1] > d - i - 1`; the path then sits at entry `d - i`.
    pub fn new(offsets: &[u32]) -> Result<Self> {
        let rows = offsets.len().saturating_sub(1);
        let nnz = offsets.last().map_or(0, |&n| n as usize);
        let items = rows + nnz;
        let tile = MERGE_TILE as usize;
        let tiles = items.div_ceil(tile);
        narrow("the merge tile count", tiles)?;
        let mut tile_rows = Vec::with_capacity(tiles + 1);
        let (mut split_rows, mut split_first, mut split_last) = (Vec::new(), Vec::new(), Vec::new());
        for t in 0..=tiles {
            let d = items.min(t * tile);
            // `f(i) = offsets[i + 1] + i` rises strictly with `i`: the first `i` with `f(i) >= d`.
            let (mut lo, mut hi) = (d.saturating_sub(nnz), d.min(rows));
            while lo < hi {
                let mid = (lo + hi) / 2;
                if offsets[mid + 1] as usize + mid < d {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let row = narrow("a row", lo)?;
            tile_rows.push(row);
            // Boundary `t` cuts row `lo` when the row exists and has entries before the cut.
            if t > 0 && lo < rows && (offsets[lo] as usize) < d - lo {
                let t = narrow("a merge tile", t)?;
                if let (Some(&last_row), Some(last)) = (split_rows.last(), split_last.last_mut())
                    && last_row == row
                {
                    *last = t;
                } else {
                    split_rows.push(row);
                    split_first.push(t - 1);
                    split_last.push(t);
                }
            }
        }
        Ok(Self { tile_rows, split_rows, split_first, split_last })
    }

    /// How many tiles there are.
    pub fn tiles(&self) -> usize {
        self.tile_rows.len() - 1
    }

    /// The most carries of one split row (0 without split rows).
    pub fn longest_run(&self) -> u32 {
        self.split_first.iter().zip(&self.split_last).map(|(f, l)| l - f).max().unwrap_or(0)
    }
}

/// The tiles and split rows of one matrix on the device, with the slots of the tiles' parts.
#[derive(Debug)]
pub(crate) struct DeviceMergeTiles<T> {
    // Only ever reached through the addresses below; held so that they live as long as the matrix.
    arrays: [CudaSlice<u32>; 4],
    slots: [CudaSlice<T>; 2],
    args: MergeTileArgs<T>,
}

/// The kernel's view of [`DeviceMergeTiles`]: the fields of `CsrMergeParams` beyond the matrix.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MergeTileArgs<T> {
    pub tiles: u32,
    pub tile_rows: AbiPtr<u32>,
    pub carries: AbiPtr<T>,
    pub heads: AbiPtr<T>,
    pub splits: u32,
    pub split_rows: AbiPtr<u32>,
    pub split_first: AbiPtr<u32>,
    pub split_last: AbiPtr<u32>,
    /// Warps per block of the fix-up, for the longest run of carries.
    pub fixup_warps: u32,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> DeviceMergeTiles<T> {
    /// Finds the tiles of `offsets` and uploads them, with a carry and a head slot per tile.
    pub fn upload(gpu: &Gpu, offsets: &[u32]) -> Result<Self> {
        let host = MergeTiles::new(offsets)?;
        let tiles = narrow("the merge tile count", host.tiles())?;
        let splits = narrow("the split row count", host.split_rows.len())?;
        let arrays = [
            gpu.upload(&host.tile_rows)?,
            gpu.upload(&host.split_rows)?,
            gpu.upload(&host.split_first)?,
            gpu.upload(&host.split_last)?,
        ];
        let slots = [gpu.alloc_zeros(host.tiles())?, gpu.alloc_zeros(host.tiles())?];
        let args = MergeTileArgs {
            tiles,
            tile_rows: addr(&arrays[0], gpu),
            carries: addr(&slots[0], gpu),
            heads: addr(&slots[1], gpu),
            splits,
            split_rows: addr(&arrays[1], gpu),
            split_first: addr(&arrays[2], gpu),
            split_last: addr(&arrays[3], gpu),
            fixup_warps: merge_fixup_warps(host.longest_run()),
        };
        Ok(Self { arrays, slots, args })
    }

    pub fn args(&self) -> MergeTileArgs<T> {
        self.args
    }

    /// Bytes on the device, the slots included.
    pub fn device_bytes(&self) -> usize {
        self.arrays.iter().map(|a| a.len() * 4).sum::<usize>()
            + self.slots.iter().map(|s| s.len() * size_of::<T>()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::long_rows::tests::offsets;

    const TILE: usize = MERGE_TILE as usize;

    /// The merge walked item by item: the row of the path at every diagonal, and for each row the
    /// tile of its first entry (if any) and the tile of its end. The walk consumes an entry while the
    /// row has one left, else its end.
    fn walk(offsets: &[u32]) -> (Vec<usize>, Vec<(Option<usize>, usize)>) {
        let rows = offsets.len() - 1;
        let (mut i, mut j) = (0, 0);
        let mut path = vec![0];
        let mut row_tiles = Vec::new();
        let mut first_entry = None;
        while i < rows {
            let tile = (path.len() - 1) / TILE;
            if j < offsets[i + 1] as usize {
                first_entry = first_entry.or(Some(tile));
                j += 1;
            } else {
                row_tiles.push((first_entry.take(), tile));
                i += 1;
            }
            path.push(i);
        }
        (path, row_tiles)
    }

    /// Checks the search and the split rows against the walk: a row is split when a tile boundary
    /// falls between its first entry and its end.
    fn check(lens: &[u32]) {
        let offsets = offsets(lens);
        let got = MergeTiles::new(&offsets).unwrap();
        let (path, row_tiles) = walk(&offsets);
        let items = path.len() - 1;
        assert_eq!(got.tiles(), items.div_ceil(TILE), "{lens:?}");
        for (t, &row) in got.tile_rows.iter().enumerate() {
            assert_eq!(row as usize, path[items.min(t * TILE)], "tile {t} of {lens:?}");
        }
        let mut want = (Vec::new(), Vec::new(), Vec::new());
        for (row, &(first, end)) in row_tiles.iter().enumerate() {
            if let Some(first) = first.filter(|&first| first != end) {
                let narrow = |v: usize| u32::try_from(v).unwrap();
                want.0.push(narrow(row));
                want.1.push(narrow(first));
                want.2.push(narrow(end));
            }
        }
        assert_eq!((got.split_rows, got.split_first, got.split_last), want, "{lens:?}");
    }

    /// The kernel's steps for each tile and lane (`kernels-gpu/src/csr/merge.rs`), run on the host
    /// over the products `products` of `offsets`' entries: each lane's search and walk, the scan of
    /// the lanes' running sums, the head and carry slots, then the fix-up. Returns each row's sum and
    /// how many times it was written; panics where the kernel would read a row end it did not stage.
    fn model(offsets: &[u32], products: &[f64]) -> (Vec<f64>, Vec<u32>) {
        const ITEMS: usize = kernels_gpu::abi::MERGE_ITEMS_PER_LANE as usize;
        let m = MergeTiles::new(offsets).unwrap();
        let rows = offsets.len() - 1;
        let items = rows + products.len();
        let (mut y, mut writes) = (vec![0.0; rows], vec![0; rows]);
        let (mut carries, mut heads) = (vec![f64::NAN; m.tiles()], vec![f64::NAN; m.tiles()]);
        for tile in 0..m.tiles() {
            let (d0, d1) = (tile * TILE, items.min((tile + 1) * TILE));
            let (i0, i1) = (m.tile_rows[tile] as usize, m.tile_rows[tile + 1] as usize);
            let (j0, j1) = (d0 - i0, d1 - i1);
            let end_of = |i: usize| {
                assert!(i - i0 < TILE && i <= i1.min(rows - 1), "row {i} not staged in tile {tile}");
                offsets[i + 1] as usize
            };
            let mut lanes = Vec::new();
            for lane in 0..32 {
                let d = d1.min(d0 + lane * ITEMS);
                let end = d1.min(d + ITEMS);
                let (mut lo, mut hi) = (i0.max(d.saturating_sub(j1)), i1.min(d - j0));
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if end_of(mid) + mid < d { lo = mid + 1 } else { hi = mid }
                }
                let (start_row, mut i, mut j, mut sum, mut first) = (lo, lo, d - lo, 0.0, None);
                for k in 0..ITEMS {
                    if d + k < end {
                        if j < end_of(i) {
                            assert!((j0..j1).contains(&j));
                            sum += products[j];
                            j += 1;
                        } else {
                            if first.is_some() {
                                y[i] = sum;
                                writes[i] += 1;
                            } else {
                                first = Some(sum);
                            }
                            sum = 0.0;
                            i += 1;
                        }
                    }
                }
                lanes.push((start_row, first, sum, i));
            }
            let mut scan = vec![0.0; 32];
            for lane in 0..32 {
                let (start_row, first, sum, end_row) = lanes[lane];
                let same = lane > 0 && lanes[lane - 1].3 == end_row;
                scan[lane] = sum + if same { scan[lane - 1] } else { 0.0 };
                if let Some(own) = first {
                    let total = own + if lane > 0 { scan[lane - 1] } else { 0.0 };
                    if start_row == i0 && tile > 0 && (offsets[i0] as usize) < j0 {
                        heads[tile] = total;
                    } else {
                        y[start_row] = total;
                        writes[start_row] += 1;
                    }
                }
            }
            if i1 < rows && (offsets[i1] as usize) < j1 {
                carries[tile] = scan[31];
            }
        }
        for (s, &row) in m.split_rows.iter().enumerate() {
            let (first, last) = (m.split_first[s] as usize, m.split_last[s] as usize);
            assert!(first < last);
            let row = row as usize;
            y[row] = carries[first..last].iter().sum::<f64>() + heads[last];
            writes[row] += 1;
        }
        (y, writes)
    }

    /// The kernel's steps give every row its sum, written once, on the shapes that stress the tiles.
    #[test]
    fn the_kernel_steps_sum_every_row_once() {
        let t = MERGE_TILE;
        let shapes: Vec<Vec<u32>> = vec![
            vec![0],
            vec![5],
            vec![0; 700],
            vec![1; 700],
            vec![3; 1000],
            vec![t - 1, 4, t, 0, 2 * t + 1, 0, 0, 1],
            vec![2600; 30],
            vec![40 * t + 17],
            (0..6000u32).map(|r| if r % 501 == 0 { (r * 7919) % 4000 } else { (r * 31) % 11 }).collect(),
        ];
        for lens in shapes {
            let offsets = offsets(&lens);
            let nnz = *offsets.last().unwrap() as usize;
            let products: Vec<f64> = (0..nnz).map(|k| (k % 7) as f64 + 1.0).collect();
            let (y, writes) = model(&offsets, &products);
            for (row, w) in offsets.windows(2).enumerate() {
                let want: f64 = products[w[0] as usize..w[1] as usize].iter().sum();
                assert_eq!(y[row], want, "row {row} of {} rows", lens.len());
                assert_eq!(writes[row], 1, "row {row} of {} rows", lens.len());
            }
        }
    }

    #[test]
    fn one_row_and_no_entries() {
        check(&[0]);
        check(&[1]);
        check(&[MERGE_TILE - 1]);
        check(&[MERGE_TILE]);
        check(&[10 * MERGE_TILE + 3]);
        check(&[0; 1000]);
    }

    #[test]
    fn tiles_follow_the_walk() {
        check(&[3; 500]);
        check(&[255, 1, 0, 0, 256, 257, 0, 2, 513]);
        // A row that fills a tile but for its end: the end is the next tile's first item.
        check(&[MERGE_TILE - 1, 4, MERGE_TILE, 0]);
        let lens: Vec<u32> = (0..5000u32)
            .map(|r| match r % 89 {
                0 => (r * 7919) % 3000,
                1..=7 => 0,
                _ => (r * 31) % 11,
            })
            .collect();
        check(&lens);
    }

    #[test]
    fn fixup_blocks_grow_with_the_longest_run() {
        let runs = |lens: &[u32]| MergeTiles::new(&offsets(lens)).unwrap().longest_run();
        // Rows of 3 entries are 4 items: tiles end between rows.
        assert_eq!(runs(&[3; 100]), 0);
        assert_eq!(runs(&[5; 100]), 1);
        // 3 M entries: 11,719 tiles, all but the last ending inside the row.
        let huge = runs(&[3_000_000, 1]);
        assert_eq!(huge, 11_718);
        assert_eq!(merge_fixup_warps(huge), 6);
        assert_eq!(merge_fixup_warps(0), 1);
        assert_eq!(merge_fixup_warps(2048), 1);
        assert_eq!(merge_fixup_warps(2049), 2);
        assert_eq!(merge_fixup_warps(u32::MAX), 16);
    }

    #[test]
    fn short_and_wide_rows_are_all_split() {
        let lens = [2600; 40];
        let got = MergeTiles::new(&offsets(&lens)).unwrap();
        assert_eq!(got.split_rows, (0..40).collect::<Vec<u32>>());
        check(&lens);
    }
}
