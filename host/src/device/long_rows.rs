//! The long rows of a matrix, cut into chunks for the parametrised kernel (`csr/param.rs` describes the
//! scheme), and the scratch its chunk warps share: one partial sum per chunk, one counter per row; and
//! an SpMM plan's scratch for the same chunks (`spmm.rs`), one partial sum per chunk and column.

use super::Gpu;
use super::memory::addr;
use crate::formats::convert::narrow;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{
    DevicePtr as AbiPtr, EntrySpan, LONG_ROW_CHUNK, LongRowArgs, SpmmLongRows, long_row_chunks,
};

/// Where the long rows are, built on the host in one pass over the row offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LongRowSplit {
    /// Rows of at least this many entries are long.
    pub min_len: u32,
    /// The long rows, ascending.
    pub rows: Vec<u32>,
    /// `rows.len() + 1` prefix sums of the rows' chunk counts.
    pub first_chunk: Vec<u32>,
    /// For each chunk, the index of its row in `rows`.
    pub chunk_row: Vec<u32>,
    /// For each chunk, its entries: [`LONG_ROW_CHUNK`] of its row's, the last chunk the rest.
    pub chunk_entries: Vec<EntrySpan>,
}

impl LongRowSplit {
    /// The rows of `offsets` (valid CSR row offsets) with at least `min_len` entries, and at least one:
    /// the kernel takes every row of `min_len` entries or more for long, so an empty row must not be.
    pub fn new(offsets: &[u32], min_len: u32) -> Result<Self> {
        let min_len = min_len.max(1);
        let mut split = Self {
            min_len,
            rows: Vec::new(),
            first_chunk: vec![0],
            chunk_row: Vec::new(),
            chunk_entries: Vec::new(),
        };
        for (row, w) in offsets.windows(2).enumerate() {
            let len = w[1] - w[0];
            if len < min_len {
                continue;
            }
            let j = narrow("the long-row count", split.rows.len())?;
            split.rows.push(narrow("a long row", row)?);
            let chunks = long_row_chunks(len) as usize;
            split.chunk_row.extend(std::iter::repeat_n(j, chunks));
            // Chunk starts below the row's end, which is at most nnz <= u32::MAX.
            let starts = (w[0]..w[1]).step_by(LONG_ROW_CHUNK as usize);
            split.chunk_entries.extend(
                starts.map(|from| EntrySpan::new(from, w[1].min(from.saturating_add(LONG_ROW_CHUNK)))),
            );
            split.first_chunk.push(narrow("the long-row chunk count", split.chunk_row.len())?);
        }
        Ok(split)
    }

    /// Chunks over all long rows.
    pub fn chunks(&self) -> u32 {
        self.first_chunk.last().copied().unwrap_or(0)
    }
}

/// A [`LongRowSplit`] on the device with the kernel's scratch. Empty when the matrix has no long rows.
#[derive(Debug)]
pub(crate) struct DeviceLongRows<T> {
    // The buffers are only ever reached through `args`, which points into them; they are held here so
    // that they live as long as the matrix.
    rows: CudaSlice<u32>,
    first_chunk: CudaSlice<u32>,
    chunk_row: CudaSlice<u32>,
    chunk_entries: CudaSlice<u64>,
    /// Written by the kernel: products on one matrix must be ordered (one stream does it).
    partials: CudaSlice<T>,
    /// Zero between products: each product's last chunk of a row wraps its counter back to 0.
    counters: CudaSlice<u32>,
    args: LongRowArgs<T>,
}

impl<T: DeviceRepr + ValidAsZeroBits + Copy> DeviceLongRows<T> {
    pub fn upload(gpu: &Gpu, split: &LongRowSplit) -> Result<Self> {
        let rows = gpu.upload(&split.rows)?;
        let first_chunk = gpu.upload(&split.first_chunk)?;
        let chunk_row = gpu.upload(&split.chunk_row)?;
        let entries: Vec<u64> = split.chunk_entries.iter().map(|span| span.0).collect();
        let chunk_entries = gpu.upload(&entries)?;
        let partials = gpu.alloc_zeros(split.chunk_row.len())?;
        let counters = gpu.alloc_zeros(split.rows.len())?;
        let args = LongRowArgs {
            min_len: split.min_len,
            chunks: split.chunks(),
            rows: addr(&rows, gpu),
            first_chunk: addr(&first_chunk, gpu),
            chunk_row: addr(&chunk_row, gpu),
            // The same words, typed as the kernels read them (`EntrySpan` is a transparent `u64`).
            chunk_entries: AbiPtr::new(addr(&chunk_entries, gpu).addr()),
            partials: addr(&partials, gpu),
            counters: addr(&counters, gpu),
        };
        Ok(Self { rows, first_chunk, chunk_row, chunk_entries, partials, counters, args })
    }

    /// The kernels' view.
    pub fn args(&self) -> LongRowArgs<T> {
        self.args
    }

    /// How many rows are long.
    pub fn count(&self) -> usize {
        self.rows.len()
    }

    /// Rows of at least this many entries are long.
    pub fn min_len(&self) -> u32 {
        self.args.min_len
    }

    /// Bytes on the device, scratch included.
    pub fn device_bytes(&self) -> usize {
        (self.rows.len() + self.first_chunk.len() + self.chunk_row.len() + self.counters.len()) * 4
            + self.chunk_entries.len() * size_of::<EntrySpan>()
            + self.partials.len() * size_of::<T>()
    }

    /// The scratch of an SpMM plan with `X` of `k` columns over these chunks: `k` partial sums per
    /// chunk, the plan's own (products of two plans on one matrix do not share it), allocated here,
    /// once per plan.
    pub fn spmm_scratch(&self, gpu: &Gpu, k: usize) -> Result<SpmmScratch<T>> {
        let chunks = self.args.chunks;
        let len = (chunks as usize).checked_mul(k).ok_or(Error::TooLarge {
            what: "the SpMM partial sums (chunks x k)",
            value: usize::MAX,
            limit: usize::MAX,
        })?;
        let partials = gpu.alloc_zeros(len)?;
        let args = SpmmLongRows {
            min_len: self.args.min_len,
            chunks,
            count: narrow("the long-row count", self.rows.len())?,
            rows: self.args.rows,
            first_chunk: self.args.first_chunk,
            chunk_entries: self.args.chunk_entries,
            partials: addr(&partials, gpu),
        };
        Ok(SpmmScratch { partials, args })
    }
}

/// An SpMM plan's view of its matrix's long rows ([`DeviceLongRows`], which must outlive it) and its
/// own scratch.
#[derive(Debug)]
pub(crate) struct SpmmScratch<T> {
    // Only ever reached through `args`; held so that it lives as long as the plan.
    partials: CudaSlice<T>,
    args: SpmmLongRows<T>,
}

impl<T: Copy> SpmmScratch<T> {
    /// The kernels' view.
    pub fn args(&self) -> SpmmLongRows<T> {
        self.args
    }

    /// How many rows are long.
    pub fn count(&self) -> usize {
        self.args.count as usize
    }

    /// Bytes of the scratch.
    pub fn device_bytes(&self) -> usize {
        self.partials.len() * size_of::<T>()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Row offsets of rows of these lengths.
    pub(crate) fn offsets(lens: &[u32]) -> Vec<u32> {
        std::iter::once(0)
            .chain(lens.iter().scan(0, |end, &l| {
                *end += l;
                Some(*end)
            }))
            .collect()
    }

    #[test]
    fn long_rows_and_their_chunks() {
        let c = LONG_ROW_CHUNK;
        let split = LongRowSplit::new(&offsets(&[3, 2 * c + 1, 0, 99, c, 100]), 100).unwrap();
        assert_eq!(split.rows, [1, 4, 5]);
        assert_eq!(split.first_chunk, [0, 3, 4, 5]);
        assert_eq!(split.chunk_row, [0, 0, 0, 1, 2]);
        let spans = [(3, 3 + c), (3 + c, 3 + 2 * c), (3 + 2 * c, 4 + 2 * c), (103 + 2 * c, 103 + 3 * c)];
        let spans = spans.into_iter().chain([(103 + 3 * c, 203 + 3 * c)]).map(|(f, t)| EntrySpan::new(f, t));
        assert_eq!(split.chunk_entries, spans.collect::<Vec<_>>());
        assert_eq!(split.chunks(), 5);
    }

    #[test]
    fn no_long_rows() {
        for offsets in [offsets(&[]), offsets(&[0, 0]), offsets(&[5, 7, 1])] {
            let split = LongRowSplit::new(&offsets, 8).unwrap();
            let empty = split.rows.is_empty() && split.chunk_row.is_empty() && split.chunk_entries.is_empty();
            assert!(empty, "{offsets:?}");
            assert_eq!(split.first_chunk, [0]);
            assert_eq!(split.chunks(), 0);
        }
    }

    /// A row ending at the last entry a `u32` offset reaches: its last chunk ends there too.
    #[test]
    fn chunks_end_at_the_largest_offset() {
        let (c, end) = (LONG_ROW_CHUNK, u32::MAX);
        let split = LongRowSplit::new(&[end - c - 44, end], c).unwrap();
        assert_eq!(
            split.chunk_entries,
            [EntrySpan::new(end - c - 44, end - 44), EntrySpan::new(end - 44, end)]
        );
    }

    #[test]
    fn empty_rows_are_never_long() {
        let split = LongRowSplit::new(&offsets(&[0, 1, 0]), 0).unwrap();
        assert_eq!(split.min_len, 1);
        assert_eq!(split.rows, [1]);
        assert_eq!(split.chunks(), 1);
    }

    /// Every entry of every long row lies in exactly one chunk, and the chunks of a row are consecutive.
    #[test]
    fn chunks_cover_each_long_row_once() {
        let lens: Vec<u32> = (0..500).map(|r| (r * 7919) % 3000).collect();
        let offsets = offsets(&lens);
        let split = LongRowSplit::new(&offsets, 700).unwrap();
        assert_eq!(split.chunk_entries.len(), split.chunk_row.len());
        let mut covered = vec![0u32; *offsets.last().unwrap() as usize];
        for (chunk, &j) in split.chunk_row.iter().enumerate() {
            let (j, row) = (j as usize, split.rows[j as usize] as usize);
            let first = split.first_chunk[j] as usize;
            assert!((first..split.first_chunk[j + 1] as usize).contains(&chunk));
            let from = offsets[row] + u32::try_from(chunk - first).unwrap() * LONG_ROW_CHUNK;
            let to = offsets[row + 1].min(from + LONG_ROW_CHUNK);
            assert!(from < to);
            assert_eq!(split.chunk_entries[chunk], EntrySpan::new(from, to), "chunk {chunk}");
            for k in from..to {
                covered[k as usize] += 1;
            }
        }
        for (row, w) in offsets.windows(2).enumerate() {
            let expected = u32::from(w[1] - w[0] >= 700);
            assert!((w[0]..w[1]).all(|k| covered[k as usize] == expected), "row {row}");
        }
    }
}
