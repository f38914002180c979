//! The windows of the streaming engine's CSR product (`kernels-gpu/src/stream/csr.rs`, whose doc
//! describes the scheme): consecutive rows cut into pieces of one bulk copy each, built in one pass
//! over the row offsets the first time the kernel is planned for the matrix; and the kernel's own
//! long-row split, at [`STREAM_LONG_ROW`] entries.

use super::Gpu;
use super::long_rows::{DeviceLongRows, LongRowSplit};
use super::memory::addr;
use crate::Result;
use crate::formats::convert::narrow;
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{
    DevicePtr as AbiPtr, LongRowArgs, STREAM_LONG_ROW, STREAM_WINDOW_ENTRIES, STREAM_WINDOW_ROWS,
    STREAM_WINDOW_WORDS, stream_window_shape,
};

/// Entries of its window's longest row that one thread of a row's group sums at most, below the
/// widest group (a warp): two batches of the kernel's four gathers in flight. The width follows the
/// longest row, not the mean, so that no group waits long for one row; on windows where one row is
/// far longer than the rest (power-law graphs) that wastes lanes (docs/PERF.md section 18).
const ENTRIES_PER_LANE: u32 = 8;

/// The widest group: a warp.
const MAX_LOG2_WIDTH: u32 = 5;

/// The windows of `offsets` (valid CSR row offsets), [`STREAM_WINDOW_WORDS`] words each (see
/// [`CsrStreamParams`](kernels_gpu::abi::CsrStreamParams)). Consecutive rows join a window while it
/// holds fewer than [`STREAM_WINDOW_ROWS`] rows and their entries stay within
/// [`STREAM_WINDOW_ENTRIES`]; a row of [`STREAM_LONG_ROW`] entries or more is in no window. Every other
/// row lies in exactly one window.
pub(crate) fn stream_windows(offsets: &[u32]) -> Result<Vec<u32>> {
    let mut records = Vec::new();
    // The open window: its first row, row count (0: none open), entries and longest row.
    let (mut first, mut rows, mut entries, mut longest) = (0u32, 0u32, 0u32, 0u32);
    let mut close = |first: u32, rows: u32, entries: u32, longest: u32| {
        if rows > 0 {
            let width = longest.div_ceil(ENTRIES_PER_LANE).next_power_of_two();
            let log2_width = width.trailing_zeros().min(MAX_LOG2_WIDTH);
            records.extend([
                first,
                first + rows,
                offsets[first as usize],
                stream_window_shape(entries, log2_width),
            ]);
        }
    };
    for (row, w) in offsets.windows(2).enumerate() {
        let row = narrow("a row", row)?;
        let len = w[1] - w[0];
        if len >= STREAM_LONG_ROW {
            close(first, rows, entries, longest);
            rows = 0;
            continue;
        }
        if rows == 0 || rows == STREAM_WINDOW_ROWS || entries + len > STREAM_WINDOW_ENTRIES {
            close(first, rows, entries, longest);
            (first, rows, entries, longest) = (row, 0, 0, 0);
        }
        rows += 1;
        entries += len;
        longest = longest.max(len);
    }
    close(first, rows, entries, longest);
    Ok(records)
}

/// The windows and long-row split of one matrix on the device.
#[derive(Debug)]
pub(crate) struct DeviceStreamWindows<T> {
    // Only ever reached through `bounds_ptr`; held so that it lives as long as the matrix.
    bounds: CudaSlice<u32>,
    bounds_ptr: AbiPtr<u32>,
    windows: u32,
    long_rows: DeviceLongRows<T>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> DeviceStreamWindows<T> {
    /// Builds the windows and the split of the rows of `offsets` and uploads them.
    pub fn upload(gpu: &Gpu, offsets: &[u32]) -> Result<Self> {
        let records = stream_windows(offsets)?;
        let windows = narrow("the window count", records.len() / STREAM_WINDOW_WORDS)?;
        let long_rows = DeviceLongRows::upload(gpu, &LongRowSplit::new(offsets, STREAM_LONG_ROW)?)?;
        let bounds = gpu.upload(&records)?;
        let bounds_ptr = addr(&bounds, gpu);
        Ok(Self { bounds, bounds_ptr, windows, long_rows })
    }

    /// The window records.
    pub fn bounds(&self) -> AbiPtr<u32> {
        self.bounds_ptr
    }

    /// How many windows there are.
    pub fn windows(&self) -> u32 {
        self.windows
    }

    /// The kernel's view of the long rows.
    pub fn long_rows(&self) -> LongRowArgs<T> {
        self.long_rows.args()
    }

    /// Bytes on the device, the long-row split included.
    pub fn device_bytes(&self) -> usize {
        self.bounds.len() * 4 + self.long_rows.device_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::long_rows::tests::offsets;
    use kernels_gpu::abi::stream_window_unshape;

    /// Checks what every window list must satisfy against the row lengths `lens`: windows in row
    /// order, each within both limits, its entries those of its rows, its width wide enough for its
    /// longest row; every row of fewer than `STREAM_LONG_ROW` entries in exactly one window, every
    /// longer row in none.
    fn check(lens: &[u32], records: &[u32]) {
        let offsets = offsets(lens);
        let mut covered = vec![false; lens.len()];
        let mut previous_end = 0;
        for w in records.chunks(STREAM_WINDOW_WORDS) {
            let [r0, r1, e0, shape] = [w[0], w[1], w[2], w[3]];
            let (entries, width) = stream_window_unshape(shape);
            assert!(r0 >= previous_end && r0 < r1, "window {w:?} out of order");
            previous_end = r1;
            let rows = &lens[r0 as usize..r1 as usize];
            assert!(rows.len() <= STREAM_WINDOW_ROWS as usize, "window {w:?}");
            assert_eq!(e0, offsets[r0 as usize], "window {w:?}");
            assert_eq!(entries, rows.iter().sum::<u32>(), "window {w:?}");
            assert!(entries <= STREAM_WINDOW_ENTRIES, "window {w:?}");
            let longest = rows.iter().copied().max().unwrap_or(0);
            assert!(width.is_power_of_two() && width <= 32, "window {w:?}");
            assert!(width == 32 || longest <= width * ENTRIES_PER_LANE, "window {w:?} too narrow");
            for r in r0..r1 {
                covered[r as usize] = true;
            }
        }
        for (row, (&len, &c)) in lens.iter().zip(&covered).enumerate() {
            assert_eq!(c, len < STREAM_LONG_ROW, "row {row} of {len} entries");
        }
    }

    #[test]
    fn no_rows_no_windows() {
        assert!(stream_windows(&offsets(&[])).unwrap().is_empty());
    }

    #[test]
    fn rows_fill_windows_up_to_each_limit() {
        // Rows of 100 entries: 10 to a window of 1024.
        let lens = [100; 25];
        let records = stream_windows(&offsets(&lens)).unwrap();
        assert_eq!(records.len() / STREAM_WINDOW_WORDS, 3);
        check(&lens, &records);
        // Empty rows and rows of one entry: capped by the row count.
        for len in [0, 1] {
            let lens = vec![len; 1000];
            let records = stream_windows(&offsets(&lens)).unwrap();
            assert_eq!(records.len() / STREAM_WINDOW_WORDS, 4, "rows of {len}");
            check(&lens, &records);
        }
    }

    #[test]
    fn long_rows_are_in_no_window_and_split_their_neighbours() {
        let w = STREAM_WINDOW_ENTRIES;
        let lens = [3, w, 5, STREAM_LONG_ROW, 0, 2, 3 * STREAM_LONG_ROW, w - 1, 1, STREAM_LONG_ROW];
        let records = stream_windows(&offsets(&lens)).unwrap();
        check(&lens, &records);
        let starts: Vec<u32> = records.chunks(STREAM_WINDOW_WORDS).map(|w| w[0]).collect();
        assert_eq!(starts, [0, 1, 2, 4, 7]);
    }

    #[test]
    fn widths_follow_the_longest_row() {
        for (len, width) in [(0, 1), (1, 1), (8, 1), (9, 2), (27, 4), (129, 32), (256, 32), (1000, 32)] {
            let records = stream_windows(&offsets(&[len])).unwrap();
            assert_eq!(stream_window_unshape(records[3]).1, width, "a row of {len}");
        }
    }

    /// Every short row in exactly one window, on uneven rows: a heavy tail, empty rows, long rows.
    #[test]
    fn windows_cover_every_short_row_once() {
        let lens: Vec<u32> = (0..30_000u32)
            .map(|r| match r % 89 {
                0 => 40 + (r * 7919) % 3000,
                1..=9 => 0,
                _ => (r * 31) % 40,
            })
            .collect();
        check(&lens, &stream_windows(&offsets(&lens)).unwrap());
    }
}
