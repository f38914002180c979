//! Products with several vectors, `Y = alpha * A * X + beta * Y` for a [`DeviceCsr`] `A` and
//! [`DeviceDense`] `X` and `Y` of `k` columns (`kernels-gpu/src/spmm.rs`): the strategy
//! ([`SpmmKernel`]) and its rule, the plan ([`SpmmPlan`]), and the checked product path beside
//! `product::run`, with the same checks and degenerate cases.

use super::csr::{auto_coop, balanced_grid, is_irregular, long_row_min_len};
use super::launch::{Prepared, scale_dense};
use crate::device::{DeviceCsr, DeviceDense, Gpu, Layout, SpmmScratch};
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{
    BLOCK_SIZE, DevicePtr as AbiPtr, SPMM_COL_MAJOR, SPMM_COL_MAJOR_COOPS, SPMM_LONG_ROWS, SPMM_ROW_MAJOR,
    SPMM_ROW_MAJOR_WIDTHS, SpmmLongRows, SpmmLongRowsParams, SpmmOperands, SpmmParams, WARP_SIZE,
};
use kernels_gpu::index::{coop_threads, grid_blocks};

super::launch::with_operands!(SpmmParams: SpmmOperands, SpmmLongRowsParams: SpmmOperands);

/// Which SpMM kernel runs, for the layout of `X` and `Y` it is planned for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SpmmKernel {
    /// Chosen by [`SpmmKernel::auto`] from the layout, `k` and the row lengths, in constant time.
    #[default]
    Auto,
    /// Row-major `X` and `Y`: a group of `min(width, 32)` lanes per row over a panel of `width`
    /// columns (one of [`SpmmKernel::ROW_MAJOR_WIDTHS`]); wider `X` takes several panels. With
    /// `split_long_rows`, the rows the CSR product splits (`Kernel::CsrParam`'s long rows) are cut
    /// into chunks of a warp each, and a second launch adds their partial sums.
    RowMajor { width: u32, split_long_rows: bool },
    /// Column-major `X` and `Y`: `coop` lanes per row (one of [`SpmmKernel::COL_MAJOR_COOPS`]), each
    /// summing a panel of [`SpmmKernel::COL_PANEL`] columns per pass over the row's entries;
    /// `split_long_rows` as for [`SpmmKernel::RowMajor`].
    ColMajor { coop: u32, split_long_rows: bool },
}

impl SpmmKernel {
    /// The panel widths of [`SpmmKernel::RowMajor`].
    pub const ROW_MAJOR_WIDTHS: [u32; 5] = SPMM_ROW_MAJOR_WIDTHS;
    /// The widths `coop` of [`SpmmKernel::ColMajor`].
    pub const COL_MAJOR_COOPS: [u32; 6] = SPMM_COL_MAJOR_COOPS;
    /// Columns per pass of [`SpmmKernel::ColMajor`].
    pub const COL_PANEL: u32 = kernels_gpu::abi::SPMM_COL_PANEL;

    /// The rule behind [`SpmmKernel::Auto`]. Row-major: the narrowest panel that holds all `k`
    /// columns (64 above that), so that one pass over each row serves every column and no lane idles
    /// beyond the rounding of `k` to a width; a row's entries are read by the whole group at once,
    /// so the row lengths do not enter. Column-major: 8 entries per lane, from the mean row length (the
    /// narrowest width [`crate::Kernel::auto`] gives a CSR product's rows), which balances the same
    /// walk over a row's entries; the panel's gathers only add work per entry. Both split the long
    /// rows when the rows are irregular ([`crate::Kernel::auto`]'s test for the balanced kernel: row
    /// lengths' standard deviation above half their mean): a group walks its row's entries one by
    /// one, so one row far above the mean is the product's critical path.
    pub fn auto(layout: Layout, k: usize, stats: &crate::formats::RowStats) -> SpmmKernel {
        let split_long_rows = is_irregular(stats);
        match layout {
            Layout::RowMajor => {
                let widest = Self::ROW_MAJOR_WIDTHS[Self::ROW_MAJOR_WIDTHS.len() - 1];
                let width =
                    Self::ROW_MAJOR_WIDTHS.iter().copied().find(|&w| w as usize >= k).unwrap_or(widest);
                SpmmKernel::RowMajor { width, split_long_rows }
            }
            Layout::ColMajor => SpmmKernel::ColMajor { coop: auto_coop(stats), split_long_rows },
        }
    }

    /// Whether the kernel splits the long rows (`false` for `Auto`).
    fn splits_long_rows(self) -> bool {
        match self {
            SpmmKernel::Auto => false,
            SpmmKernel::RowMajor { split_long_rows, .. } | SpmmKernel::ColMajor { split_long_rows, .. } => {
                split_long_rows
            }
        }
    }

    /// The layout the kernel takes, or `None` for `Auto`.
    fn layout(self) -> Option<Layout> {
        match self {
            SpmmKernel::Auto => None,
            SpmmKernel::RowMajor { .. } => Some(Layout::RowMajor),
            SpmmKernel::ColMajor { .. } => Some(Layout::ColMajor),
        }
    }

    fn check(self, layout: Layout) -> Result<()> {
        let (value, compiled, what) = match self {
            SpmmKernel::Auto => return Ok(()),
            SpmmKernel::RowMajor { width, .. } => (width, &Self::ROW_MAJOR_WIDTHS[..], "width"),
            SpmmKernel::ColMajor { coop, .. } => (coop, &Self::COL_MAJOR_COOPS[..], "coop"),
        };
        if self.layout() != Some(layout) {
            return Err(Error::InvalidKernel(format!("{self:?} is for the other layout than {layout:?}")));
        }
        if !compiled.contains(&value) {
            return Err(Error::InvalidKernel(format!(
                "{what} {value}: the SpMM kernel exists for {compiled:?}"
            )));
        }
        Ok(())
    }
}

/// Products `Y = alpha * A * X + beta * Y` with one CSR matrix, `X` and `Y` of one layout and `k`
/// columns, and one kernel, prepared once by [`Gpu::plan_spmm`]. A product checks its operands and
/// enqueues one launch, two when the plan splits long rows: no allocation, no host
/// synchronisation, so it may be captured into a CUDA graph.
#[derive(Debug)]
pub struct SpmmPlan<'a, T: Scalar> {
    gpu: &'a Gpu,
    matrix: &'a DeviceCsr<T>,
    layout: Layout,
    k: usize,
    kernel: SpmmKernel,
    launch: Prepared<SpmmParams<T>>,
    /// The long rows' partial sums added and written to `Y`, after `launch`; with the plan's own
    /// scratch, which both launches point into.
    long_rows: Option<(Prepared<SpmmLongRowsParams<T>>, SpmmScratch<T>)>,
}

impl<'a, T: Scalar> SpmmPlan<'a, T> {
    /// `Y = alpha * A * X + beta * Y`, enqueued on the plan's [`Gpu::stream`]. `Y` is not read when
    /// `beta == 0`, and neither `A` nor `X` when `alpha == 0`. Every check runs before anything is
    /// launched: on error `Y` is as it was.
    pub fn spmm(&self, alpha: T, x: &DeviceDense<T>, beta: T, y: &mut DeviceDense<T>) -> Result<()> {
        run(self, alpha, x, beta, y)
    }

    /// The kernel the products run, resolved: never [`SpmmKernel::Auto`].
    pub fn kernel(&self) -> SpmmKernel {
        self.kernel
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The columns of `X` and `Y`.
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn matrix(&self) -> &'a DeviceCsr<T> {
        self.matrix
    }

    /// How many rows the plan cuts into chunks of a warp each (0 without `split_long_rows`, or when
    /// no row is long).
    pub fn split_rows(&self) -> usize {
        self.long_rows.as_ref().map_or(0, |(_, scratch)| scratch.count())
    }

    /// Bytes of the plan's own scratch on the device (the long rows' partial sums).
    pub fn scratch_bytes(&self) -> usize {
        self.long_rows.as_ref().map_or(0, |(_, scratch)| scratch.device_bytes())
    }
}

impl Gpu {
    /// Prepares products `Y = alpha * A * X + beta * Y` with `X` and `Y` of `k` columns in `layout`,
    /// by `kernel` (checked against the layout, [`SpmmKernel::Auto`] resolved). With
    /// `split_long_rows`, builds the matrix's long-row split the first time (kept with the matrix,
    /// shared with the CSR product's plans) and allocates the plan's scratch: `k` partial sums per
    /// chunk of (at most) 256 entries of the long rows.
    pub fn plan_spmm<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        layout: Layout,
        k: usize,
        kernel: SpmmKernel,
    ) -> Result<SpmmPlan<'a, T>> {
        if !a.belongs_to(self) {
            return Err(Error::ForeignBuffer("the matrix"));
        }
        kernel.check(layout)?;
        narrow("the column count of X", k)?;
        let kernel = if kernel == SpmmKernel::Auto { SpmmKernel::auto(layout, k, a.stats()) } else { kernel };
        let (f, lanes) = match kernel {
            SpmmKernel::RowMajor { width, .. } => {
                let i = SPMM_ROW_MAJOR_WIDTHS.iter().position(|&w| w == width).unwrap_or_default();
                (self.kernel::<T>(SPMM_ROW_MAJOR[i])?, width.min(WARP_SIZE))
            }
            SpmmKernel::ColMajor { coop, .. } => {
                let i = SPMM_COL_MAJOR_COOPS.iter().position(|&c| c == coop).unwrap_or_default();
                (self.kernel::<T>(SPMM_COL_MAJOR[i])?, coop)
            }
            SpmmKernel::Auto => {
                return Err(Error::InvalidKernel("SpmmKernel::auto never answers Auto".into()));
            }
        };
        // The CSR product's split (built once per matrix, shared with its plans), with this plan's
        // scratch for `k` partial sums per chunk.
        let scratch = if kernel.splits_long_rows() {
            let split = a.long_rows(self, long_row_min_len(a.stats(), self.sm_count()))?;
            Some(split.spmm_scratch(self, k)?).filter(|s| s.args().chunks > 0)
        } else {
            None
        };
        let long = scratch.as_ref().map_or(SpmmLongRows::unsplit(), SpmmScratch::args);
        let row_warps = coop_threads(a.args().rows, lanes).div_ceil(u64::from(WARP_SIZE));
        // At most `rows` warps: at most 32 lanes per row.
        let row_warps = u32::try_from(row_warps).unwrap_or(u32::MAX);
        let (chunk_blocks, row_blocks) = balanced_grid(row_warps, long.chunks, BLOCK_SIZE)?;
        let op = SpmmOperands {
            x: AbiPtr::new(0),
            y: AbiPtr::new(0),
            alpha: T::ZERO,
            beta: T::ZERO,
            k: 0,
            ldx: 0,
            ldy: 0,
        };
        let params = SpmmParams { a: a.args(), op, chunk_blocks, long };
        // SAFETY: the kernel walks the rows of `A` (valid CSR by construction of `DeviceCsr`) with a
        // grid stride in blocks of whole warps; `run` sets operands checked to be `X` of `A.ncols`
        // rows and `Y` of `A.nrows` rows, both of `k` columns in the kernel's layout with their
        // leading dimensions, in the matrix's context, so every element it reads or writes is inside
        // them. The long-row split was built for this very matrix (`DeviceCsr::long_rows`) and lives
        // as long as it; the partial sums hold `k` per chunk and live as long as the plan; the grid
        // has a warp for each chunk, then at least one block for the rows when there are rows (a
        // product launches only then).
        let launch = unsafe { Prepared::new(f, chunk_blocks + row_blocks, BLOCK_SIZE, 0, params) };
        let long_rows_kernel = self.kernel::<T>(SPMM_LONG_ROWS)?;
        let long_rows = scratch.map(|scratch| {
            let params = SpmmLongRowsParams { long, op, row_major: u32::from(layout == Layout::RowMajor) };
            let warps = u64::from(long.count) * k as u64;
            let grid = grid_blocks(warps * u64::from(WARP_SIZE), BLOCK_SIZE);
            // SAFETY: as above; the kernel reads the partial sums `launch` wrote before it on the
            // same stream, and writes the long rows' elements of `Y`, of `k` columns in `layout`.
            let finish = unsafe { Prepared::new(long_rows_kernel, grid, BLOCK_SIZE, 0, params) };
            (finish, scratch)
        });
        Ok(SpmmPlan { gpu: self, matrix: a, layout, k, kernel, launch, long_rows })
    }

    /// `Y = alpha * A * X + beta * Y` with the kernel [`SpmmKernel::Auto`] picks for `X`'s layout
    /// and column count: [`Gpu::plan_spmm`] and [`SpmmPlan::spmm`] in one call. For a matrix whose
    /// long rows the kernel splits, that allocates the plan's scratch at every call (and cannot be
    /// captured into a graph): plan once for repeated products.
    pub fn spmm<T: Scalar>(
        &self,
        alpha: T,
        a: &DeviceCsr<T>,
        x: &DeviceDense<T>,
        beta: T,
        y: &mut DeviceDense<T>,
    ) -> Result<()> {
        self.plan_spmm(a, x.layout(), x.cols(), SpmmKernel::Auto)?.spmm(alpha, x, beta, y)
    }
}

/// The product: every check first (contexts, layouts, shapes), so that an error leaves `Y` as it
/// was; nothing for `A` without rows or `k == 0`; `Y = beta * Y` alone when `A * X` contributes
/// nothing (`alpha == 0`, or `A` without entries); otherwise the plan's launch.
fn run<T: Scalar>(
    plan: &SpmmPlan<'_, T>,
    alpha: T,
    x: &DeviceDense<T>,
    beta: T,
    y: &mut DeviceDense<T>,
) -> Result<()> {
    // The plan checked its matrix's context when it was made.
    let (gpu, a) = (plan.gpu, plan.matrix);
    gpu.check_context("X", x.as_slice())?;
    gpu.check_context("Y", y.as_slice())?;
    if x.layout() != plan.layout || y.layout() != plan.layout {
        return Err(Error::LayoutMismatch(match plan.layout {
            Layout::RowMajor => "row-major",
            Layout::ColMajor => "column-major",
        }));
    }
    let shapes = [
        ("the rows of X", a.ncols(), x.rows()),
        ("the columns of X", plan.k, x.cols()),
        ("the rows of Y", a.nrows(), y.rows()),
        ("the columns of Y", plan.k, y.cols()),
    ];
    if let Some(&(what, expected, got)) = shapes.iter().find(|(_, expected, got)| expected != got) {
        return Err(Error::DimensionMismatch { what, expected, got });
    }
    let rows = narrow("the row count", a.nrows())?;
    let k = narrow("the column count of X", plan.k)?;
    if rows == 0 || k == 0 {
        return Ok(());
    }
    let ldy = y.ld32();
    // The guards live until the launch is enqueued (see `VectorRef`).
    let (x_ptr, _x_guard) = x.read(gpu.stream());
    let (y_ptr, _y_guard) = y.write(gpu.stream());
    let (x_ptr, y_ptr) = (AbiPtr::new(x_ptr), AbiPtr::new(y_ptr));
    if alpha == T::ZERO || a.nnz() == 0 {
        let runs = match plan.layout {
            Layout::RowMajor => (k, rows, ldy),
            Layout::ColMajor => (rows, k, ldy),
        };
        // SAFETY: `Y` was checked to hold `rows x k` elements in this layout with its leading
        // dimension, in `gpu`'s context.
        return unsafe { scale_dense(gpu, y_ptr, beta, runs) };
    }
    let op = SpmmOperands { x: x_ptr, y: y_ptr, alpha, beta, k, ldx: x.ld32(), ldy };
    // SAFETY: the operands meet the contract stated at `Prepared::new` in `plan_spmm`: checked above;
    // the second launch follows the first on the stream.
    unsafe {
        plan.launch.enqueue(gpu, op)?;
        if let Some((finish, _)) = &plan.long_rows {
            finish.enqueue(gpu, op)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::RowStats;

    /// Only the mean and the standard deviation enter the rule.
    fn stats(mean: f64, std_dev: f64) -> RowStats {
        RowStats { rows: 100, cols: 100, nnz: 0, mean, std_dev, max: 0, empty_rows: 0 }
    }

    #[test]
    fn the_rule_takes_the_narrowest_panel_and_the_csr_groups() {
        let width = |k| match SpmmKernel::auto(Layout::RowMajor, k, &stats(5.0, 0.0)) {
            SpmmKernel::RowMajor { width, split_long_rows: false } => width,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            [1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 1000].map(width),
            [4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 64, 64]
        );
        let coop = |mean| match SpmmKernel::auto(Layout::ColMajor, 8, &stats(mean, 0.0)) {
            SpmmKernel::ColMajor { coop, split_long_rows: false } => coop,
            other => panic!("{other:?}"),
        };
        assert_eq!([0.0, 8.0, 9.0, 64.0, 1000.0].map(coop), [1, 1, 2, 8, 32]);
    }

    /// Irregular rows (the CSR rule's test) get the long-row split in both layouts; regular ones
    /// and matrices without entries do not.
    #[test]
    fn the_rule_splits_long_rows_when_the_rows_are_irregular() {
        for layout in [Layout::RowMajor, Layout::ColMajor] {
            for k in [1, 7, 33, 64] {
                for (mean, std_dev, split) in [
                    (6.2, 1830.0, true),
                    (3.1, 26.6, true),
                    (27.0, 0.0, false),
                    (5.0, 1.5, false),
                    (0.0, 0.0, false),
                ] {
                    let kernel = SpmmKernel::auto(layout, k, &stats(mean, std_dev));
                    assert_eq!(kernel.splits_long_rows(), split, "{layout:?} k {k} mean {mean}: {kernel:?}");
                    assert_eq!(kernel.layout(), Some(layout));
                }
            }
        }
        assert!(!SpmmKernel::Auto.splits_long_rows());
    }

    #[test]
    fn kernels_are_checked_against_the_layout_and_the_compiled_variants() {
        let rm = |width| SpmmKernel::RowMajor { width, split_long_rows: true };
        let cm = |coop| SpmmKernel::ColMajor { coop, split_long_rows: false };
        assert!(SpmmKernel::Auto.check(Layout::RowMajor).is_ok());
        assert!(rm(16).check(Layout::RowMajor).is_ok());
        assert!(rm(16).check(Layout::ColMajor).is_err());
        assert!(rm(12).check(Layout::RowMajor).is_err());
        assert!(cm(32).check(Layout::ColMajor).is_ok());
        assert!(cm(64).check(Layout::ColMajor).is_err());
        assert!(cm(4).check(Layout::RowMajor).is_err());
    }
}
