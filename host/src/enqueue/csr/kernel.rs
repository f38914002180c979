//! [`Kernel`]: how a CSR product runs, the checks of its parameters, and the parameter sets the
//! kernels are compiled for.

use super::super::plan::Regime;
use super::rule::{
    Features, Target, auto_config, ell_copy_term, fixed_rule, has_few_rows, is_irregular, panels_term,
    rule_for,
};
use crate::formats::csr::RowStats;
use crate::{Error, FormatError, Result};
use kernels_gpu::abi::{self, BLOCK_SIZE, WARP_SIZE};

/// Which kernel computes a CSR product, with its launch parameters: the strategy of a
/// [`DeviceCsr`](crate::DeviceCsr), chosen per call ([`Gpu::spmv_with`](crate::Gpu::spmv_with)) or
/// once in a [`Plan`](crate::Plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Kernel {
    /// Chosen from the matrix's row statistics and the GPU by the rule fitted to measurements
    /// ([`Kernel::auto_for`], in constant time; for the regime a plan names,
    /// [`Gpu::plan_for`](crate::Gpu::plan_for), cold otherwise). For a large matrix of rows of one length that is
    /// [`Kernel::CsrEllCopy`], whose copy of the matrix the first plan allocates and the matrix keeps;
    /// for a large matrix of rows of up to 128 entries the first plan asks the device how many
    /// diagonals it has, once ([`dia_copy_term`](super::rule::dia_copy_term)), and takes the copy
    /// where it is DIA small enough; elsewhere, for a large matrix whose rows the rule gives a
    /// thread or a group each, it asks the device how far each segment's columns spread, once
    /// ([`compressed_copy_term`](super::rule::compressed_copy_term)), and takes
    /// [`Kernel::CsrCompressedCopy`] at the rule's width where the columns compress well enough.
    #[default]
    Auto,
    /// One thread per row (`kernels-gpu/src/csr/scalar.rs`).
    CsrScalar { block_size: u32 },
    /// `coop` threads per row, `coop` one of [`Kernel::VECTOR_COOPS`] (`kernels-gpu/src/csr/vector.rs`).
    CsrVector { coop: u32, block_size: u32 },
    /// `group` threads per row, `group` one of [`Kernel::ALIGNED_GROUPS`], with loads aligned to
    /// `group` entries, and `x` through the read-only data cache when `cached_x` (Baskaran &
    /// Bordawekar, 2008; `kernels-gpu/src/csr/aligned.rs`).
    CsrAligned { group: u32, cached_x: bool, block_size: u32 },
    /// Reguly & Giles' parametrised kernel (2012; `kernels-gpu/src/csr/param.rs`): `coop` threads per
    /// row (one of [`Kernel::PARAM_COOPS`]), `repeat >= 1` rows per group, `block_size` a multiple of
    /// 32 from [`Kernel::PARAM_MIN_BLOCK_SIZE`] to 1024. With `split_long_rows`, the matrix's long
    /// rows are spread over several warps instead of being left to one group.
    CsrParam { coop: u32, repeat: u32, block_size: u32, split_long_rows: bool },
    /// Row tasks of about equal work, one per warp, rows of at least [`Kernel::BALANCED_LONG_ROW`]
    /// entries split over several warps (CSR-Adaptive's row blocks, Greathouse & Daga 2014;
    /// `kernels-gpu/src/csr/balanced.rs`): for matrices whose row lengths vary widely. `block_size`
    /// a multiple of 32 up to [`Kernel::BALANCED_MAX_BLOCK_SIZE`].
    CsrBalanced { block_size: u32 },
    /// Merge path (Merrill & Garland, SC16; `kernels-gpu/src/csr/merge.rs`): the merged list of row
    /// ends and entries cut into equal tiles, one per warp, rows crossing tiles added up by a second,
    /// small launch. Balanced by construction, whatever the row lengths, and deterministic.
    /// `block_size` a multiple of 32 up to [`Kernel::MERGE_MAX_BLOCK_SIZE`].
    CsrMerge { block_size: u32 },
    /// The streaming engine (`kernels-gpu/src/stream/`): windows of consecutive rows reach shared
    /// memory through Hopper's bulk copy engine, several windows ahead of the warps that reduce them,
    /// so that the bytes in flight no longer depend on each thread's chain of dependent loads. Rows
    /// longer than a window take the long-row chunks. Needs a GPU of compute capability 9.0 or later
    /// (the sm_90 module); elsewhere planning it is [`Error::Unsupported`]. `stages`, one of
    /// [`Kernel::STREAM_STAGES`], is the depth of each block's ring of windows; the rest of the launch
    /// shape is fixed (`kernels_gpu::abi::STREAM_BLOCK_SIZE` threads, as many blocks as the SMs hold).
    CsrStream { stages: u32 },
    /// Column panels (`kernels-gpu/src/csr/panels.rs`; docs/PERF.md, section 18, next step (d)):
    /// each block copies a panel of `x`, `panel_kib` KiB (one of [`Kernel::PANEL_KIB`]), into shared
    /// memory once and sums its rows' entries in that panel from there, a row's entries of a panel
    /// found in a table the plan builds on the device; a second, small launch adds each row's
    /// partial sums in panel order (deterministic). `block_size` a multiple of 32 up to 1024.
    ///
    /// For matrices of few, long rows over a wide `x`: where every other kernel's gathers of `x`
    /// each cost a 32-byte sector from L2 for one element, because `x` is past L1 and a row's
    /// columns are scattered (the suite's short-wide matrix: 4,284 rows of 2,600 entries over
    /// 1.09 M columns). It wins where a row's mean entries per panel (`nnz / (rows x panels)`)
    /// are half a warp's worth or more ([`PANELS_MIN_SEGMENT`](super::rule::PANELS_MIN_SEGMENT):
    /// short-wide in f32, 39 in 64 KiB panels, ran 1.57x cuSPARSE on an H100, in f64, 29 in 96 KiB
    /// panels, 1.21x), so that the table and the partial sums, paid per (row, panel) segment, stay
    /// small beside the entries, and where `x` is well past L1 but each block's rows reuse its
    /// panel; on square matrices, whose rows are short and whose `x` is already reused through L1
    /// and L2, it loses. Auto chooses it where
    /// [`panels_term`](super::rule::panels_term) says so, and the tuner tries its other panel
    /// sizes there.
    ///
    /// A row whose column indices decrease somewhere has no run of entries per panel: the second
    /// launch sums it whole, gathering `x` from global memory (right, but slower for such rows).
    /// Needs a GPU whose blocks may take `panel_kib` KiB of shared memory
    /// ([`Error::InvalidKernel`] otherwise: 48 KiB everywhere, 96 KiB on Volta, 64 KiB on Turing,
    /// 160 KiB or more from Ampere). The plan owns its table and scratch, built on the device when
    /// it is made (enqueued on the stream, never waited for).
    CsrPanels { panel_kib: u32, block_size: u32 },
    /// A copy of the matrix in the ELL family that the plan builds on the device the first time it
    /// is asked for and the matrix keeps, as it keeps the other strategies' data
    /// (`host/src/enqueue/csr/ell_copy.rs`), multiplied a thread per row with no row offsets to
    /// read. The copy takes the most compact form the matrix allows, which only the device, holding
    /// the columns, can tell: DIA where the entries lie on at most 128 diagonals (no column stored;
    /// `kernels-gpu/src/formats/dia.rs`), else ELL with each column a 16-bit offset from its row
    /// where every column lies within `i16::MAX` of it (`compressed_ell.rs`), else plain ELL
    /// (`ell.rs`). The sums are ELL's bit for bit (DIA is taken only where every row's columns
    /// increase). On an H100, Auto with the copy reached 123-145% of the CSR floor on the stencils and fem3d-27, 1.54-2.06x
    /// cuSPARSE (docs/PERF.md, sections 28 and 30). The copy takes device memory for the matrix's
    /// lifetime (at most the matrix's entries again where rows are equal; counted in
    /// [`DeviceCsr::device_bytes`](crate::DeviceCsr::device_bytes)); it is built, and waited for,
    /// when first planned (not while the stream captures a graph), and is refused as
    /// [`Ell`](crate::formats::Ell) refuses padding past
    /// [`ELL_MAX_PADDING_RATIO`](crate::formats::ELL_MAX_PADDING_RATIO) times the CSR bytes, before
    /// anything is allocated ([`FormatError::EllPadding`](crate::FormatError::EllPadding)). New
    /// values ([`DeviceCsr::update_values`](crate::DeviceCsr::update_values)) reach the copy on the
    /// stream. Auto takes it where [`ell_copy_term`](super::rule::ell_copy_term) says so, and where
    /// [`dia_copy_term`](super::rule::dia_copy_term) does and the copy is DIA.
    CsrEllCopy,
    /// The compressed-index kernel (`kernels-gpu/src/formats/compressed.rs`) with `coop` threads
    /// per row, one of [`Kernel::COMPRESSED_COOPS`], over the matrix's column indices compressed on
    /// the device the first time a plan asks for them and kept by the matrix
    /// (`host/src/enqueue/csr/compressed_copy.rs`): per segment of 32 rows, a base column and a
    /// 16-bit offset an entry, or plain columns where the segment's columns span more than
    /// `u16::MAX`, as [`CompressedCsr`](crate::formats::CompressedCsr) stores them. The row offsets
    /// and values are the matrix's own, so the copy costs 2 bytes an entry of device memory where
    /// the columns compress (counted in [`DeviceCsr::device_bytes`](crate::DeviceCsr::device_bytes)),
    /// and new values need no refresh. Its `y` is bit for bit [`Kernel::CsrVector`]'s at the same
    /// `coop` (and [`Kernel::CsrScalar`]'s at one lane). Each entry of a compressed segment moves
    /// 2 bytes fewer: on an H100 the kernel reached 96-107% of the CSR floor on the large regular
    /// matrices where every CSR kernel stops at 81-88% (docs/PERF.md, section 37). The columns are
    /// built, and waited for, when first planned (not while the stream captures a graph).
    CsrCompressedCopy { coop: u32 },
}

impl Kernel {
    /// The widths `coop` of [`Kernel::CsrVector`].
    pub const VECTOR_COOPS: [u32; 5] = abi::CSR_VECTOR_COOPS;
    /// The widths `group` of [`Kernel::CsrAligned`].
    pub const ALIGNED_GROUPS: [u32; 3] = abi::CSR_ALIGNED_GROUPS;
    /// The widths `coop` of [`Kernel::CsrCompressedCopy`].
    pub const COMPRESSED_COOPS: [u32; 6] = abi::COMPRESSED_COOPS;
    /// The widths `coop` of [`Kernel::CsrParam`].
    pub const PARAM_COOPS: [u32; 6] = abi::CSR_PARAM_COOPS;
    /// The smallest block of [`Kernel::CsrParam`]: it is offered from 64 to 1024 threads per block,
    /// the range the benchmark compares (the tuner itself stays within Reguly & Giles' 96 to 512).
    pub const PARAM_MIN_BLOCK_SIZE: u32 = abi::CSR_PARAM_MIN_BLOCK_SIZE;
    /// The largest block of [`Kernel::CsrBalanced`] (its registers).
    pub const BALANCED_MAX_BLOCK_SIZE: u32 = abi::CSR_BALANCED_MAX_BLOCK_SIZE;
    /// The largest block of [`Kernel::CsrMerge`] (the shared memory its warps stage tiles in).
    pub const MERGE_MAX_BLOCK_SIZE: u32 = abi::CSR_MERGE_MAX_BLOCK_SIZE;
    /// The ring depths of [`Kernel::CsrStream`].
    pub const STREAM_STAGES: [u32; 3] = abi::STREAM_STAGES;
    /// The panel sizes, KiB of shared memory, of [`Kernel::CsrPanels`].
    pub const PANEL_KIB: [u32; 4] = abi::CSR_PANEL_KIB;
    /// Rows of at least this many entries are split over several warps by [`Kernel::CsrBalanced`].
    pub const BALANCED_LONG_ROW: u32 = abi::BALANCED_LONG_ROW;
    /// The largest block of every kernel.
    pub const MAX_BLOCK_SIZE: u32 = abi::MAX_BLOCK_SIZE;

    /// The kernel [`Kernel::Auto`] stands for in products of `regime`, with values of `value_bytes`
    /// bytes, on `target`: the column-panel kernel for few, long rows over a wide `x`
    /// ([`panels_term`](super::rule::panels_term)); the ELL copy for large matrices of rows of about
    /// one length ([`ell_copy_term`](super::rule::ell_copy_term)); elsewhere
    /// [`Kernel::auto_without_terms`]. A plan of `Auto` whose term's kernel is refused (column panels
    /// the GPU cannot give or a table past 32-bit indices; an ELL copy past its padding limit or
    /// the device's memory) takes [`Kernel::auto_without_terms`] instead. Constant time.
    pub fn auto_for(stats: &RowStats, value_bytes: usize, target: Target, regime: Regime) -> Kernel {
        panels_term(stats, value_bytes, target)
            .or_else(|| ell_copy_term(stats, value_bytes, target))
            .unwrap_or_else(|| Self::auto_without_terms(stats, value_bytes, target, regime))
    }

    /// [`Kernel::auto_for`] without its column-panel and ELL-copy terms: the leaf the fitted rule of
    /// `regime` gives the matrix (`rule.rs`, [`Rule`](super::rule::Rule); `docs/PERF.md`, section
    /// 17), the hand-calibrated [`Kernel::auto`] where its leaf is Auto, or where a leaf without the
    /// long-row split meets long rows or rows the hand rule balances
    /// ([`resolve_leaf`](super::rule::resolve_leaf)). Constant time.
    pub fn auto_without_terms(
        stats: &RowStats,
        value_bytes: usize,
        target: Target,
        regime: Regime,
    ) -> Kernel {
        let features = Features::of(stats, value_bytes, target);
        rule_for(regime).choose(&features, stats, target.sm_count)
    }

    /// Whether `error`, from planning `self`, is a refusal of a term's kernel that [`Kernel::Auto`]
    /// and the tuner step around: for the column-panel kernel, a panel or block the GPU cannot give,
    /// or a table past 32-bit indices; for the ELL copy, padding past its limit, slots past
    /// `usize`, too little device memory for it, or a stream capturing a graph, which cannot
    /// allocate it (Auto's plan inside a capture then takes the fitted rule's kernel); for the
    /// compressed columns, the last two.
    pub(crate) fn term_refused(self, error: &Error) -> bool {
        match self {
            Kernel::CsrPanels { .. } => matches!(error, Error::InvalidKernel(_) | Error::TooLarge { .. }),
            Kernel::CsrEllCopy => matches!(
                error,
                Error::Format(FormatError::EllPadding { .. })
                    | Error::TooLarge { .. }
                    | Error::DeviceMemory { .. }
                    | Error::Unsupported(_)
            ),
            Kernel::CsrCompressedCopy { .. } => {
                matches!(error, Error::DeviceMemory { .. } | Error::Unsupported(_))
            }
            _ => false,
        }
    }

    /// The hand-calibrated rule on a GPU of `sm_count` SMs, in constant time (see `rule.rs` for each
    /// threshold's derivation and measurements), which the fitted rule ([`Kernel::auto_for`]) falls
    /// back on: the balanced kernel with 128
    /// threads per block for matrices whose row lengths vary (a standard deviation above half their
    /// mean) or whose rows are too few to fill the GPU even with a warp each; otherwise the
    /// parametrised kernel with `coop` the smallest power of two that gives each lane at most 8
    /// entries and brings `rows x coop` to half the GPU's resident threads (at most 32), one row per
    /// group, 128 threads per block, long rows split.
    pub fn auto(stats: &RowStats, sm_count: u32) -> Kernel {
        if is_irregular(stats) || has_few_rows(stats, sm_count) {
            Kernel::CsrBalanced { block_size: BLOCK_SIZE }
        } else {
            auto_config(stats, sm_count).kernel()
        }
    }

    /// Reguly & Giles' fixed rule for their parametrised kernel, scaled to a GPU of `sm_count` SMs
    /// (`coop` the smallest power of two at least `sqrt(mean row length)`, `repeat` as large as leaves
    /// the grid enough blocks, 128 threads per block; see `rule.rs`), long rows split: where
    /// [`TunedSpmv`](crate::tune::TunedSpmv) starts, and what the benchmark compares with the tuner
    /// and the exhaustive search.
    pub fn fixed_rule(stats: &RowStats, sm_count: u32) -> Kernel {
        fixed_rule(stats, sm_count).kernel()
    }

    /// Checks the parameters against what the PTX entries and their launch support (`Auto` has
    /// none).
    pub(crate) fn check(self) -> Result<()> {
        match self {
            Kernel::Auto => {}
            Kernel::CsrScalar { block_size } => check_block_size(block_size)?,
            Kernel::CsrVector { coop, block_size } => {
                check_block_size(block_size)?;
                check_width("coop", coop, "cooperative", &Self::VECTOR_COOPS)?;
            }
            Kernel::CsrAligned { group, block_size, .. } => {
                check_block_size(block_size)?;
                check_width("group", group, "aligned", &Self::ALIGNED_GROUPS)?;
            }
            Kernel::CsrParam { coop, repeat, block_size, .. } => {
                if !(Self::PARAM_MIN_BLOCK_SIZE..=Self::MAX_BLOCK_SIZE).contains(&block_size)
                    || !block_size.is_multiple_of(WARP_SIZE)
                {
                    return Err(Error::InvalidKernel(format!(
                        "block size {block_size}: the parametrised kernel takes a multiple of {WARP_SIZE} \
                         between {} and {}",
                        Self::PARAM_MIN_BLOCK_SIZE,
                        Self::MAX_BLOCK_SIZE
                    )));
                }
                check_width("coop", coop, "parametrised", &Self::PARAM_COOPS)?;
                if repeat == 0 {
                    return Err(Error::InvalidKernel("repeat 0: each group handles at least one row".into()));
                }
            }
            Kernel::CsrBalanced { block_size } => {
                check_block_size(block_size)?;
                if block_size > Self::BALANCED_MAX_BLOCK_SIZE {
                    return Err(Error::InvalidKernel(format!(
                        "block size {block_size}: the balanced kernel takes at most {} threads per block \
                         (its registers)",
                        Self::BALANCED_MAX_BLOCK_SIZE
                    )));
                }
            }
            Kernel::CsrStream { stages } => check_width("stages", stages, "streaming", &Self::STREAM_STAGES)?,
            Kernel::CsrEllCopy => {}
            Kernel::CsrCompressedCopy { coop } => {
                check_width("coop", coop, "compressed-index", &Self::COMPRESSED_COOPS)?;
            }
            Kernel::CsrPanels { panel_kib, block_size } => {
                check_block_size(block_size)?;
                if !Self::PANEL_KIB.contains(&panel_kib) {
                    return Err(Error::InvalidKernel(format!(
                        "panel_kib {panel_kib}: the column-panel kernel takes panels of {:?} KiB",
                        Self::PANEL_KIB
                    )));
                }
            }
            Kernel::CsrMerge { block_size } => {
                check_block_size(block_size)?;
                if block_size > Self::MERGE_MAX_BLOCK_SIZE {
                    return Err(Error::InvalidKernel(format!(
                        "block size {block_size}: the merge-path kernel takes at most {} threads per block \
                         (its shared memory)",
                        Self::MERGE_MAX_BLOCK_SIZE
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The kernel's short key, as the benchmark and reports name it: `auto`, `csr-scalar-b128`,
/// `csr-vector-c4-b128`, `csr-aligned-g16-nc-b256` (`plain` for ordinary loads of x),
/// `csr-param-c4-r2-b128` (`-nosplit` when long rows are not split), `csr-balanced-b128`,
/// `csr-merge-b128`, `csr-stream-s4`, `csr-panels-k48-b512`, `csr-ell-copy`, `csr-compressed-copy-c32`.
impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Kernel::Auto => write!(f, "auto"),
            Kernel::CsrScalar { block_size } => write!(f, "csr-scalar-b{block_size}"),
            Kernel::CsrVector { coop, block_size } => write!(f, "csr-vector-c{coop}-b{block_size}"),
            Kernel::CsrAligned { group, cached_x, block_size } => {
                let x = if cached_x { "nc" } else { "plain" };
                write!(f, "csr-aligned-g{group}-{x}-b{block_size}")
            }
            Kernel::CsrParam { coop, repeat, block_size, split_long_rows } => {
                let split = if split_long_rows { "" } else { "-nosplit" };
                write!(f, "csr-param-c{coop}-r{repeat}-b{block_size}{split}")
            }
            Kernel::CsrBalanced { block_size } => write!(f, "csr-balanced-b{block_size}"),
            Kernel::CsrMerge { block_size } => write!(f, "csr-merge-b{block_size}"),
            Kernel::CsrStream { stages } => write!(f, "csr-stream-s{stages}"),
            Kernel::CsrPanels { panel_kib, block_size } => write!(f, "csr-panels-k{panel_kib}-b{block_size}"),
            Kernel::CsrEllCopy => write!(f, "csr-ell-copy"),
            Kernel::CsrCompressedCopy { coop } => write!(f, "csr-compressed-copy-c{coop}"),
        }
    }
}

/// Threads per row `value` must be one of `compiled`, the widths the kernel has PTX entries for.
fn check_width(name: &str, value: u32, kernel: &str, compiled: &[u32]) -> Result<()> {
    if compiled.contains(&value) {
        return Ok(());
    }
    Err(Error::InvalidKernel(format!(
        "{name} {value}: the {kernel} kernel exists for {compiled:?} threads per row"
    )))
}

/// Blocks of whole warps, at most [`Kernel::MAX_BLOCK_SIZE`] threads (the CUDA limit).
fn check_block_size(block_size: u32) -> Result<()> {
    if block_size == 0 || block_size > Kernel::MAX_BLOCK_SIZE || !block_size.is_multiple_of(WARP_SIZE) {
        return Err(Error::InvalidKernel(format!(
            "block size {block_size}: it must be a multiple of {WARP_SIZE} between {WARP_SIZE} and {}",
            Kernel::MAX_BLOCK_SIZE
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SMs of an H100 SXM.
    const SMS: u32 = 132;

    /// Rows of `mean` entries, enough of them (a million) that one lane each fills the GPU.
    fn stats_with_mean(mean: usize) -> RowStats {
        let rows = 1_000_000;
        RowStats {
            rows,
            cols: rows,
            nnz: rows * mean,
            mean: mean as f64,
            std_dev: 0.0,
            max: 0,
            empty_rows: 0,
        }
    }

    fn auto_coop_of(stats: &RowStats) -> u32 {
        match Kernel::auto(stats, SMS) {
            Kernel::CsrParam { coop, repeat: 1, block_size: BLOCK_SIZE, split_long_rows: true } => coop,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn auto_sizes_groups_at_eight_entries_per_lane() {
        let coop = |mean| auto_coop_of(&stats_with_mean(mean));
        assert_eq!(coop(0), 1);
        assert_eq!(coop(1), 1);
        assert_eq!(coop(7), 1);
        assert_eq!(coop(8), 1);
        assert_eq!(coop(9), 2);
        assert_eq!(coop(26), 4);
        assert_eq!(coop(64), 8);
        assert_eq!(coop(200), 32);
        assert_eq!(coop(1_000_000), 32);
    }

    #[test]
    fn auto_widens_groups_until_half_the_gpu_is_busy() {
        // 132 SMs keep 270,336 threads: half of them is 135,168.
        let rows = |rows: usize, mean: usize| RowStats { rows, nnz: rows * mean, ..stats_with_mean(mean) };
        // fe_body: 45 k rows of 7 entries want 3 lanes each for half the GPU, so 4.
        assert_eq!(auto_coop_of(&rows(45_000, 7)), 4);
        assert_eq!(auto_coop_of(&rows(135_168, 5)), 1);
        assert_eq!(auto_coop_of(&rows(135_167, 5)), 2);
        assert_eq!(auto_coop_of(&rows(12_288, 16)), 16);
        // The entries still ask for more where they need more: 4,500 rows of 400.
        assert_eq!(auto_coop_of(&rows(4_500, 400)), 32);
        // 2,970 rows of a warp each fill 35% of the GPU: the least that stays with a kernel per row.
        assert_eq!(auto_coop_of(&rows(2_957, 10)), 32);
        assert_eq!(Kernel::auto(&rows(2_956, 10), SMS), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        // A smaller GPU is filled by fewer rows: 16 SMs, half of their threads are 16,384.
        let one_lane = Kernel::CsrParam { coop: 1, repeat: 1, block_size: BLOCK_SIZE, split_long_rows: true };
        assert_eq!(Kernel::auto(&rows(45_000, 7), 16), one_lane);
    }

    #[test]
    fn the_fixed_rule_is_the_papers() {
        let rule = Kernel::fixed_rule(&stats_with_mean(7), SMS);
        assert_eq!(rule, Kernel::CsrParam { coop: 4, repeat: 1, block_size: 128, split_long_rows: true });
    }

    #[test]
    fn auto_balances_irregular_rows() {
        // The three irregular matrices of the suite: web graph, circuit, short-wide; and finan512.
        for (rows, nnz, std_dev) in [
            (6_500_000, 20_150_000, 26.6),
            (3_000_000, 18_600_000, 1830.0),
            (4284, 11_048_436, 3452.0),
            (74_752, 596_992, 7.2),
        ] {
            let mean = nnz as f64 / rows as f64;
            let stats = RowStats { rows, nnz, mean, std_dev, ..stats_with_mean(1) };
            assert_eq!(Kernel::auto(&stats, SMS), Kernel::CsrBalanced { block_size: BLOCK_SIZE });
        }
        // A regular spread stays with the parametrised kernel.
        let regular = RowStats { std_dev: 2.0, ..stats_with_mean(7) };
        assert!(matches!(Kernel::auto(&regular, SMS), Kernel::CsrParam { .. }));
    }

    #[test]
    fn auto_is_never_its_own_choice() {
        for sms in [1, 132, 1000] {
            for mean in [0, 1, 7, 64, 300] {
                assert_ne!(Kernel::auto(&stats_with_mean(mean), sms), Kernel::Auto);
                let irregular = RowStats { std_dev: 10.0 * mean as f64, ..stats_with_mean(mean) };
                assert_ne!(Kernel::auto(&irregular, sms), Kernel::Auto);
                let few = RowStats { rows: 3, nnz: 3 * mean, ..stats_with_mean(mean) };
                assert_ne!(Kernel::auto(&few, sms), Kernel::Auto);
            }
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        let resolve = |k: Kernel| k.check();
        assert!(resolve(Kernel::CsrScalar { block_size: 100 }).is_err());
        assert!(resolve(Kernel::CsrScalar { block_size: 2048 }).is_err());
        assert!(resolve(Kernel::CsrVector { coop: 3, block_size: 128 }).is_err());
        assert!(resolve(Kernel::CsrVector { coop: 64, block_size: 128 }).is_err());
        assert!(resolve(Kernel::CsrVector { coop: 8, block_size: 256 }).is_ok());
        for group in [0, 1, 2, 4, 12, 64] {
            assert!(resolve(Kernel::CsrAligned { group, cached_x: true, block_size: 128 }).is_err());
        }
        assert!(resolve(Kernel::CsrAligned { group: 16, cached_x: false, block_size: 96 }).is_ok());
        assert!(resolve(Kernel::CsrAligned { group: 16, cached_x: false, block_size: 100 }).is_err());
        assert!(resolve(Kernel::CsrAligned { group: 8, cached_x: false, block_size: 64 }).is_ok());
        let param = |coop, repeat, block_size| {
            resolve(Kernel::CsrParam { coop, repeat, block_size, split_long_rows: true })
        };
        assert!(param(1, 1, 64).is_ok());
        assert!(param(32, 1000, 1024).is_ok());
        assert!(param(32, 1, 32).is_err(), "below the paper's range");
        assert!(param(32, 1, 1056).is_err());
        assert!(param(4, 1, 200).is_err());
        assert!(param(3, 1, 128).is_err());
        assert!(param(64, 1, 128).is_err());
        assert!(param(4, 0, 128).is_err());
        for block_size in [0, 16, 100, 1024, 1056] {
            assert!(resolve(Kernel::CsrBalanced { block_size }).is_err(), "{block_size}");
        }
        for block_size in [32, 128, 512] {
            assert!(resolve(Kernel::CsrBalanced { block_size }).is_ok(), "{block_size}");
            assert!(resolve(Kernel::CsrMerge { block_size }).is_ok(), "{block_size}");
        }
        for block_size in [0, 16, 100, 544, 1024] {
            assert!(resolve(Kernel::CsrMerge { block_size }).is_err(), "{block_size}");
        }
        for panel_kib in Kernel::PANEL_KIB {
            assert!(resolve(Kernel::CsrPanels { panel_kib, block_size: 512 }).is_ok(), "{panel_kib}");
            assert!(resolve(Kernel::CsrPanels { panel_kib, block_size: 100 }).is_err(), "{panel_kib}");
        }
        for panel_kib in [0, 1, 47, 128, 256] {
            assert!(resolve(Kernel::CsrPanels { panel_kib, block_size: 512 }).is_err(), "{panel_kib}");
        }
        for coop in Kernel::COMPRESSED_COOPS {
            assert!(resolve(Kernel::CsrCompressedCopy { coop }).is_ok(), "{coop}");
        }
        for coop in [0, 3, 64] {
            assert!(resolve(Kernel::CsrCompressedCopy { coop }).is_err(), "{coop}");
        }
    }

    #[test]
    fn keys() {
        assert_eq!(Kernel::Auto.to_string(), "auto");
        assert_eq!(Kernel::CsrVector { coop: 4, block_size: 128 }.to_string(), "csr-vector-c4-b128");
        let aligned = Kernel::CsrAligned { group: 16, cached_x: false, block_size: 256 };
        assert_eq!(aligned.to_string(), "csr-aligned-g16-plain-b256");
        let param = Kernel::CsrParam { coop: 2, repeat: 4, block_size: 96, split_long_rows: false };
        assert_eq!(param.to_string(), "csr-param-c2-r4-b96-nosplit");
        assert_eq!(Kernel::CsrBalanced { block_size: 256 }.to_string(), "csr-balanced-b256");
        assert_eq!(Kernel::CsrMerge { block_size: 128 }.to_string(), "csr-merge-b128");
        assert_eq!(Kernel::CsrPanels { panel_kib: 48, block_size: 512 }.to_string(), "csr-panels-k48-b512");
        assert_eq!(Kernel::CsrCompressedCopy { coop: 32 }.to_string(), "csr-compressed-copy-c32");
    }
}
