//! Products of the formats beyond CSR: their strategies ([`CooKernel`], [`BrcCombine`]) and
//! launches. Each device matrix is valid by construction (its upload narrowed every index, and its
//! conversion put every column below `ncols` or at `PAD_COL`), and each [`Product`] was checked
//! against it: `x` has `ncols` elements, `y` has `nrows`, all in the `Gpu`'s context.

use super::DeviceMatrix;
use super::launch::{Prepared, unset_accumulate, unset_axpby};
use super::sealed::{Enqueue, Product};
use crate::Result;
use crate::device::{
    DeviceBrc, DeviceCoo, DeviceDenseBlocks, DeviceEll, DeviceHyb, DeviceLma, DeviceSell, Gpu,
};
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::lma::LmaStorage;
use crate::scalar::Scalar;
use kernels_gpu::abi::{
    self as abi, Accumulate, Axpby, BLOCK_SIZE, BrcParams, CooParams, DENSE_BLOCK_ROWS, DENSE_BLOCK_THREADS,
    DenseBlockParams, EllParams, LMA_BLOCK_SIZE, LMA_NODES_PER_ELEMENT, LMA_WARPS_PER_BLOCK, LmaParams,
    RESIDENT_WARPS_PER_SM, SELL_SLICE_ROWS, SellParams, WARP_SIZE, lma_shared_bytes, lma_step_elements,
};
use kernels_gpu::index::grid_blocks;

super::launch::with_operands!(
    EllParams: Axpby,
    SellParams: Axpby,
    BrcParams: Axpby,
    DenseBlockParams: Axpby,
    CooParams: Accumulate,
    LmaParams: Accumulate
);

/// How the COO kernel adds the entries' products to `y` (`kernels-gpu/src/formats/coo.rs`): the
/// strategy of [`DeviceCoo`], and of the COO parts of [`DeviceHyb`] and [`DeviceDenseBlocks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CooKernel {
    /// One atomic add per entry: the baseline of the papers.
    Atomic,
    /// A warp per interval of entries, a segmented reduction of each run of equal rows, one atomic
    /// per run (Bell & Garland 2008).
    #[default]
    Segmented,
}

/// How the pieces of a split row are added up (`kernels-gpu/src/formats/brc.rs`): the strategy of
/// [`DeviceBrc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BrcCombine {
    /// Each piece writes its sum to a slot of a scratch buffer; a second kernel sums each split row's
    /// slots in order. The result is the same from run to run.
    #[default]
    Deterministic,
    /// A first kernel scales the split rows by `beta`; each piece then adds its sum atomically.
    Atomic,
}

/// How the element products of the local matrix approach reach `y` (`kernels-gpu/src/formats/lma.rs`,
/// a group of lanes per element): the strategy of [`DeviceLma`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LmaKernel {
    /// All elements in one launch, each adding to its nodes' `y` with atomics: the order of the
    /// adds, and so the last bits of `y`, vary from run to run. Where the colours are about equal
    /// (a mesh's are), the launch goes round them a step at a time, so that the elements at work at
    /// any moment are neighbours and the `x` and `y` they share stay in L2.
    Atomic,
    /// One launch per colour of elements that share no node, plain adds: the same `y` every run.
    #[default]
    Coloured,
}

/// Whether the atomic LMA launch takes the colours as its ranges, going round them a step (a warp's
/// [`lma_step_elements`]) at a time, rather than the elements in stored order, colour after colour.
/// In stored order the warps at work at any moment hold elements of one colour, which share no node,
/// so every `x` they gather and `y` they add to comes from memory once per colour (four times on a
/// quadrilateral mesh). Going round the colours puts step `k` of every colour side by side, and where
/// the colouring follows the input order, as the greedy one does on a mesh numbered row by row, those
/// are neighbouring elements, whose shared nodes are then still in L2. Taken when the steps it launches
/// (every colour as many as the longest colour's) are at most twice the colours' own steps summed:
/// always for colours of about equal sizes.
pub(crate) fn lma_rounds_colours(colour_offsets: &[u32], step: u32) -> bool {
    let steps = |w: &[u32]| u64::from((w[1] - w[0]).div_ceil(step));
    let colours = colour_offsets.len().saturating_sub(1) as u64;
    let longest = colour_offsets.windows(2).map(steps).max().unwrap_or(0);
    let total: u64 = colour_offsets.windows(2).map(steps).sum();
    colours * longest <= 2 * total
}

/// The warps and the interval of entries per warp (a multiple of 32, so every warp starts on an
/// aligned entry) of the segmented COO kernel for `nnz` entries on `sm_count` SMs: at most as many
/// warps as the GPU holds at once (more would only shorten the intervals and add atomics at their
/// ends), together covering every entry, each but the last with a full interval.
fn coo_intervals(nnz: u64, sm_count: u32) -> (u64, u64) {
    let max_warps = (u64::from(sm_count) * u64::from(RESIDENT_WARPS_PER_SM)).max(1);
    let warp = u64::from(WARP_SIZE);
    let interval = nnz.div_ceil(max_warps).next_multiple_of(warp).max(warp);
    (nnz.div_ceil(interval).max(1), interval)
}

/// The launch of the COO kernel `kernel` for `a`: `y += alpha * A * x`, after the product's other
/// launches have made `y` hold `beta * y` on the stream.
fn prepare_coo<T: Scalar>(gpu: &Gpu, a: &DeviceCoo<T>, kernel: CooKernel) -> Result<Prepared<CooParams<T>>> {
    let nnz = u64::from(a.args().nnz);
    let (f, grid, interval) = match kernel {
        CooKernel::Atomic => (abi::COO_ATOMIC, grid_blocks(nnz, BLOCK_SIZE), 0),
        CooKernel::Segmented => {
            let (warps, interval) = coo_intervals(nnz, gpu.sm_count());
            (abi::COO_SEGMENTED, grid_blocks(warps * u64::from(WARP_SIZE), BLOCK_SIZE), interval)
        }
    };
    let params = CooParams { a: a.args(), op: unset_accumulate(), interval };
    // SAFETY: the matrix's rows are rows of `y` and its columns columns of `x`; the atomic kernel
    // grid-strides over the entries, and the segmented kernel's warps times `interval` cover them
    // (`coo_intervals`), in blocks of whole warps.
    Ok(unsafe { Prepared::new(gpu.kernel::<T>(f)?, grid, BLOCK_SIZE, 0, params) })
}

pub(super) fn prepare_ell<T: Scalar>(gpu: &Gpu, a: &DeviceEll<T>) -> Result<Prepared<EllParams<T>>> {
    let params = EllParams { a: a.args(), op: unset_axpby() };
    let grid = grid_blocks(u64::from(params.a.rows), BLOCK_SIZE);
    // SAFETY: the matrix holds `width * rows` slots, each `PAD_COL` or a column of `x`; `y` has `rows`
    // elements. The kernel grid-strides over the rows.
    Ok(unsafe { Prepared::new(gpu.kernel::<T>(abi::ELL)?, grid, BLOCK_SIZE, 0, params) })
}

fn prepare_sell<T: Scalar>(gpu: &Gpu, a: &DeviceSell<T>) -> Result<Prepared<SellParams<T>>> {
    let params = SellParams { a: a.args(), op: unset_axpby() };
    let grid = grid_blocks(u64::from(params.a.slices) * u64::from(SELL_SLICE_ROWS), BLOCK_SIZE);
    // SAFETY: the matrix holds `slices + 1` slice offsets, each slice's slots inside the entry arrays,
    // each slot `PAD_COL` or a column of `x`; `y` has `rows` elements. The kernel grid-strides over
    // the slices, a group of `SELL_SLICE_ROWS` threads each, and `BLOCK_SIZE` is a multiple of it.
    Ok(unsafe { Prepared::new(gpu.kernel::<T>(abi::SELL)?, grid, BLOCK_SIZE, 0, params) })
}

/// Implements [`DeviceMatrix`] by the inherent methods of the same names.
macro_rules! device_matrix {
    ($($format:ident),+) => {$(
        impl<T: Scalar> DeviceMatrix<T> for $format<T> {
            fn shape(&self) -> Shape {
                $format::shape(self)
            }
        }
    )+};
}

device_matrix!(DeviceEll, DeviceSell, DeviceCoo, DeviceHyb, DeviceBrc, DeviceDenseBlocks, DeviceLma);

/// ELL: one launch of `spmv_ell_*`, `y = alpha * A * x + beta * y`.
impl<T: Scalar> Enqueue<T> for DeviceEll<T> {
    type Kernel = ();
    type Launch = Prepared<EllParams<T>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceEll::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, (): ()) -> Result<((), Self::Launch)> {
        Ok(((), prepare_ell(gpu, self)?))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe { launch.enqueue(gpu, p.axpby()) }
    }
}

/// SELL: one launch of `spmv_sell_*`, `y = alpha * A * x + beta * y`.
impl<T: Scalar> Enqueue<T> for DeviceSell<T> {
    type Kernel = ();
    type Launch = Prepared<SellParams<T>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceSell::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, (): ()) -> Result<((), Self::Launch)> {
        Ok(((), prepare_sell(gpu, self)?))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe { launch.enqueue(gpu, p.axpby()) }
    }
}

/// COO: `y = beta * y`, then the [`CooKernel`]'s additions.
impl<T: Scalar> Enqueue<T> for DeviceCoo<T> {
    type Kernel = CooKernel;
    type Launch = Prepared<CooParams<T>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceCoo::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, kernel: CooKernel) -> Result<(CooKernel, Self::Launch)> {
        Ok((kernel, prepare_coo(gpu, self, kernel)?))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        p.scale_y(gpu)?;
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe { launch.enqueue(gpu, p.accumulate()) }
    }
}

/// The launches of a product whose first kernel writes every row of `y` and whose COO remainder, if
/// it has entries, adds to it.
#[derive(Debug)]
pub struct WithRemainder<P, T> {
    first: Prepared<P>,
    remainder: Option<Prepared<CooParams<T>>>,
}

/// HYB: the ELL kernel (`y = alpha * A_ell * x + beta * y`), then the COO part's additions by the
/// [`CooKernel`] (Bell & Garland 2008, section 4.5).
impl<T: Scalar> Enqueue<T> for DeviceHyb<T> {
    type Kernel = CooKernel;
    type Launch = WithRemainder<EllParams<T>, T>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceHyb::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, kernel: CooKernel) -> Result<(CooKernel, Self::Launch)> {
        let remainder = (self.coo().nnz() > 0).then(|| prepare_coo(gpu, self.coo(), kernel)).transpose()?;
        Ok((kernel, WithRemainder { first: prepare_ell(gpu, self.ell())?, remainder }))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, whose parts have its shape and for which
        // `prepare` made `launch`; the stream orders the COO additions after the ELL kernel's writes.
        unsafe {
            launch.first.enqueue(gpu, p.axpby())?;
            launch.remainder.as_ref().map_or(Ok(()), |coo| coo.enqueue(gpu, p.accumulate()))
        }
    }
}

/// Dense blocks: the dense-block kernel (`y = alpha * A_blocks * x + beta * y`), then the remainder's
/// additions by the [`CooKernel`].
impl<T: Scalar> Enqueue<T> for DeviceDenseBlocks<T> {
    type Kernel = CooKernel;
    type Launch = WithRemainder<DenseBlockParams<T>, T>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceDenseBlocks::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, kernel: CooKernel) -> Result<(CooKernel, Self::Launch)> {
        let params = DenseBlockParams { a: self.args(), op: unset_axpby() };
        let grid = grid_blocks(u64::from(params.a.rows).div_ceil(u64::from(DENSE_BLOCK_ROWS)), 1);
        let shared_bytes = narrow("the dense-block window's bytes", self.window() * size_of::<T>())?;
        let f = gpu.kernel::<T>(abi::DENSE_BLOCKS)?;
        // SAFETY: every window lies inside `x` up to `ncols`, every column offset is `PAD_COL` or below
        // `window` (by construction of `DeviceDenseBlocks`), the window is at most 48 KiB (checked by
        // the conversion), and the block has the `DENSE_BLOCK_THREADS` threads the kernel's barriers
        // expect.
        let first = unsafe { Prepared::new(f, grid, DENSE_BLOCK_THREADS, shared_bytes, params) };
        let remainder =
            (self.remainder().nnz() > 0).then(|| prepare_coo(gpu, self.remainder(), kernel)).transpose()?;
        Ok((kernel, WithRemainder { first, remainder }))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: as for HYB.
        unsafe {
            launch.first.enqueue(gpu, p.axpby())?;
            launch.remainder.as_ref().map_or(Ok(()), |coo| coo.enqueue(gpu, p.accumulate()))
        }
    }
}

/// The two launches of a BRC product, in order.
#[derive(Debug)]
pub struct BrcLaunch<T> {
    first: Prepared<BrcParams<T>>,
    second: Prepared<BrcParams<T>>,
}

/// BRC: for [`BrcCombine::Deterministic`], `spmv_brc_partials_*` then `spmv_brc_combine_*`; for
/// [`BrcCombine::Atomic`], `spmv_brc_prescale_*` then `spmv_brc_atomic_*`. The split-row kernel is
/// skipped (a grid of 0) when no row was split.
impl<T: Scalar> Enqueue<T> for DeviceBrc<T> {
    type Kernel = BrcCombine;
    type Launch = BrcLaunch<T>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceBrc::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, combine: BrcCombine) -> Result<(BrcCombine, Self::Launch)> {
        let params = BrcParams { a: self.args(), split: self.split_args(), op: unset_axpby() };
        let block_grid = grid_blocks(u64::from(params.a.blocks) * u64::from(WARP_SIZE), BLOCK_SIZE);
        let split_grid = grid_blocks(u64::from(params.split.split_count), BLOCK_SIZE);
        // The block kernels grid-stride over blocks, a warp each; the split-row kernels over split
        // rows.
        let (first, second) = match combine {
            BrcCombine::Deterministic => ((abi::BRC_PARTIALS, block_grid), (abi::BRC_COMBINE, split_grid)),
            BrcCombine::Atomic => ((abi::BRC_PRESCALE, split_grid), (abi::BRC_ATOMIC, block_grid)),
        };
        let prepare = |(entry, grid)| -> Result<_> {
            let f = gpu.kernel::<T>(entry)?;
            // SAFETY: the blocks' slots lie inside the entry arrays, columns are `PAD_COL` or columns
            // of `x`, targets are rows of `y` or slots of the scratch buffer, whose rows are rows of
            // `y` (by construction of `DeviceBrc`); each kernel has the grid its stride assumes.
            Ok(unsafe { Prepared::new(f, grid, BLOCK_SIZE, 0, params) })
        };
        Ok((combine, BrcLaunch { first: prepare(first)?, second: prepare(second)? }))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`; the stream
        // orders the two launches.
        unsafe {
            launch.first.enqueue(gpu, p.axpby())?;
            launch.second.enqueue(gpu, p.axpby())
        }
    }
}

/// LMA: `y = beta * y`, then the element products, in one atomic launch or one launch per colour
/// (Reguly & Giles 2012, section 8).
impl<T: Scalar> Enqueue<T> for DeviceLma<T> {
    type Kernel = LmaKernel;
    type Launch = Vec<Prepared<LmaParams<T>>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceLma::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, kernel: LmaKernel) -> Result<(LmaKernel, Self::Launch)> {
        let index = LMA_NODES_PER_ELEMENT.iter().position(|&m| m as usize == self.nodes_per_element());
        // `Gpu::upload_lma` refused every other element size.
        let index = index.unwrap_or_default();
        let m = LMA_NODES_PER_ELEMENT[index];
        let symmetric = self.storage() == LmaStorage::Symmetric;
        let family = match (kernel, symmetric) {
            (LmaKernel::Atomic, false) => &abi::LMA_ATOMIC_FULL,
            (LmaKernel::Atomic, true) => &abi::LMA_ATOMIC_SYM,
            (LmaKernel::Coloured, false) => &abi::LMA_COLOUR_FULL,
            (LmaKernel::Coloured, true) => &abi::LMA_COLOUR_SYM,
        };
        let f = gpu.kernel::<T>(family[index])?;
        #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
        let shared = lma_shared_bytes(m, symmetric, size_of::<T>() as u32);
        let per_sm =
            f.occupancy_max_active_blocks_per_multiprocessor(LMA_BLOCK_SIZE, shared as usize, None)?;
        let resident = per_sm.max(1).saturating_mul(gpu.sm_count());
        let step = lma_step_elements(m);
        let offsets = self.colour_offsets();
        let colours = offsets.len() - 1;
        let steps = |w: &[u32]| (w[1] - w[0]).div_ceil(step);
        // (where the ranges' offsets start, how many ranges, steps per range)
        let ranges: Vec<(usize, u32, u32)> = match kernel {
            LmaKernel::Atomic if colours > 1 && lma_rounds_colours(offsets, step) => {
                let longest = offsets.windows(2).map(steps).max().unwrap_or(0);
                // The upload narrowed every offset, so the element count, which is at least
                // the colour count, fits.
                vec![(0, narrow("the colour count", colours)?, longest)]
            }
            LmaKernel::Atomic => vec![(colours + 1, 1, self.args().elements.div_ceil(step))],
            LmaKernel::Coloured => offsets.windows(2).enumerate().map(|(c, w)| (c, 1, steps(w))).collect(),
        };
        let launches = ranges
            .into_iter()
            .filter(|&(_, count, steps)| count > 0 && steps > 0)
            .map(|(first, range_count, steps)| {
                let params = LmaParams {
                    a: self.args(),
                    op: unset_accumulate(),
                    ranges: self.range_at(first),
                    range_count,
                    steps,
                };
                let grid =
                    grid_blocks(u64::from(range_count) * u64::from(steps), LMA_WARPS_PER_BLOCK).min(resident);
                // SAFETY: every node slot holds a node below the node count (the rows of `y` and
                // the columns of `x`) or `LMA_NO_NODE`, which the kernel skips (by construction of
                // `Lma`); the values are stored as the entry's storage reads them; `ranges` points
                // at `range_count + 1` nondecreasing offsets of the device's range array (the
                // colour offsets, or `[0, elements]`), each at most the element count; the block
                // size and shared memory are those the kernel is written for, and its warps walk
                // the `range_count * steps` slots with a grid stride. A colour's elements share no
                // node, so a coloured launch has no write conflicts between elements, and
                // `repeated_nodes` tells it whether one element names a node twice.
                unsafe { Prepared::new(f, grid, LMA_BLOCK_SIZE, shared, params) }
            })
            .collect();
        Ok((kernel, launches))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        p.scale_y(gpu)?;
        for colour in launch {
            // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`; the
            // stream orders the colours.
            unsafe { colour.enqueue(gpu, p.accumulate())? };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_atomic_lma_launch_goes_round_colours_of_about_equal_sizes() {
        // A mesh's four colours, steps of 6 elements: 4 x 167 slots for 4 x 167 steps.
        assert!(lma_rounds_colours(&[0, 1000, 2000, 2990, 3970], 6));
        // A star: a colour per element, one step each.
        let star: Vec<u32> = (0..=70).collect();
        assert!(lma_rounds_colours(&star, 1));
        // One large colour and many small ones: 70 x 1000 slots for 1069 steps.
        let lopsided: Vec<u32> = [0].into_iter().chain((0..70).map(|c| 1000 + c)).collect();
        assert!(!lma_rounds_colours(&lopsided, 1));
        // Twice the stored order's warps is the limit: 2 x 4 slots for 4 steps, not 3 x 4.
        assert!(lma_rounds_colours(&[0, 4, 4], 1));
        assert!(!lma_rounds_colours(&[0, 4, 4, 4], 1));
        assert!(lma_rounds_colours(&[0], 1));
    }

    #[test]
    fn coo_intervals_cover_every_entry_in_whole_warps() {
        let most = |sm_count: u32| u64::from(sm_count) * u64::from(RESIDENT_WARPS_PER_SM);
        for nnz in [0u64, 1, 31, 32, 33, 1000, 132 * 64 * 32, 132 * 64 * 32 + 1, 1 << 33] {
            for sm_count in [1, 132] {
                let (warps, interval) = coo_intervals(nnz, sm_count);
                assert!(warps >= 1 && warps <= most(sm_count), "{nnz}, {sm_count}");
                assert!(interval % 32 == 0 && interval >= 32, "{nnz}, {sm_count}");
                assert!(warps * interval >= nnz, "{nnz}, {sm_count}");
                // Every warp but a lone one for an empty matrix has entries.
                assert!((warps - 1) * interval < nnz.max(1), "{nnz}, {sm_count}");
            }
        }
    }
}
