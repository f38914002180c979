//! The row tasks of the balanced CSR kernel (`kernels-gpu/src/csr/balanced.rs`, whose doc describes
//! the scheme): consecutive rows cut into pieces of about one warp's work, one `u64` per task (its
//! first row and that row's first entry), built in one pass over the row offsets when the kernel is
//! first planned for the matrix; and the kernel's own long-row split, at [`BALANCED_LONG_ROW`]
//! entries.

use super::Gpu;
use super::long_rows::{DeviceLongRows, LongRowSplit};
use super::memory::addr;
use crate::Result;
use crate::formats::convert::narrow;
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{BALANCED_LONG_ROW, BALANCED_TASK_ENTRIES, BALANCED_TASK_ROWS, DevicePtr as AbiPtr};
use kernels_gpu::abi::{LongRowArgs, TaskStart, WARP_SIZE};

// A task of several rows fits one pass of the kernel's warp: 8 entries and 2 rows per lane. And
// every long row is longer than a task holds, so it is alone in its task, which the task warps skip.
const _: () = assert!(BALANCED_TASK_ENTRIES == 8 * WARP_SIZE && BALANCED_TASK_ROWS == 2 * WARP_SIZE);
const _: () = assert!(BALANCED_LONG_ROW > BALANCED_TASK_ENTRIES);

/// The first row of each task of `offsets` (valid CSR row offsets), then the row count: task `t` is
/// rows `tasks[t] .. tasks[t + 1]`. Consecutive rows join a task while it holds fewer than
/// [`BALANCED_TASK_ROWS`] rows and their entries stay within [`BALANCED_TASK_ENTRIES`]; a longer row
/// is a task of its own. Every row lies in exactly one task; a matrix without rows has none.
pub(crate) fn row_tasks(offsets: &[u32]) -> Result<Vec<u32>> {
    let rows = offsets.len().saturating_sub(1);
    let mut tasks = Vec::new();
    // The open task's rows (0: none open) and entries.
    let (mut task_rows, mut task_entries) = (0u32, 0u64);
    for (row, w) in offsets.windows(2).enumerate() {
        let len = u64::from(w[1] - w[0]);
        if task_rows == 0
            || task_rows == BALANCED_TASK_ROWS
            || task_entries + len > u64::from(BALANCED_TASK_ENTRIES)
        {
            tasks.push(narrow("a row", row)?);
            (task_rows, task_entries) = (0, 0);
        }
        task_rows += 1;
        task_entries += len;
    }
    tasks.push(narrow("the row count", rows)?);
    Ok(tasks)
}

/// The kernel's [`TaskStart`] of each of `task_rows` (from [`row_tasks`] on `offsets`): the row
/// and its offset.
fn task_starts(offsets: &[u32], task_rows: &[u32]) -> Vec<TaskStart> {
    task_rows.iter().map(|&row| TaskStart::new(row, offsets[row as usize])).collect()
}

/// The tasks and long-row split of one matrix on the device.
#[derive(Debug)]
pub(crate) struct DeviceRowTasks<T> {
    // Only ever reached through `task_starts_ptr`; held so that it lives as long as the matrix.
    task_starts: CudaSlice<u64>,
    task_starts_ptr: AbiPtr<TaskStart>,
    tasks: u32,
    long_rows: DeviceLongRows<T>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> DeviceRowTasks<T> {
    /// Builds the tasks and the split of the rows of `offsets` and uploads them.
    pub fn upload(gpu: &Gpu, offsets: &[u32]) -> Result<Self> {
        let task_rows = row_tasks(offsets)?;
        let tasks = narrow("the row task count", task_rows.len() - 1)?;
        let long_rows = DeviceLongRows::upload(gpu, &LongRowSplit::new(offsets, BALANCED_LONG_ROW)?)?;
        let words: Vec<u64> = task_starts(offsets, &task_rows).iter().map(|start| start.0).collect();
        let task_starts = gpu.upload(&words)?;
        // The same words, typed as the kernel reads them (`TaskStart` is a transparent `u64`).
        let task_starts_ptr = AbiPtr::new(addr(&task_starts, gpu).addr());
        Ok(Self { task_starts, task_starts_ptr, tasks, long_rows })
    }

    /// `tasks + 1` [`TaskStart`]s: task `t` is rows and entries from start `t` to start `t + 1`.
    pub fn task_starts(&self) -> AbiPtr<TaskStart> {
        self.task_starts_ptr
    }

    /// How many tasks there are.
    pub fn tasks(&self) -> u32 {
        self.tasks
    }

    /// The kernel's view of the long rows.
    pub fn long_rows(&self) -> LongRowArgs<T> {
        self.long_rows.args()
    }

    /// Bytes on the device, the long-row split included.
    pub fn device_bytes(&self) -> usize {
        self.task_starts.len() * size_of::<TaskStart>() + self.long_rows.device_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::long_rows::tests::offsets;

    /// Checks what every task list must satisfy: rows `0 .. rows` covered once in order, and every
    /// task either one row or within both limits.
    fn check(lens: &[u32], tasks: &[u32]) {
        assert_eq!(tasks.first(), Some(&0));
        assert_eq!(tasks.last().map(|&t| t as usize), Some(lens.len()));
        for w in tasks.windows(2) {
            let rows = &lens[w[0] as usize..w[1] as usize];
            assert!(!rows.is_empty(), "empty task at row {}", w[0]);
            if rows.len() > 1 {
                assert!(rows.len() <= BALANCED_TASK_ROWS as usize, "task at row {}", w[0]);
                assert!(rows.iter().sum::<u32>() <= BALANCED_TASK_ENTRIES, "task at row {}", w[0]);
            }
            if rows.iter().any(|&l| l >= BALANCED_LONG_ROW) {
                assert_eq!(rows.len(), 1, "a long row shares task at row {}", w[0]);
            }
        }
    }

    #[test]
    fn no_rows_no_tasks() {
        assert_eq!(row_tasks(&offsets(&[])).unwrap(), [0]);
    }

    #[test]
    fn one_row() {
        for len in [0, 1, BALANCED_TASK_ENTRIES, BALANCED_LONG_ROW, 1 << 30] {
            assert_eq!(row_tasks(&offsets(&[len])).unwrap(), [0, 1], "{len}");
        }
    }

    #[test]
    fn short_rows_fill_tasks_up_to_the_entry_limit() {
        // Rows of 100: two per task (a third would make 300 > 256).
        let lens = [100; 7];
        let tasks = row_tasks(&offsets(&lens)).unwrap();
        assert_eq!(tasks, [0, 2, 4, 6, 7]);
        check(&lens, &tasks);
        // A task that fills exactly.
        let lens = [128, 128, 1];
        assert_eq!(row_tasks(&offsets(&lens)).unwrap(), [0, 2, 3]);
    }

    /// Each start holds its row and that row's offset, in the words the kernel takes them from.
    #[test]
    fn task_starts_carry_each_rows_offset() {
        let lens = [257, 0, 0, 257, 0, 200, 0, 50, 100, 0, 100, 3];
        let offsets = offsets(&lens);
        let rows = row_tasks(&offsets).unwrap();
        let starts = task_starts(&offsets, &rows);
        let parts: Vec<(u32, u32)> = starts.iter().map(|s| (s.row(), s.entry())).collect();
        let expected: Vec<(u32, u32)> = rows.iter().map(|&r| (r, offsets[r as usize])).collect();
        assert_eq!(parts, expected);
        let last = TaskStart::new(u32::MAX, u32::MAX - 1);
        assert_eq!((last.row(), last.entry()), (u32::MAX, u32::MAX - 1));
    }

    /// The GPU test's tasks of a few rows (`task_shapes`' `FEW` in `tests/gpu/csr_variants.rs`),
    /// cut as that test says: a row longer than a task alone, and the rows between.
    #[test]
    fn tasks_of_a_few_rows() {
        let lens = [257, 0, 0, 257, 0, 200, 0, 50, 100, 0, 100, 3, 60, 60, 60, 60, 0, 130, 126, 0];
        let tasks = row_tasks(&offsets(&lens)).unwrap();
        assert_eq!(tasks, [0, 1, 3, 4, 8, 12, 17, 20]);
        check(&lens, &tasks);
    }

    #[test]
    fn rows_per_task_are_capped() {
        // Rows of one entry, and empty rows: 64 per task, whatever their entries.
        for len in [0, 1] {
            let lens = vec![len; 200];
            let tasks = row_tasks(&offsets(&lens)).unwrap();
            assert_eq!(tasks, [0, 64, 128, 192, 200], "rows of {len}");
            check(&lens, &tasks);
        }
    }

    #[test]
    fn long_and_medium_rows_are_alone() {
        let w = BALANCED_TASK_ENTRIES;
        let lens = [3, w + 1, 5, 0, BALANCED_LONG_ROW, 2 * BALANCED_LONG_ROW + 7, 1, w, 0, 0];
        let tasks = row_tasks(&offsets(&lens)).unwrap();
        // A full row of 256 entries may still take the empty rows after it.
        assert_eq!(tasks, [0, 1, 2, 4, 5, 6, 7, 10]);
        check(&lens, &tasks);
    }

    /// Every row in exactly one task, on uneven rows: a heavy tail among short rows, empty rows.
    #[test]
    fn tasks_cover_every_row_once() {
        let lens: Vec<u32> = (0..20_000u32)
            .map(|r| match r % 97 {
                0 => 40 + (r * 7919) % 3000,
                1..=9 => 0,
                _ => (r * 31) % 9,
            })
            .collect();
        let tasks = row_tasks(&offsets(&lens)).unwrap();
        check(&lens, &tasks);
        assert!(tasks.windows(2).all(|w| w[0] < w[1]));
    }
}
