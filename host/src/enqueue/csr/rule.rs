//! The fixed rule of Reguly & Giles ("Efficient sparse matrix-vector multiplication on cache-based
//! GPUs", InPar 2012) for the parametrised CSR kernel (`kernels-gpu/src/csr/param.rs`), scaled from
//! their Fermi card to the GPU at hand (the tuner's starting point); [`Kernel::Auto`]'s own
//! configuration of that kernel, calibrated on the H100; the length from which a row counts as long;
//! and when Auto takes the balanced kernel (`kernels-gpu/src/csr/balanced.rs`) instead.
//!
//! Beside them, the rule fitted to measurements ([`Rule`], issue 23): a small decision tree over
//! [`Features`] of the matrix and the GPU whose leaves are kernels, one tree per [`Regime`]; its
//! fitting and leave-one-out check are the benchmark's (`benches/src/fit.rs`), which reads the
//! committed runs under `docs/bench/`.
//!
//! Everything here reads the matrix's row statistics and the GPU's SM count and L2 size only, so it
//! runs in constant time per product.

use super::super::plan::Regime;
use super::kernel::Kernel;
use crate::formats::csr::RowStats;
use crate::formats::ell::csr_bytes;
use kernels_gpu::abi::{BLOCK_SIZE, CSR_PARAM_COOPS, LONG_ROW_CHUNK, RESIDENT_THREADS_PER_SM, WARP_SIZE};
use std::fmt;

/// One launch configuration of the parametrised kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ParamConfig {
    pub coop: u32,
    pub repeat: u32,
    pub block_size: u32,
}

impl ParamConfig {
    /// The kernel that runs this configuration, long rows split.
    pub fn kernel(self) -> Kernel {
        let ParamConfig { coop, repeat, block_size } = self;
        Kernel::CsrParam { coop, repeat, block_size, split_long_rows: true }
    }
}

/// Full waves of resident blocks the rule's grid must cover at least. Reguly & Giles asked for at
/// least 1500 blocks on a 14-SM Fermi card, which holds 8 blocks of 128 threads per SM (its limit of
/// 8 blocks, below 1536 / 128 = 12 by threads): 1500 / (14 * 8) = 13.4 waves. We keep the ratio, so on
/// an H100 (132 SMs, 2048 / 128 = 16 blocks each, 2112 per wave) the rule asks for 27,456 blocks.
pub const RULE_MIN_WAVES: u32 = 13;

/// The most rows per group the rule and the tuner use (a power of two, as every repeat they reach).
/// At 64, a block of 128 threads with one thread per row already covers 8192 rows; more would leave
/// the matrices of our suite with fewer blocks than the GPU holds at once.
pub const MAX_REPEAT: u32 = 64;

/// Steps (entries per lane) under which a row is never split: a chunk warp takes
/// `LONG_ROW_CHUNK / 32 = 8` steps, plus an acquire-release atomic and the last warp's pass over the
/// partial sums, so splitting pays once it cuts a row's steps by 4 or more.
pub const LONG_ROW_MIN_STEPS: u64 = 4 * (LONG_ROW_CHUNK / WARP_SIZE) as u64;

/// How many times the mean steps of the whole product one group may spend on a row before the row is
/// split. The mean is `nnz / resident threads`: the steps every thread takes when the entries spread
/// evenly over the GPU. A row of `len` entries keeps its group busy `len / coop` steps, the critical
/// path once it exceeds the mean by this factor (a margin for the spread of ordinary rows).
pub const LONG_ROW_SLACK: u64 = 4;

/// The coefficient of variation of the row lengths (standard deviation over mean) above which
/// [`Kernel::Auto`] takes the balanced kernel. The parametrised kernel gives rows to groups of
/// one width, so a warp waits for the longest of the rows it holds; the balanced kernel gives warps
/// equal entries whatever the rows, at the price of a segmented scan per 32 entries. Our suite's
/// regular matrices (stencils, FEM, banded, uniform rows) have at most 0.17 and its irregular ones
/// 1.3 (short-wide) to 295 (circuit). The real matrices fill the gap: on the H100, cold, the
/// balanced kernel beat every per-row width on vibrobox (0.6), finan512 (0.9) and ISPD98 (0.8) by
/// 12-48%, so the threshold sits at 0.5 (`docs/PERF.md`, section 13); it was 1.0 when only the
/// suite had been measured.
pub const IRREGULAR_ROW_CV: f64 = 0.5;

/// The share of the GPU's resident threads [`Kernel::Auto`]'s groups fill at least: `coop` grows
/// until `rows x coop` reaches it. A small matrix given one lane per row leaves most SMs idle (45 k
/// rows are a sixth of the H100's 270 k resident threads), and each lane's chain of dependent
/// loads is then the product's critical path; more lanes per row shorten the chains and spread the
/// rows over every SM. Fitted on the 27 real matrices (cold, H100): filling 35%, 50% and 70%
/// left Auto 2.4%, 1.9% and 3.1% behind the fastest kernel (geometric means).
pub const AUTO_MIN_FILL: f64 = 0.5;

/// The share of the resident threads under which even a warp per row leaves the GPU idle enough
/// that [`Kernel::Auto`] takes the balanced kernel, which spreads long rows over several warps: the
/// real set's lp_fit2d (25 rows) and movielens (943 rows) ran 1.5-2x faster there than with 32
/// lanes per row.
pub const FEW_ROWS_FILL: f64 = 0.35;

/// Whether the row lengths vary enough for the balanced kernel (see [`IRREGULAR_ROW_CV`]). A matrix
/// without entries is regular.
pub fn is_irregular(stats: &RowStats) -> bool {
    stats.mean > 0.0 && stats.std_dev > IRREGULAR_ROW_CV * stats.mean
}

/// Entries per lane [`Kernel::Auto`] aims at when it sizes the groups of the parametrised
/// kernel: `coop` is the smallest power of two at least `mean / 8`, at most 32. On the H100 this
/// matched the best cooperative width the suite measured for every regular matrix: one lane for 5 to
/// 7 entries per row, 4 for 26, 8 for 64, 32 for 200 and 400 (`docs/PERF.md`). Reguly & Giles'
/// `sqrt(mean)` gives 4 lanes to rows of 5 to 7 entries, which cost up to 28% there: Hopper's sector
/// loads make a lane walking its own short row nearly as efficient as a coalesced group, while extra
/// lanes idle and add shuffles.
pub const AUTO_ENTRIES_PER_LANE: f64 = 8.0;

/// Threads per row at [`AUTO_ENTRIES_PER_LANE`] entries per lane: the narrowest width
/// [`Kernel::Auto`] gives a regular matrix's rows (see [`auto_config`]), and the width of the
/// row-parallel kernels of the transposed product and SpMM.
pub fn auto_coop(stats: &RowStats) -> u32 {
    coop_at_least(stats.mean / AUTO_ENTRIES_PER_LANE)
}

/// The smallest width of the parametrised kernel of at least `lanes` threads per row, at most 32.
fn coop_at_least(lanes: f64) -> u32 {
    CSR_PARAM_COOPS.iter().copied().find(|&c| f64::from(c) >= lanes).unwrap_or(WARP_SIZE)
}

/// Threads the GPU keeps resident: `sm_count` SMs of [`RESIDENT_THREADS_PER_SM`].
pub fn resident_threads(sm_count: u32) -> u64 {
    u64::from(sm_count.max(1)) * u64::from(RESIDENT_THREADS_PER_SM)
}

/// Whether a matrix's rows are so few that a warp per row fills less than [`FEW_ROWS_FILL`] of the
/// GPU (a matrix without entries never is: it launches nothing).
pub fn has_few_rows(stats: &RowStats, sm_count: u32) -> bool {
    stats.nnz > 0
        && (stats.rows as f64) * f64::from(WARP_SIZE) < FEW_ROWS_FILL * resident_threads(sm_count) as f64
}

/// [`Kernel::Auto`]'s configuration of the parametrised kernel for a regular matrix on a GPU of
/// `sm_count` SMs: `coop` the smallest power of two that gives each lane at most
/// [`AUTO_ENTRIES_PER_LANE`] entries ([`auto_coop`]) *and* fills [`AUTO_MIN_FILL`] of the resident
/// threads, at most 32; 128 threads per block, one row per group (`repeat = 1`). The exhaustive
/// search over the paper's parameter space found its best at `repeat` 1 or 2 on every matrix of the
/// suite, and the fixed rule's 2 and 4 on the largest short-row matrices cost 3-28%: the H100 needs
/// no more work per group to hide its launch cost.
pub(crate) fn auto_config(stats: &RowStats, sm_count: u32) -> ParamConfig {
    ParamConfig {
        coop: filling_width(stats, sm_count, AUTO_ENTRIES_PER_LANE, AUTO_MIN_FILL),
        repeat: 1,
        block_size: BLOCK_SIZE,
    }
}

/// The smallest width (lanes per row, a power of two up to 32) that gives each lane at most
/// `entries_per_lane` entries of a mean row and brings `rows x width` to `min_fill` of the resident
/// threads of `sm_count` SMs.
fn filling_width(stats: &RowStats, sm_count: u32, entries_per_lane: f64, min_fill: f64) -> u32 {
    let fill = min_fill * resident_threads(sm_count) as f64 / stats.rows.max(1) as f64;
    coop_at_least(fill.max(stats.mean / entries_per_lane))
}

/// The per-row kernel [`Kernel::Auto`] gives a matrix's rows (its choice for a regular matrix with
/// rows enough: [`auto_config`]): what the tuner compares with when Auto takes the balanced kernel.
pub(crate) fn auto_per_row(stats: &RowStats, sm_count: u32) -> Kernel {
    auto_config(stats, sm_count).kernel()
}

/// Blocks the rule's grid must have at least on a GPU of `sm_count` SMs (see [`RULE_MIN_WAVES`]).
pub fn min_blocks(sm_count: u32) -> u64 {
    u64::from(sm_count.max(1)) * u64::from(RESIDENT_THREADS_PER_SM / BLOCK_SIZE) * u64::from(RULE_MIN_WAVES)
}

/// Threads per row: the smallest power of two at least `sqrt(mean row length)`, at most 32 (enough
/// lanes to coalesce a row's loads, few enough that short rows keep most lanes busy).
pub fn rule_coop(stats: &RowStats) -> u32 {
    coop_at_least(stats.mean.sqrt())
}

/// Rows per group: the largest power of two up to [`MAX_REPEAT`] that leaves the grid at least
/// [`min_blocks`] blocks; 1 when even that leaves fewer.
pub fn rule_repeat(rows: usize, coop: u32, block_size: u32, sm_count: u32) -> u32 {
    let needed = min_blocks(sm_count);
    let groups = u64::from(block_size / coop.max(1)).max(1);
    let rows = rows as u64;
    let mut repeat = MAX_REPEAT;
    while repeat > 1 && rows.div_ceil(groups * u64::from(repeat)) < needed {
        repeat /= 2;
    }
    repeat
}

/// The rule's configuration for a matrix of these statistics on a GPU of `sm_count` SMs.
pub(crate) fn fixed_rule(stats: &RowStats, sm_count: u32) -> ParamConfig {
    let coop = rule_coop(stats);
    let repeat = rule_repeat(stats.rows, coop, BLOCK_SIZE, sm_count);
    ParamConfig { coop, repeat, block_size: BLOCK_SIZE }
}

/// The length from which a row is long, and split into chunks by the parametrised kernel: a row whose
/// group, of Auto's width ([`auto_coop`], the narrowest a product starts with), would take more than [`LONG_ROW_SLACK`] times the mean steps of the
/// product, and at least [`LONG_ROW_MIN_STEPS`] steps.
pub fn long_row_min_len(stats: &RowStats, sm_count: u32) -> u32 {
    let mean_steps = (stats.nnz as u64).div_ceil(resident_threads(sm_count));
    let steps = LONG_ROW_MIN_STEPS.max(LONG_ROW_SLACK * mean_steps);
    u32::try_from(u64::from(auto_coop(stats)) * steps).unwrap_or(u32::MAX)
}

/// The panel size, KiB, of the column-panel kernel [`Kernel::Auto`] runs where [`panels_term`]
/// applies, for values of `value_bytes` bytes: the fastest of the four on short-wide, 64 KiB in f32
/// (16,384 columns) and 96 KiB in f64 (12,288), whose panel of 64 KiB would cut each row into
/// segments of 19 entries (H100, `docs/PERF.md` section 33, `coop-rule/`: 89.6 µs at 96 KiB
/// against 99.2 µs at 64). Volta and every GPU from Ampere grant a block 96 KiB; Turing grants 64,
/// so there Auto's f64 panel plan is refused and Auto takes its rule without the term
/// ([`Kernel::auto_without_terms`]).
pub fn auto_panel_kib(value_bytes: usize) -> u32 {
    if value_bytes > 4 { 96 } else { 64 }
}

/// Threads per block of Auto's column-panel kernel: the benchmark's (16 warps).
pub const AUTO_PANEL_BLOCK_SIZE: u32 = 512;

/// Mean entries a row holds in one of Auto's panels ([`auto_panel_kib`]) from which Auto takes the
/// column-panel kernel: each (row, panel) segment pays a table read, a reduction and a partial
/// sum, which enough entries outweigh. Measured on short-wide (H100, 2026-11-27,
/// `docs/bench/2026-11-27-panel-budgets-h100`): 39 entries a segment in f32 (64 KiB panels) ran
/// 1.57x cuSPARSE, 19 in f64 (64 KiB) 1.08x and 29 (96 KiB) 1.21x, each the fastest of ours (in
/// f64 since the kernel's register budget, `abi::REGISTER_BUDGETS`: at the driver's 32 registers
/// it ran 0.72-0.73x); 14.5 in f64 (48 KiB) ran 0.84x, level with the balanced kernel. So the
/// bound lies between 14.5 and 19, and 16 is a choice inside that gap, not a measured edge. The
/// benchmark times the kernel from 8 entries in a 48 KiB panel, and [`panels_term`] asks for that
/// too.
pub const PANELS_MIN_SEGMENT: f64 = 16.0;

/// The benchmark's floor for timing the column-panel kernel: mean entries a row holds in a panel
/// of the smallest size, 48 KiB ([`panels_timed`], which `benches/src/variants.rs` asks too).
pub const PANELS_BENCH_MIN_SEGMENT: f64 = 8.0;

/// `x`'s bytes over the L2's from which Auto takes the column-panel kernel: `x` far past what an
/// SM's L1 holds, so that every other kernel's gathers each cost an L2 sector (short-wide's `x` is
/// 4.4 MB in f32 against 50-60 MB of L2: 0.07-0.09). No matrix of the public real set comes near
/// (its widest `x` with long rows is 0.2 MB); a thirty-second of the L2 is 1.6 MB on an H100.
pub const PANELS_MIN_X_L2: f64 = 1.0 / 32.0;

/// Blocks per SM whose panels the entries must be worth at least: the entries at least this many
/// times the SMs times a panel's columns, so that each resident block reads more entries than it
/// stages `x` (the plan's own grid asks for one panel's worth a block).
pub const PANELS_MIN_BLOCKS_PER_SM: u64 = 2;

/// The column-panel term of [`Kernel::Auto`] (`Kernel::auto_for`): the column-panel kernel at
/// [`auto_panel_kib`] KiB and [`AUTO_PANEL_BLOCK_SIZE`] threads for a matrix of few, long rows over
/// a wide `x`, where every other kernel's gathers of `x` cost a sector of L2 each; `None` elsewhere.
/// It applies where all of these hold, with values of `value_bytes` bytes on `target`:
/// - the benchmark times the kernel on the matrix ([`panels_timed`]), and a row's mean entries in
///   one of Auto's panels are at least [`PANELS_MIN_SEGMENT`];
/// - `x` is at least [`PANELS_MIN_X_L2`] of the L2;
/// - the entries are worth [`PANELS_MIN_BLOCKS_PER_SM`] staged panels per SM.
///
/// Of the committed runs only the suite's short-wide matrix at full size meets it, in both
/// precisions (`benches/tests/auto_rule.rs` checks this on every matrix). Constant time.
pub fn panels_term(stats: &RowStats, value_bytes: usize, target: Target) -> Option<Kernel> {
    if !panels_timed(stats, value_bytes) {
        return None;
    }
    let panel_kib = auto_panel_kib(value_bytes);
    let (auto_segment, panel_cols) = panel_segment(stats, panel_kib, value_bytes)?;
    let x_bytes = stats.cols as f64 * value_bytes as f64;
    let staged = PANELS_MIN_BLOCKS_PER_SM
        .saturating_mul(u64::from(target.sm_count.max(1)))
        .saturating_mul(panel_cols as u64);
    let applies = auto_segment >= PANELS_MIN_SEGMENT
        && x_bytes >= PANELS_MIN_X_L2 * target.l2_bytes as f64
        && stats.nnz as u64 >= staged;
    applies.then_some(Kernel::CsrPanels { panel_kib, block_size: AUTO_PANEL_BLOCK_SIZE })
}

/// Whether the benchmark times the column-panel kernel on a matrix of `stats` with values of
/// `value_bytes` bytes: it has entries, and its rows hold at least [`PANELS_BENCH_MIN_SEGMENT`]
/// entries on average in a panel of the smallest size (`Kernel::PANEL_KIB`). [`panels_term`] asks
/// for it too, so that Auto never takes the kernel where the runs could not have timed it.
pub fn panels_timed(stats: &RowStats, value_bytes: usize) -> bool {
    let smallest =
        kernels_gpu::abi::CSR_PANEL_KIB.iter().copied().min().unwrap_or(auto_panel_kib(value_bytes));
    panel_segment(stats, smallest, value_bytes)
        .is_some_and(|(segment, _)| segment >= PANELS_BENCH_MIN_SEGMENT)
}

/// A row's mean entries in one panel of `panel_kib` KiB of values of `value_bytes` bytes
/// (`nnz / (rows × panels)`), and the panel's columns; `None` for a matrix without entries, rows or
/// columns, or values of no size.
fn panel_segment(stats: &RowStats, panel_kib: u32, value_bytes: usize) -> Option<(f64, usize)> {
    if stats.nnz == 0 || stats.rows == 0 || stats.cols == 0 || value_bytes == 0 {
        return None;
    }
    let value = u32::try_from(value_bytes).ok()?;
    let panel_cols = kernels_gpu::abi::csr_panel_cols(panel_kib, value).max(1) as usize;
    let panels = stats.cols.div_ceil(panel_cols).max(1);
    Some((stats.nnz as f64 / (stats.rows as f64 * panels as f64), panel_cols))
}

/// The longest row from which Auto leaves the ELL copy ([`ell_copy_term`]): a thread walks a row
/// of ELL alone, a batch of 8 slots after another, so long rows are a long chain; on band-64 (rows
/// of up to 81) the vector kernel's 8 lanes a row were 1.3x faster in f32, on fem3d-27 (27) the copy
/// was 4-5% faster than Auto's vector kernel (H100, docs/PERF.md section 28).
pub const ELL_COPY_MAX_ROW: usize = 32;

/// The longest row over the mean from which Auto leaves the ELL copy: ELL pads every row to the
/// longest, and its padding slots are loaded as entries are. At 1.33 (planar: rows of 3 to 8,
/// mean 6) the copy was 11-16% slower than the thread-per-row CSR kernel; at 1.00-1.02 (the
/// stencils, fem3d-27) 4-13% faster (H100, docs/PERF.md section 28).
pub const ELL_COPY_MAX_PADDING: f64 = 1.05;

/// The matrix's CSR bytes over the L2's from which Auto takes the ELL copy: where each product
/// streams the matrix from HBM, whatever the regime, which is where it was measured (the suite's
/// matrices are 4-8 times an H100's L2); a matrix the L2 holds is bound by other things than the
/// bytes the copy saves.
pub const ELL_COPY_MIN_L2: f64 = 2.0;

/// The ELL-copy term of [`Kernel::Auto`] (`Kernel::auto_for`): [`Kernel::CsrEllCopy`] for a matrix
/// whose rows all have about one length, at most [`ELL_COPY_MAX_ROW`] entries, the longest at most
/// [`ELL_COPY_MAX_PADDING`] times the mean, and whose CSR bytes (values of `value_bytes` bytes) are
/// at least [`ELL_COPY_MIN_L2`] times `target`'s L2; `None` elsewhere. There ELL's padding is a few
/// percent, it reads no row offsets, and its column-major slots load a batch at a time. Constant
/// time.
pub fn ell_copy_term(stats: &RowStats, value_bytes: usize, target: Target) -> Option<Kernel> {
    if stats.nnz == 0 || stats.rows == 0 {
        return None;
    }
    let applies = stats.max <= ELL_COPY_MAX_ROW
        && stats.max as f64 <= ELL_COPY_MAX_PADDING * stats.mean
        && past_the_copy_l2(stats, value_bytes, target);
    applies.then_some(Kernel::CsrEllCopy)
}

/// Whether a matrix's CSR bytes (values of `value_bytes` bytes) are at least [`ELL_COPY_MIN_L2`]
/// times `target`'s L2, where both copies' terms apply.
fn past_the_copy_l2(stats: &RowStats, value_bytes: usize, target: Target) -> bool {
    csr_bytes(stats.rows, stats.nnz, value_bytes) as f64 >= ELL_COPY_MIN_L2 * target.l2_bytes as f64
}

/// The DIA copy's bytes over the CSR matrix's up to which Auto takes it where the ELL-copy term
/// does not apply ([`dia_copy_term`]): DIA reads every slot of its diagonals, present or not, so it
/// must save bytes to win, but its walk streams its own bytes about as well as the vector kernel
/// streams CSR's (band-64 f64, whose DIA takes 0.88 of its CSR bytes: DIA 83.8 µs, the vector
/// kernel 97.0, 1.16x; in f32, at 0.67, 1.53x). The bound keeps 8% of margin below the break-even;
/// it holds for f32 as well, where no matrix of the suite falls between 0.85 and 0.92. (Before the
/// f64 walk's register budget, `abi::REGISTER_BUDGETS`, DIA reached 74% of the streaming bandwidth
/// on its own bytes and the bound was 0.85: H100, docs/PERF.md sections 31 and 32.)
pub const DIA_COPY_MAX_BYTES: f64 = 0.92;

/// Whether [`Kernel::Auto`] looks for a DIA copy of a matrix the ELL-copy term leaves
/// ([`ell_copy_term`]): a matrix without rows longer than DIA's diagonals
/// ([`DIA_MAX_DIAGONALS`](kernels_gpu::abi::DIA_MAX_DIAGONALS)) whose CSR bytes (values of
/// `value_bytes` bytes) are at least [`ELL_COPY_MIN_L2`] times `target`'s L2. Only the device,
/// which holds the columns, can tell how many diagonals there are: the plan then builds the copy
/// where it is DIA of at most [`DIA_COPY_MAX_BYTES`] times the CSR bytes, and else keeps the rule's
/// kernel (finding out costs one pass over the columns, once per matrix). Constant time.
pub fn dia_copy_term(stats: &RowStats, value_bytes: usize, target: Target) -> bool {
    stats.nnz > 0
        && stats.max <= kernels_gpu::abi::DIA_MAX_DIAGONALS as usize
        && past_the_copy_l2(stats, value_bytes, target)
}

/// The compressed columns' bytes over the CSR columns' (4 bytes an entry) up to which Auto takes
/// them ([`compressed_copy_term`]). Where every column compresses they take 2 bytes an entry and 8
/// a segment of 32 rows, about 0.5-0.53 on the suite's matrices; planar, whose Z-order jumps leave
/// 5% of its entries in plain segments, takes 0.54. On an H100 the compressed-index kernel was
/// faster than the CSR kernels on every matrix of the suite that compresses, by 10-25% (docs/PERF.md,
/// section 37); the bound leaves room for 20% of the entries in plain segments, where a segment
/// costs what a CSR one does.
pub const COMPRESSED_COPY_MAX_COLUMN_BYTES: f64 = 0.6;

/// The compressed-copy term of [`Kernel::Auto`]: for a matrix whose CSR bytes (values of
/// `value_bytes` bytes) are at least [`ELL_COPY_MIN_L2`] times `target`'s L2, and to which the rule
/// gives `chosen`, a thread a row ([`Kernel::CsrScalar`]) or a group a row
/// ([`Kernel::CsrVector`]: rows of about one length, none long), the same width on the matrix's
/// compressed columns, [`Kernel::CsrCompressedCopy`]; `None` elsewhere. Only the device, which holds
/// the columns, can tell how well they compress: the plan then builds them where they take at most
/// [`COMPRESSED_COPY_MAX_COLUMN_BYTES`] of the CSR columns' bytes, and else keeps `chosen` (finding
/// out costs one pass over the columns, once per matrix). Constant time.
pub fn compressed_copy_term(
    chosen: Kernel,
    stats: &RowStats,
    value_bytes: usize,
    target: Target,
) -> Option<Kernel> {
    let coop = match chosen {
        Kernel::CsrScalar { .. } => 1,
        Kernel::CsrVector { coop, .. } => coop,
        _ => return None,
    };
    (stats.nnz > 0 && past_the_copy_l2(stats, value_bytes, target))
        .then_some(Kernel::CsrCompressedCopy { coop })
}

/// What the fitted rule knows of the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub sm_count: u32,
    /// The L2 cache, bytes (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`).
    pub l2_bytes: u64,
}

/// One fact the fitted rule may split on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// Mean entries per row: the width a row needs.
    Mean,
    /// Standard deviation of the row lengths over their mean: how unequal a warp's rows are.
    Cv,
    /// The longest row over the mean: whether a few rows dominate.
    LongestOverMean,
    /// Rows times a warp over the GPU's resident threads: how full a warp per row keeps it
    /// (occupancy).
    Fill,
    /// One product's bytes (the CSR arrays, `x` and `y`) over the L2: below 1 a hot product reads
    /// the matrix from L2.
    L2Share,
    /// Bytes of a value: 4 (f32) or 8 (f64).
    ValueBytes,
}

impl Feature {
    pub const ALL: [Feature; 6] = [
        Feature::Mean,
        Feature::Cv,
        Feature::LongestOverMean,
        Feature::Fill,
        Feature::L2Share,
        Feature::ValueBytes,
    ];

    /// The feature's name, as the printed rule shows it.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Mean => "mean",
            Feature::Cv => "cv",
            Feature::LongestOverMean => "longest/mean",
            Feature::Fill => "fill",
            Feature::L2Share => "bytes/L2",
            Feature::ValueBytes => "value bytes",
        }
    }
}

/// A matrix's [`Feature`]s on a GPU, in one precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Features([f64; Feature::ALL.len()]);

impl Features {
    /// The features of a matrix of these statistics, with values of `value_bytes` bytes, on `target`.
    pub fn of(stats: &RowStats, value_bytes: usize, target: Target) -> Self {
        let mean = stats.mean;
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        // In f64: statistics of any size make a feature, never an overflow.
        let (rows, cols, nnz, value) =
            (stats.rows as f64, stats.cols as f64, stats.nnz as f64, value_bytes as f64);
        let bytes = (rows + 1.0) * 4.0 + nnz * (4.0 + value) + (rows + cols) * value;
        let warps = rows * f64::from(WARP_SIZE);
        Features([
            mean,
            ratio(stats.std_dev, mean),
            ratio(stats.max as f64, mean),
            ratio(warps, resident_threads(target.sm_count) as f64),
            ratio(bytes, target.l2_bytes as f64),
            value_bytes as f64,
        ])
    }

    pub fn get(&self, feature: Feature) -> f64 {
        self.0[feature as usize]
    }
}

/// One node of a [`Rule`]: a choice, or a test of one feature that sends the matrix to the node at
/// `below` (the feature under `threshold`) or at `above`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Node {
    /// The rule's choice. [`Kernel::Auto`] stands for the hand-calibrated rule ([`Kernel::auto`]).
    Leaf(Kernel),
    /// A group of lanes per row sized to the rows and the GPU: the vector kernel (128 threads per
    /// block) whose `coop` is the smallest width giving each lane at most `entries_per_lane` of a
    /// mean row and bringing `rows x coop` to `min_fill` of the GPU's resident threads (Auto's width
    /// is 8 entries per lane at [`AUTO_MIN_FILL`]), or one thread per row where that is one lane
    /// ([`width_kernel`]). A width that follows the mean and the rows carries from the matrices
    /// measured to others, where a fixed width would not.
    Width {
        entries_per_lane: u32,
        min_fill: f64,
    },
    Split {
        feature: Feature,
        threshold: f64,
        below: usize,
        above: usize,
    },
}

/// The kernel of a [`Node::Width`] leaf for a matrix of these statistics on a GPU of `sm_count` SMs.
pub fn width_kernel(entries_per_lane: u32, min_fill: f64, stats: &RowStats, sm_count: u32) -> Kernel {
    match filling_width(stats, sm_count, f64::from(entries_per_lane.max(1)), min_fill) {
        1 => Kernel::CsrScalar { block_size: BLOCK_SIZE },
        coop => Kernel::CsrVector { coop, block_size: BLOCK_SIZE },
    }
}

/// A decision tree over [`Features`] whose leaves are kernels: its nodes, the root first, each split
/// pointing at later nodes. Printable as nested `if`s ([`fmt::Display`]); a choice walks at most
/// one node per level, so it costs a few comparisons.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule<'a> {
    pub nodes: &'a [Node],
}

impl Rule<'_> {
    /// The kernel the tree gives a matrix of these features and statistics on a GPU of `sm_count`
    /// SMs, through [`resolve_leaf`]. A tree whose splits do not point forward ends at its root's
    /// first leaf rather than loop: the walk takes at most one step per node.
    pub fn choose(&self, features: &Features, stats: &RowStats, sm_count: u32) -> Kernel {
        let mut at = 0;
        for _ in 0..self.nodes.len() {
            match self.nodes.get(at) {
                Some(Node::Leaf(kernel)) => return resolve_leaf(*kernel, stats, sm_count),
                Some(Node::Width { entries_per_lane, min_fill }) => {
                    let kernel = width_kernel(*entries_per_lane, *min_fill, stats, sm_count);
                    return resolve_leaf(kernel, stats, sm_count);
                }
                Some(Node::Split { feature, threshold, below, above }) => {
                    at = if features.get(*feature) < *threshold { *below } else { *above };
                }
                None => break,
            }
        }
        Kernel::auto(stats, sm_count)
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, at: usize, depth: usize) -> fmt::Result {
        let indent = "  ".repeat(depth);
        match self.nodes.get(at) {
            Some(Node::Leaf(Kernel::Auto)) => writeln!(f, "{indent}auto (the hand-calibrated rule)"),
            Some(Node::Leaf(kernel)) => writeln!(f, "{indent}{kernel}"),
            Some(Node::Width { entries_per_lane, min_fill }) => writeln!(
                f,
                "{indent}vector kernel, a lane per {entries_per_lane} entries of the mean row, \
                 rows x lanes at least {:.1}% of the resident threads",
                min_fill * 100.0
            ),
            Some(Node::Split { feature, threshold, below, above }) if *below > at && *above > at => {
                writeln!(f, "{indent}if {} < {threshold:.3}:", feature.name())?;
                self.write(f, *below, depth + 1)?;
                writeln!(f, "{indent}else:")?;
                self.write(f, *above, depth + 1)
            }
            _ => writeln!(f, "{indent}(malformed node {at})"),
        }
    }
}

impl fmt::Display for Rule<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, 0, 0)
    }
}

/// The kernel a leaf stands for on a matrix: [`Kernel::Auto`] is the hand rule; a kernel that gives
/// each row to one group without splitting long ones (thread per row, vector, aligned) is taken only
/// where the hand rule would give the rows a group each too: not where rows are long
/// (`long_row_min_len`), since a row of a million entries would keep one warp busy for the whole
/// product, something no threshold fitted over the measured matrices can promise to see; nor where
/// the hand rule takes the balanced kernel (rows of unequal lengths, or too few rows to fill the GPU),
/// whose thresholds were measured on the same matrices (vibrobox, wide-400: the vector kernel at
/// Auto's width ran 15-20% behind the balanced kernel there).
pub fn resolve_leaf(leaf: Kernel, stats: &RowStats, sm_count: u32) -> Kernel {
    let unsplit =
        matches!(leaf, Kernel::CsrScalar { .. } | Kernel::CsrVector { .. } | Kernel::CsrAligned { .. });
    let long_rows = stats.max as u64 >= u64::from(long_row_min_len(stats, sm_count));
    let balanced = is_irregular(stats) || has_few_rows(stats, sm_count);
    if leaf == Kernel::Auto || (unsplit && (long_rows || balanced)) {
        Kernel::auto(stats, sm_count)
    } else {
        leaf
    }
}

/// The rule fitted to the cold regime of the public real set and the suite at both sizes
/// (`docs/bench/2026-11-23-regimes-{real,small,full}`, one H100):
/// `cargo test -p spmv-bench --test auto_rule -- --nocapture` prints it, its fit and its
/// leave-one-out figure (`docs/PERF.md`, section 17). The fit found no split worth its noise: one
/// leaf, Auto's own width (8 entries per lane, half the GPU filled) run by the plain row kernels
/// (thread per row, vector) instead of the parametrised one, which [`resolve_leaf`] keeps for
/// matrices with long rows, where the hand rule also takes the balanced kernel for irregular rows.
pub const COLD_RULE: Rule<'static> = Rule { nodes: &COLD_NODES };

const COLD_NODES: [Node; 1] = [Node::Width { entries_per_lane: 8, min_fill: AUTO_MIN_FILL }];

/// The rule of the hot regime, where products follow each other and a matrix that fits in the L2 is
/// read from it (`docs/PERF.md`, sections 17 and 41). Its leaf for such a matrix is the tree the fit
/// gives the hot timings of every kernel on the public real set
/// (`docs/bench/2026-11-26-regimes-real-graph`, one H100): the plain row kernels at a lane per 3
/// entries of the mean row, more lanes than cold, since from L2 a row's gathers cost less than the
/// lanes left idle; and filling a quarter of the GPU's resident threads where cold fills half, since
/// from L2 fewer loads in flight keep it busy, which takes matrices of some ten thousand short rows
/// one width narrower (CoSP2: 16 lanes to 8). The rule is within 3% of the fastest on 72% of the
/// samples, and the leaf fitted without each matrix in turn on 72% of them. Larger matrices stream
/// from memory as a cold product does, and no run times them in these regimes yet, so they keep
/// [`COLD_RULE`]: the threshold is the L2's size, not a fit.
pub const HOT_RULE: Rule<'static> = Rule { nodes: &HOT_NODES };

const HOT_NODES: [Node; 3] = [
    Node::Split { feature: Feature::L2Share, threshold: 1.0, below: 1, above: 2 },
    Node::Width { entries_per_lane: 3, min_fill: AUTO_MIN_FILL / 2.0 },
    COLD_NODES[0],
];

/// The rule of products replayed in a CUDA graph: [`HOT_RULE`]'s tree with the leaf the fit gives
/// the graph timings of the same run, a lane per 3 entries filling an eighth of the resident
/// threads. Where the host's cost is gone, a small matrix's product is its kernel's chains of
/// loads, and more lanes than the rows need only lengthen them: CoSP2 (12 k rows of 16) ran 1.2x
/// faster at 8 lanes than at the 16 that filling half the GPU gives (a quarter gives 8 too), and
/// lp_maros_r7 (3 k rows of 46) 1.05-1.10x at 16 against 32 (two runs, `docs/PERF.md` section 41).
/// The rule is within 3% of the fastest on 74% of the graph samples, where [`HOT_RULE`] is on 70%,
/// and the leaf fitted without each matrix in turn on 72%.
pub const GRAPH_RULE: Rule<'static> = Rule { nodes: &GRAPH_NODES };

const GRAPH_NODES: [Node; 3] =
    [HOT_NODES[0], Node::Width { entries_per_lane: 3, min_fill: AUTO_MIN_FILL / 4.0 }, COLD_NODES[0]];

/// The rule for products in `regime`: [`COLD_RULE`], [`HOT_RULE`] or [`GRAPH_RULE`].
pub fn rule_for(regime: Regime) -> Rule<'static> {
    match regime {
        Regime::Cold => COLD_RULE,
        Regime::Hot => HOT_RULE,
        Regime::Graph => GRAPH_RULE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SMs of an H100 SXM.
    const H100_SMS: u32 = 132;

    fn stats(rows: usize, nnz: usize) -> RowStats {
        let mean = if rows == 0 { 0.0 } else { nnz as f64 / rows as f64 };
        RowStats { rows, cols: rows, nnz, mean, std_dev: 0.0, max: 0, empty_rows: 0 }
    }

    #[test]
    fn coop_is_the_power_of_two_above_the_root_of_the_mean() {
        let coop = |mean: usize| rule_coop(&stats(1000, 1000 * mean));
        assert_eq!(rule_coop(&stats(0, 0)), 1);
        assert_eq!(coop(0), 1);
        assert_eq!(coop(1), 1);
        assert_eq!(coop(2), 2);
        assert_eq!(coop(4), 2);
        assert_eq!(coop(5), 4);
        assert_eq!(coop(16), 4);
        assert_eq!(coop(17), 8);
        assert_eq!(coop(64), 8);
        assert_eq!(coop(300), 32);
        assert_eq!(coop(100_000), 32);
        // dc1: mean 6.5, sqrt 2.55.
        assert_eq!(rule_coop(&stats(116_835, 766_396)), 4);
    }

    #[test]
    fn an_h100_needs_13_waves_of_blocks() {
        assert_eq!(min_blocks(H100_SMS), 132 * 16 * 13);
        // The paper's card: 14 SMs, but with Fermi's 8 resident blocks the same ratio gave 1500.
        assert!((14 * 8 * u64::from(RULE_MIN_WAVES)).abs_diff(1500) < 112);
    }

    #[test]
    fn repeat_keeps_enough_blocks() {
        let needed = min_blocks(H100_SMS);
        // Small matrices: one row per group.
        assert_eq!(rule_repeat(0, 4, 128, H100_SMS), 1);
        assert_eq!(rule_repeat(116_835, 4, 128, H100_SMS), 1);
        for rows in [1usize, 10_000, 1 << 20, 3_000_000, 50_000_000, 1 << 32] {
            for coop in CSR_PARAM_COOPS {
                let r = rule_repeat(rows, coop, 128, H100_SMS);
                assert!(r.is_power_of_two() && r <= MAX_REPEAT, "{rows} {coop}: {r}");
                let groups = u64::from(128 / coop);
                let blocks = |r: u32| (rows as u64).div_ceil(groups * u64::from(r));
                if r > 1 {
                    assert!(blocks(r) >= needed, "{rows} {coop}: {r}");
                }
                if r < MAX_REPEAT {
                    assert!(blocks(2 * r) < needed, "{rows} {coop}: {r} is not the largest");
                }
            }
        }
        // 8M rows at one thread per row: 65,536 blocks at repeat 1, 32,768 at 2, 16,384 at 4.
        assert_eq!(rule_repeat(8 << 20, 1, 128, H100_SMS), 2);
    }

    #[test]
    fn rule_starts_at_128_threads() {
        let c = fixed_rule(&stats(116_835, 766_396), H100_SMS);
        assert_eq!(c, ParamConfig { coop: 4, repeat: 1, block_size: 128 });
        assert_eq!(
            c.kernel(),
            Kernel::CsrParam { coop: 4, repeat: 1, block_size: 128, split_long_rows: true }
        );
    }

    #[test]
    fn irregular_rows_by_their_coefficient_of_variation() {
        // Only the mean and the standard deviation count.
        let with = |mean: f64, std_dev: f64| RowStats { mean, std_dev, ..stats(1000, 1000) };
        // The suite's regular matrices, and Andrews (cv 0.27).
        assert!(!is_irregular(&with(27.0, 0.0)));
        assert!(!is_irregular(&with(5.0, 1.5)));
        assert!(!is_irregular(&with(12.7, 3.4)));
        // A spread of rows of 0 to 63 entries (cv 0.58), vibrobox (0.6).
        assert!(is_irregular(&with(31.5, 18.5)));
        assert!(is_irregular(&with(26.8, 16.1)));
        // Short-wide, web graph, circuit.
        assert!(is_irregular(&with(2579.0, 3452.0)));
        assert!(is_irregular(&with(3.1, 26.6)));
        assert!(is_irregular(&with(6.2, 1830.0)));
        // No entries, or no rows.
        assert!(!is_irregular(&with(0.0, 0.0)));
        assert!(!is_irregular(&stats(0, 0)));
    }

    #[test]
    fn long_rows_are_long_for_the_group_and_the_product() {
        // dc1 on an H100: 766k entries over 270k resident threads is 3 steps; 4 * 3 < 32, and Auto
        // gives rows of 6.6 entries one lane, so rows from 32 entries on are split, both of dc1's huge
        // rows among them.
        assert_eq!(long_row_min_len(&stats(116_835, 766_396), H100_SMS), 32);
        // A large matrix of the same mean: 100M entries make 370 steps per thread.
        let mean_steps = 100_000_000u64.div_ceil(132 * 2048);
        assert_eq!(long_row_min_len(&stats(15_000_000, 100_000_000), H100_SMS) as u64, 4 * mean_steps);
        // Wide rows get wide groups, and the floor scales with them.
        assert_eq!(long_row_min_len(&stats(1000, 300_000), H100_SMS), 32 * 32);
        // One thread per row: 32 entries make a row worth a warp.
        assert_eq!(long_row_min_len(&stats(1000, 1000), H100_SMS), 32);
        assert_eq!(long_row_min_len(&stats(0, 0), H100_SMS), 32);
    }

    const TARGET: Target = Target { sm_count: H100_SMS, l2_bytes: 50 << 20 };

    fn choose(rule: Rule<'_>, stats: &RowStats, value_bytes: usize) -> Kernel {
        rule.choose(&Features::of(stats, value_bytes, TARGET), stats, TARGET.sm_count)
    }

    fn regular(rows: usize, mean: usize) -> RowStats {
        RowStats { max: mean + 2, std_dev: 1.0, ..stats(rows, rows * mean) }
    }

    #[test]
    fn features_read_the_rows_and_the_gpu() {
        // 270,336 resident threads; 4.2 M rows of 5 entries, f32: 88 MB against 50 MiB of L2.
        let s = RowStats { std_dev: 0.5, max: 10, ..stats(4_200_000, 21_000_000) };
        let f = Features::of(&s, 4, TARGET);
        assert_eq!(f.get(Feature::Mean), 5.0);
        assert_eq!(f.get(Feature::Cv), 0.1);
        assert_eq!(f.get(Feature::LongestOverMean), 2.0);
        assert!((f.get(Feature::Fill) - 4_200_000.0 * 32.0 / 270_336.0).abs() < 1e-9);
        let bytes = 4_200_001.0 * 4.0 + 21_000_000.0 * 8.0 + 8_400_000.0 * 4.0;
        assert!((f.get(Feature::L2Share) - bytes / (50u64 << 20) as f64).abs() < 1e-9);
        assert_eq!(f.get(Feature::ValueBytes), 4.0);
        // No rows, no L2: zeros, not NaN.
        let empty = Features::of(&stats(0, 0), 8, Target { sm_count: 1, l2_bytes: 0 });
        assert!(Feature::ALL.iter().all(|&g| !empty.get(g).is_nan()));
    }

    /// The committed rule: Auto's width, by the plain row kernels, where no row is long.
    #[test]
    fn the_cold_rule_runs_auto_widths_on_the_row_kernels() {
        // Stencil-like: millions of rows of 5 fill the GPU at a thread each.
        assert_eq!(choose(COLD_RULE, &regular(4_000_000, 5), 4), Kernel::CsrScalar { block_size: 128 });
        // fem3d-27-like: 729 k rows of 27, four lanes each (27 / 8).
        assert_eq!(
            choose(COLD_RULE, &regular(729_000, 27), 8),
            Kernel::CsrVector { coop: 4, block_size: 128 }
        );
        // A small matrix is widened to fill half the GPU: 12,288 rows need 11 lanes, so 16.
        assert_eq!(
            choose(COLD_RULE, &regular(12_288, 16), 4),
            Kernel::CsrVector { coop: 16, block_size: 128 }
        );
        // Long rows go to the hand rule: the parametrised kernel splits them, or the balanced kernel
        // takes irregular rows.
        let long = RowStats { max: 5000, ..regular(1_000_000, 5) };
        assert_eq!(choose(COLD_RULE, &long, 4), Kernel::auto(&long, H100_SMS));
        assert!(matches!(choose(COLD_RULE, &long, 4), Kernel::CsrParam { split_long_rows: true, .. }));
        let irregular = RowStats { std_dev: 30.0, max: 3000, ..regular(1_000_000, 5) };
        assert_eq!(choose(COLD_RULE, &irregular, 4), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        // Few rows: the balanced kernel, as the hand rule gives them.
        let few = RowStats { max: 5200, ..regular(25, 5000) };
        assert_eq!(choose(COLD_RULE, &few, 4), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        assert_eq!(rule_for(Regime::Cold), COLD_RULE);
    }

    /// The hot and graph rules: more lanes a row for a matrix the L2 holds, but less of the GPU to
    /// fill; the cold tree otherwise.
    #[test]
    fn the_hot_and_graph_rules_size_the_rows_of_matrices_in_l2() {
        assert_eq!(rule_for(Regime::Hot), HOT_RULE);
        assert_eq!(rule_for(Regime::Graph), GRAPH_RULE);
        for (regime, rule) in [(Regime::Hot, HOT_RULE), (Regime::Graph, GRAPH_RULE)] {
            // fem3d-27-like, f64: 236 MB against 50 MiB of L2, so the cold tree's four lanes.
            let large = regular(729_000, 27);
            assert_eq!(Kernel::auto_for(&large, 8, TARGET, regime), choose(COLD_RULE, &large, 8));
            assert_eq!(choose(rule, &large, 8), Kernel::CsrVector { coop: 4, block_size: 128 });
            // 100 k rows of 9, f32: 8 MB, read from L2: a lane per 3 entries (4 lanes) where cold
            // gives 2 (9 / 8 entries a lane, and half the GPU already filled).
            let small = regular(100_000, 9);
            assert_eq!(Kernel::auto_for(&small, 4, TARGET, regime), choose(rule, &small, 4));
            assert_eq!(choose(rule, &small, 4), Kernel::CsrVector { coop: 4, block_size: 128 });
            assert_eq!(choose(COLD_RULE, &small, 4), Kernel::CsrVector { coop: 2, block_size: 128 });
            // Long and irregular rows go to the hand rule, as cold.
            let irregular = RowStats { std_dev: 30.0, max: 3000, ..regular(100_000, 5) };
            assert_eq!(choose(rule, &irregular, 4), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        }
        // Few rows: hot and in a graph the rules fill less of the GPU than cold, so fewer lanes.
        // CoSP2 (12,288 rows of 16): cold fills half the GPU at 16 lanes, hot a quarter at 8, and in
        // a graph a lane per 3 entries gives 8; lp_maros_r7 (3,136 rows of 46): 32, 32 and 16.
        let cosp2 = regular(12_288, 16);
        let lanes = |rule, a: &RowStats| match choose(rule, a, 4) {
            Kernel::CsrVector { coop, .. } => coop,
            other => panic!("{other:?}"),
        };
        assert_eq!([COLD_RULE, HOT_RULE, GRAPH_RULE].map(|r| lanes(r, &cosp2)), [16, 8, 8]);
        let maros = regular(3_136, 46);
        assert_eq!([COLD_RULE, HOT_RULE, GRAPH_RULE].map(|r| lanes(r, &maros)), [32, 32, 16]);
    }

    /// Auto takes the ELL copy for the suite's stencils and fem3d-27 in every regime and precision,
    /// and not for planar (rows of 3 to 8), band-64 (rows up to 81), a stencil the L2 holds, or a
    /// matrix without entries.
    #[test]
    fn the_ell_copy_term_takes_large_matrices_of_equal_rows() {
        let suite = |rows: usize, nnz: usize, max: usize| RowStats { max, ..stats(rows, nnz) };
        let stencil2d = suite(4_000_000, 19_992_000, 5);
        let fem3d = suite(729_000, 19_248_832, 27);
        for a in [stencil2d, fem3d] {
            for value_bytes in [4, 8] {
                assert_eq!(ell_copy_term(&a, value_bytes, TARGET), Some(Kernel::CsrEllCopy), "{a:?}");
                for regime in [Regime::Cold, Regime::Hot, Regime::Graph] {
                    assert_eq!(Kernel::auto_for(&a, value_bytes, TARGET, regime), Kernel::CsrEllCopy);
                    assert_ne!(
                        Kernel::auto_without_terms(&a, value_bytes, TARGET, regime),
                        Kernel::CsrEllCopy
                    );
                }
            }
        }
        let planar = suite(4_194_304, 25_149_442, 8);
        let band = suite(312_000, 19_946_232, 81);
        let small = suite(100_000, 499_000, 5);
        for a in [planar, band, small, stats(0, 0), stats(1000, 0)] {
            assert_eq!(ell_copy_term(&a, 4, TARGET), None, "{a:?}");
            assert_eq!(ell_copy_term(&a, 8, TARGET), None, "{a:?}");
        }
    }

    /// Auto looks for a DIA copy of band-64 (rows of up to 81 past twice the L2), not of a matrix
    /// with a row longer than DIA's diagonals, the L2 holds, or without entries.
    #[test]
    fn the_dia_copy_term_looks_at_large_matrices_of_rows_up_to_128() {
        let suite = |rows: usize, nnz: usize, max: usize| RowStats { max, ..stats(rows, nnz) };
        let band = suite(312_000, 19_946_232, 81);
        let wide = suite(72_000, 28_728_000, 520);
        let small = suite(10_000, 640_000, 81);
        for value_bytes in [4, 8] {
            assert!(dia_copy_term(&band, value_bytes, TARGET), "{band:?}");
            for a in [wide, small, stats(0, 0), stats(1000, 0)] {
                assert!(!dia_copy_term(&a, value_bytes, TARGET), "{a:?}");
            }
        }
    }

    /// Auto looks at the compressed columns of the suite's wide-400, random-1pct and planar (large,
    /// rows a group or a thread each), at the rule's width, in every regime and precision; not
    /// where the rule balances the rows (powerlaw), takes the ELL copy (stencil2d-5), or the L2
    /// holds the matrix, nor without entries.
    #[test]
    fn the_compressed_copy_term_looks_where_the_rule_gives_rows_a_group() {
        let suite = |rows: usize, cols: usize, nnz: usize, std_dev: f64, max: usize| RowStats {
            cols,
            std_dev,
            max,
            ..stats(rows, nnz)
        };
        let wide = suite(50_000, 50_000, 19_985_208, 69.5, 520);
        let random = suite(100_000, 20_000, 19_998_426, 14.0, 262);
        let planar = suite(4_194_304, 4_194_304, 25_149_442, 1.0, 8);
        for value_bytes in [4, 8] {
            for regime in [Regime::Cold, Regime::Hot, Regime::Graph] {
                for (a, coop) in [(wide, 32), (random, 32), (planar, 1)] {
                    let chosen = Kernel::auto_for(&a, value_bytes, TARGET, regime);
                    let copy = compressed_copy_term(chosen, &a, value_bytes, TARGET);
                    assert_eq!(copy, Some(Kernel::CsrCompressedCopy { coop }), "{a:?} {regime:?} {chosen:?}");
                }
            }
        }
        let powerlaw = suite(6_500_000, 6_500_000, 19_842_839, 26.6, 6385);
        let stencil2d = suite(4_000_000, 4_000_000, 19_992_000, 0.04, 5);
        let small = suite(100_000, 100_000, 2_000_000, 14.0, 262);
        for a in [powerlaw, stencil2d, small, stats(0, 0), stats(1000, 0)] {
            for value_bytes in [4, 8] {
                let chosen = Kernel::auto_for(&a, value_bytes, TARGET, Regime::Cold);
                assert_eq!(compressed_copy_term(chosen, &a, value_bytes, TARGET), None, "{a:?} {chosen:?}");
            }
        }
        // Only the row kernels that give every row a thread or a group.
        let balanced = Kernel::CsrBalanced { block_size: BLOCK_SIZE };
        assert_eq!(compressed_copy_term(balanced, &wide, 4, TARGET), None);
        let scalar = Kernel::CsrScalar { block_size: BLOCK_SIZE };
        assert_eq!(
            compressed_copy_term(scalar, &wide, 4, TARGET),
            Some(Kernel::CsrCompressedCopy { coop: 1 })
        );
    }

    /// The suite's short-wide matrix at full size, f32 and f64 (rail4284's shape).
    fn short_wide() -> RowStats {
        RowStats { cols: 1_092_610, std_dev: 3_400.0, max: 26_000, ..stats(4_284, 11_048_707) }
    }

    /// Auto takes the column panels for few, long rows over a wide `x`, in every regime, and
    /// nowhere the rows are short per panel, `x` is small, or the entries too few.
    #[test]
    fn the_panels_term_takes_few_long_rows_over_a_wide_x() {
        let panels = |value_bytes| Kernel::CsrPanels {
            panel_kib: auto_panel_kib(value_bytes),
            block_size: AUTO_PANEL_BLOCK_SIZE,
        };
        assert_eq!((auto_panel_kib(4), auto_panel_kib(8)), (64, 96));
        let s = short_wide();
        // 39 entries a segment of a 64 KiB panel in f32, 29 of a 96 KiB panel in f64.
        assert_eq!(panels_term(&s, 4, TARGET), Some(panels(4)));
        assert_eq!(panels_term(&s, 8, TARGET), Some(panels(8)));
        for value_bytes in [4, 8] {
            for regime in [Regime::Cold, Regime::Hot, Regime::Graph] {
                assert_eq!(Kernel::auto_for(&s, value_bytes, TARGET, regime), panels(value_bytes));
                // Without the term: the fitted rule's choice, the balanced kernel for these rows.
                assert_eq!(
                    Kernel::auto_without_terms(&s, value_bytes, TARGET, regime),
                    Kernel::CsrBalanced { block_size: BLOCK_SIZE }
                );
            }
        }
        // Short-wide at a sixteenth of the entries (the suite's small size): 1,071 rows over 273 k
        // columns, 29 entries a row in a 48 KiB f32 panel, but 0.7 M entries are not worth two
        // of Auto's panels on each of 132 SMs (4.3 M f32, 3.2 M f64).
        let small = RowStats { cols: 273_152, ..stats(1_071, 712_579) };
        assert_eq!(panels_term(&small, 4, TARGET), None);
        assert_eq!(panels_term(&small, 8, TARGET), None);
        // A quarter of the density: 9.7 entries a row in a 64 KiB f32 panel, under 16.
        let sparser = RowStats { cols: 4 * 1_092_610, ..s };
        assert_eq!(panels_term(&sparser, 4, TARGET), None);
        assert_eq!(panels_term(&sparser, 8, TARGET), None);
        // An `x` that an L2 of 50 MiB holds many times over: 50,000 columns (0.2 MB in f32) of
        // long rows, as the suite's wide-400, and the real set's widest long-row matrices.
        let narrow_x = RowStats { cols: 50_000, ..regular(50_000, 400) };
        assert_eq!(panels_term(&narrow_x, 4, TARGET), None);
        assert_eq!(panels_term(&narrow_x, 8, TARGET), None);
        // Rows of 30 entries over a million columns: under a segment a panel.
        let short_rows = RowStats { cols: 1_000_000, ..regular(1_000_000, 30) };
        assert_eq!(panels_term(&short_rows, 4, TARGET), None);
        // Nothing to stage for: no entries, rows or columns.
        assert_eq!(panels_term(&stats(0, 0), 4, TARGET), None);
        assert_eq!(panels_term(&RowStats { cols: 0, ..s }, 4, TARGET), None);
        // Rows twice as long: 58 entries a segment of a 96 KiB f64 panel.
        let longer = RowStats { nnz: 2 * s.nnz, ..s };
        assert_eq!(panels_term(&longer, 8, TARGET), Some(panels(8)));
        // A GPU of more SMs asks for more entries: 11 M f32 entries are under two 64 KiB panels on
        // each of 400 SMs (13.1 M), 22 M f64 entries over two 96 KiB panels (9.8 M).
        let big_gpu = Target { sm_count: 400, ..TARGET };
        assert_eq!(panels_term(&s, 4, big_gpu), None);
        assert_eq!(panels_term(&longer, 8, big_gpu), Some(panels(8)));
        // A larger L2 asks for a larger `x`: 4.4 MB of f32 is under a thirty-second of 256 MiB
        // (8.4 MB), 8.7 MB of f64 over it.
        let big_l2 = Target { l2_bytes: 256 << 20, ..TARGET };
        assert_eq!(panels_term(&s, 4, big_l2), None);
        assert_eq!(panels_term(&longer, 8, big_l2), Some(panels(8)));
    }

    #[test]
    fn a_tree_walks_its_splits() {
        let nodes = [
            Node::Split { feature: Feature::Mean, threshold: 10.0, below: 1, above: 2 },
            Node::Leaf(Kernel::CsrMerge { block_size: 128 }),
            Node::Split { feature: Feature::ValueBytes, threshold: 6.0, below: 3, above: 4 },
            Node::Width { entries_per_lane: 2, min_fill: AUTO_MIN_FILL },
            Node::Leaf(Kernel::Auto),
        ];
        let rule = Rule { nodes: &nodes };
        assert_eq!(choose(rule, &regular(1_000_000, 5), 4), Kernel::CsrMerge { block_size: 128 });
        assert_eq!(choose(rule, &regular(1_000_000, 20), 4), Kernel::CsrVector { coop: 16, block_size: 128 });
        let wide = regular(1_000_000, 20);
        assert_eq!(choose(rule, &wide, 8), Kernel::auto(&wide, H100_SMS));
        let text = rule.to_string();
        assert_eq!(
            text,
            "if mean < 10.000:\n  csr-merge-b128\nelse:\n  if value bytes < 6.000:\n    vector kernel, a lane \
             per 2 entries of the mean row, rows x lanes at least 50.0% of the resident threads\n  else:\n    \
             auto (the hand-calibrated rule)\n"
        );
    }

    /// A tree whose splits point backwards or nowhere neither loops nor panics: it ends at the hand
    /// rule.
    #[test]
    fn a_malformed_tree_ends_at_the_hand_rule() {
        let s = regular(1_000_000, 5);
        let looping = [Node::Split { feature: Feature::Mean, threshold: 1.0, below: 0, above: 0 }];
        assert_eq!(choose(Rule { nodes: &looping }, &s, 4), Kernel::auto(&s, H100_SMS));
        let dangling = [Node::Split { feature: Feature::Mean, threshold: 1.0, below: 7, above: 7 }];
        assert_eq!(choose(Rule { nodes: &dangling }, &s, 4), Kernel::auto(&s, H100_SMS));
        assert_eq!(choose(Rule { nodes: &[] }, &s, 4), Kernel::auto(&s, H100_SMS));
        assert!(Rule { nodes: &looping }.to_string().contains("malformed"));
    }

    #[test]
    fn leaves_without_the_split_keep_away_from_long_rows_and_the_balanced_kernels_matrices() {
        let s = regular(1_000_000, 5);
        let scalar = Kernel::CsrScalar { block_size: 128 };
        assert_eq!(resolve_leaf(scalar, &s, H100_SMS), scalar);
        // 5 M entries over 270 k threads are 19 steps each: rows from 76 entries are long.
        let long = RowStats { max: 100, ..s };
        assert_eq!(resolve_leaf(scalar, &long, H100_SMS), Kernel::auto(&long, H100_SMS));
        // Rows the hand rule balances: unequal (cv 0.6), or too few for a warp each to fill the GPU.
        let unequal = RowStats { std_dev: 3.0, ..s };
        assert_eq!(resolve_leaf(scalar, &unequal, H100_SMS), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        let few = regular(2500, 400);
        assert_eq!(resolve_leaf(scalar, &few, H100_SMS), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        // Kernels that cope with long rows are kept whatever the rows.
        let merge = Kernel::CsrMerge { block_size: 256 };
        assert_eq!(resolve_leaf(merge, &long, H100_SMS), merge);
        assert_eq!(resolve_leaf(Kernel::Auto, &s, H100_SMS), Kernel::auto(&s, H100_SMS));
    }
}
