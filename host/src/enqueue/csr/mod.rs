//! CSR products: the strategy ([`Kernel`]), its constant-time choices (`rule.rs`), and the
//! prepared launch of each kernel, one per PTX entry family.

mod compressed_copy;
mod ell_copy;
mod kernel;
mod panels;
mod rule;

pub(crate) use ell_copy::refresh_ell_copy;
pub use kernel::Kernel;
pub use rule::{
    AUTO_MIN_FILL, AUTO_PANEL_BLOCK_SIZE, COLD_RULE, COMPRESSED_COPY_MAX_COLUMN_BYTES, DIA_COPY_MAX_BYTES,
    ELL_COPY_MAX_PADDING, ELL_COPY_MAX_ROW, ELL_COPY_MIN_L2, Feature, Features, GRAPH_RULE, HOT_RULE, Node,
    PANELS_BENCH_MIN_SEGMENT, PANELS_MIN_BLOCKS_PER_SM, PANELS_MIN_SEGMENT, PANELS_MIN_X_L2, Rule, Target,
    auto_panel_kib, compressed_copy_term, dia_copy_term, ell_copy_term, panels_term, panels_timed,
    resolve_leaf, rule_for, width_kernel,
};
pub(crate) use rule::{auto_coop, auto_per_row, is_irregular, long_row_min_len};

use super::DeviceMatrix;
use super::compressed::{prepare_compressed, prepare_compressed_ell, prepare_dia};
use super::formats::prepare_ell;
use super::launch::{Prepared, unset_axpby};
use super::plan::{Plan, Regime};
use super::sealed::{Enqueue, Product};
use crate::device::{DeviceCsr, EllCopy, Gpu};
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{
    self as abi, Axpby, BULK_COPY_ALIGN, CSR_ALIGNED_GROUPS, CSR_PARAM_COOPS, CSR_VECTOR_COOPS,
    CompressedEllParams, CompressedParams, CsrBalancedParams, CsrMergeParams, CsrPanelsParams,
    CsrParamParams, CsrParams, CsrStreamParams, DiaParams, EllParams, LongRowArgs, MAX_GRID_X, MERGE_TILE,
    STREAM_BLOCK_SIZE, StreamStage, WARP_SIZE,
};
use kernels_gpu::index::{coop_threads, grid_blocks};

super::launch::with_operands!(
    CsrParams: Axpby,
    CsrParamParams: Axpby,
    CsrBalancedParams: Axpby,
    CsrMergeParams: Axpby,
    CsrStreamParams: Axpby,
    CsrPanelsParams: Axpby
);

/// The prepared launch of a CSR product, by the kernel's parameter struct.
#[derive(Debug)]
pub enum CsrLaunch<T> {
    /// The scalar, vector and aligned kernels: a thread or a group of threads per row.
    Rows(Prepared<CsrParams<T>>),
    /// The parametrised kernel, and how many rows its plan splits.
    Param { launch: Prepared<CsrParamParams<T>>, split_rows: usize },
    /// The balanced kernel.
    Balanced(Prepared<CsrBalancedParams<T>>),
    /// The merge-path kernel, then its fix-up of the rows that cross tiles.
    Merge { tiles: Prepared<CsrMergeParams<T>>, fixup: Prepared<CsrMergeParams<T>> },
    /// The streaming engine.
    Stream(Prepared<CsrStreamParams<T>>),
    /// The column-panel kernel, then the sum of each row's partial sums, with the plan's own table
    /// and scratch (boxed: the largest variant by far).
    Panels(Box<panels::PanelLaunches<T>>),
    /// The ELL kernel on the matrix's ELL copy.
    Ell(Prepared<EllParams<T>>),
    /// The compressed ELL kernel on the matrix's ELL copy, its columns as offsets from the row.
    CompressedEll(Prepared<CompressedEllParams<T, T>>),
    /// The DIA kernel on the matrix's copy in DIA.
    Dia(Prepared<DiaParams<T, T>>),
    /// The compressed-index kernel on the matrix's compressed columns.
    Compressed(Prepared<CompressedParams<T, T>>),
}

/// The index of `value` in `compiled`, the variants a kernel family has PTX entries for (`Kernel`'s
/// check has made sure it is there).
fn variant(compiled: &[u32], value: u32) -> usize {
    compiled.iter().position(|&v| v == value).unwrap_or_default()
}

impl<T: Scalar> Enqueue<T> for DeviceCsr<T> {
    type Kernel = Kernel;
    type Launch = CsrLaunch<T>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceCsr::belongs_to(self, gpu)
    }

    fn values_generation(&self) -> u64 {
        DeviceCsr::values_generation(self)
    }

    fn prepare(&self, gpu: &Gpu, kernel: Kernel) -> Result<(Kernel, CsrLaunch<T>)> {
        kernel.check()?;
        let a = self.args();
        let op = unset_axpby();
        let rows = |entry, group: u32, block: u32| -> Result<_> {
            let grid = grid_blocks(coop_threads(a.rows, group), block);
            // SAFETY: the kernel walks rows `0 .. a.rows` of the matrix's arrays (valid CSR by
            // construction of `DeviceCsr`) with a grid stride, reading `x` at the matrix's columns and
            // writing `y` at its rows; `Kernel::check` made the block whole warps, which keeps the
            // group shuffles' member mask full.
            Ok(CsrLaunch::Rows(unsafe {
                Prepared::of_entry::<T>(gpu, entry, grid, block, 0, CsrParams { a, op })?
            }))
        };
        let launch = match kernel {
            // `Kernel::auto_for` never answers `Auto`.
            Kernel::Auto => {
                let chosen = gpu.resolve_auto(self, Regime::Cold)?;
                return match self.prepare(gpu, chosen) {
                    Err(e) if chosen.term_refused(&e) => {
                        self.prepare(gpu, gpu.auto_kernel_without_terms::<T>(self.stats(), Regime::Cold))
                    }
                    prepared => prepared,
                };
            }
            Kernel::CsrScalar { block_size } => rows(abi::CSR_SCALAR, 1, block_size)?,
            Kernel::CsrVector { coop, block_size } => {
                rows(abi::CSR_VECTOR[variant(&CSR_VECTOR_COOPS, coop)], coop, block_size)?
            }
            Kernel::CsrAligned { group, cached_x, block_size } => {
                let family = if cached_x { abi::CSR_ALIGNED_NC } else { abi::CSR_ALIGNED_PLAIN };
                rows(family[variant(&CSR_ALIGNED_GROUPS, group)], group, block_size)?
            }
            Kernel::CsrParam { coop, repeat, block_size, split_long_rows } => {
                let (long, split_rows) = if split_long_rows {
                    let split = self.long_rows(gpu, long_row_min_len(self.stats(), gpu.sm_count()))?;
                    (split.args(), split.count())
                } else {
                    (LongRowArgs::unsplit(), 0)
                };
                let (row_blocks, chunk_blocks) = param_grid(a.rows, coop, repeat, block_size, long.chunks)?;
                let params = CsrParamParams { a, op, repeat, row_blocks, long };
                let f = gpu.kernel::<T>(abi::CSR_PARAM[variant(&CSR_PARAM_COOPS, coop)])?;
                // SAFETY: as for the row kernels; the long-row arrays and scratch were built for this
                // very matrix (`DeviceCsr::long_rows`) and live as long as it; the grid has the
                // `row_blocks` the tiles expect, then a warp for each chunk.
                let launch = unsafe { Prepared::new(f, row_blocks + chunk_blocks, block_size, 0, params) };
                CsrLaunch::Param { launch, split_rows }
            }
            Kernel::CsrBalanced { block_size } => {
                let tasks = self.row_tasks(gpu)?;
                let long = tasks.long_rows();
                let (chunk_blocks, task_blocks) = balanced_grid(tasks.tasks(), long.chunks, block_size)?;
                let params = CsrBalancedParams {
                    a,
                    op,
                    task_starts: tasks.task_starts(),
                    tasks: tasks.tasks(),
                    chunk_blocks,
                    long,
                };
                let grid = chunk_blocks + task_blocks;
                // SAFETY: as for the row kernels; the tasks, the long-row arrays and scratch were built
                // for this very matrix (`DeviceCsr::row_tasks`); the grid has a warp for each chunk,
                // then at least one block for the tasks (a product launches only for a matrix with
                // rows, so with tasks).
                let launch =
                    unsafe { Prepared::of_entry::<T>(gpu, abi::CSR_BALANCED, grid, block_size, 0, params)? };
                CsrLaunch::Balanced(launch)
            }
            Kernel::CsrMerge { block_size } => {
                let m = self.merge_tiles(gpu)?.args();
                let params = CsrMergeParams {
                    a,
                    op,
                    nnz: narrow("the entry count", self.nnz())?,
                    tiles: m.tiles,
                    tile_rows: m.tile_rows,
                    carries: m.carries,
                    heads: m.heads,
                    splits: m.splits,
                    split_rows: m.split_rows,
                    split_first: m.split_first,
                    split_last: m.split_last,
                };
                let warps = block_size / WARP_SIZE;
                let shared = merge_shared_bytes::<T>(warps);
                let f = gpu.kernel::<T>(abi::CSR_MERGE)?;
                // SAFETY: as for the row kernels; the tiles, split rows and slots were built for this
                // very matrix (`DeviceCsr::merge_tiles`) and live as long as it; the grid has a warp
                // for each tile, each with its tile's staging in the block's shared memory, at most
                // 48 KiB (`Kernel::check` caps the block, `merge_shared_bytes` says why it fits).
                let tiles = unsafe { Prepared::new(f, m.tiles.div_ceil(warps), block_size, shared, params) };
                let fixup_shared = m.fixup_warps * element_bytes::<T>();
                let f = gpu.kernel::<T>(abi::CSR_MERGE_FIXUP)?;
                // SAFETY: as above, a block of whole warps for each split row with a `T` of shared
                // memory per warp, after the tiles on the same stream.
                let fixup =
                    unsafe { Prepared::new(f, m.splits, m.fixup_warps * WARP_SIZE, fixup_shared, params) };
                CsrLaunch::Merge { tiles, fixup }
            }
            Kernel::CsrStream { stages } => {
                let engine = gpu.stream_kernel::<T>().ok_or(Error::Unsupported(
                    "the streaming engine (Kernel::CsrStream) needs a GPU of compute capability 9.0 or later",
                ))?;
                let aligned = |addr: u64| addr.is_multiple_of(u64::from(BULK_COPY_ALIGN));
                if ![a.row_offsets.addr(), a.col_indices.addr(), a.values.addr()].into_iter().all(aligned) {
                    return Err(Error::Unsupported(
                        "the streaming engine copies whole 16-byte units: the matrix's arrays must start \
                         16-byte aligned",
                    ));
                }
                let w = self.stream_windows(gpu)?;
                let long = w.long_rows();
                let (chunk_blocks, room) = stream_grid(long.chunks)?;
                let blocks_per_sm = engine.blocks_per_sm[variant(&Kernel::STREAM_STAGES, stages)];
                let window_blocks = w.windows().min(gpu.sm_count().saturating_mul(blocks_per_sm)).min(room);
                let params = CsrStreamParams {
                    a,
                    op,
                    nnz: narrow("the entry count", self.nnz())?,
                    windows: w.windows(),
                    window_bounds: w.bounds(),
                    stages,
                    chunk_blocks,
                    long,
                };
                let shared = StreamStage::block_bytes(element_bytes::<T>(), stages);
                // SAFETY: the windows, the long-row arrays and scratch were built for this very matrix
                // (`DeviceCsr::stream_windows`) and live as long as it; its arrays are 16-byte aligned
                // (checked above) and valid CSR; the block is the engine's, with the ring's shared
                // memory, which the entry was opted into at load (`StreamKernels::load`); the grid has
                // a warp for each chunk, then the window blocks, which walk the windows with a stride.
                CsrLaunch::Stream(unsafe {
                    Prepared::new(
                        &engine.csr,
                        chunk_blocks + window_blocks,
                        STREAM_BLOCK_SIZE,
                        shared,
                        params,
                    )
                })
            }
            Kernel::CsrPanels { panel_kib, block_size } => panels::prepare(self, gpu, panel_kib, block_size)?,
            Kernel::CsrEllCopy => match ell_copy::ell_copy(self, gpu)? {
                EllCopy::Dia(dia) => CsrLaunch::Dia(prepare_dia(gpu, dia)?),
                EllCopy::Deltas(ell) => CsrLaunch::CompressedEll(prepare_compressed_ell(gpu, ell)?),
                EllCopy::Plain(ell) => CsrLaunch::Ell(prepare_ell(gpu, ell)?),
            },
            Kernel::CsrCompressedCopy { coop } => {
                let columns = compressed_copy::compressed_columns(self, gpu)?;
                CsrLaunch::Compressed(prepare_compressed(gpu, columns.args(), coop)?)
            }
        };
        Ok((kernel, launch))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &CsrLaunch<T>, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe {
            match launch {
                CsrLaunch::Rows(l) => l.enqueue(gpu, p.axpby()),
                CsrLaunch::Param { launch, .. } => launch.enqueue(gpu, p.axpby()),
                CsrLaunch::Balanced(l) => l.enqueue(gpu, p.axpby()),
                CsrLaunch::Merge { tiles, fixup } => {
                    tiles.enqueue(gpu, p.axpby())?;
                    fixup.enqueue(gpu, p.axpby())
                }
                CsrLaunch::Stream(l) => l.enqueue(gpu, p.axpby()),
                CsrLaunch::Panels(l) => {
                    l.tiles.enqueue(gpu, p.axpby())?;
                    l.combine.enqueue(gpu, p.axpby())
                }
                CsrLaunch::Ell(l) => l.enqueue(gpu, p.axpby()),
                CsrLaunch::CompressedEll(l) => l.enqueue(gpu, p.axpby()),
                CsrLaunch::Dia(l) => l.enqueue(gpu, p.axpby()),
                CsrLaunch::Compressed(l) => l.enqueue(gpu, p.axpby()),
            }
        }
    }
}

impl<T: Scalar> DeviceMatrix<T> for DeviceCsr<T> {
    fn shape(&self) -> Shape {
        DeviceCsr::shape(self)
    }
}

impl Gpu {
    /// What the fitted rule knows of this GPU.
    pub fn target(&self) -> Target {
        Target { sm_count: self.sm_count(), l2_bytes: self.l2_bytes() }
    }

    /// The kernel the rule of [`Kernel::Auto`] gives on this GPU for products in `regime` of a
    /// matrix of these statistics in element type `T` ([`Kernel::auto_for`]): what Auto stands for
    /// but where its plan finds a DIA copy ([`dia_copy_term`]) or columns that compress
    /// ([`compressed_copy_term`]), which statistics cannot tell.
    pub fn auto_kernel<T: Scalar>(&self, stats: &crate::RowStats, regime: Regime) -> Kernel {
        Kernel::auto_for(stats, size_of::<T>(), self.target(), regime)
    }

    /// [`Kernel::auto_without_terms`] on this GPU, for products in `regime` of a matrix of these
    /// statistics in element type `T`: what `Auto` takes where the column panels are refused.
    pub fn auto_kernel_without_terms<T: Scalar>(&self, stats: &crate::RowStats, regime: Regime) -> Kernel {
        Kernel::auto_without_terms(stats, size_of::<T>(), self.target(), regime)
    }

    /// What [`Kernel::Auto`] stands for in products of `a` in `regime`: the rule's choice
    /// ([`Gpu::auto_kernel`]), or, where that is a kernel on the CSR arrays and the DIA-copy term
    /// says to look ([`dia_copy_term`]), [`Kernel::CsrEllCopy`] if the device finds the matrix on
    /// few enough diagonals that its copy is DIA of at most [`DIA_COPY_MAX_BYTES`] times the CSR
    /// bytes; else, where the rule gives a thread or a group a row and the compressed-copy term
    /// says to look ([`compressed_copy_term`]), [`Kernel::CsrCompressedCopy`] at that width if the
    /// matrix's columns compressed take at most [`COMPRESSED_COPY_MAX_COLUMN_BYTES`] of its CSR
    /// columns' bytes. Each look builds its copy (and keeps it), or nothing: it runs once per
    /// matrix.
    pub(crate) fn resolve_auto<T: Scalar>(&self, a: &DeviceCsr<T>, regime: Regime) -> Result<Kernel> {
        let chosen = self.auto_kernel::<T>(a.stats(), regime);
        let on_csr = !matches!(chosen, Kernel::CsrPanels { .. } | Kernel::CsrEllCopy);
        if on_csr && dia_copy_term(a.stats(), size_of::<T>(), self.target()) {
            match ell_copy::dia_copy(a, self, DIA_COPY_MAX_BYTES) {
                Ok(Some(_)) => return Ok(Kernel::CsrEllCopy),
                Ok(None) => {}
                Err(e) if Kernel::CsrEllCopy.term_refused(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(copy) = compressed_copy_term(chosen, a.stats(), size_of::<T>(), self.target()) {
            match compressed_copy::compressed_columns_pay(a, self, COMPRESSED_COPY_MAX_COLUMN_BYTES) {
                Ok(true) => return Ok(copy),
                Ok(false) => {}
                Err(e) if copy.term_refused(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(chosen)
    }

    /// [`Gpu::plan`] for products that will run in `regime`: [`Kernel::Auto`] resolves to that
    /// regime's choice ([`Gpu::auto_kernel`], or the DIA copy or the compressed columns where Auto
    /// looks for them, see [`dia_copy_term`] and [`compressed_copy_term`]; where that is the
    /// column-panel kernel and the plan refuses it, [`Gpu::auto_kernel_without_terms`]); any other
    /// kernel is planned as it is. A plan of the hot or graph regime replays its products from CUDA
    /// graphs, or launches them directly where it measures that faster (see [`Regime::Hot`]).
    pub fn plan_for<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        kernel: Kernel,
        regime: Regime,
    ) -> Result<Plan<'a, T, DeviceCsr<T>>> {
        if kernel != Kernel::Auto {
            return Ok(self.plan(a, kernel)?.in_regime(regime));
        }
        let chosen = self.resolve_auto(a, regime)?;
        let plan = match self.plan(a, chosen) {
            Err(e) if chosen.term_refused(&e) => {
                self.plan(a, self.auto_kernel_without_terms::<T>(a.stats(), regime))?
            }
            planned => planned?,
        };
        Ok(plan.in_regime(regime))
    }
}

impl<T: Scalar> Plan<'_, T, DeviceCsr<T>> {
    /// How many rows the plan's kernel spreads over several warps: the long rows of the
    /// parametrised kernel with `split_long_rows` (rows long enough that one group would be the
    /// product's critical path); 0 for the other kernels. (The balanced kernel splits the rows of
    /// at least [`Kernel::BALANCED_LONG_ROW`] entries.)
    pub fn split_rows(&self) -> usize {
        match self.prepared() {
            CsrLaunch::Param { split_rows, .. } => *split_rows,
            CsrLaunch::Rows(_)
            | CsrLaunch::Balanced(_)
            | CsrLaunch::Merge { .. }
            | CsrLaunch::Stream(_)
            | CsrLaunch::Panels(_)
            | CsrLaunch::Ell(_)
            | CsrLaunch::CompressedEll(_)
            | CsrLaunch::Dia(_)
            | CsrLaunch::Compressed(_) => 0,
        }
    }
}

/// The grid of the parametrised kernel: `.0` blocks walk the tiles of `repeat * block / coop` rows
/// (with a grid stride, so they are capped to keep the grid within [`MAX_GRID_X`]), then `.1` blocks
/// give each of `chunks` long-row chunks a warp.
fn param_grid(rows: u32, coop: u32, repeat: u32, block: u32, chunks: u32) -> Result<(u32, u32)> {
    let chunk_blocks = chunks.div_ceil(block / WARP_SIZE);
    let room = grid_room(chunk_blocks, chunks)?;
    let tile_rows = u64::from(block / coop) * u64::from(repeat);
    let tiles = u64::from(rows).div_ceil(tile_rows);
    // `min` with a u32 value: the conversion cannot fail.
    let row_blocks = u32::try_from(tiles.min(u64::from(room))).unwrap_or(room);
    Ok((row_blocks, chunk_blocks))
}

/// The dynamic shared memory of a block of `warps` warps of the merge-path kernel: each stages a
/// tile's products and row ends.
fn merge_shared_bytes<T>(warps: u32) -> u32 {
    warps * MERGE_TILE * (element_bytes::<T>() + 4)
}

/// Bytes of an element: 4 or 8.
fn element_bytes<T>() -> u32 {
    #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
    let bytes = size_of::<T>() as u32;
    bytes
}

// The largest block's staging fits the 48 KiB every GPU grants without opting in, in f64.
const _: () = assert!(
    Kernel::MERGE_MAX_BLOCK_SIZE / WARP_SIZE * MERGE_TILE * (8 + 4) <= 48 * 1024,
    "the merge-path kernel's largest block outgrows its shared memory"
);

/// The grid of the balanced kernel: `.0` blocks give each of `chunks` long-row chunks a warp, then
/// `.1` blocks walk the `tasks` row tasks, a warp per task (with a grid stride, so they are capped
/// to keep the grid within [`MAX_GRID_X`]; at least one block when there are tasks). Also SpMM's
/// grid, whose tasks are the warps of its row groups.
pub(crate) fn balanced_grid(tasks: u32, chunks: u32, block: u32) -> Result<(u32, u32)> {
    let warps = block / WARP_SIZE;
    let chunk_blocks = chunks.div_ceil(warps);
    Ok((chunk_blocks, tasks.div_ceil(warps).min(grid_room(chunk_blocks, chunks)?)))
}

/// The grid of the streaming engine: `.0` blocks of [`STREAM_BLOCK_SIZE`] give each of `chunks`
/// long-row chunks a warp; at most `.1` window blocks may follow them.
fn stream_grid(chunks: u32) -> Result<(u32, u32)> {
    let chunk_blocks = chunks.div_ceil(STREAM_BLOCK_SIZE / WARP_SIZE);
    Ok((chunk_blocks, grid_room(chunk_blocks, chunks)?))
}

/// The blocks left in a grid of at most [`MAX_GRID_X`] once `chunk_blocks` take the `chunks`
/// long-row chunks: at least one, or the chunks are refused.
fn grid_room(chunk_blocks: u32, chunks: u32) -> Result<u32> {
    MAX_GRID_X.checked_sub(chunk_blocks).filter(|&room| room > 0).ok_or(Error::TooLarge {
        what: "the long-row chunk count",
        value: chunks as usize,
        limit: MAX_GRID_X as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_grid_covers_tiles_then_chunks() {
        // 32 rows per tile: 1000 rows make 32 tiles.
        assert_eq!(param_grid(1000, 4, 1, 128, 0).unwrap(), (32, 0));
        assert_eq!(param_grid(1000, 4, 3, 128, 0).unwrap(), (11, 0));
        assert_eq!(param_grid(1000, 1, 64, 1024, 0).unwrap(), (1, 0));
        // 4 warps per block of 128: 5 chunks take 2 blocks, 8 chunks 2, 9 chunks 3.
        assert_eq!(param_grid(1000, 4, 1, 128, 5).unwrap(), (32, 2));
        assert_eq!(param_grid(1000, 4, 1, 128, 8).unwrap(), (32, 2));
        assert_eq!(param_grid(1000, 4, 1, 128, 9).unwrap(), (32, 3));
        assert_eq!(param_grid(1, 32, 1, 64, 1).unwrap(), (1, 1));
    }

    #[test]
    fn balanced_grid_covers_chunks_then_tasks() {
        // 4 warps per block of 128.
        assert_eq!(balanced_grid(1, 0, 128).unwrap(), (0, 1));
        assert_eq!(balanced_grid(9, 0, 128).unwrap(), (0, 3));
        assert_eq!(balanced_grid(8, 5, 128).unwrap(), (2, 2));
        assert_eq!(balanced_grid(100, 1, 32).unwrap(), (1, 100));
        // Tasks beyond the grid's limit walk with a stride; the chunks keep a warp each.
        let (chunks, tasks) = balanced_grid(u32::MAX, 1000, 32).unwrap();
        assert_eq!(chunks, 1000);
        assert_eq!(chunks + tasks, MAX_GRID_X);
        assert!(balanced_grid(1, u32::MAX, 32).is_err());
    }

    #[test]
    fn param_grid_stays_within_the_limit() {
        // Two rows per tile: 2^31 tiles, more than a grid holds; the tiles' blocks grid-stride.
        let (rows, chunks) = param_grid(u32::MAX, 32, 1, 64, 1000).unwrap();
        assert_eq!(chunks, 500);
        assert_eq!(rows + chunks, MAX_GRID_X);
    }
}
