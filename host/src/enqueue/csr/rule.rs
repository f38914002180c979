//! The fixed rule of Reguly & Giles ("Efficient sparse matrix-vector multiplication on cache-based
//! GPUs", InPar 2012) for the parametrised CSR kernel (`kernels-gpu/src/csr/param.rs`), scaled from
//! their Fermi card to the GPU at hand (the tuner's starting point); [`Kernel::Auto`]'s own
//! configuration of that kernel, calibrated on the H100; the length from which a row counts as long;
//! and when Auto takes the balanced kernel (`kernels-gpu/src/csr/balanced.rs`) instead.
//!
//! Everything here reads the matrix's row statistics and the SM count only, so it runs in constant
//! time per product.

use super::kernel::Kernel;
use crate::formats::csr::RowStats;
use kernels_gpu::abi::{BLOCK_SIZE, CSR_PARAM_COOPS, LONG_ROW_CHUNK, RESIDENT_THREADS_PER_SM, WARP_SIZE};

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
/// `LONG_ROW_CHUNK / 32 = 8` steps, plus a fence, an atomic and the last warp's pass over the partial
/// sums, so splitting pays once it cuts a row's steps by 4 or more.
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
    let fill = AUTO_MIN_FILL * resident_threads(sm_count) as f64 / stats.rows.max(1) as f64;
    let coop = coop_at_least(fill.max(stats.mean / AUTO_ENTRIES_PER_LANE));
    ParamConfig { coop, repeat: 1, block_size: BLOCK_SIZE }
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
}
