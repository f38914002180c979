//! The launch ABI shared by the kernels and the host: one `#[repr(C)]` parameter struct per kernel,
//! passed by value as the kernel's only parameter; the constants both sides must agree on (the GPU's
//! per-SM limits, launch block sizes, the variants each kernel family is compiled for); and the PTX
//! entry names, which the host looks up from the same tables (see [`Entry`]).
//!
//! Device addresses travel as [`DevicePtr`] (a `u64` tagged with its element type), so the structs have
//! the same layout on the host and on the device and carry no host pointers.

use core::marker::PhantomData;

/// Threads per warp on every NVIDIA GPU this crate targets.
pub const WARP_SIZE: u32 = 32;

/// The largest `gridDim.x` CUDA accepts. Kernels loop over their work with a grid stride, so a grid is
/// capped at this size rather than failing on very large matrices.
pub const MAX_GRID_X: u32 = (1 << 31) - 1;

/// The most threads a block may have (every GPU since Fermi).
pub const MAX_BLOCK_SIZE: u32 = 1024;

/// Threads an SM keeps resident: 2048 on the data-centre GPUs since Kepler (V100, A100, H100).
pub const RESIDENT_THREADS_PER_SM: u32 = 2048;

/// Warps an SM keeps resident: 64 from Volta to Hopper.
pub const RESIDENT_WARPS_PER_SM: u32 = RESIDENT_THREADS_PER_SM / WARP_SIZE;

/// Threads per block of `Kernel::Auto`'s CSR choices and of the ELL, SELL, COO and BRC kernels:
/// Reguly & Giles (2012) found 128 best across their suite; it leaves the scheduler 16 blocks per SM,
/// and is a multiple of the warp, as the segmented, SELL and BRC kernels need.
pub const BLOCK_SIZE: u32 = 128;

/// Threads per block of `spmv_scale_*`: an element per thread and no shared state, so a larger block
/// only saves the scheduler work.
pub const SCALE_BLOCK_SIZE: u32 = 256;

/// The fewest threads per block of `spmv_csr_param_*`: the bottom of Reguly & Giles' range, two warps.
pub const CSR_PARAM_MIN_BLOCK_SIZE: u32 = 64;

/// The most threads per block of `spmv_csr_balanced_*`: its f64 version takes 70 registers a thread,
/// and 1024 threads of 70 registers exceed an SM's 65,536; 512 is the largest power of two that fits.
pub const CSR_BALANCED_MAX_BLOCK_SIZE: u32 = 512;

/// Threads per block of the two memory probes, and their blocks per SM: every thread an SM holds
/// (64 warps), enough 16-byte loads in flight to saturate HBM in the streaming read, and as many
/// warps as the vector kernel keeps resident in the row-run probe. Whole warps.
pub const PROBE_BLOCK_SIZE: u32 = 512;
pub const PROBE_BLOCKS_PER_SM: u32 = 4;
const _: () = assert!(PROBE_BLOCK_SIZE.is_multiple_of(WARP_SIZE));

/// The two PTX entries of one kernel, one per element type: `<kernel>_f32` and `<kernel>_f64`. The
/// constants below are the one source of the names: the host looks an entry up by its constant, and
/// [`ENTRIES`] and [`UNTYPED_ENTRIES`] list every one the sm_70 module exports, which a host test
/// checks against the committed PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub f32: &'static str,
    pub f64: &'static str,
}

/// The [`Entry`] of the kernel named `$kernel` (an expression `concat!` accepts).
macro_rules! entry {
    ($kernel:expr) => {
        Entry { f32: concat!($kernel, "_f32"), f64: concat!($kernel, "_f64") }
    };
}

/// A kernel family compiled once per value of a parameter: the values, and the entries in their
/// order, `<prefix><value><suffix>_<type>`, both from one list.
macro_rules! family {
    ($prefix:literal, $suffix:literal; $($value:literal),+) => {
        ([$($value),+], [$(entry!(concat!($prefix, $value, $suffix))),+])
    };
}

/// `spmv_csr_scalar_*`.
pub const CSR_SCALAR: Entry = entry!("spmv_csr_scalar");

const CSR_VECTOR_FAMILY: ([u32; 5], [Entry; 5]) = family!("spmv_csr_vector_c", ""; 2, 4, 8, 16, 32);

/// Threads per row the cooperative CSR kernel is compiled for; one PTX entry per value.
pub const CSR_VECTOR_COOPS: [u32; 5] = CSR_VECTOR_FAMILY.0;

/// `spmv_csr_vector_c<coop>_*`, indexed like [`CSR_VECTOR_COOPS`].
pub const CSR_VECTOR: [Entry; 5] = CSR_VECTOR_FAMILY.1;

const CSR_ALIGNED_NC_FAMILY: ([u32; 3], [Entry; 3]) = family!("spmv_csr_aligned_g", "_nc"; 8, 16, 32);
const CSR_ALIGNED_PLAIN_FAMILY: ([u32; 3], [Entry; 3]) = family!("spmv_csr_aligned_g", "_plain"; 8, 16, 32);
const _: () = assert!(same_values(&CSR_ALIGNED_NC_FAMILY.0, &CSR_ALIGNED_PLAIN_FAMILY.0));

/// Threads per row the aligned CSR kernel is compiled for: Baskaran & Bordawekar's half warp and its
/// two neighbours. One PTX entry per value, x-load path and type.
pub const CSR_ALIGNED_GROUPS: [u32; 3] = CSR_ALIGNED_NC_FAMILY.0;

/// `spmv_csr_aligned_g<group>_nc_*` (x through the read-only data cache), indexed like
/// [`CSR_ALIGNED_GROUPS`].
pub const CSR_ALIGNED_NC: [Entry; 3] = CSR_ALIGNED_NC_FAMILY.1;

/// `spmv_csr_aligned_g<group>_plain_*` (x with plain global loads), indexed like
/// [`CSR_ALIGNED_GROUPS`].
pub const CSR_ALIGNED_PLAIN: [Entry; 3] = CSR_ALIGNED_PLAIN_FAMILY.1;

const CSR_PARAM_FAMILY: ([u32; 6], [Entry; 6]) = family!("spmv_csr_param_c", ""; 1, 2, 4, 8, 16, 32);

/// Threads per row (`coop`) the parametrised CSR kernel is compiled for: the powers of two up to a
/// warp that Reguly & Giles' rule and tuner choose from. One PTX entry per value and type.
pub const CSR_PARAM_COOPS: [u32; 6] = CSR_PARAM_FAMILY.0;

/// `spmv_csr_param_c<coop>_*`, indexed like [`CSR_PARAM_COOPS`].
pub const CSR_PARAM: [Entry; 6] = CSR_PARAM_FAMILY.1;

/// `spmv_csr_balanced_*`.
pub const CSR_BALANCED: Entry = entry!("spmv_csr_balanced");

/// `spmv_csr_merge_*` and `spmv_csr_merge_fixup_*`.
pub const CSR_MERGE: Entry = entry!("spmv_csr_merge");
pub const CSR_MERGE_FIXUP: Entry = entry!("spmv_csr_merge_fixup");

/// `spmv_scale_*`.
pub const SCALE: Entry = entry!("spmv_scale");

/// `dist_gather_*`: the pack of the distributed product.
pub const DIST_GATHER: Entry = entry!("dist_gather");

/// `dist_scatter_add_*`: the remote block's rows added into the part's `y`.
pub const DIST_SCATTER_ADD: Entry = entry!("dist_scatter_add");

/// Threads per block of `dist_gather_*` and `dist_scatter_add_*`: an element per thread, as
/// `spmv_scale_*`.
pub const GATHER_BLOCK_SIZE: u32 = 256;

/// `spmv_ell_*`.
pub const ELL: Entry = entry!("spmv_ell");

/// `ell_from_csr_*`: an ELL copy of a CSR matrix, built or refreshed on the device.
pub const ELL_FROM_CSR: Entry = entry!("ell_from_csr");

/// `spmv_compressed_ell_*`: values stored in the product's type.
pub const COMPRESSED_ELL: Entry = entry!("spmv_compressed_ell");

/// `spmv_compressed_ell_f32_*`: values stored as f32 (for an f32 product, [`COMPRESSED_ELL`]'s entry).
pub const COMPRESSED_ELL_F32: Entry = Entry { f32: COMPRESSED_ELL.f32, f64: "spmv_compressed_ell_f32_f64" };

/// `spmv_compressed_ell_f16_*`: values stored as binary16.
pub const COMPRESSED_ELL_F16: Entry = entry!("spmv_compressed_ell_f16");

/// `spmv_compressed_ell_bf16_*`: values stored as bfloat16.
pub const COMPRESSED_ELL_BF16: Entry = entry!("spmv_compressed_ell_bf16");

/// `spmv_dia_*`: values stored in the product's type.
pub const DIA: Entry = entry!("spmv_dia");

/// `spmv_dia_f32_*`: values stored as f32 (for an f32 product, [`DIA`]'s entry).
pub const DIA_F32: Entry = Entry { f32: DIA.f32, f64: "spmv_dia_f32_f64" };

/// `spmv_dia_f16_*`: values stored as binary16.
pub const DIA_F16: Entry = entry!("spmv_dia_f16");

/// `spmv_dia_bf16_*`: values stored as bfloat16.
pub const DIA_BF16: Entry = entry!("spmv_dia_bf16");

/// The fewest diagonals for which a DIA product in f32 takes the wide walk ([`DIA_WIDE`]): more than
/// one presence word's. On the H100 the wide walk ran band-64 (83 diagonals) 1.13x faster, fem3d-27
/// (27) 3% slower; one kernel holding both walks ran the stencils 10-16% slower, for the wide
/// batch's registers (docs/PERF.md, section 31).
pub const DIA_WIDE_MIN_DIAGONALS: u32 = DIA_WORD_BITS + 1;

/// `spmv_dia_wide_*`, for matrices of at least [`DIA_WIDE_MIN_DIAGONALS`]. In f32, [`DIA`]'s walk
/// with batches of 16 diagonals (64 bytes of widened values, as in f64): fewer rounds of loads a
/// row, more registers. In f64 the batch is 8 either way, and the wide entry is [`DIA`]'s walk
/// under a tighter register budget ([`REGISTER_BUDGETS`]): at 48 registers against 54, band-64 (83
/// diagonals) ran 1.09x faster and stencil3d-7 (7) 1.13x slower (H100, docs/PERF.md section 32).
pub const DIA_WIDE: Entry = entry!("spmv_dia_wide");

/// [`DIA_WIDE`] with values stored as f32 (for an f32 product, [`DIA_WIDE`]'s entry; for an f64
/// product, [`DIA_F32`]'s).
pub const DIA_WIDE_F32: Entry = Entry { f32: DIA_WIDE.f32, f64: DIA_F32.f64 };

/// [`DIA_WIDE`] with values stored as binary16.
pub const DIA_WIDE_F16: Entry = Entry { f32: "spmv_dia_wide_f16_f32", f64: DIA_F16.f64 };

/// [`DIA_WIDE`] with values stored as bfloat16.
pub const DIA_WIDE_BF16: Entry = Entry { f32: "spmv_dia_wide_bf16_f32", f64: DIA_BF16.f64 };

/// `dia_offsets_from_csr_*`: the diagonals of a CSR matrix, collected on the device.
pub const DIA_OFFSETS_FROM_CSR: Entry = entry!("dia_offsets_from_csr");

/// `dia_from_csr_*`: a DIA copy of a CSR matrix, built or refreshed on the device.
pub const DIA_FROM_CSR: Entry = entry!("dia_from_csr");

/// `compressed_ell_from_csr_*`: a compressed ELL copy of a CSR matrix, built or refreshed on the
/// device.
pub const COMPRESSED_ELL_FROM_CSR: Entry = entry!("compressed_ell_from_csr");

/// `compressed_heads_from_csr_*`: the segment heads of a CSR matrix's compressed columns, found on
/// the device ([`CompressedHeadsParams`]).
pub const COMPRESSED_HEADS_FROM_CSR: Entry = entry!("compressed_heads_from_csr");

/// `compressed_columns_from_csr_*`: a CSR matrix's columns written into compressed segments on the
/// device ([`CompressedColumnsParams`]).
pub const COMPRESSED_COLUMNS_FROM_CSR: Entry = entry!("compressed_columns_from_csr");

/// `spmv_sell_*`.
pub const SELL: Entry = entry!("spmv_sell");

/// `spmv_coo_atomic_*` and `spmv_coo_segmented_*`.
pub const COO_ATOMIC: Entry = entry!("spmv_coo_atomic");
pub const COO_SEGMENTED: Entry = entry!("spmv_coo_segmented");

/// `spmv_brc_partials_*` and `spmv_brc_combine_*` (deterministic), `spmv_brc_prescale_*` and
/// `spmv_brc_atomic_*`.
pub const BRC_PARTIALS: Entry = entry!("spmv_brc_partials");
pub const BRC_COMBINE: Entry = entry!("spmv_brc_combine");
pub const BRC_PRESCALE: Entry = entry!("spmv_brc_prescale");
pub const BRC_ATOMIC: Entry = entry!("spmv_brc_atomic");

/// `spmv_dense_blocks_*`.
pub const DENSE_BLOCKS: Entry = entry!("spmv_dense_blocks");

/// The streaming-read probe's entry (f32 only: it measures bytes, not arithmetic).
pub const PROBE_STREAM_READ: &str = "probe_stream_read";

/// The row-run probe's entry: two arrays read a warp-wide run at a time (`probe.rs`).
pub const PROBE_ROW_RUNS: &str = "probe_row_runs";

/// `l2_prefetch` (`prefetch.rs`).
pub const L2_PREFETCH: &str = "l2_prefetch";

/// Whether two lists of variants are equal, in a constant context.
const fn same_values(a: &[u32], b: &[u32]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A device address of `T` elements, as the kernel sees it. A number, not a host pointer: it is
/// `Send` and `Sync` whatever `T`, so the host's device matrices holding these may cross threads.
#[repr(transparent)]
#[derive(Debug)]
pub struct DevicePtr<T> {
    addr: u64,
    _elem: PhantomData<fn() -> T>,
}

impl<T> DevicePtr<T> {
    /// Wraps a raw device address (`CUdeviceptr`).
    pub const fn new(addr: u64) -> Self {
        Self { addr, _elem: PhantomData }
    }

    /// The raw device address.
    pub const fn addr(self) -> u64 {
        self.addr
    }

    /// The address as a pointer; only meaningful on the device.
    pub const fn as_ptr(self) -> *const T {
        self.addr as *const T
    }

    /// The address as a mutable pointer; only meaningful on the device.
    pub const fn as_mut_ptr(self) -> *mut T {
        self.addr as *mut T
    }
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}

/// A CSR matrix on the device: `rows + 1` row offsets, `nnz` column indices and values, all with 32-bit
/// indices (the host refuses matrices that do not fit).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrArgs<T> {
    pub row_offsets: DevicePtr<u32>,
    pub col_indices: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub rows: u32,
}

/// The dense operands of `y = alpha * A * x + beta * y`. When `beta == 0`, `y` is not read.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Axpby<T> {
    pub x: DevicePtr<T>,
    pub y: DevicePtr<T>,
    pub alpha: T,
    pub beta: T,
}

/// `spmv_csr_scalar_*` (one thread per row) and `spmv_csr_vector_c<coop>_*` (`coop` threads per row,
/// a compile-time value that is part of the entry's name): kernels whose only tunable is the launch
/// shape.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
}

/// `spmv_scale_*`: `y = beta * y` over `len` elements (or `y = 0` when `beta == 0`, without reading
/// `y`). The host uses it where `A * x` contributes nothing: `alpha == 0` or a matrix with no entries.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ScaleParams<T> {
    pub y: DevicePtr<T>,
    pub beta: T,
    pub len: u32,
}

/// `dist_gather_*`: `out[i] = x[indices[i]]` for `i < len`, one thread per element (grid stride):
/// the entries of `x` a device sends to the others in a distributed product, packed contiguously.
/// Every index is below `x`'s length (checked by the host when the indices are uploaded).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct GatherParams<T> {
    pub x: DevicePtr<T>,
    pub indices: DevicePtr<u32>,
    pub out: DevicePtr<T>,
    pub len: u32,
}

/// `dist_scatter_add_*`: `y[indices[i]] += v[i]` for `i < len`, one thread per element (grid
/// stride): the product of a distributed part's remote block, which holds only the rows with remote
/// entries, added into the rows of `y` they are. The indices are strictly increasing (so no two
/// threads write one element) and below `y`'s length, both checked by the host when they are
/// uploaded.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ScatterAddParams<T> {
    pub v: DevicePtr<T>,
    pub indices: DevicePtr<u32>,
    pub y: DevicePtr<T>,
    pub len: u32,
}

/// `probe_stream_read`: reads `4 * len4` floats at `data` once (see `probe.rs`). `sentinel` is a value
/// the sums never take, so `sink` is written only in theory.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct StreamReadParams {
    pub data: DevicePtr<f32>,
    pub sink: DevicePtr<f32>,
    pub len4: u64,
    pub sentinel: f32,
}

/// `probe_row_runs`: reads `pairs` floats at `data` and the `pairs` after them, in runs of `run`
/// elements a warp (see `probe.rs`); `run > 0` divides `pairs`. `sentinel` as in [`StreamReadParams`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RowRunsParams {
    pub data: DevicePtr<f32>,
    pub sink: DevicePtr<f32>,
    pub pairs: u64,
    pub run: u32,
    pub sentinel: f32,
}

/// The byte ranges one `l2_prefetch` launch covers.
pub const L2_PREFETCH_SPANS: usize = 5;

/// The line the L2 fetches on a prefetch: `l2_prefetch` asks for one address a line.
pub const L2_LINE_BYTES: u64 = 128;

/// Threads per block of `l2_prefetch`: a line per thread and no shared state.
pub const L2_PREFETCH_BLOCK_SIZE: u32 = 256;

/// One byte range of `l2_prefetch`: `bytes` bytes from `start` (none when `bytes` is 0). `start` is
/// where an allocation begins, which the driver aligns to at least 256 bytes, so the addresses
/// `start + 128 k` name every line of the span once.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PrefetchSpan {
    pub start: DevicePtr<u8>,
    pub bytes: u64,
}

impl PrefetchSpan {
    /// The span's lines.
    pub const fn lines(&self) -> u64 {
        self.bytes.div_ceil(L2_LINE_BYTES)
    }
}

/// `l2_prefetch`: asks the L2 for every [`L2_LINE_BYTES`] line of each span (`prefetch.rs`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct L2PrefetchParams {
    pub spans: [PrefetchSpan; L2_PREFETCH_SPANS],
}

impl L2PrefetchParams {
    /// The lines of all spans: the kernel's threads walk them in span order.
    pub const fn lines(&self) -> u64 {
        let mut lines = 0;
        let mut i = 0;
        while i < L2_PREFETCH_SPANS {
            lines += self.spans[i].lines();
            i += 1;
        }
        lines
    }
}

/// Entries of a long row that one warp of the parametrised kernel sums: 8 per lane, so a chunk takes
/// the steps a 256-entry row takes at 32 threads per row, the widest regular group.
pub const LONG_ROW_CHUNK: u32 = 256;

/// The long rows of a matrix, split into [`LONG_ROW_CHUNK`]-entry chunks for the parametrised kernel
/// (see `csr/param.rs`). Built once at upload; the kernel writes only `partials` and `counters`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LongRowArgs<T> {
    /// Rows of at least this many entries are long.
    pub min_len: u32,
    /// Chunks over all long rows; 0 turns the split off, and then no row counts as long.
    pub chunks: u32,
    /// The long rows, ascending.
    pub rows: DevicePtr<u32>,
    /// `rows.len() + 1` prefix sums: the chunks of `rows[j]` are `first_chunk[j] .. first_chunk[j + 1]`.
    pub first_chunk: DevicePtr<u32>,
    /// For each chunk, the index `j` of its row in `rows`.
    pub chunk_row: DevicePtr<u32>,
    /// For each chunk, its entries `from .. to`: `from < to`, `to - from <= LONG_ROW_CHUNK`, inside
    /// its row, cut by the host from the same row offsets the matrix uploaded. A warp loads them
    /// beside its row's index, so that its loads of the matrix wait for neither the row's number nor
    /// its offsets.
    pub chunk_entries: DevicePtr<EntrySpan>,
    /// One partial sum per chunk.
    pub partials: DevicePtr<T>,
    /// One counter per long row: how many of its chunks are done; 0 between products.
    pub counters: DevicePtr<u32>,
}

impl<T> LongRowArgs<T> {
    /// No row is long: the chunk path is off, and the kernels read none of the arrays.
    pub const fn unsplit() -> Self {
        Self {
            min_len: u32::MAX,
            chunks: 0,
            rows: DevicePtr::new(0),
            first_chunk: DevicePtr::new(0),
            chunk_row: DevicePtr::new(0),
            chunk_entries: DevicePtr::new(0),
            partials: DevicePtr::new(0),
            counters: DevicePtr::new(0),
        }
    }

    /// Whether a row of `len` entries is left to the chunk warps.
    pub const fn is_long(&self, len: u32) -> bool {
        self.chunks != 0 && len >= self.min_len
    }
}

/// Entries `from .. to` of a CSR matrix in one word (`from` in the low 32 bits, `to` in the high), so
/// that one load gives a warp both ends of its work.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntrySpan(pub u64);

impl EntrySpan {
    pub const fn new(from: u32, to: u32) -> Self {
        EntrySpan(((to as u64) << 32) | from as u64)
    }

    pub const fn from(self) -> u32 {
        self.0 as u32
    }

    pub const fn to(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// Chunks of [`LONG_ROW_CHUNK`] entries that cover a row of `len` entries.
pub const fn long_row_chunks(len: u32) -> u32 {
    len.div_ceil(LONG_ROW_CHUNK)
}

/// `spmv_csr_param_c<coop>_*` (Reguly & Giles, 2012): `coop` threads per row, fixed by the entry;
/// `blockDim` threads per block, set at launch; `repeat` rows per group and tile, so that a tile of
/// the grid covers `repeat * blockDim / coop` consecutive rows.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrParamParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
    pub repeat: u32,
    /// Blocks that walk the tiles (with a stride of `row_blocks`); the blocks after them take the
    /// long-row chunks, one chunk per warp.
    pub row_blocks: u32,
    pub long: LongRowArgs<T>,
}

/// Entries of one task of the balanced CSR kernel at most, unless the task is a single row: a
/// [`LONG_ROW_CHUNK`], so that task warps and chunk warps have one grain. Little's law sets the size:
/// an H100 streams 3.35 TB/s at about 0.7 us of DRAM latency, 2.3 MB in flight over 132 SMs, 18 KB
/// per SM; a warp issues all loads of its task at once, 256 x 8 B (value and column, f32) = 2 KB, so
/// 9 of an SM's 64 warp slots keep DRAM busy, with room for the `x` gathers and lower occupancy.
/// Larger tasks would leave fewer, coarser tasks and more registers per lane for no more bandwidth.
pub const BALANCED_TASK_ENTRIES: u32 = LONG_ROW_CHUNK;

/// Rows of one task at most: two per lane, each lane keeping its rows' sums in registers. A task
/// pays a fixed chain of four dependent memory round trips (its rows, their offsets, the entries, the
/// `x` gathers); at one row per lane, rows of three entries (web graphs) make tasks of 100 entries,
/// too few bytes per chain to keep DRAM busy at the occupancy the kernel's registers allow. Two rows
/// per lane double that for one more shuffle per step.
pub const BALANCED_TASK_ROWS: u32 = 2 * WARP_SIZE;

/// Rows of at least this many entries are split into [`LONG_ROW_CHUNK`]s for the balanced kernel:
/// a warp then spends at most two tasks' worth of steps on one row, and short-wide matrices (a few
/// thousand rows of thousands of entries) still give the GPU tens of thousands of warps.
pub const BALANCED_LONG_ROW: u32 = 2 * BALANCED_TASK_ENTRIES;

/// Where a row task of the balanced kernel starts: its first row in the low 32 bits, that row's first
/// entry (its row offset) in the high 32 bits. The entry rides with the row so that a warp reads both
/// bounds of its task in one round trip, not the row in one and its offset in the next, as
/// [`EntrySpan`] gives a chunk warp both ends of its chunk.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskStart(pub u64);

impl TaskStart {
    pub const fn new(row: u32, entry: u32) -> Self {
        TaskStart(((entry as u64) << 32) | row as u64)
    }

    pub const fn row(self) -> u32 {
        self.0 as u32
    }

    pub const fn entry(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// `spmv_csr_balanced_*` (`csr/balanced.rs`): one warp per row task, one warp per long-row chunk.
/// The first `chunk_blocks` blocks take the chunks of `long` (split at [`BALANCED_LONG_ROW`]), the
/// blocks after them the tasks, with a stride of their own count.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrBalancedParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
    /// `tasks + 1` ascending [`TaskStart`]s: task `t` is rows `row(t) .. row(t + 1)`, entries
    /// `entry(t) .. entry(t + 1)`, either one row or at most [`BALANCED_TASK_ROWS`] rows of at most
    /// [`BALANCED_TASK_ENTRIES`] entries in all.
    pub task_starts: DevicePtr<TaskStart>,
    pub tasks: u32,
    pub chunk_blocks: u32,
    pub long: LongRowArgs<T>,
}

/// Merge items (row ends and entries) each lane of the merge-path kernel consumes: Merrill & Garland's
/// "items per thread". Eight make a tile of [`MERGE_TILE`], the grain of the balanced kernel's tasks,
/// which [`BALANCED_TASK_ENTRIES`] sizes by Little's law.
pub const MERGE_ITEMS_PER_LANE: u32 = 8;

/// Merge items of one tile of the merge-path kernel, one tile per warp.
pub const MERGE_TILE: u32 = MERGE_ITEMS_PER_LANE * WARP_SIZE;

/// The most threads per block of `spmv_csr_merge_*`: each warp stages a tile's products and row ends
/// in shared memory (`MERGE_TILE * (8 + 4)` bytes in f64), and 16 warps of those fill the 48 KiB a
/// block gets without opting in.
pub const CSR_MERGE_MAX_BLOCK_SIZE: u32 = 512;

/// Carries one warp of the merge-path fix-up sums at most, before its block gets another warp: 8
/// rounds of 8 loads in flight per lane, a few microseconds of L2 round trips.
pub const MERGE_FIXUP_SLOTS_PER_WARP: u32 = 8 * 8 * WARP_SIZE;

/// The most warps of a fix-up block.
pub const MERGE_FIXUP_MAX_WARPS: u32 = 16;

/// Warps per block of `spmv_csr_merge_fixup_*` for split rows of at most `longest_run` carries:
/// enough that no warp sums more than [`MERGE_FIXUP_SLOTS_PER_WARP`], up to
/// [`MERGE_FIXUP_MAX_WARPS`]. A row of 3 M entries leaves 11,700 carries: 6 warps.
pub const fn merge_fixup_warps(longest_run: u32) -> u32 {
    let warps = longest_run.div_ceil(MERGE_FIXUP_SLOTS_PER_WARP);
    if warps < 1 {
        1
    } else if warps > MERGE_FIXUP_MAX_WARPS {
        MERGE_FIXUP_MAX_WARPS
    } else {
        warps
    }
}

/// `spmv_csr_merge_*` and `spmv_csr_merge_fixup_*` (`csr/merge.rs`, Merrill & Garland, SC16): the
/// merge of the row ends `row_offsets[1..]` with the entries `0 .. nnz` is cut into tiles of
/// [`MERGE_TILE`] items, one per warp; tile `t` starts on diagonal `t * MERGE_TILE` at row
/// `tile_rows[t]` (so at entry `t * MERGE_TILE - tile_rows[t]`). A row whose entries lie in several
/// tiles is *split*: each tile before the one holding its row end leaves its part in `carries[t]`,
/// the tile with its row end leaves its part in `heads[t]`, and the fix-up launch adds them in tile
/// order and writes `y`. Every other row is written by the lane that consumes its row end.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrMergeParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
    pub nnz: u32,
    pub tiles: u32,
    /// `tiles + 1` rows, ascending: the row of each tile's first diagonal, then `rows`.
    pub tile_rows: DevicePtr<u32>,
    /// One partial sum per tile (scratch): the tile's part of the split row it ends in.
    pub carries: DevicePtr<T>,
    /// One partial sum per tile (scratch): the tile's part of the split row it starts in and ends.
    pub heads: DevicePtr<T>,
    pub splits: u32,
    /// The split rows, ascending, one block of the fix-up each: row `split_rows[s]` has carries in tiles
    /// `split_first[s] .. split_last[s]` and its head in tile `split_last[s]`.
    pub split_rows: DevicePtr<u32>,
    pub split_first: DevicePtr<u32>,
    pub split_last: DevicePtr<u32>,
}

/// Shared memory, KiB, that a block of the column-panel kernel (`csr/panels.rs`) may give its panel
/// of `x`: the strategy's parameter (`Kernel::CsrPanels`). 48 KiB is what every GPU grants a block
/// without opting in (4 blocks per SM on an H100); 64 and 96 KiB leave 3 and 2 blocks per SM there
/// (96 KiB is also Volta's opt-in limit); 192 KiB one block of wide panels, for Ampere and Hopper,
/// whose opt-in limits are 163 and 227 KiB.
pub const CSR_PANEL_KIB: [u32; 4] = [48, 64, 96, 192];

/// Columns of one panel: `panel_kib` KiB of elements of `elem_bytes` bytes (12,288 f32 or 6,144 f64
/// at 48 KiB). A multiple of 4, so that every panel of a 16-byte aligned `x` starts 16-byte aligned.
pub const fn csr_panel_cols(panel_kib: u32, elem_bytes: u32) -> u32 {
    panel_kib * 1024 / elem_bytes
}

const CSR_PANELS_FAMILY: ([u32; 4], [Entry; 4]) = family!("spmv_csr_panels_c", ""; 4, 8, 16, 32);

/// Threads per row of the column-panel kernel: one PTX entry per value and type, the host choosing
/// the width nearest to a lane per 2 of a row's mean entries in a panel.
pub const CSR_PANELS_COOPS: [u32; 4] = CSR_PANELS_FAMILY.0;

/// `spmv_csr_panels_c<coop>_*`, indexed like [`CSR_PANELS_COOPS`].
pub const CSR_PANELS: [Entry; 4] = CSR_PANELS_FAMILY.1;

/// `spmv_csr_panels_combine_*`: the second launch of the column-panel product.
pub const CSR_PANELS_COMBINE: Entry = entry!("spmv_csr_panels_combine");

/// `spmv_csr_panels_table`: the panel table's construction (one name for both element types).
pub const CSR_PANELS_TABLE: &str = "spmv_csr_panels_table";

/// The fewest lanes a row at which a CSR kernel's loads of the matrix leave L1 first
/// (`Load::load_nc_evict_first`, `csr/mod.rs`; the host's tests check the PTX against it). A group
/// of 16 or 32 lanes reads half a 128-byte line or more of each array a step, and the line's rest
/// at once or the next step, so L1 gains little by keeping it, and the room goes to `x`: band-64
/// and fem3d-27 10-19% faster at 16 and 32 lanes. Narrower groups come back to a line over several
/// steps (a thread per row over all of its row's entries), and evicting it first costs them a
/// second read from L2: with the hint, the thread-per-row kernel took 2.24x as long on stencil3d-7
/// and the 2-lane kernel 2.03x on fem3d-27 (docs/PERF.md, section 35).
pub const EVICT_FIRST_MIN_LANES: u32 = 16;

/// The fewest lanes a row at which the compressed-index kernel's loads of the matrix leave L1 first
/// (`formats/compressed.rs`): where a group's step reads half a line or more of its narrowest stream,
/// the 2-byte column offsets, as [`EVICT_FIRST_MIN_LANES`] lanes read of 4-byte columns. The hint
/// goes on every stream at once: on the H100, at 32 lanes, it took wide-400 and random-1pct 3-10%
/// faster on both streams, and on the offsets alone (values unhinted) 1-6% slower
/// (docs/PERF.md, section 37).
pub const COMPRESSED_EVICT_FIRST_MIN_LANES: u32 = EVICT_FIRST_MIN_LANES * 4 / 2;

/// The head of a segment of compressed columns ([`CompressedArgs`]) whose columns lie in
/// `lo ..= hi`: `lo` (the base) where they span at most `u16::MAX` and `lo` is below
/// [`COMPRESSED_PLAIN`], else [`COMPRESSED_PLAIN`]; 0 for a segment without entries, which the
/// empty fold `(u32::MAX, 0)` leaves with `lo > hi`. The host's conversion and the device's copy
/// both take their heads from here.
pub const fn compressed_head(lo: u32, hi: u32) -> u32 {
    if lo > hi {
        0
    } else if hi - lo <= u16::MAX as u32 && lo < COMPRESSED_PLAIN {
        lo
    } else {
        COMPRESSED_PLAIN
    }
}

/// Whether a segment of this head keeps its columns as 16-bit offsets (in `deltas`), rather than
/// plain (in `escapes`).
pub const fn compressed_segment(head: u32) -> bool {
    head & COMPRESSED_PLAIN == 0
}

/// Loads of column indices and values each lane of the column-panel kernel issues before its first
/// product: the span path's batching (`csr/mod.rs`, `span_loads`), four steps so that a group of
/// `coop` lanes covers `4 * coop` entries of a row's segment per round trip.
pub const CSR_PANELS_STEPS: u32 = 4;

/// 16-byte loads of `x` each thread has in flight while its block stages a panel: 512 threads with
/// 4 each keep 32 KiB in flight, what an SM needs from L2 to copy a 48 KiB panel in a few round
/// trips instead of one trip per element.
pub const CSR_PANELS_STAGE_LOADS: u32 = 4;

/// Threads per block of `spmv_csr_panels_table` and `spmv_csr_panels_combine_*`: a warp per row,
/// 8 rows per block.
pub const CSR_PANELS_AUX_BLOCK_SIZE: u32 = 256;

/// The column panels of a matrix for the column-panel kernel (`csr/panels.rs`): `panels` panels of
/// `panel_cols` columns (the last one shorter), `groups` row groups, and the product's scratch.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrPanelArgs<T> {
    pub ncols: u32,
    pub panel_cols: u32,
    pub panels: u32,
    pub groups: u32,
    /// `(panels + 1) * rows` entry positions, panel-major: the entries of row `r` whose columns lie
    /// in panel `b` are `table[b * rows + r] .. table[(b + 1) * rows + r]`, so that a warp reads
    /// the segments of consecutive rows in one panel with adjacent loads. A row whose columns
    /// decrease somewhere has its start in every entry: no entries in any panel, and a last entry
    /// (`table[panels * rows + r]`) other than its end, so the combine sums it whole.
    pub table: DevicePtr<u32>,
    /// `groups + 1` ascending rows: group `g` is rows `group_rows[g] .. group_rows[g + 1]`. Fine
    /// groups (many a block), so that the blocks' contiguous ranges of (panel, group) items are
    /// even; at most the row count.
    pub group_rows: DevicePtr<u32>,
    /// `rows * panels` partial sums, row-major (scratch): row `r`'s sum over panel `b` at
    /// `r * panels + b`, so that the combine reads a row's sums in one run.
    pub partials: DevicePtr<T>,
}

/// `spmv_csr_panels_c<coop>_*` (the `panels x groups` items in panel-major order, a contiguous
/// range of them per block, whatever the grid) and
/// `spmv_csr_panels_combine_*` (a warp per row), which share it: the first writes
/// `panels.partials`, the second reads them and writes `y`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrPanelsParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
    pub panels: CsrPanelArgs<T>,
}

/// `spmv_csr_panels_table`: a warp per row of a CSR matrix writes the row's `panels + 1` entries of
/// `table` (panel-major, see [`CsrPanelArgs::table`]): the first entry of each panel, by binary
/// search in the row's columns, then the row's end; a row whose columns decrease anywhere gets its
/// start in every entry instead (no entries in any panel; the combine sums it whole).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrPanelTableParams {
    pub row_offsets: DevicePtr<u32>,
    pub col_indices: DevicePtr<u32>,
    pub rows: u32,
    pub panel_cols: u32,
    pub panels: u32,
    pub table: DevicePtr<u32>,
}

/// The column index of a padding slot in the ELL, SELL, BRC and dense-block arrays. The kernels read
/// no `x` for it: a value of 0 at a real column would still turn an infinite or NaN `x[col]` into NaN.
/// Column indices are below the column count, itself at most `u32::MAX`, so none is `PAD_COL`.
pub const PAD_COL: u32 = u32::MAX;

/// An ELL matrix (Bell & Garland 2008): `width` slots per row, slot `k` of row `r` at `k * rows + r`
/// (column-major). A row's entries fill its first slots; the rest hold [`PAD_COL`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EllArgs<T> {
    pub cols: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub rows: u32,
    pub width: u32,
}

/// `spmv_ell_*`: one thread per row.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EllParams<T> {
    pub a: EllArgs<T>,
    pub op: Axpby<T>,
}

/// `ell_from_csr_*`: one thread per row writes the row's `ell.width` slots of `ell` from `csr`, its
/// entries then padding (every column and value when `pattern` is 1, the entries' values alone when
/// 0, for new values of the same pattern). `ell.rows` is `csr.rows`, and no row of `csr` is longer than
/// `ell.width`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct EllFromCsrParams<T> {
    pub csr: CsrArgs<T>,
    pub ell: EllArgs<T>,
    pub pattern: u32,
}

/// The largest distance `|column - row|` the compressed ELL format stores in 16 bits.
pub const MAX_ROW_DELTA: i16 = i16::MAX;

/// The stored offset of a padding slot in the compressed ELL arrays: below `-MAX_ROW_DELTA`, so no
/// entry's offset is `PAD_DELTA`. As for [`PAD_COL`], the kernels read no `x` for it.
pub const PAD_DELTA: i16 = i16::MIN;

/// An ELL matrix whose columns are stored as 16-bit offsets from their row (the compressed ELL
/// format): slot `k` of row `r` at `k * rows + r` holds `column - r`, in
/// `-MAX_ROW_DELTA ..= MAX_ROW_DELTA`, in `deltas`, and its value in the storage type `V` in
/// `values`. A row's entries fill its first slots; the rest hold [`PAD_DELTA`] and 0. Banded,
/// stencil and most finite-element matrices keep their columns that close to the diagonal; their
/// slots take 2 bytes of column where ELL takes 4.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedEllArgs<V> {
    pub deltas: DevicePtr<i16>,
    pub values: DevicePtr<V>,
    pub rows: u32,
    pub width: u32,
}

/// `spmv_compressed_ell_*`: one thread per row, the ELL kernel's walk and order of the sums, so with
/// values in the product's type `T` its results are bit-identical to `spmv_ell_*` and
/// `spmv_csr_scalar_*`. `V` is the storage type of the values.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedEllParams<V, T> {
    pub a: CompressedEllArgs<V>,
    pub op: Axpby<T>,
}

/// `compressed_ell_from_csr_*`: as [`EllFromCsrParams`], into the compressed ELL arrays. A thread
/// whose row holds a column farther than [`MAX_ROW_DELTA`] from the row raises `*misfit` to 1 (the
/// host zeroes it first) and leaves that slot's offset unspecified; the host then discards the copy.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedEllFromCsrParams<T> {
    pub csr: CsrArgs<T>,
    pub ell: CompressedEllArgs<T>,
    pub misfit: DevicePtr<u32>,
    pub pattern: u32,
}

/// Diagonals a DIA matrix holds at most: one bit of a row's presence words each, in at most four
/// words. Enough for a band of 3 x 3 blocks 27 nodes wide (83 diagonals: the suite's band-64, after
/// SuiteSparse's cant) and for a 27-point stencil of 3 unknowns a node (81).
pub const DIA_MAX_DIAGONALS: u32 = 128;

/// Diagonals per presence word.
pub const DIA_WORD_BITS: u32 = u32::BITS;

/// The presence words of each row of a DIA matrix of `diagonals` diagonals.
pub const fn dia_presence_words(diagonals: u32) -> u32 {
    diagonals.div_ceil(DIA_WORD_BITS)
}

/// A DIA matrix (Bell & Garland, NVIDIA TR 2008, section 4.1), with presence words per row: its
/// entries lie on `diagonals` diagonals, diagonal `d` holding the entries `(r, r + offsets[d])`
/// (`offsets` increasing); `values[d * rows + r]` is that entry's value in the storage type `V`,
/// and bit `d % 32` of `present[(d / 32) * rows + r]` says whether row `r` has it (0 in `values`
/// where not): [`dia_presence_words`] words a row, word-major, so that a warp's loads of a word
/// are 32 consecutive ones. No column index is stored: the kernel forms it from the row, so its
/// gathers of `x` wait on no load of the matrix.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DiaArgs<V> {
    pub offsets: DevicePtr<i64>,
    pub present: DevicePtr<u32>,
    pub values: DevicePtr<V>,
    pub rows: u32,
    pub cols: u32,
    pub diagonals: u32,
}

/// Slots of the table in which `dia_offsets_from_csr_*` collects a matrix's diagonals by open
/// addressing: twice [`DIA_MAX_DIAGONALS`], so that a matrix of one diagonal too many still fits
/// and is told apart from a full table. A power of two: the hash keeps its top bits.
pub const DIA_OFFSET_TABLE: u32 = 2 * DIA_MAX_DIAGONALS;
const _: () = assert!(DIA_OFFSET_TABLE.is_power_of_two());

/// An empty slot of that table: no offset `column - row` of 32-bit indices is this.
pub const DIA_EMPTY_SLOT: i64 = i64::MIN;

/// `dia_offsets_from_csr_*`: one thread per row puts each entry's `column - row` in `table`
/// ([`DIA_OFFSET_TABLE`] slots, [`DIA_EMPTY_SLOT`] where free, the host fills it so), once each,
/// counting the slots claimed in `*claimed`; once more than [`DIA_MAX_DIAGONALS`] are claimed (or
/// a thread finds the table full) `*overflow` is raised to 1, and the threads stop at their next
/// row. The host zeroes both words first; with `*overflow` raised, the table is not the matrix's.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DiaOffsetsParams<T> {
    pub csr: CsrArgs<T>,
    pub table: DevicePtr<i64>,
    pub claimed: DevicePtr<u32>,
    pub overflow: DevicePtr<u32>,
}

/// `dia_from_csr_*`: one thread per row writes its entries' values to `dia`'s diagonals and, when
/// `pattern` is 1, its presence words; `dia.offsets` hold every `column - row` of `csr`, increasing,
/// and `dia.values` is zeroed. A row whose columns do not increase (repeated, or out of order, so
/// that DIA's order of the sums would not be CSR's) raises `*disordered` to 1 (read only when
/// `pattern` is 1; the host zeroes it first and discards the copy). With `pattern` 0 (new values of
/// the same pattern) only the values are written.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DiaFromCsrParams<T> {
    pub csr: CsrArgs<T>,
    pub dia: DiaArgs<T>,
    pub disordered: DevicePtr<u32>,
    pub pattern: u32,
}

/// `spmv_dia_*`: one thread per row, its diagonals in increasing order, one `fma` per present
/// entry: for a matrix whose rows are sorted, the order of `spmv_csr_scalar_*` and `spmv_ell_*`, so
/// with values in the product's type `T` the result is theirs bit for bit. `V` is the storage type.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DiaParams<V, T> {
    pub a: DiaArgs<V>,
    pub op: Axpby<T>,
}

/// Rows per slice of a SELL-C matrix, C in Kreutzer et al. (2014): one warp, a lane per row, so that
/// the warp's loads at each slot are 32 consecutive words.
pub const SELL_SLICE_ROWS: u32 = WARP_SIZE;
const _: () = assert!(BLOCK_SIZE.is_multiple_of(SELL_SLICE_ROWS));

/// A SELL-C matrix, C = [`SELL_SLICE_ROWS`] (Kreutzer, Hager, Wellein, Fehske & Bishop 2014, no
/// sorting): slice `s` holds rows `C s .. C s + C - 1` in `(slice_ptr[s + 1] - slice_ptr[s]) / C`
/// slots each, as many as its longest row; slot `k` of lane `l` (row `C s + l`) is at
/// `slice_ptr[s] + C k + l`. A row's entries fill its first slots; the rest, and every slot of a lane
/// past the last row, hold [`PAD_COL`]. `slice_ptr` has `slices + 1` entries, the first 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SellArgs<T> {
    pub slice_ptr: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub rows: u32,
    pub slices: u32,
}

/// `spmv_sell_*`: one warp per slice, a lane per row.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SellParams<T> {
    pub a: SellArgs<T>,
    pub op: Axpby<T>,
}

/// The operands of an accumulating kernel: `y += alpha * A * x`, `y` already scaled by `beta` (by a
/// launch of `spmv_scale_*` or a kernel of the same product that ran before on the stream).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Accumulate<T> {
    pub x: DevicePtr<T>,
    pub y: DevicePtr<T>,
    pub alpha: T,
}

/// A COO matrix: `nnz` (row, column, value) triples sorted by row.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooArgs<T> {
    pub rows: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub nnz: u32,
}

/// `spmv_coo_atomic_*` (one thread per entry) and `spmv_coo_segmented_*` (one warp per `interval`
/// consecutive entries, a multiple of 32, with enough warps launched to cover `nnz`; the atomic
/// kernel ignores it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooParams<T> {
    pub a: CooArgs<T>,
    pub op: Accumulate<T>,
    pub interval: u64,
}

/// Pieces per BRC block, B1 in Ashari et al. (2015): one per lane of the block's warp.
pub const BRC_BLOCK_PIECES: u32 = WARP_SIZE;

/// The flag of a BRC target that names a slot of a split row rather than a whole row; the other 31
/// bits are the slot. The host refuses matrices with `2^31` rows or more, so no row has it.
pub const BRC_SPLIT: u32 = 1 << 31;

/// A BRC matrix (Ashari et al. 2015): `pieces` pieces (whole rows, or pieces of split rows) in
/// `blocks` blocks of [`BRC_BLOCK_PIECES`]. Block `b` holds `block_width[b]` columns of 32 slots from
/// `block_ptr[b]`: entry `j` of the piece in lane `l` is at `block_ptr[b] + 32 * j + l`, and padding
/// slots hold [`PAD_COL`]. Piece `p` goes to `targets[p]`: a row, or [`BRC_SPLIT`] with a slot.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BrcArgs<T> {
    pub block_ptr: DevicePtr<u32>,
    pub block_width: DevicePtr<u32>,
    pub targets: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub pieces: u32,
    pub blocks: u32,
}

/// The split rows of a BRC matrix: split row `s` is `split_rows[s]`, its pieces' slots are
/// `split_ptr[s] .. split_ptr[s + 1]`, slot `i` belongs to row `slot_rows[i]`, and `partials` holds one
/// element per slot (scratch the deterministic kernels write and sum).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BrcSplitArgs<T> {
    pub split_rows: DevicePtr<u32>,
    pub split_ptr: DevicePtr<u32>,
    pub slot_rows: DevicePtr<u32>,
    pub partials: DevicePtr<T>,
    pub split_count: u32,
}

/// `spmv_brc_atomic_*` and `spmv_brc_partials_*` (one warp per block), `spmv_brc_prescale_*` and
/// `spmv_brc_combine_*` (one thread per split row).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BrcParams<T> {
    pub a: BrcArgs<T>,
    pub split: BrcSplitArgs<T>,
    pub op: Axpby<T>,
}

/// Threads per row of the dense-block kernel, and the multiple a row's entries in a block are padded
/// to: Baskaran & Bordawekar's half warp.
pub const DENSE_ROW_THREADS: u32 = 16;

/// Consecutive rows sharing a window of `x` in the dense-block format: one per group of
/// [`DENSE_ROW_THREADS`] in a block of [`DENSE_BLOCK_THREADS`].
pub const DENSE_BLOCK_ROWS: u32 = 16;

/// Threads per block of the dense-block kernel (its loops and barriers assume exactly this many).
pub const DENSE_BLOCK_THREADS: u32 = DENSE_BLOCK_ROWS * DENSE_ROW_THREADS;

/// The window start of a block of rows that has no window (all its entries are in the remainder).
pub const DENSE_NO_WINDOW: u32 = u32::MAX;

/// Dense blocks: block `b` (rows `16 b .. 16 b + 16`) shares the window of `x` of `window` columns
/// from `window_start[b]`. Row `r`'s slots are `row_offsets[r] .. row_offsets[r + 1]` (a multiple of
/// [`DENSE_ROW_THREADS`]), with column offsets into the window; padding slots hold [`PAD_COL`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DenseBlockArgs<T> {
    pub window_start: DevicePtr<u32>,
    pub row_offsets: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub rows: u32,
    pub ncols: u32,
    pub window: u32,
}

/// `spmv_dense_blocks_*`: [`DENSE_BLOCK_THREADS`] threads per block and `window` elements of dynamic
/// shared memory.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DenseBlockParams<T> {
    pub a: DenseBlockArgs<T>,
    pub op: Axpby<T>,
}

/// Threads per block of every CG vector kernel (`cg.rs`), whose block sums and shared memory assume
/// exactly this many: 8 warps, so that 8 blocks fill the 2048 thread slots of an SM.
pub const CG_BLOCK_THREADS: u32 = 256;

/// The most blocks a CG vector kernel is launched with; [`crate::index::cg_blocks`] gives the grid.
/// An H100 (and an H200) holds 132 SMs x 8 blocks of [`CG_BLOCK_THREADS`] = 1056 resident blocks, so
/// 1024 is one wave that keeps every SM streaming; more blocks would only add partial sums and
/// arrivals on the counter. A power of two, so that each thread of the last block sums the same
/// number of partials ([`CG_MAX_BLOCKS`] / [`CG_BLOCK_THREADS`] = 4) in stage 2.
pub const CG_MAX_BLOCKS: u32 = 1024;

/// The most sums one CG kernel reduces at once: `cg_init_*` takes rᵀz, rᵀr and bᵀb.
pub const CG_MAX_SUMS: u32 = 3;

/// Elements of the partial-sum scratch of a CG solve: one slot per block for each of the
/// [`CG_MAX_SUMS`] sums (sum `k` of block `b` at `k * CG_MAX_BLOCKS + b`). The kernels overwrite it
/// at every launch; its contents never matter between launches.
pub const CG_PARTIALS: u32 = CG_MAX_SUMS * CG_MAX_BLOCKS;

/// Bytes of dynamic shared memory every CG kernel is launched with, for elements of `elem_bytes`
/// bytes: one slot per warp for each of the [`CG_MAX_SUMS`] sums of the block reduction (192 bytes
/// for f64).
pub const fn cg_shared_bytes(elem_bytes: u32) -> u32 {
    CG_MAX_SUMS * (CG_BLOCK_THREADS / WARP_SIZE) * elem_bytes
}

/// `cg_init_plain_*` and `cg_init_jacobi_*`.
pub const CG_INIT_PLAIN: Entry = entry!("cg_init_plain");
pub const CG_INIT_JACOBI: Entry = entry!("cg_init_jacobi");
/// `cg_iterate_plain_*` and `cg_iterate_jacobi_*`: the vector passes of an iteration, in one
/// cooperative launch.
pub const CG_ITERATE_PLAIN: Entry = entry!("cg_iterate_plain");
pub const CG_ITERATE_JACOBI: Entry = entry!("cg_iterate_jacobi");
/// [`CgState::status`] before `cg_init_*` ran: the host allocates the state zeroed.
pub const CG_NOT_STARTED: u32 = 0;
/// [`CgState::status`]: iterating; the only status in which `cg_iterate_*` does anything.
pub const CG_RUNNING: u32 = 1;
/// [`CgState::status`]: `rᵀr <= tol_rr`, the relative residual reached the tolerance.
pub const CG_CONVERGED: u32 = 2;
/// [`CgState::status`]: [`CgParams::max_iterations`] iterations done without converging.
pub const CG_MAX_ITERATIONS: u32 = 3;
/// [`CgState::status`]: `pᵀAp` was not a positive finite number (or `alpha` overflowed): the matrix
/// is not symmetric positive definite, or holds NaN or infinities. `x` keeps the last iterate.
pub const CG_BREAKDOWN_PAP: u32 = 4;
/// [`CgState::status`]: `rᵀr` was not finite (NaN or infinities in the matrix, the preconditioner
/// or `b`, or `bᵀb` past the type's range), or, with the residual above the tolerance, `rᵀz` was not
/// a positive finite number (a preconditioner that is not positive definite); the host tells the two
/// apart by `rr`. `x` holds the iterate of the step that produced it.
pub const CG_BREAKDOWN_RZ: u32 = 5;

/// The scalars of a CG solve, kept on the device so that an iteration needs no host synchronisation.
/// The host allocates it zeroed, and reads it back at its convergence checks (`status`, `iterations`,
/// `rr / bb`). Each field is written by one thread of one kernel once every block has read the state
/// (see `cg.rs`), and read by later kernels on the stream.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CgState<T> {
    /// `(rel_tol * |b|)^2`: the solve has converged when `rr <= tol_rr` (`cg_init_*`).
    pub tol_rr: T,
    /// `rᵀz` of the current residual (`rᵀr` without a preconditioner): the numerator of `alpha`.
    pub rz: T,
    /// `rᵀr` of the current residual (the recurrence's, not a recomputed `b - Ax`).
    pub rr: T,
    /// `bᵀb`, so that the relative residual is `sqrt(rr / bb)` (`cg_init_*`).
    pub bb: T,
    /// `pᵀAp` of the latest iteration (`cg_iterate_*`), kept for the breakdown report.
    pub pq: T,
    /// `rz / pq` of the latest iteration (`cg_iterate_*`).
    pub alpha: T,
    /// `rz_new / rz` of the latest iteration (`cg_iterate_*`).
    pub beta: T,
    /// Iterations done: updates of `r`, each with its update of `x`.
    pub iterations: u32,
    /// One of `CG_NOT_STARTED`, `CG_RUNNING`, `CG_CONVERGED`, `CG_MAX_ITERATIONS`,
    /// `CG_BREAKDOWN_PAP`, `CG_BREAKDOWN_RZ`.
    pub status: u32,
    /// Blocks of the running kernel that have stored their partial sums (or reached a grid
    /// barrier); the last one to arrive resets it to 0 (`atom.inc` wraps), so it is 0 between
    /// launches and barriers. Zeroed with the state.
    pub arrivals: u32,
    /// Grid barriers passed (`cg_iterate_*`), wrapping: the blocks waiting at a barrier wait for it
    /// to change.
    pub epoch: u32,
}

/// Every CG kernel (`cg.rs`): the vectors of one CG solve of `n` unknowns, its scratch and its state.
/// Every kernel takes the same struct, so one value serves the whole captured iteration. Launch
/// `cg_iterate_*` cooperatively with at most [`crate::index::cg_blocks`]`(n)` blocks (as many as the
/// GPU keeps resident) and `cg_init_*` with `cg_blocks(n)` blocks, of [`CG_BLOCK_THREADS`] threads
/// and [`cg_shared_bytes`] of dynamic shared memory; the sums are reduced in an order fixed by `n`
/// alone, the same on every run and every GPU.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CgParams<T> {
    /// The right-hand side; read by `cg_init_*` only.
    pub b: DevicePtr<T>,
    /// The iterate.
    pub x: DevicePtr<T>,
    /// The residual: `b - A x0` before `cg_init_*` (the host computes it with a product of the
    /// library), updated in place.
    pub r: DevicePtr<T>,
    /// The search direction; `cg_init_*` writes it.
    pub p: DevicePtr<T>,
    /// `A p`, written by the product launched before `cg_iterate_*` in each iteration.
    pub q: DevicePtr<T>,
    /// The inverse of the diagonal of `A` (Jacobi preconditioner), read by the `jacobi` variants only.
    pub inv_diag: DevicePtr<T>,
    /// [`CG_PARTIALS`] elements of scratch.
    pub partials: DevicePtr<T>,
    /// One [`CgState`], zeroed before `cg_init_*`.
    pub state: DevicePtr<CgState<T>>,
    /// The residual history: `rᵀr` of the start and of each iteration, at `history[k]` for
    /// iteration `k` below `history_capacity` (0: none kept).
    pub history: DevicePtr<T>,
    pub history_capacity: u32,
    /// Stop when `|r| <= rel_tol * |b|`.
    pub rel_tol: T,
    pub max_iterations: u32,
    pub n: u32,
}

const LMA_ATOMIC_FULL_FAMILY: ([u32; 4], [Entry; 4]) = family!("spmv_lma_atomic_m", "_full"; 4, 9, 16, 25);
const LMA_ATOMIC_SYM_FAMILY: ([u32; 4], [Entry; 4]) = family!("spmv_lma_atomic_m", "_sym"; 4, 9, 16, 25);
const LMA_COLOUR_FULL_FAMILY: ([u32; 4], [Entry; 4]) = family!("spmv_lma_colour_m", "_full"; 4, 9, 16, 25);
const LMA_COLOUR_SYM_FAMILY: ([u32; 4], [Entry; 4]) = family!("spmv_lma_colour_m", "_sym"; 4, 9, 16, 25);
const _: () = assert!(same_values(&LMA_ATOMIC_FULL_FAMILY.0, &LMA_ATOMIC_SYM_FAMILY.0));
const _: () = assert!(same_values(&LMA_ATOMIC_FULL_FAMILY.0, &LMA_COLOUR_FULL_FAMILY.0));
const _: () = assert!(same_values(&LMA_ATOMIC_FULL_FAMILY.0, &LMA_COLOUR_SYM_FAMILY.0));

/// Nodes per element the LMA kernels are compiled for: the tensor-product Lagrange quadrilaterals of
/// degree 1 to 4 (Q1 to Q4, (k + 1)^2 nodes). One PTX entry per value, variant, storage and type.
pub const LMA_NODES_PER_ELEMENT: [u32; 4] = LMA_ATOMIC_FULL_FAMILY.0;

/// `spmv_lma_atomic_m<m>_full_*` (every element matrix stored whole), indexed like
/// [`LMA_NODES_PER_ELEMENT`].
pub const LMA_ATOMIC_FULL: [Entry; 4] = LMA_ATOMIC_FULL_FAMILY.1;

/// `spmv_lma_atomic_m<m>_sym_*` (upper triangles of symmetric element matrices), indexed like
/// [`LMA_NODES_PER_ELEMENT`].
pub const LMA_ATOMIC_SYM: [Entry; 4] = LMA_ATOMIC_SYM_FAMILY.1;

/// `spmv_lma_colour_m<m>_full_*`, indexed like [`LMA_NODES_PER_ELEMENT`].
pub const LMA_COLOUR_FULL: [Entry; 4] = LMA_COLOUR_FULL_FAMILY.1;

/// `spmv_lma_colour_m<m>_sym_*`, indexed like [`LMA_NODES_PER_ELEMENT`].
pub const LMA_COLOUR_SYM: [Entry; 4] = LMA_COLOUR_SYM_FAMILY.1;

/// A slot of the LMA element-to-node map that names no unknown: a node with a Dirichlet condition,
/// eliminated from the system. Node indices are below the node count, which the host keeps below
/// `u32::MAX`, so no node has this index.
pub const LMA_NO_NODE: u32 = u32::MAX;

/// Warps per block of the LMA kernels: each warp works alone (its own slice of shared memory, no
/// block-wide barrier after the start), so the block only sets how the slices are allocated.
pub const LMA_WARPS_PER_BLOCK: u32 = 4;

/// Threads per block of the LMA kernels.
pub const LMA_BLOCK_SIZE: u32 = LMA_WARPS_PER_BLOCK * WARP_SIZE;

/// Lane groups per warp of the LMA kernels for `m` nodes per element: a group of `m` lanes per
/// element, lane `r` of a group computing row `r` of its element's product (8 groups of 4 lanes, 3
/// of 9, 2 of 16, 1 of 25; the lanes past the last group idle).
pub const fn lma_groups_per_warp(m: u32) -> u32 {
    WARP_SIZE / m
}

/// Elements each group takes at every step of a warp: more where the elements are small, so that a
/// step of a warp moves enough bytes to keep memory busy (a Q1 element is 10 to 16 values, a Q4
/// element 325 to 625).
pub const fn lma_group_rounds(m: u32) -> u32 {
    if m <= 4 {
        4
    } else if m <= 9 {
        2
    } else {
        1
    }
}

/// Elements a warp takes at each step: [`lma_groups_per_warp`] times [`lma_group_rounds`], stored
/// consecutively, so that the step's values are one contiguous run that the warp reads coalesced.
pub const fn lma_step_elements(m: u32) -> u32 {
    lma_groups_per_warp(m) * lma_group_rounds(m)
}

/// The row stride, in values, of an element matrix staged in shared memory: `m` rounded up to an
/// odd number, so that the lanes of a group reading down a column (row `r`, `r * stride + j`) hit
/// different banks.
pub const fn lma_row_stride(m: u32) -> u32 {
    m | 1
}

/// Values stored per element: `m * m`, or `m * (m + 1) / 2` for the upper triangles of symmetric
/// element matrices.
pub const fn lma_stored_values(m: u32, symmetric: bool) -> u32 {
    if symmetric { m * (m + 1) / 2 } else { m * m }
}

/// Loads per lane of an LMA warp's step: the step's [`lma_step_elements`] times
/// [`lma_stored_values`] values, one per lane at a time.
pub const fn lma_step_loads(m: u32, symmetric: bool) -> u32 {
    (lma_step_elements(m) * lma_stored_values(m, symmetric)).div_ceil(WARP_SIZE)
}

/// Bytes of the staging table at the start of an LMA kernel's shared memory: for each of the
/// `32 * lma_step_loads` values a warp loads at a step, a `u32` with the two places it is staged
/// (`index::lma_staging_entry`), rounded up to 16 bytes so that the values after it stay aligned.
pub const fn lma_table_bytes(m: u32, symmetric: bool) -> u32 {
    (lma_step_loads(m, symmetric) * WARP_SIZE * 4).next_multiple_of(16)
}

/// Values of one LMA warp's slice of shared memory: the element matrices of a step, each `m` rows of
/// [`lma_row_stride`] values, and the step's gathered `x`, `m` per element: in the column that pads
/// the rows of an even `m`, after the matrices for an odd one (`index::lma_x_position`).
pub const fn lma_warp_values(m: u32) -> u32 {
    let matrices = lma_step_elements(m) * m * lma_row_stride(m);
    if lma_row_stride(m) > m { matrices } else { matrices + lma_step_elements(m) * m }
}

/// Dynamic shared memory of an LMA launch for `m` nodes per element, values of `value_bytes` bytes:
/// the staging table, then a slice of [`lma_warp_values`] for each warp of the block.
pub const fn lma_shared_bytes(m: u32, symmetric: bool, value_bytes: u32) -> u32 {
    lma_table_bytes(m, symmetric) + LMA_WARPS_PER_BLOCK * lma_warp_values(m) * value_bytes
}

/// Every LMA launch fits the 48 KiB of shared memory a block gets without opting in, every element
/// fits a warp, a step's loads fit the kernel's 32 registers for them, and every staged position
/// fits the table's 16-bit halves.
const _: () = {
    let mut i = 0;
    while i < LMA_NODES_PER_ELEMENT.len() {
        let m = LMA_NODES_PER_ELEMENT[i];
        assert!(m >= 1 && m <= WARP_SIZE);
        assert!(lma_shared_bytes(m, false, 8) <= 48 * 1024 && lma_shared_bytes(m, true, 8) <= 48 * 1024);
        assert!(lma_step_loads(m, false) <= 32 && lma_step_loads(m, true) <= 32);
        assert!(lma_step_elements(m) * m * lma_row_stride(m) <= u16::MAX as u32 + 1);
        i += 1;
    }
};

/// The local matrix approach (Reguly & Giles 2012, section 8): `elements` element matrices of `m x m`
/// and their element-to-node map, element-major: node `k` of element `e` at `nodes[e * m + k]`, its
/// matrix at `values[e * s ..]` with `s` = [`lma_stored_values`]: all `m * m` entries row by row
/// (`(i, j)` at `i * m + j`, the `_full` kernels), or for symmetric matrices the upper triangle with
/// the diagonal row by row (`(i, j)`, `i <= j`, at `i * m - i * (i - 1) / 2 + (j - i)`, the `_sym`
/// kernels). The operator is `y = sum_e P_eᵀ K_e P_e x`; a slot holding [`LMA_NO_NODE`] has zeros in
/// its row and column of `K_e`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LmaArgs<T> {
    pub nodes: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub elements: u32,
    /// 1 when some element names a node in two of its slots: the coloured kernels then add an
    /// element's rows to `y` one slot after the other (its rows at one node must not race), else 0.
    pub repeated_nodes: u32,
}

/// `spmv_lma_<atomic|colour>_m<m>_<full|sym>_*` (`formats/lma.rs`): the elements of the ranges
/// `ranges[i] .. ranges[i + 1]` for `i < range_count` (all elements, or each colour, for the atomic
/// kernel; one colour for the coloured one). A warp takes [`lma_step_elements`] consecutive elements
/// of one range at each step; the steps go round the ranges (step 0 of every range, then step 1, ...),
/// `steps` of them per range, at least enough for the longest. Launch with [`LMA_BLOCK_SIZE`] threads
/// per block and [`lma_shared_bytes`] of dynamic shared memory, any number of blocks. `y` must already
/// hold `beta * y` (a launch of `spmv_scale_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LmaParams<T> {
    pub a: LmaArgs<T>,
    pub op: Accumulate<T>,
    pub ranges: DevicePtr<u32>,
    pub range_count: u32,
    pub steps: u32,
}

const CSRT_ATOMIC_FAMILY: ([u32; 6], [Entry; 6]) = family!("spmv_csrt_atomic_c", ""; 1, 2, 4, 8, 16, 32);

/// Threads per row the atomic transposed product (`transpose/atomic.rs`) is compiled for: the widths
/// of the parametrised kernel (asserted at the end of this file), chosen by the same rule from the
/// mean row length of `A`.
pub const CSRT_ATOMIC_COOPS: [u32; 6] = CSRT_ATOMIC_FAMILY.0;

/// `spmv_csrt_atomic_c<coop>_*`, indexed like [`CSRT_ATOMIC_COOPS`].
pub const CSRT_ATOMIC: [Entry; 6] = CSRT_ATOMIC_FAMILY.1;

/// `spmv_csrt_atomic_c<coop>_*`: `y += alpha * Aᵀ * x` for the CSR matrix `a` (so `x` has `a.rows`
/// elements and `y` one per column of `a`), `coop` threads per row of `a`, `y` already scaled by
/// `beta` (`spmv_scale_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrTransposeParams<T> {
    pub a: CsrArgs<T>,
    pub op: Accumulate<T>,
}

/// Bits of the column index sorted per pass of the transpose's radix sort (`transpose/build.rs`):
/// 256 digits, whose running positions fit one warp's slice of shared memory (1 KiB), and a 2^24
/// column matrix sorts in three passes.
pub const RADIX_BITS: u32 = 8;

/// Digits of one radix pass.
pub const RADIX_DIGITS: u32 = 1 << RADIX_BITS;

/// Steps of 32 entries one warp walks per radix tile. A tile's 256 counts are the scan's input, so
/// the scan reads `RADIX_DIGITS / (RADIX_TILE_STEPS * 32)` = 1/16 of an element per entry; a warp
/// walking 4096 entries in order still leaves 24,000 warps for a matrix of 10^8 entries.
pub const RADIX_TILE_STEPS: u32 = 128;

/// Entries of one radix tile.
pub const RADIX_TILE: u32 = RADIX_TILE_STEPS * WARP_SIZE;

/// Threads per block of the radix kernels: 4 warps, one tile each at a time, 4 KiB of shared memory
/// (a warp's [`RADIX_DIGITS`] counters) per block.
pub const RADIX_BLOCK_THREADS: u32 = 128;

/// Bytes of dynamic shared memory of a radix kernel's block: [`RADIX_DIGITS`] `u32` counters per warp.
pub const RADIX_SHARED_BYTES: u32 = (RADIX_BLOCK_THREADS / WARP_SIZE) * RADIX_DIGITS * 4;

/// Threads of the one block of `csrt_build_scan` (the most a block may have), and the consecutive
/// elements each of them scans per tile: 8 `u32`s are 32 bytes, one sector, so a warp's loads cover
/// 1 KiB with no wasted sector.
pub const SCAN_BLOCK_THREADS: u32 = MAX_BLOCK_SIZE;
pub const SCAN_ITEMS: u32 = 8;

/// Bytes of dynamic shared memory of `csrt_build_scan`: one `u32` total per warp.
pub const SCAN_SHARED_BYTES: u32 = (SCAN_BLOCK_THREADS / WARP_SIZE) * 4;

/// The PTX entries of the transpose's construction that do not depend on the element type.
pub const CSRT_BUILD_INIT: &str = "csrt_build_init";
pub const CSRT_BUILD_HISTOGRAM: &str = "csrt_build_histogram";
pub const CSRT_BUILD_SCATTER: &str = "csrt_build_scatter";
pub const CSRT_BUILD_SCAN: &str = "csrt_build_scan";
pub const CSRT_BUILD_OFFSETS: &str = "csrt_build_offsets";

/// `csrt_build_gather_*`.
pub const CSRT_BUILD_GATHER: Entry = entry!("csrt_build_gather");

/// `csrt_build_init`: one thread per row of `a` (grid stride) writes, for each of its entries `k`,
/// `entry_rows[k] = row` and `perm[k] = k`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TransposeInitParams {
    pub row_offsets: DevicePtr<u32>,
    pub rows: u32,
    pub entry_rows: DevicePtr<u32>,
    pub perm: DevicePtr<u32>,
}

/// `csrt_build_histogram` and `csrt_build_scatter`: one stable radix pass over `n` (key, payload)
/// pairs on the digit `(key >> shift) % RADIX_DIGITS`, a warp per [`RADIX_TILE`]-entry tile.
/// `counts` holds `RADIX_DIGITS * tiles` elements, digit-major (`d * tiles + tile`): the histogram
/// writes each tile's counts, the scatter reads their exclusive scan as each tile's first position
/// per digit. The histogram reads only `keys_in`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RadixParams {
    pub keys_in: DevicePtr<u32>,
    pub perm_in: DevicePtr<u32>,
    pub keys_out: DevicePtr<u32>,
    pub perm_out: DevicePtr<u32>,
    pub counts: DevicePtr<u32>,
    pub n: u32,
    pub tiles: u32,
    pub shift: u32,
}

/// `csrt_build_scan`: the exclusive prefix sum of `len` `u32`s in place, by one block of
/// [`SCAN_BLOCK_THREADS`] threads with [`SCAN_SHARED_BYTES`] of dynamic shared memory.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ScanParams {
    pub data: DevicePtr<u32>,
    pub len: u32,
}

/// `csrt_build_offsets`: `offsets[j]` = the number of the `nnz` sorted `keys` below `j`, for `j` in
/// `0 ..= cols`: the row offsets of the transpose. One thread per offset.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TransposeOffsetsParams {
    pub keys: DevicePtr<u32>,
    pub nnz: u32,
    pub offsets: DevicePtr<u32>,
    pub cols: u32,
}

/// `csrt_build_gather_*`: for each position `p < nnz` of the transpose, the entry `k = perm[p]` of
/// `A` it takes: `out_cols[p] = entry_rows[k]`, `out_values[p] = values[k]`. One thread per position.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TransposeGatherParams<T> {
    pub perm: DevicePtr<u32>,
    pub entry_rows: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub out_cols: DevicePtr<u32>,
    pub out_values: DevicePtr<T>,
    pub nnz: u32,
}

/// The dense operands of `Y = alpha * A * X + beta * Y` (`spmm.rs`): `X` has `k` columns and one row
/// per column of `A`, `Y` `k` columns and one row per row of `A`, both in the layout of the entry
/// (row-major: element `(r, c)` at `r * ld + c`; column-major: at `c * ld + r`). `Y` is not read
/// when `beta == 0`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SpmmOperands<T> {
    pub x: DevicePtr<T>,
    pub y: DevicePtr<T>,
    pub alpha: T,
    pub beta: T,
    pub k: u32,
    pub ldx: u32,
    pub ldy: u32,
}

/// The long rows of an SpMM plan (`spmm.rs`): the matrix's long-row split (the rows and chunks of
/// [`LongRowArgs`], shared with the CSR product), and the plan's own scratch, one partial sum per
/// chunk and column of `X`, which a second launch (`spmm_long_rows_*`) adds up row by row.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SpmmLongRows<T> {
    /// Rows of at least this many entries are long.
    pub min_len: u32,
    /// Chunks over all long rows; 0 turns the split off, and then no row counts as long.
    pub chunks: u32,
    /// How many rows are long.
    pub count: u32,
    /// As in [`LongRowArgs`].
    pub rows: DevicePtr<u32>,
    pub first_chunk: DevicePtr<u32>,
    pub chunk_entries: DevicePtr<EntrySpan>,
    /// `k * chunks` sums: column `c` of chunk `ch` at `c * chunks + ch`, so that the chunks of one
    /// row and column, which the second launch adds, are contiguous.
    pub partials: DevicePtr<T>,
}

impl<T> SpmmLongRows<T> {
    /// No row is long: the chunk path is off, and the kernels read none of the arrays.
    pub const fn unsplit() -> Self {
        Self {
            min_len: u32::MAX,
            chunks: 0,
            count: 0,
            rows: DevicePtr::new(0),
            first_chunk: DevicePtr::new(0),
            chunk_entries: DevicePtr::new(0),
            partials: DevicePtr::new(0),
        }
    }

    /// Whether a row of `len` entries is left to the chunk warps.
    pub const fn is_long(&self, len: u32) -> bool {
        self.chunks != 0 && len >= self.min_len
    }
}

/// `spmm_csr_rm_w<w>_*` and `spmm_csr_cm_c<coop>_*`. The first `chunk_blocks` blocks give each
/// [`LONG_ROW_CHUNK`] of the long rows of `long` a warp, which writes the chunk's partial sums; the
/// blocks after them walk the other rows with a stride of their own count.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SpmmParams<T> {
    pub a: CsrArgs<T>,
    pub op: SpmmOperands<T>,
    pub chunk_blocks: u32,
    pub long: SpmmLongRows<T>,
}

/// `spmm_long_rows_*`: `Y = alpha * (sum of the partial sums) + beta * Y` for each long row and
/// column, one warp per pair, after the launch of [`SpmmParams`] that wrote `long.partials`. `Y` is
/// row-major when `row_major != 0`, else column-major.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SpmmLongRowsParams<T> {
    pub long: SpmmLongRows<T>,
    pub op: SpmmOperands<T>,
    pub row_major: u32,
}

/// `spmm_long_rows_*`.
pub const SPMM_LONG_ROWS: Entry = entry!("spmm_long_rows");

const SPMM_ROW_MAJOR_FAMILY: ([u32; 5], [Entry; 5]) = family!("spmm_csr_rm_w", ""; 4, 8, 16, 32, 64);

/// Columns of `X` a group of the row-major SpMM kernel covers per pass over a row: `min(w, 32)` lanes
/// per row, `w / 32` columns per lane above a warp. One PTX entry per value and type.
pub const SPMM_ROW_MAJOR_WIDTHS: [u32; 5] = SPMM_ROW_MAJOR_FAMILY.0;

/// `spmm_csr_rm_w<w>_*`, indexed like [`SPMM_ROW_MAJOR_WIDTHS`].
pub const SPMM_ROW_MAJOR: [Entry; 5] = SPMM_ROW_MAJOR_FAMILY.1;

const SPMM_COL_MAJOR_FAMILY: ([u32; 6], [Entry; 6]) = family!("spmm_csr_cm_c", ""; 1, 2, 4, 8, 16, 32);

/// Threads per row the column-major SpMM kernel is compiled for: the parametrised kernel's widths
/// (asserted at the end of this file), chosen by its rule.
pub const SPMM_COL_MAJOR_COOPS: [u32; 6] = SPMM_COL_MAJOR_FAMILY.0;

/// `spmm_csr_cm_c<coop>_*`, indexed like [`SPMM_COL_MAJOR_COOPS`].
pub const SPMM_COL_MAJOR: [Entry; 6] = SPMM_COL_MAJOR_FAMILY.1;

/// Columns of `X` the column-major SpMM kernel sums per pass over a row: one accumulator each per
/// lane, 16 registers in f64, so the kernel keeps the occupancy of the CSR kernels; the 8 gathers
/// per entry are independent loads in flight together. Wider `X` takes several passes, whose reads
/// of the row after the first come from L1.
pub const SPMM_COL_PANEL: u32 = 8;

/// `spmm_scale_*`: `Y = beta * Y` (`Y = 0` without reading it when `beta == 0`) over `outer` runs of
/// `inner` elements, `ld` apart: the columns of a column-major matrix or the rows of a row-major one.
/// One thread per element.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DenseScaleParams<T> {
    pub y: DevicePtr<T>,
    pub beta: T,
    pub inner: u32,
    pub outer: u32,
    pub ld: u32,
}

/// `spmm_scale_*`.
pub const SPMM_SCALE: Entry = entry!("spmm_scale");

const _: () = assert!(same_values(&CSRT_ATOMIC_FAMILY.0, &CSR_PARAM_FAMILY.0));
const _: () = assert!(same_values(&SPMM_COL_MAJOR_FAMILY.0, &CSR_PARAM_FAMILY.0));

/// Rows per segment of a compressed-index matrix: a warp of the one-lane-per-row kernel covers
/// exactly one segment, so its lanes read the segment's header as one broadcast.
pub const COMPRESSED_SEGMENT_ROWS: u32 = WARP_SIZE;

/// The flag of a segment head whose entries keep plain 32-bit columns (in `escapes`); without it,
/// the head is the segment's base column and its entries are 16-bit offsets from it (in `deltas`).
/// The host compresses only segments whose base is below `2^31`, so no base has the flag.
pub const COMPRESSED_PLAIN: u32 = 1 << 31;

/// A CSR matrix whose column indices are compressed per segment of [`COMPRESSED_SEGMENT_ROWS`]
/// rows. Segment `s` has two words, `segments[2 s]` (the head) and `segments[2 s + 1]` (the shift):
/// - head without [`COMPRESSED_PLAIN`]: entry `k` of the segment has column
///   `head + deltas[k - shift]`, where `shift` counts the entries of plain segments before it;
/// - head with the flag: entry `k` has column `escapes[k - shift]`, where `shift` counts the entries
///   of compressed segments before it.
///
/// `values` holds the `nnz` values in CSR order in the storage type `V` (the product's own type, or
/// a narrower one the caller asked for).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedArgs<V> {
    pub row_offsets: DevicePtr<u32>,
    pub segments: DevicePtr<u32>,
    pub deltas: DevicePtr<u16>,
    pub escapes: DevicePtr<u32>,
    pub values: DevicePtr<V>,
    pub rows: u32,
}

/// `spmv_compressed_c<coop>_*`: `coop` threads per row, a compile-time value, with the row walk and
/// the summation order of `spmv_csr_vector_c<coop>_*` and of `spmv_csr_param_c<coop>_*` with one
/// row per group and no long rows, so their results are bit-identical. `V` is the storage type of
/// the values, `T` the type of `x`, `y` and every product and sum.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedParams<V, T> {
    pub a: CompressedArgs<V>,
    pub op: Axpby<T>,
}

/// `compressed_heads_from_csr_*`: a warp per segment of [`COMPRESSED_SEGMENT_ROWS`] rows of `csr`
/// writes the segment's head ([`compressed_head`]) to `heads[segment]`. The host's conversion
/// (`CompressedCsr::try_from_csr`) takes its heads from the same function, so a copy built from these
/// heads is the host format's, array for array.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedHeadsParams<T> {
    pub csr: CsrArgs<T>,
    pub heads: DevicePtr<u32>,
}

/// `compressed_columns_from_csr_*`: a warp per segment writes each entry's column of `csr` where
/// the segment table `segments` (two words a segment, as [`CompressedArgs`] describes them, made by
/// the host from the heads) puts it: an offset from the head in `deltas`, or the plain column in
/// `escapes`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CompressedColumnsParams<T> {
    pub csr: CsrArgs<T>,
    pub segments: DevicePtr<u32>,
    pub deltas: DevicePtr<u16>,
    pub escapes: DevicePtr<u32>,
}

/// An IEEE binary16 value as the kernels store it: its 16 bits.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub struct F16(pub u16);

/// A bfloat16 value (the upper half of an f32) as the kernels store it: its 16 bits.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub struct Bf16(pub u16);

const COMPRESSED_FAMILY: ([u32; 6], [Entry; 6]) = family!("spmv_compressed_c", ""; 1, 2, 4, 8, 16, 32);
const COMPRESSED_F16_FAMILY: ([u32; 6], [Entry; 6]) =
    family!("spmv_compressed_c", "_f16"; 1, 2, 4, 8, 16, 32);
const COMPRESSED_BF16_FAMILY: ([u32; 6], [Entry; 6]) =
    family!("spmv_compressed_c", "_bf16"; 1, 2, 4, 8, 16, 32);
const _: () = assert!(same_values(&COMPRESSED_FAMILY.0, &CSR_PARAM_FAMILY.0));
const _: () = assert!(same_values(&COMPRESSED_F16_FAMILY.0, &CSR_PARAM_FAMILY.0));
const _: () = assert!(same_values(&COMPRESSED_BF16_FAMILY.0, &CSR_PARAM_FAMILY.0));

/// Threads per row the compressed-index kernel is compiled for: those of the parametrised CSR
/// kernel, whose summation order it mirrors. One PTX entry per value, storage type and type.
pub const COMPRESSED_COOPS: [u32; 6] = COMPRESSED_FAMILY.0;

/// `spmv_compressed_c<coop>_*`: values stored in the product's type. Indexed like
/// [`COMPRESSED_COOPS`].
pub const COMPRESSED: [Entry; 6] = COMPRESSED_FAMILY.1;

/// `spmv_compressed_c<coop>_f16_*`: values stored as binary16, widened exactly to the product's type.
pub const COMPRESSED_F16: [Entry; 6] = COMPRESSED_F16_FAMILY.1;

/// `spmv_compressed_c<coop>_bf16_*`: values stored as bfloat16, widened exactly.
pub const COMPRESSED_BF16: [Entry; 6] = COMPRESSED_BF16_FAMILY.1;

/// Values stored as f32: for an f32 product the entries of [`COMPRESSED`], for an f64 product
/// `spmv_compressed_c<coop>_f32_f64`.
pub const COMPRESSED_F32: [Entry; 6] = [
    Entry { f32: COMPRESSED[0].f32, f64: "spmv_compressed_c1_f32_f64" },
    Entry { f32: COMPRESSED[1].f32, f64: "spmv_compressed_c2_f32_f64" },
    Entry { f32: COMPRESSED[2].f32, f64: "spmv_compressed_c4_f32_f64" },
    Entry { f32: COMPRESSED[3].f32, f64: "spmv_compressed_c8_f32_f64" },
    Entry { f32: COMPRESSED[4].f32, f64: "spmv_compressed_c16_f32_f64" },
    Entry { f32: COMPRESSED[5].f32, f64: "spmv_compressed_c32_f32_f64" },
];

/// `spmv_csr_stream_*` (`stream/`), in the sm_90 module only: the streaming engine's CSR product.
pub const CSR_STREAM: Entry = entry!("spmv_csr_stream");

/// The entries of [`ENTRIES`] that the sm_90 module exports too; the host takes them from the sm_90
/// module where it loads it (Hopper and later). Built there:
/// - with the warp reductions of sm_80 (`redux.sync`) that the sm_70 module cannot use: the
///   balanced kernel's warp-wide OR of each step's segment heads becomes one instruction, about 3.5%
///   of its time on small irregular matrices in a graph (docs/PERF.md, section 42);
/// - waiting, first thing, for the grids ahead of them (`griddepcontrol.wait`), so that the host
///   launches them with programmatic stream serialization: a product's blocks are placed, and its
///   parameters read, while the kernel before it finishes, 4-14% of the time of the small products
///   Auto gives these kernels, in a graph and back to back (section 47).
pub const SM90_ENTRIES: &[Entry] =
    &[CSR_BALANCED, CSR_VECTOR[0], CSR_VECTOR[1], CSR_VECTOR[2], CSR_VECTOR[3], CSR_VECTOR[4]];

/// Entries of one window of the streaming engine at most: the rows of a window are consecutive and
/// hold at most this many entries in all; a longer row goes to the long-row chunk path. 1024 entries
/// are 8 KiB of an f32 matrix (12 KiB in f64): a bulk copy that large runs at the copy engine's full
/// rate, and four stages of it leave room for four blocks per SM in f32, three in f64.
pub const STREAM_WINDOW_ENTRIES: u32 = 1024;

/// Rows of one window at most: one per consumer thread, so a window of rows of one entry or none (web
/// graphs, empty rows) is still summed in one step.
pub const STREAM_WINDOW_ROWS: u32 = STREAM_CONSUMER_WARPS * WARP_SIZE;

/// Stages of a block's shared-memory ring, a launch parameter (`CsrStreamParams::stages`): while the
/// consumers reduce one window, the copy engine fills the others. More stages keep more bytes in
/// flight per block but leave fewer blocks per SM and less of the SM's memory to L1, which serves
/// the `x` gathers. The host offers 2 to 4; 4 keep 72-96 KiB in flight per SM in f32, where Little's
/// law at 3.3 TB/s and about a microsecond of loaded latency asks for 25 KiB.
pub const STREAM_STAGES: [u32; 3] = [2, 3, 4];

/// Consumer warps of a streaming block; one more warp, the producer, issues the copies.
pub const STREAM_CONSUMER_WARPS: u32 = 8;

/// Threads per block of `spmv_csr_stream_*`: the consumers and the producer warp.
pub const STREAM_BLOCK_SIZE: u32 = (STREAM_CONSUMER_WARPS + 1) * WARP_SIZE;

/// Rows of at least this many entries are split into [`LONG_ROW_CHUNK`]s for the streaming engine:
/// those that do not fit a window.
pub const STREAM_LONG_ROW: u32 = STREAM_WINDOW_ENTRIES + 1;

/// Bulk copies move whole 16-byte units between 16-byte aligned addresses.
pub const BULK_COPY_ALIGN: u32 = 16;

/// Slots of a stage's copy of `n` elements of `elem` bytes starting anywhere: the copy starts at the
/// aligned unit below the first element and ends at the unit above the last, so it may hold up to
/// one unit less an element on each side.
pub const fn stream_slots(n: u32, elem: u32) -> u32 {
    let unit = BULK_COPY_ALIGN / elem;
    (n + 2 * unit).div_ceil(unit) * unit
}

/// The byte layout of one stage of the ring for values of `elem` bytes, each part 16-byte aligned:
/// the window's header (its [`STREAM_WINDOW_WORDS`] words), then its row offsets, column indices and
/// values as the copy engine leaves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamStage {
    pub offsets: u32,
    pub cols: u32,
    pub values: u32,
    pub bytes: u32,
}

impl StreamStage {
    pub const HEADER_BYTES: u32 = 16;

    pub const fn new(elem: u32) -> Self {
        let offsets = Self::HEADER_BYTES;
        let cols = offsets + stream_slots(STREAM_WINDOW_ROWS + 1, 4) * 4;
        let values = cols + stream_slots(STREAM_WINDOW_ENTRIES, 4) * 4;
        let bytes = values + stream_slots(STREAM_WINDOW_ENTRIES, elem) * elem;
        Self { offsets, cols, values, bytes }
    }

    /// Dynamic shared memory of a streaming block of `stages` stages: the stages, then two 8-byte
    /// barriers per stage (full: the copy has landed; empty: the consumers are done with it).
    pub const fn block_bytes(elem: u32, stages: u32) -> u32 {
        (Self::new(elem).bytes + 16) * stages
    }
}

const _: () = assert!(StreamStage::new(4).bytes.is_multiple_of(BULK_COPY_ALIGN));
const _: () = assert!(StreamStage::new(8).bytes.is_multiple_of(BULK_COPY_ALIGN));

/// One window of the streaming engine as the kernel reads it: four `u32`,
/// `[first row, end row, first entry, entries | log2(width) << 16]`, where `width` (a power of two up
/// to 32) is the consumer threads that sum each of its rows.
pub const STREAM_WINDOW_WORDS: usize = 4;

/// The last word of a window record: its entry count (at most [`STREAM_WINDOW_ENTRIES`]) and the
/// base-2 logarithm of its row width.
pub const fn stream_window_shape(entries: u32, log2_width: u32) -> u32 {
    entries | log2_width << 16
}

/// The entry count and row width of a window's last word ([`stream_window_shape`]).
pub const fn stream_window_unshape(word: u32) -> (u32, u32) {
    (word & 0xffff, 1 << (word >> 16))
}

const _: () = assert!(STREAM_WINDOW_ENTRIES < 1 << 16);

/// `spmv_csr_stream_*` (`stream/csr.rs`): the rows cut into windows of at most
/// [`STREAM_WINDOW_ROWS`] consecutive rows holding at most [`STREAM_WINDOW_ENTRIES`] entries, in row
/// order, [`STREAM_WINDOW_WORDS`] words each at `window_bounds`; rows of [`STREAM_LONG_ROW`] entries
/// or more are in no window but in `long`. The first `chunk_blocks` blocks take the long rows' chunks
/// (a warp each), the blocks after them the windows, block `b` windows `b, b + n, ...` for `n` window
/// blocks.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrStreamParams<T> {
    pub a: CsrArgs<T>,
    pub op: Axpby<T>,
    pub nnz: u32,
    pub windows: u32,
    pub window_bounds: DevicePtr<u32>,
    /// Stages of each block's ring, one of [`STREAM_STAGES`].
    pub stages: u32,
    pub chunk_blocks: u32,
    pub long: LongRowArgs<T>,
}

/// `csr_check_u32` and `csr_check_i32` (`check.rs`): the check of CSR index arrays already on the
/// device, which a matrix built from them must pass. Each finds the first position of every kind of
/// fault, the host turning them into the error its own check would give: `found[CHECK_*]` is lowered
/// atomically to the position (it starts at [`CHECK_NONE`]). One thread per position, grid stride
/// over the longer array.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CsrCheckParams<I> {
    pub row_offsets: DevicePtr<I>,
    pub offsets_len: u64,
    pub col_indices: DevicePtr<I>,
    pub cols_len: u64,
    pub ncols: u64,
    /// [`CHECK_SLOTS`] positions.
    pub found: DevicePtr<u64>,
}

/// The PTX entries of the check of CSR index arrays, `u32` and cuSPARSE's `i32`.
pub const CSR_CHECK_U32: &str = "csr_check_u32";
pub const CSR_CHECK_I32: &str = "csr_check_i32";

/// Threads per block of `csr_check_*`: a position per thread and no shared state.
pub const CHECK_BLOCK_SIZE: u32 = 256;

/// A slot of `found` no fault has lowered.
pub const CHECK_NONE: u64 = u64::MAX;

/// The slots of `found`: the first negative row offset, the first negative column index, the first
/// row whose offset exceeds the next one, the first entry whose (non-negative) column index is not
/// below `ncols`.
pub const CHECK_NEGATIVE_OFFSET: usize = 0;
pub const CHECK_NEGATIVE_COLUMN: usize = 1;
pub const CHECK_DECREASE: usize = 2;
pub const CHECK_COLUMN: usize = 3;
pub const CHECK_SLOTS: usize = 4;

// ---- A CSR matrix from COO triples on the device (`assemble.rs`) ----

/// The PTX entries of the assembly that do not depend on the element type; its radix sort, scan and
/// row offsets are the transpose's (`CSRT_BUILD_*`).
pub const COO_ASSEMBLE_IOTA: &str = "coo_assemble_iota";
pub const COO_ASSEMBLE_KEYS: &str = "coo_assemble_keys";
pub const COO_ASSEMBLE_HEADS: &str = "coo_assemble_heads";
pub const COO_ASSEMBLE_COMPACT: &str = "coo_assemble_compact";

/// `coo_assemble_sum_*`.
pub const COO_ASSEMBLE_SUM: Entry = entry!("coo_assemble_sum");

/// The most triples an assembly takes: the scan of its `n + 1` head flags counts in `u32`.
pub const COO_ASSEMBLE_MAX_ENTRIES: u32 = u32::MAX - 1;

/// `coo_assemble_iota`: `perm[i] = i` for `i < n`. One thread per element.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooIotaParams {
    pub perm: DevicePtr<u32>,
    pub n: u32,
}

/// `coo_assemble_keys`: `keys[i] = source[perm[i]]` for `i < n`, the row indices in the order of
/// the column sort. One thread per element.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooKeysParams {
    pub perm: DevicePtr<u32>,
    pub source: DevicePtr<u32>,
    pub keys: DevicePtr<u32>,
    pub n: u32,
}

/// `coo_assemble_heads`: `heads[i]` = 1 where the sorted triple `i` (row `rows[i]`, column
/// `cols[perm[i]]`) differs from triple `i - 1` or `i == 0`, else 0; `heads[n]` = 0. One thread per
/// element.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooHeadsParams {
    /// `n` row indices, sorted.
    pub rows: DevicePtr<u32>,
    /// The caller's `n` column indices, in input order.
    pub cols: DevicePtr<u32>,
    pub perm: DevicePtr<u32>,
    /// `n + 1` flags.
    pub heads: DevicePtr<u32>,
    pub n: u32,
}

/// `coo_assemble_compact`: for each head `i` (where `positions[i] < positions[i + 1]`), at
/// `u = positions[i]`: `run_starts[u] = i` and the pair's row and column in `out_rows[u]` and
/// `out_cols[u]`; `run_starts[distinct] = n`. One thread per element of `positions`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooCompactParams {
    pub rows: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub perm: DevicePtr<u32>,
    /// The exclusive scan of the heads: `n + 1` elements, the last the count of distinct pairs.
    pub positions: DevicePtr<u32>,
    pub n: u32,
    /// `distinct + 1` elements.
    pub run_starts: DevicePtr<u32>,
    pub out_rows: DevicePtr<u32>,
    pub out_cols: DevicePtr<u32>,
}

/// `coo_assemble_sum_*`: `out_values[u]` = the sum, in order, of `values[perm[j]]` for `j` in
/// `run_starts[u] .. run_starts[u + 1]`, for `u < distinct`. One thread per distinct pair.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CooSumParams<T> {
    pub perm: DevicePtr<u32>,
    pub run_starts: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub out_values: DevicePtr<T>,
    pub distinct: u32,
}

// ---- The vector, reduction and scalar kernels of the Krylov solvers (`krylov.rs`) ----

/// The entries of the Krylov solvers' kernels: elementwise vector operations (`krylov_vector_*`,
/// one of the `KRYLOV_*` vector ops), up to [`KRYLOV_MAX_DOTS`] dot products in one pass
/// (`krylov_dots_*`), the dot products of a vector with columns of a basis and the combination of
/// those columns (`krylov_basis_dots_*`, `krylov_basis_combine_*`: GMRES's Gram-Schmidt), and a short
/// program on the solve's scalars (`krylov_scalars_*`, one thread); and preconditioned CG's update
/// in one pass (`krylov_cg_update_*`).
/// `block_jacobi_*` (`kernels-gpu/src/block_jacobi.rs`).
pub const BLOCK_JACOBI: Entry = entry!("block_jacobi");
/// `ilu_lower_*` and `ilu_upper_*` (`kernels-gpu/src/ilu.rs`).
pub const ILU_LOWER: Entry = entry!("ilu_lower");
pub const ILU_UPPER: Entry = entry!("ilu_upper");
/// `ilu_factor_*` and `ic_factor_*` (`kernels-gpu/src/ilu_factor.rs`).
pub const ILU_FACTOR: Entry = entry!("ilu_factor");
pub const IC_FACTOR: Entry = entry!("ic_factor");
pub const KRYLOV_VECTOR: Entry = entry!("krylov_vector");
pub const KRYLOV_DOTS: Entry = entry!("krylov_dots");
pub const KRYLOV_BASIS_DOTS: Entry = entry!("krylov_basis_dots");
pub const KRYLOV_BASIS_COMBINE: Entry = entry!("krylov_basis_combine");
pub const KRYLOV_SCALARS: Entry = entry!("krylov_scalars");
pub const KRYLOV_CG_UPDATE: Entry = entry!("krylov_cg_update");

/// Threads per block of every Krylov kernel but `krylov_scalars_*`, which runs one block of
/// [`WARP_SIZE`]; the grid of the others is `index::cg_blocks(n)`, so that every rounding of their
/// sums is a function of `n` alone, as CG's.
pub const KRYLOV_BLOCK_THREADS: u32 = CG_BLOCK_THREADS;

/// Dot products `krylov_dots_*` sums in one pass over its vectors.
pub const KRYLOV_MAX_DOTS: u32 = 3;

/// Columns `krylov_basis_dots_*` sums together in one pass of a block, a warp per column (the rest
/// in further passes).
pub const KRYLOV_BASIS_GROUP: u32 = KRYLOV_BLOCK_THREADS / WARP_SIZE;

/// The longest GMRES cycle: the basis has `restart + 1` columns, and the scalars of a cycle
/// ([`gmres_scalars`]) number about `restart²`.
pub const KRYLOV_MAX_RESTART: u32 = 1024;

/// Elements of the partial-sum scratch of a solve with a basis of `columns` columns (at least
/// [`KRYLOV_MAX_DOTS`]): one slot per block and sum, sum `k` of block `b` at `k * CG_MAX_BLOCKS + b`.
/// `krylov_basis_dots_*` reads whole groups of [`KRYLOV_BASIS_GROUP`] in its second stage (the sums
/// past the last column unused), so the count is rounded up to one.
pub const fn krylov_partials(columns: u32) -> u32 {
    let sums = if columns > KRYLOV_MAX_DOTS { columns } else { KRYLOV_MAX_DOTS };
    sums.next_multiple_of(KRYLOV_BASIS_GROUP) * CG_MAX_BLOCKS
}

/// Bytes of dynamic shared memory of `krylov_dots_*` and `krylov_basis_dots_*`: a slot per warp for
/// each sum a block reduces at once.
pub const fn krylov_shared_bytes(elem_bytes: u32) -> u32 {
    let sums = if KRYLOV_MAX_DOTS > KRYLOV_BASIS_GROUP { KRYLOV_MAX_DOTS } else { KRYLOV_BASIS_GROUP };
    sums * (CG_BLOCK_THREADS / WARP_SIZE) * elem_bytes
}

/// Bytes of dynamic shared memory of `krylov_basis_combine_*` for a launch of at most `most` columns:
/// their addresses, then their coefficients (16.4 KB for f64 at the longest restart: 1,025 columns
/// of 16 bytes).
pub const fn krylov_combine_shared_bytes(most: u32, elem_bytes: u32) -> u32 {
    most * (8 + elem_bytes)
}

/// The scalars of a GMRES cycle of `restart` steps from slot `base` (see `krylov.rs`, "GMRES"): the
/// Hessenberg matrix by columns of `restart + 1`, then the rotations' cosines and sines, the
/// right-hand side `g` of the small least-squares problem (`restart + 1`) and its solution `y`
/// (`restart`, also the scratch of the second Gram-Schmidt pass). Returns the slots they take.
pub const fn gmres_scalars(restart: u32) -> u32 {
    restart * (restart + 1) + 2 * restart + (restart + 1) + restart
}

/// A [`KrylovState::status`]: before the start ran (the host zeroes the state).
pub const KRYLOV_NOT_STARTED: u32 = 0;
/// Iterating.
pub const KRYLOV_RUNNING: u32 = 1;
/// The residual reached the tolerance.
pub const KRYLOV_CONVERGED: u32 = 2;
/// [`KrylovState::max_iterations`] iterations without converging.
pub const KRYLOV_MAX_ITERATIONS: u32 = 3;
/// A scalar broke the recurrence; [`KrylovState::breakdown`] names it.
pub const KRYLOV_BREAKDOWN: u32 = 4;
/// GMRES: a cycle ended before its last step; its update of `x` runs, then the status becomes
/// [`KrylovState::pending`].
pub const KRYLOV_CYCLE_END: u32 = 5;

/// The slot every solve keeps the residual its status was decided on in (`rᵀr`, or GMRES's
/// `g[j + 1]²`), for the host's outcome.
pub const KRYLOV_SLOT_RESIDUAL: u32 = 0;

/// Flags in the `c` of [`KRYLOV_OP_CONVERGED`] and [`KRYLOV_OP_LIMIT`]: the test ends a GMRES cycle
/// ([`KRYLOV_CYCLE_END`]) rather than the solve; a convergence counts the iteration it ends (BiCGSTAB's
/// half step).
pub const KRYLOV_FLAG_CYCLE: u32 = 1;
pub const KRYLOV_FLAG_COUNT: u32 = 2;

/// The gate of a launch that runs whatever the status and reads no state (a preconditioner's).
pub const KRYLOV_UNGATED: u32 = u32::MAX;

/// A launch's gate, the statuses in which it runs: `1 << status` for each.
pub const fn krylov_gate(statuses: &[u32]) -> u32 {
    let mut gate = 0;
    let mut i = 0;
    while i < statuses.len() {
        gate |= 1 << statuses[i];
        i += 1;
    }
    gate
}

/// The device state of a Krylov solve. The host zeroes it before the start; the scalar programs
/// change it (one thread), and every other kernel only reads `status` (and `columns`) when it starts,
/// or counts on `arrivals`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovState {
    /// One of the `KRYLOV_*` statuses.
    pub status: u32,
    /// Iterations done (for GMRES, Arnoldi steps over all cycles).
    pub iterations: u32,
    /// The iteration limit, set by the start program.
    pub max_iterations: u32,
    /// GMRES: columns of the current cycle's Hessenberg matrix.
    pub columns: u32,
    /// The arrivals counter of the two-stage sums (ends each launch at 0).
    pub arrivals: u32,
    /// The tag of the op that broke down (the solver's own numbering), with [`KRYLOV_BREAKDOWN`].
    pub breakdown: u32,
    /// The status a [`KRYLOV_CYCLE_END`] becomes once the cycle's update ran.
    pub pending: u32,
    /// The slot the breakdown's value was in.
    pub breakdown_slot: u32,
    /// Iterations of the solve before the state's last start (BiCGSTAB restarts from its iterate):
    /// the residual history goes on from there.
    pub done: u32,
}

/// The tag of a [`KRYLOV_OP_DIV`] that tests nothing (a quotient whose denominator the recurrence
/// already keeps non-zero).
pub const KRYLOV_NO_TAG: u32 = u32::MAX;

/// No scalar: a coefficient of 1 (scaled), or an unused operand.
pub const KRYLOV_NO_SLOT: u32 = u32::MAX;

/// A coefficient of a vector op: `scale * scalars[slot]`, or `scale` alone for [`KRYLOV_NO_SLOT`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Coef<T> {
    pub scale: T,
    pub slot: u32,
}

/// What every Krylov launch carries: the solve's state and scalars, the gate, the vector length.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovCommon<T> {
    pub state: DevicePtr<KrylovState>,
    pub scalars: DevicePtr<T>,
    /// The statuses in which the launch runs ([`krylov_gate`]); it does nothing otherwise.
    pub gate: u32,
    pub n: u32,
}

/// `out = fma(a, x, y)`; `y` may be `out`.
pub const KRYLOV_AXPY: u32 = 0;
/// `out = fma(a, fma(b, x, out), y)`: BiCGSTAB's `p = r + beta (p - omega v)`.
pub const KRYLOV_P_UPDATE: u32 = 1;
/// `out = a * x`.
pub const KRYLOV_SCALE: u32 = 2;
/// `out = y * x` elementwise (Jacobi: `y` the inverse diagonal).
pub const KRYLOV_DIAG: u32 = 3;

/// `krylov_vector_*`: one of the vector ops on `n` elements; `out` may be `x` or `y`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovVectorParams<T> {
    pub common: KrylovCommon<T>,
    pub op: u32,
    pub a: Coef<T>,
    pub b: Coef<T>,
    pub x: DevicePtr<T>,
    pub y: DevicePtr<T>,
    pub out: DevicePtr<T>,
}

/// `krylov_dots_*`: `scalars[out[k]] = x[k]ᵀ y[k]` for `k < count`, summed in two stages in a fixed
/// order (a function of `n`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovDotsParams<T> {
    pub common: KrylovCommon<T>,
    pub count: u32,
    pub out: [u32; KRYLOV_MAX_DOTS as usize],
    pub x: [DevicePtr<T>; KRYLOV_MAX_DOTS as usize],
    pub y: [DevicePtr<T>; KRYLOV_MAX_DOTS as usize],
    /// [`krylov_partials`] of the solve's basis.
    pub partials: DevicePtr<T>,
}

/// `krylov_cg_update_*`: preconditioned CG's update after `α`, in one pass over the vectors:
/// `r = fma(-α, q, r)`, then `z = d r` (Jacobi, `d` the inverse diagonal) or `z = r` (`d` and `z`
/// null: no preconditioner), `x = fma(α, p, x)`, and `scalars[out[0]] = rᵀz`,
/// `scalars[out[1]] = rᵀr`, summed as `krylov_dots_*` sums (its grid, its order).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovCgUpdateParams<T> {
    pub common: KrylovCommon<T>,
    /// `α` and `-α`, each a coefficient of one slot.
    pub alpha: Coef<T>,
    pub minus_alpha: Coef<T>,
    pub p: DevicePtr<T>,
    pub q: DevicePtr<T>,
    pub x: DevicePtr<T>,
    pub r: DevicePtr<T>,
    pub inv_diag: DevicePtr<T>,
    pub z: DevicePtr<T>,
    pub out: [u32; 2],
    /// [`krylov_partials`] of the solve's basis.
    pub partials: DevicePtr<T>,
}

/// Read the basis' column count from [`KrylovState::columns`].
pub const KRYLOV_STATE_COLUMNS: u32 = u32::MAX;

/// `krylov_basis_dots_*`: `scalars[slot + c] = V[:, c]ᵀ w` for `c < columns`;
/// `krylov_basis_combine_*`: `w = (accumulate ? w : 0) + scale Σ_c scalars[slot + c] V[:, c]`,
/// as fmas in the order of `c`. `basis` is a device array of the columns' addresses, each of `n`
/// elements (separate vectors, so that a product can write one).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovBasisParams<T> {
    pub common: KrylovCommon<T>,
    pub basis: DevicePtr<DevicePtr<T>>,
    /// At most the basis' columns, or [`KRYLOV_STATE_COLUMNS`].
    pub columns: u32,
    /// The most columns the launch takes: the state's count is clamped to it.
    pub most: u32,
    pub slot: u32,
    pub scale: T,
    pub accumulate: u32,
    pub w: DevicePtr<T>,
    pub partials: DevicePtr<T>,
}

/// Ops of `krylov_scalars_*` on the scalars `s` (`tag` names a breakdown for the host, which records
/// the tag and the slot of the value at fault; "finish" records the residual in
/// [`KRYLOV_SLOT_RESIDUAL`]):
/// - `SET`: `s[out] = value`; `COPY`: `s[out] = s[a]`; `MUL`: `s[out] = s[a] * s[b]`;
///   `SQRT`: `s[out] = sqrt(s[a])`;
/// - `DIV`: `s[out] = s[a] / s[b]`, a breakdown if `s[b]` is 0 or not finite (unless `tag` is
///   [`KRYLOV_NO_TAG`]); `NONZERO`, `FINITE`, `POSITIVE`: a breakdown unless `s[a]` is non-zero and
///   finite, finite, positive and finite (CG's `pᵀAp` and `rᵀz`);
/// - `START`: the status running, no iterations, the limit `a`, `b` iterations done before it;
/// - `RECORD`: the residual history, `s[out + k] = s[a]` for `k = done + iterations + c` if
///   `k < b` (`b` the history's capacity, 0 for none);
/// - `CONVERGED`: finish as converged if `s[a] <= s[b]` (flags in `c`: [`KRYLOV_FLAG_CYCLE`],
///   [`KRYLOV_FLAG_COUNT`]); `COUNT`: one more iteration; `LIMIT`: at the limit, finish with the
///   residual `s[a]` (in a cycle: end the cycle, to go on running);
/// - `ADD_RANGE`: `s[out + k] += s[a + k]` for `k < b`; `COPY_RANGE`: `s[out + k] = s[a + k]` for
///   `k < b` (the ranges apart: a distributed solve's all-reduced sums into their slots);
/// - `GIVENS`, `BACKSOLVE`, `END_CYCLE`, `COLUMNS`: GMRES (`krylov.rs`); `COLUMNS` sets the state's
///   column count to `a`.
pub const KRYLOV_OP_SET: u32 = 0;
pub const KRYLOV_OP_COPY: u32 = 1;
pub const KRYLOV_OP_MUL: u32 = 2;
pub const KRYLOV_OP_DIV: u32 = 3;
pub const KRYLOV_OP_SQRT: u32 = 4;
pub const KRYLOV_OP_NONZERO: u32 = 5;
pub const KRYLOV_OP_FINITE: u32 = 6;
pub const KRYLOV_OP_START: u32 = 7;
pub const KRYLOV_OP_CONVERGED: u32 = 8;
pub const KRYLOV_OP_COUNT: u32 = 9;
pub const KRYLOV_OP_LIMIT: u32 = 10;
pub const KRYLOV_OP_ADD_RANGE: u32 = 11;
pub const KRYLOV_OP_GIVENS: u32 = 12;
pub const KRYLOV_OP_COLUMNS: u32 = 13;
pub const KRYLOV_OP_BACKSOLVE: u32 = 14;
pub const KRYLOV_OP_END_CYCLE: u32 = 15;
pub const KRYLOV_OP_POSITIVE: u32 = 16;
pub const KRYLOV_OP_RECORD: u32 = 17;
pub const KRYLOV_OP_COPY_RANGE: u32 = 18;

/// One op of a scalar program; the meaning of `a`, `b`, `c` and `out` depends on `code`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ScalarOp<T> {
    pub code: u32,
    pub a: u32,
    pub b: u32,
    pub c: u32,
    pub out: u32,
    pub tag: u32,
    pub value: T,
}

/// Ops of one scalar program at most.
pub const KRYLOV_MAX_OPS: usize = 16;

/// `krylov_scalars_*`: `ops[..count]` in order, one thread. The program stops at the first op that
/// changes the status to another than it started in, other than [`KRYLOV_RUNNING`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KrylovScalarParams<T> {
    pub common: KrylovCommon<T>,
    pub count: u32,
    pub ops: [ScalarOp<T>; KRYLOV_MAX_OPS],
}

/// The largest block of the block-Jacobi preconditioner: a thread reads a row of its block's
/// inverse, `block` elements, and the setup inverts `n / block` dense blocks of `block²` entries;
/// past a warp's width a block is better served by a sparse factorisation.
pub const BLOCK_JACOBI_MAX: u32 = 32;

/// `ilu_lower_*` and `ilu_upper_*`: levels `first_level .. first_level + levels` of one of ILU(0)'s
/// triangular solves, level `l`'s rows at positions `starts[l] .. starts[l + 1]` of the schedule
/// (`rows[k]`, the row at position `k`), over that solve's triangle laid out in the schedule's
/// order: position `k`'s entries, its diagonal left out, at `offsets[k] .. offsets[k + 1]` of `cols`
/// and `values` in column order, and (the upper solve only; the lower one never reads it) its pivot
/// at `pivots[k]`. So a level's threads read their rows' structure at consecutive addresses. The
/// lower solve reads `r` and writes `z`; the upper one works in place on `z`. One thread per row of a
/// level. A launch of one level may have any grid; a launch of several is one block, which waits at
/// a barrier between them (a run of narrow levels: [`ILU_RUN_ROWS`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IluSolveParams<T> {
    pub rows: DevicePtr<u32>,
    pub starts: DevicePtr<u32>,
    pub offsets: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub values: DevicePtr<T>,
    pub pivots: DevicePtr<T>,
    pub first_level: u32,
    pub levels: u32,
    pub r: DevicePtr<T>,
    pub z: DevicePtr<T>,
}

/// `ilu_factor_*` and `ic_factor_*`: levels `first_level .. first_level + levels` of the lower
/// solve's schedule (`rows`, `starts`, as [`IluSolveParams`] has them), each row factorised by one
/// thread, a level after the other (a launch of several levels is one block, with a barrier between
/// them, as the solves' runs). Row `i` of the work pattern (`A`'s pattern, columns sorted and
/// repeats merged; IC(0): its lower triangle) holds its entries at `offsets[i] .. offsets[i + 1]` of
/// `cols` and `work`, its diagonal at `diagonal[i]`. The thread first gathers its row from `A`
/// (`a_offsets`, `a_values`): entry `e` goes to `work[sources[e] & ILU_SOURCE_POSITION]`, assigned
/// when [`ILU_SOURCE_ADD`] is clear and added to otherwise, and is skipped when `sources[e]` is
/// [`ILU_SOURCE_SKIP`]; it factorises the row in place, then writes it in the layout the solves
/// read: its `L` entries from `lower_values[lower_at[i]]` on, its pivot at `pivots[pivot_at[i]]`,
/// and its `U` entries from `upper_values[upper_slots[i]]` on (ILU(0); for IC(0) `upper_slots[k]`
/// is the slot of `L`'s entry `k` in the upper triangle's values, its mirror). A fault raises
/// `faults[ILU_FAULT_*]` to `u32::MAX - index` (the slots are zeroed before the first launch).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IluFactorParams<T> {
    pub rows: DevicePtr<u32>,
    pub starts: DevicePtr<u32>,
    pub first_level: u32,
    pub levels: u32,
    pub a_offsets: DevicePtr<u32>,
    pub a_values: DevicePtr<T>,
    pub sources: DevicePtr<u32>,
    pub offsets: DevicePtr<u32>,
    pub cols: DevicePtr<u32>,
    pub diagonal: DevicePtr<u32>,
    pub work: DevicePtr<T>,
    pub lower_at: DevicePtr<u32>,
    pub pivot_at: DevicePtr<u32>,
    pub upper_slots: DevicePtr<u32>,
    pub lower_values: DevicePtr<T>,
    pub upper_values: DevicePtr<T>,
    pub pivots: DevicePtr<T>,
    pub faults: DevicePtr<u32>,
}

/// [`IluFactorParams::sources`]: the bit of an entry of `A` that adds it to its position (a repeat
/// of the entry before it there, summed in `A`'s order as the host's `canonical_csr` sums).
pub const ILU_SOURCE_ADD: u32 = 1 << 31;
/// [`IluFactorParams::sources`]: the bits of the entry's position in the work pattern.
pub const ILU_SOURCE_POSITION: u32 = ILU_SOURCE_ADD - 1;
/// [`IluFactorParams::sources`]: an entry the factorisation does not read (IC(0)'s upper triangle).
pub const ILU_SOURCE_SKIP: u32 = u32::MAX;
/// The fault slots of the device factorisation, each the lowest faulty index as `u32::MAX - index`
/// (zero: none): an entry of `A` (summed) that is not finite, by its position in the work pattern
/// (the row is then left unfactorised); a pivot refused as the host refuses it, by its row; a
/// factor entry that is not finite, by the row that wrote it.
pub const ILU_FAULT_ENTRY: usize = 0;
pub const ILU_FAULT_PIVOT: usize = 1;
pub const ILU_FAULT_FACTOR: usize = 2;
/// The fault slots' count.
pub const ILU_FAULTS: usize = 3;

/// The widest level a run of levels in one block takes, and that block's threads: a level of at
/// most this many rows is one pass of the block, so consecutive narrow levels (a 2-D grid's
/// anti-diagonals) cost a barrier each instead of a launch each.
pub const ILU_RUN_ROWS: u32 = 512;

/// `block_jacobi_*`: `z = B⁻¹ r` for the inverted diagonal blocks of `block` rows (the last one
/// shorter), row `i`'s entries at `inverses[j * n + i]` for its block's local column `j`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BlockJacobiParams<T> {
    pub inverses: DevicePtr<T>,
    pub r: DevicePtr<T>,
    pub z: DevicePtr<T>,
    pub n: u32,
    pub block: u32,
}

// ---- The sm_70 module's entries, all of them ----

/// Every [`Entry`] and family of entries the sm_70 module exports: the host loads each when the
/// module loads, so that a kernel is found by its constant without a table of fields, and a host test
/// compares the list with the committed PTX both ways (a name here the kernels do not export, or an
/// export missing here). [`CSR_STREAM`], of the sm_90 module only, is not in it; those of
/// [`SM90_ENTRIES`], in both modules, are.
pub const ENTRIES: &[&[Entry]] = &[
    &[CSR_SCALAR],
    &CSR_VECTOR,
    &CSR_ALIGNED_NC,
    &CSR_ALIGNED_PLAIN,
    &CSR_PARAM,
    &[CSR_BALANCED, CSR_MERGE, CSR_MERGE_FIXUP, SCALE, DIST_GATHER, DIST_SCATTER_ADD],
    &CSR_PANELS,
    &[CSR_PANELS_COMBINE],
    &[ELL, ELL_FROM_CSR, SELL, COO_ATOMIC, COO_SEGMENTED, DENSE_BLOCKS],
    &[COMPRESSED_ELL, COMPRESSED_ELL_F32, COMPRESSED_ELL_F16, COMPRESSED_ELL_BF16, COMPRESSED_ELL_FROM_CSR],
    &[DIA, DIA_F32, DIA_F16, DIA_BF16, DIA_OFFSETS_FROM_CSR, DIA_FROM_CSR],
    &[DIA_WIDE, DIA_WIDE_F32, DIA_WIDE_F16, DIA_WIDE_BF16],
    &[BRC_PARTIALS, BRC_COMBINE, BRC_PRESCALE, BRC_ATOMIC],
    &[CG_INIT_PLAIN, CG_INIT_JACOBI, CG_ITERATE_PLAIN, CG_ITERATE_JACOBI],
    &LMA_ATOMIC_FULL,
    &LMA_ATOMIC_SYM,
    &LMA_COLOUR_FULL,
    &LMA_COLOUR_SYM,
    &CSRT_ATOMIC,
    &[CSRT_BUILD_GATHER, COO_ASSEMBLE_SUM],
    &SPMM_ROW_MAJOR,
    &SPMM_COL_MAJOR,
    &[SPMM_LONG_ROWS, SPMM_SCALE],
    &COMPRESSED,
    &COMPRESSED_F32,
    &COMPRESSED_F16,
    &COMPRESSED_BF16,
    &[COMPRESSED_HEADS_FROM_CSR, COMPRESSED_COLUMNS_FROM_CSR],
    &[KRYLOV_VECTOR, KRYLOV_DOTS, KRYLOV_BASIS_DOTS, KRYLOV_BASIS_COMBINE, KRYLOV_SCALARS, KRYLOV_CG_UPDATE],
    &[BLOCK_JACOBI, ILU_LOWER, ILU_UPPER, ILU_FACTOR, IC_FACTOR],
];

/// The entries whose PTX states a register budget (`.maxnreg`), with the budget: rustc has no
/// launch-bounds attribute, so `cargo xtask ptx` writes the directive into each entry's header, and
/// fails where an entry named here is not in the module.
///
/// Without a budget, the driver's compiler gave every ELL, SELL, compressed ELL and narrow DIA
/// entry 32 registers, the count at which an SM holds 64 warps, where the f64 walks hold 8 slots'
/// values and gathers (32 registers of f64 alone) to issue a batch's loads together. Allowed 48
/// (or 56 for DIA), those entries ran 1.07-1.23x faster on band-64 and wide-400 in f64 and level
/// on the stencils; DIA at 48 ran band-64's 83 diagonals faster still but stencil3d-7's 7 slower,
/// hence [`DIA_WIDE`]'s own entry in f64. With f32 values in an f64 product the same budgets ran
/// band-64 1.13x (compressed ELL) and 1.33x (DIA) faster, wide-400 1.29x, fem3d-27's compressed
/// ELL 7% slower. The slot and DIA walks' f32 entries keep no budget: allowed more than their
/// 32, they ran slower on the stencils, where Auto runs them (H100, docs/PERF.md section 32).
///
/// f16 and bf16 values in f64 products take the same budgets as f32 values: DIA band-64 59 -> 36 µs
/// and fem3d-27 36 -> 31 µs, compressed ELL wide-400 120 -> 93 µs but stencil2d-5 and fem3d-27
/// 7-9% slower. BRC's f64 walks at 40 ran its model's and the fastest B2 3-10% faster, its
/// one-slot splits 12% slower (48 and 56: 27%). The column-panel kernel held every f64 group at 32
/// registers, which serialised its steps: at 56 (2 blocks of 16 warps an SM, as the panel's shared
/// memory allowed 3) short-wide f64 ran 147 -> 99 µs, 1.08x cuSPARSE; from 72 (66 used) the
/// registers left one block an SM (124 µs). Its f32 groups at 40 (c16's own count; c32 had 32) ran the
/// 192 KiB panels 138 -> 79 µs, the others level; at 48, 64 KiB ran 13% slower (section 33).
pub const REGISTER_BUDGETS: &[(&str, u32)] = &[
    (ELL.f64, 48),
    (SELL.f64, 48),
    (COMPRESSED_ELL.f64, 48),
    (COMPRESSED_ELL_F32.f64, 48),
    (COMPRESSED_ELL_F16.f64, 48),
    (COMPRESSED_ELL_BF16.f64, 48),
    (DIA.f64, 56),
    (DIA_WIDE.f64, 48),
    (DIA_F32.f64, 56),
    (DIA_F16.f64, 56),
    (DIA_BF16.f64, 56),
    (BRC_PARTIALS.f64, 40),
    (BRC_ATOMIC.f64, 40),
    (CSR_PANELS[0].f32, 40),
    (CSR_PANELS[1].f32, 40),
    (CSR_PANELS[2].f32, 40),
    (CSR_PANELS[3].f32, 40),
    (CSR_PANELS[0].f64, 56),
    (CSR_PANELS[1].f64, 56),
    (CSR_PANELS[2].f64, 56),
    (CSR_PANELS[3].f64, 56),
];

/// The sm_70 module's entries with one name for both element types: the transpose's construction,
/// the assembly's steps, the index checks, the column-panel kernel's table and the two memory
/// probes.
pub const UNTYPED_ENTRIES: &[&str] = &[
    CSRT_BUILD_INIT,
    CSRT_BUILD_HISTOGRAM,
    CSRT_BUILD_SCATTER,
    CSRT_BUILD_SCAN,
    CSRT_BUILD_OFFSETS,
    COO_ASSEMBLE_IOTA,
    COO_ASSEMBLE_KEYS,
    COO_ASSEMBLE_HEADS,
    COO_ASSEMBLE_COMPACT,
    CSR_CHECK_U32,
    CSR_CHECK_I32,
    CSR_PANELS_TABLE,
    PROBE_STREAM_READ,
    PROBE_ROW_RUNS,
    L2_PREFETCH,
];
