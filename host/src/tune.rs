//! The run-time tuner: for products repeated with one matrix, start at [`Kernel::Auto`]'s choice
//! and move across the CSR kernels while each step makes products faster, timing the products the
//! caller asks for anyway.
//!
//! Reguly & Giles ("Efficient sparse matrix-vector multiplication on cache-based GPUs", InPar 2012,
//! their run-time parameter tuning) walk the parameters of their one kernel from their fixed rule and
//! reach 98% of an exhaustive search's best after 8 steps. Here the start is a rule calibrated on
//! the GPU (Auto), so the steps go where that rule is blind: the neighbouring widths, the other
//! kernel family (balanced against per-row), the block size, and the aligned loads of Baskaran &
//! Bordawekar for wide groups; at most [`MAX_TIMED_PRODUCTS`] products are timed, and the start
//! stays unless a step beats it, so a tuned product is never slower than Auto's beyond one
//! timing's noise.
//!
//! Two parts: `Search`, the pure state machine (timings in, next kernel out, tested on the CPU),
//! and [`TunedSpmv`], which runs products with the kernels the search asks for and times them with
//! CUDA events, read only once they have completed, so that tuning never waits on the GPU. It times
//! in the [`Regime`] it is made for: the caller's own products back to back (hot), or, for products
//! that will be replayed in a CUDA graph, [`GRAPH_TIMED_PRODUCTS`] products captured into a graph and
//! replayed, where the host's cost is gone and only the kernels and their gaps count.

use crate::device::{DeviceCsr, DeviceVector, Gpu, Graph, VectorMut, VectorRef};
use crate::enqueue::{Kernel, Plan, Regime, auto_per_row};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaEvent;
use kernels_gpu::abi::{BLOCK_SIZE, CSR_ALIGNED_GROUPS, CSR_PARAM_COOPS, WARP_SIZE};

/// A step is kept only when it makes products faster by more than this fraction: one event timing
/// of a product of a few microseconds varies by about 2% from call to call on the H100.
pub const MIN_GAIN: f32 = 0.03;

/// The most products the search times before it settles (Reguly & Giles' 8 steps).
pub const MAX_TIMED_PRODUCTS: usize = 8;

/// Products in the graph a timed call of the graph regime captures and replays: a replay of 16
/// products of 3 µs and more lasts about 50 µs, so the replay's own launch (about 5 µs) is a small
/// share of it, and a timed call costs 17 products.
pub const GRAPH_TIMED_PRODUCTS: usize = 16;

/// The block sizes the search tries, Auto's 128 among them: the fastest kernels of our suite and
/// of the real matrices used 64 to 256 threads per block (`docs/PERF.md`).
pub const TUNE_BLOCK_SIZES: [u32; 3] = [64, BLOCK_SIZE, 256];

/// The block sizes the search tries for the column-panel kernel, Auto's 512 among them.
pub const TUNE_PANEL_BLOCK_SIZES: [u32; 3] = [256, 512, 1024];

/// The column-panel kernels next to `panel_kib`: the panel sizes just below and above it in
/// [`Kernel::PANEL_KIB`], at `block_size`.
fn panel_neighbours(panel_kib: u32, block_size: u32) -> Vec<Kernel> {
    let sizes = Kernel::PANEL_KIB;
    let Some(at) = sizes.iter().position(|&k| k == panel_kib) else { return Vec::new() };
    [at.checked_sub(1), Some(at + 1)]
        .into_iter()
        .flatten()
        .filter_map(|i| sizes.get(i))
        .map(|&panel_kib| Kernel::CsrPanels { panel_kib, block_size })
        .collect()
}

/// The per-row kernel of `coop` threads per row and `block_size` threads per block, as Auto's hand
/// rule runs it (one row per group, long rows split).
fn per_row(coop: u32, block_size: u32) -> Kernel {
    Kernel::CsrParam { coop, repeat: 1, block_size, split_long_rows: true }
}

/// The two kinds of kernel that give each row a group of threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// The parametrised kernel, long rows split ([`per_row`]).
    Split,
    /// Thread per row or the vector kernel, which Auto's fitted rule takes where no row is long.
    Plain,
}

/// A group-per-row kernel's kind, threads per row and threads per block; `None` for the others.
fn row_shape(kernel: Kernel) -> Option<(Rows, u32, u32)> {
    match kernel {
        Kernel::CsrParam { coop, repeat: 1, block_size, split_long_rows: true } => {
            Some((Rows::Split, coop, block_size))
        }
        Kernel::CsrScalar { block_size } => Some((Rows::Plain, 1, block_size)),
        Kernel::CsrVector { coop, block_size } => Some((Rows::Plain, coop, block_size)),
        _ => None,
    }
}

/// The kernel of `kind` with `coop` threads per row and `block_size` threads per block.
fn row_kernel(kind: Rows, coop: u32, block_size: u32) -> Kernel {
    match (kind, coop) {
        (Rows::Split, _) => per_row(coop, block_size),
        (Rows::Plain, 1) => Kernel::CsrScalar { block_size },
        (Rows::Plain, _) => Kernel::CsrVector { coop, block_size },
    }
}

/// Every kernel the search can reach: the per-row kernels (long rows split, and plain) at each
/// width, the balanced kernel, and the aligned kernel (`x` through the read-only cache) at each of
/// its widths, each at each of [`TUNE_BLOCK_SIZES`].
pub(crate) fn search_space() -> Vec<Kernel> {
    let mut space = Vec::new();
    for block_size in TUNE_BLOCK_SIZES {
        space.extend(CSR_PARAM_COOPS.map(|coop| per_row(coop, block_size)));
        space.extend(CSR_PARAM_COOPS.map(|coop| row_kernel(Rows::Plain, coop, block_size)));
        space.push(Kernel::CsrBalanced { block_size });
        space.extend(CSR_ALIGNED_GROUPS.map(|group| Kernel::CsrAligned {
            group,
            cached_x: true,
            block_size,
        }));
    }
    space
}

/// The steps of the search, in order; it has settled after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Auto's choice.
    Start,
    /// Around the best: the per-row kernel at half and twice its width and the balanced kernel; or,
    /// from the balanced kernel, the per-row kernel Auto would give the matrix's rows; or, from the
    /// column-panel kernel (where Auto's panel term applies), the kernel Auto takes without it and
    /// the panel sizes next to the start's; or, from the compressed columns (where Auto's look
    /// found them), the kernel Auto takes without them and the copy at half and twice its width.
    Neighbours,
    /// One more width in the direction that won.
    Widen,
    /// The best kernel at the other block sizes ([`TUNE_PANEL_BLOCK_SIZES`] for column panels).
    Block,
    /// For a per-row best of 8 or more lanes, the aligned kernel of that width and block.
    Aligned,
}

const PHASES: [Phase; 5] = [Phase::Start, Phase::Neighbours, Phase::Widen, Phase::Block, Phase::Aligned];

/// The tuner's state machine: which kernel to time next, given the timings so far. Each phase
/// proposes kernels around the best so far ([`Phase`]), each is timed once and replaces the best
/// only if it is faster by more than [`MIN_GAIN`]; kernels already timed are not timed again, and
/// the search settles after the last phase or [`MAX_TIMED_PRODUCTS`] timings.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    best: Kernel,
    /// The best kernel's time; `None` until the start has been timed.
    best_ms: Option<f32>,
    /// The per-row kernel tried from a balanced start; from a column-panel start, the kernel Auto
    /// takes without its panel term.
    per_row: Kernel,
    /// Index into [`PHASES`] of the phase whose candidates are queued.
    phase: usize,
    /// The phase's candidates not yet timed, the next first.
    queue: Vec<Kernel>,
    /// Every kernel timed so far, in order.
    timed: Vec<Kernel>,
}

impl Search {
    /// A search from `start` (Auto's choice); `per_row` is the kernel to compare with when `start`
    /// is the balanced kernel (the per-row kernel Auto would give the rows) or the column-panel
    /// kernel (Auto's choice without its panel term).
    pub fn new(start: Kernel, per_row: Kernel) -> Self {
        Search { best: start, best_ms: None, per_row, phase: 0, queue: vec![start], timed: Vec::new() }
    }

    /// A search that has nothing to do: `kernel` is final.
    pub fn converged_at(kernel: Kernel) -> Self {
        Search { phase: PHASES.len(), queue: Vec::new(), ..Search::new(kernel, kernel) }
    }

    /// The kernel to time next, or `None` once the search has settled.
    pub fn next(&self) -> Option<Kernel> {
        self.queue.first().copied()
    }

    /// The best kernel so far (the final one once settled).
    pub fn best(&self) -> Kernel {
        self.best
    }

    /// The kernels timed so far, in order.
    pub fn timed(&self) -> &[Kernel] {
        &self.timed
    }

    /// Takes a timing of `kernel`; a timing of anything but [`Search::next`] is stale and ignored.
    pub fn record(&mut self, kernel: Kernel, ms: f32) {
        if self.next() != Some(kernel) {
            return;
        }
        self.queue.remove(0);
        self.timed.push(kernel);
        match self.best_ms {
            Some(best_ms) if ms >= best_ms * (1.0 - MIN_GAIN) => {}
            _ => {
                self.best = kernel;
                self.best_ms = Some(ms);
            }
        }
        if self.timed.len() >= MAX_TIMED_PRODUCTS {
            self.queue.clear();
            self.phase = PHASES.len();
        }
        while self.queue.is_empty() && self.phase + 1 < PHASES.len() {
            self.phase += 1;
            let timed = &self.timed;
            self.queue = self.candidates(PHASES[self.phase]);
            self.queue.retain(|k| !timed.contains(k));
            self.queue.dedup();
        }
    }

    /// The kernels `phase` proposes around the best so far.
    fn candidates(&self, phase: Phase) -> Vec<Kernel> {
        let wider = |(kind, coop, block): (Rows, u32, u32)| {
            (coop < WARP_SIZE).then(|| row_kernel(kind, coop * 2, block))
        };
        let narrower =
            |(kind, coop, block): (Rows, u32, u32)| (coop > 1).then(|| row_kernel(kind, coop / 2, block));
        match (phase, row_shape(self.best), self.best) {
            (Phase::Start, ..) => Vec::new(),
            (Phase::Neighbours, Some(row), _) => {
                [wider(row), narrower(row), Some(Kernel::CsrBalanced { block_size: row.2 })]
                    .into_iter()
                    .flatten()
                    .collect()
            }
            (Phase::Neighbours, None, Kernel::CsrPanels { panel_kib, block_size }) => {
                let mut near = vec![self.per_row];
                near.extend(panel_neighbours(panel_kib, block_size));
                near
            }
            (Phase::Neighbours, None, Kernel::CsrCompressedCopy { coop }) => {
                let widths =
                    [coop * 2, coop / 2].into_iter().filter(|c| Kernel::COMPRESSED_COOPS.contains(c));
                let mut near = vec![self.per_row];
                near.extend(widths.map(|coop| Kernel::CsrCompressedCopy { coop }));
                near
            }
            (Phase::Neighbours, None, _) => vec![self.per_row],
            (Phase::Widen, Some(row), _) => [wider(row), narrower(row)].into_iter().flatten().collect(),
            (Phase::Block, Some((kind, coop, block_size)), _) => TUNE_BLOCK_SIZES
                .iter()
                .filter(|&&b| b != block_size)
                .map(|&b| row_kernel(kind, coop, b))
                .collect(),
            (Phase::Block, None, Kernel::CsrBalanced { block_size }) => TUNE_BLOCK_SIZES
                .iter()
                .filter(|&&b| b != block_size)
                .map(|&block_size| Kernel::CsrBalanced { block_size })
                .collect(),
            (Phase::Block, None, Kernel::CsrPanels { panel_kib, block_size }) => TUNE_PANEL_BLOCK_SIZES
                .iter()
                .filter(|&&b| b != block_size)
                .map(|&block_size| Kernel::CsrPanels { panel_kib, block_size })
                .collect(),
            (Phase::Aligned, Some((_, coop, block_size)), _) if CSR_ALIGNED_GROUPS.contains(&coop) => {
                vec![Kernel::CsrAligned { group: coop, cached_x: true, block_size }]
            }
            _ => Vec::new(),
        }
    }
}

/// Two timing events around one product (or one replay of a graph of products), and the
/// configuration they time.
#[derive(Debug)]
struct Timer<T: Scalar> {
    start: CudaEvent,
    end: CudaEvent,
    /// The kernel of the products between the events, until their timing has been read.
    pending: Option<Kernel>,
    /// The graph regime: the `y` the timed graph writes (with `beta = 0`, so that replays leave the
    /// caller's `y` alone), and the graph timed last, kept until its timing has been read.
    graph: Option<(DeviceVector<T>, Option<Graph>)>,
}

/// Products `y = alpha * A * x + beta * y` with one matrix, whose kernel tunes itself over the
/// calls: from [`Kernel::Auto`]'s choice, the neighbouring widths and the other kernel family, one
/// more width where that won, the block sizes 64, 128 and 256, and the aligned kernel for groups of 8
/// or more lanes; where Auto takes the column-panel kernel (its panel term,
/// [`panels_term`](crate::rule::panels_term)), Auto's choice without it, the neighbouring panel
/// sizes and the block sizes of [`TUNE_PANEL_BLOCK_SIZES`] instead; where Auto takes the ELL copy
/// ([`ell_copy_term`](crate::rule::ell_copy_term), or its look for a DIA copy,
/// [`dia_copy_term`](crate::rule::dia_copy_term), finds one), Auto's choice without it and, if that wins,
/// the steps around it (the copy is tried nowhere else: building it costs its memory for the
/// matrix's lifetime); where Auto takes the compressed columns
/// ([`compressed_copy_term`](crate::rule::compressed_copy_term), where the device finds they
/// compress), Auto's choice without them and the copy at half and twice its width; each step is
/// kept only if it gains more than 3%, and at most 8 products are timed.
///
/// Each call runs one product with a correct kernel; while tuning, some calls are timed with CUDA
/// events, whose result is read at a later call once the GPU has passed them, so no call waits on
/// the GPU. The first call is a warm-up, untimed. A caller that synchronises after each product (a
/// solver reading its residual) lets the tuner settle after at most 8 timed products; one that never waits on the stream leaves the tuner where
/// it is, which costs nothing. Once converged ([`TunedSpmv::converged`]), a call is the product of
/// a [`Plan`] for the tuner's regime, which may be captured into a CUDA graph, and which for the hot
/// and graph regimes replays its products from graphs of its own or launches them directly,
/// whichever it measures faster ([`Regime::Hot`]).
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// # let gpu = gpu_spmv::Gpu::new()?;
/// # let a = gpu.upload_csr_parts(1, 1, &[0, 1], &[0], &[2.0f32])?;
/// # let x = gpu.upload_vector(&[1.0f32])?;
/// # let mut y = gpu.zeros::<f32>(1)?;
/// let mut tuned = gpu_spmv::tune::TunedSpmv::new(&gpu, &a)?;
/// for _ in 0..100 {
///     tuned.spmv(1.0, &x, 0.0, &mut y)?;
///     let _residual = y.to_host(&gpu)?; // the caller's own synchronisation
/// }
/// println!("{:?} after {} products", tuned.converged(), tuned.tuning_products());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TunedSpmv<'a, T: Scalar> {
    gpu: &'a Gpu,
    a: &'a DeviceCsr<T>,
    regime: Regime,
    search: Search,
    /// Where the search stands: timing candidates, or converged with the plan of its choice.
    state: State<'a, T>,
    tuning_products: u64,
}

#[derive(Debug)]
enum State<'a, T: Scalar> {
    Tuning(Timer<T>),
    /// The events were released with the timer; products run the plan.
    Converged(Plan<'a, T, DeviceCsr<T>>),
}

impl<'a, T: Scalar> TunedSpmv<'a, T> {
    /// A tuner for products with `a` on `gpu` run back to back ([`Regime::Hot`]), as a solver
    /// loop without a graph runs them; see [`TunedSpmv::for_regime`].
    pub fn new(gpu: &'a Gpu, a: &'a DeviceCsr<T>) -> Result<Self> {
        Self::for_regime(gpu, a, Regime::Hot)
    }

    /// A tuner for products with `a` on `gpu` in `regime`, starting at [`Kernel::Auto`]'s choice
    /// for it (the rule's, [`Gpu::auto_kernel`], or the DIA copy or the compressed columns where
    /// Auto looks for them and the device finds them). [`Regime::Graph`] times each candidate in a graph of
    /// [`GRAPH_TIMED_PRODUCTS`] products into a vector of the tuner's own (one more allocation of a
    /// column's length); [`Regime::Cold`] and [`Regime::Hot`] time the caller's products (the tuner
    /// cannot rotate the caller's operands out of L2, so a cold tuning is timed hot, from the cold
    /// rule's start). A matrix without entries needs no tuning: it starts converged.
    pub fn for_regime(gpu: &'a Gpu, a: &'a DeviceCsr<T>, regime: Regime) -> Result<Self> {
        if !a.belongs_to(gpu) {
            return Err(Error::ForeignBuffer("the matrix"));
        }
        let mut start = gpu.resolve_auto(a, regime)?;
        // Where Auto's panel or ELL-copy term applies (or its look for a DIA copy or compressed
        // columns found them), its kernel is tried only if the GPU takes it (a plan of it, built
        // once here; refused for a panel or block the GPU cannot give, or a copy past its padding
        // limit or the device's memory), against Auto's choice without the terms.
        let mut compare = auto_per_row(a.stats(), gpu.sm_count());
        if matches!(start, Kernel::CsrPanels { .. } | Kernel::CsrEllCopy | Kernel::CsrCompressedCopy { .. }) {
            let without = gpu.auto_kernel_without_terms::<T>(a.stats(), regime);
            match gpu.plan(a, start) {
                Ok(_) => compare = without,
                Err(e) if start.term_refused(&e) => start = without,
                Err(e) => return Err(e),
            }
        }
        let (search, state) = if a.nnz() == 0 {
            (Search::converged_at(start), State::Converged(gpu.plan_for(a, start, regime)?))
        } else {
            let graph = (regime == Regime::Graph).then(|| gpu.zeros::<T>(a.nrows())).transpose()?;
            let timer = Timer {
                start: gpu.timing_event()?,
                end: gpu.timing_event()?,
                pending: None,
                graph: graph.map(|y| (y, None)),
            };
            (Search::new(start, compare), State::Tuning(timer))
        };
        Ok(Self { gpu, a, regime, search, state, tuning_products: 0 })
    }

    /// The regime the tuner times in.
    pub fn regime(&self) -> Regime {
        self.regime
    }

    /// Every kernel the tuner can reach on any matrix, for an exhaustive search to compare with.
    /// Where Auto's panel term applies the tuner also reaches the column-panel kernels of
    /// [`Kernel::PANEL_KIB`] and [`TUNE_PANEL_BLOCK_SIZES`], and where its ELL-copy term applies
    /// (or its look for a DIA copy finds one) [`Kernel::CsrEllCopy`], and where its look finds
    /// compressed columns [`Kernel::CsrCompressedCopy`], which this list leaves out: they are timed
    /// only on such matrices.
    pub fn search_space() -> Vec<Kernel> {
        search_space()
    }

    /// `y = alpha * A * x + beta * y`, as [`Gpu::spmv`], with the kernel the tuner is at.
    pub fn spmv<X, Y>(&mut self, alpha: T, x: &X, beta: T, y: &mut Y) -> Result<()>
    where
        X: VectorRef<T> + ?Sized,
        Y: VectorMut<T> + ?Sized,
    {
        let timer = match &mut self.state {
            State::Converged(plan) => return plan.spmv(alpha, x, beta, y),
            State::Tuning(timer) => timer,
        };
        if let Some(config) = timer.pending
            && timer.end.try_is_complete()?
        {
            self.search.record(config, timer.start.elapsed_ms(&timer.end)?);
            timer.pending = None;
        }
        let Some(next) = self.search.next() else {
            let plan = self.gpu.plan_for(self.a, self.search.best(), self.regime)?;
            let product = plan.spmv(alpha, x, beta, y);
            self.state = State::Converged(plan);
            return product;
        };
        self.tuning_products += 1;
        // The first product brings the operands into the caches (after the caller's setup they are
        // cold, later ones are not): timed, it would make Auto's choice look slower than every
        // kernel after it. While a timing is in flight, or for a product that runs no SpMV kernel,
        // the candidate runs untimed too.
        if self.tuning_products == 1 || timer.pending.is_some() || alpha == T::ZERO {
            // A column-panel candidate not yet planned may be refused: the untimed product runs the
            // best kernel instead (planned before, or the start, which was checked).
            let untried = if matches!(next, Kernel::CsrPanels { .. }) && next != self.search.best() {
                self.search.best()
            } else {
                next
            };
            let kernel = timer.pending.unwrap_or(untried);
            return self.gpu.spmv_with(kernel, alpha, self.a, x, beta, y);
        }
        let plan = match self.gpu.plan(self.a, next) {
            Ok(plan) => plan,
            // A column-panel size or block this GPU refuses: never faster, and the next candidate
            // (or the converged plan) runs this product.
            Err(e) if next.term_refused(&e) => {
                self.search.record(next, f32::INFINITY);
                self.tuning_products -= 1;
                return self.spmv(alpha, x, beta, y);
            }
            Err(e) => return Err(e),
        };
        if let Some((scratch, timed)) = &mut timer.graph {
            // The graph's products write the tuner's vector, with `beta = 0`: replayed, they leave
            // the caller's `y` to the one product below. Captured before the events, so that the
            // capture's host time stays outside them.
            let graph = self.gpu.capture(|| {
                (0..GRAPH_TIMED_PRODUCTS).try_for_each(|_| plan.spmv(alpha, x, T::ZERO, &mut *scratch))
            })?;
            timer.start.record(self.gpu.stream())?;
            graph.launch()?;
            timer.end.record(self.gpu.stream())?;
            *timed = Some(graph);
            plan.spmv(alpha, x, beta, y)?;
        } else {
            timer.start.record(self.gpu.stream())?;
            plan.spmv(alpha, x, beta, y)?;
            timer.end.record(self.gpu.stream())?;
        }
        timer.pending = Some(next);
        Ok(())
    }

    /// The chosen kernel, once the search has converged; `None` while it is still tuning.
    pub fn converged(&self) -> Option<Kernel> {
        self.search.next().is_none().then(|| self.search.best())
    }

    /// The fastest kernel so far (the chosen one once converged).
    pub fn best(&self) -> Kernel {
        self.search.best()
    }

    /// The kernels timed so far, in order (Auto's choice first).
    pub fn timed(&self) -> &[Kernel] {
        self.search.timed()
    }

    /// Products run while tuning, timed or not.
    pub fn tuning_products(&self) -> u64 {
        self.tuning_products
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn balanced(block_size: u32) -> Kernel {
        Kernel::CsrBalanced { block_size }
    }

    /// Runs a search from `start` to the end with `time` as the cost of a kernel; returns the best
    /// and the kernels timed, in order.
    fn run(start: Kernel, per_row_start: Kernel, time: impl Fn(Kernel) -> f32) -> (Kernel, Vec<Kernel>) {
        let mut search = Search::new(start, per_row_start);
        while let Some(k) = search.next() {
            search.record(k, time(k));
            assert!(search.timed().len() <= MAX_TIMED_PRODUCTS, "{:?}", search.timed());
        }
        (search.best(), search.timed().to_vec())
    }

    /// A cost with its minimum at `target`: a factor per step of width (a doubling) and of block
    /// size, and a factor 2 for the other family.
    fn bowl(target: Kernel) -> impl Fn(Kernel) -> f32 {
        let place = |k: Kernel| -> (f32, f32, f32) {
            match k {
                Kernel::CsrParam { coop, block_size, .. } => {
                    (0.0, (coop as f32).log2(), block_size as f32 / 64.0)
                }
                Kernel::CsrBalanced { block_size } => (1.0, 0.0, block_size as f32 / 64.0),
                Kernel::CsrScalar { block_size } => (0.25, 0.0, block_size as f32 / 64.0),
                Kernel::CsrVector { coop, block_size } => {
                    (0.25, (coop as f32).log2(), block_size as f32 / 64.0)
                }
                Kernel::CsrAligned { group, block_size, .. } => {
                    (0.5, (group as f32).log2(), block_size as f32 / 64.0)
                }
                other => panic!("{other:?}"),
            }
        };
        move |k| {
            let (f, w, b) = place(k);
            let (tf, tw, tb) = place(target);
            (1.0 + (f - tf).abs()) * (1.0 + 0.3 * (w - tw).abs()) * (1.0 + 0.2 * (b - tb).abs())
        }
    }

    #[test]
    fn the_space_holds_every_family_at_every_block_size() {
        let space = search_space();
        assert_eq!(space.len(), 3 * (6 + 6 + 1 + 3));
        assert_eq!(space.iter().collect::<HashSet<_>>().len(), space.len());
        for k in &space {
            k.check().unwrap();
        }
        assert!(space.contains(&per_row(4, 128)));
        assert!(space.contains(&balanced(256)));
        assert!(space.contains(&Kernel::CsrScalar { block_size: 64 }));
        assert!(space.contains(&Kernel::CsrVector { coop: 32, block_size: 256 }));
        assert!(space.contains(&Kernel::CsrAligned { group: 32, cached_x: true, block_size: 64 }));
    }

    #[test]
    fn starts_at_auto_then_tries_the_neighbours() {
        let start = per_row(4, 128);
        let mut search = Search::new(start, start);
        assert_eq!(search.next(), Some(start));
        search.record(start, 1.0);
        assert_eq!(search.next(), Some(per_row(8, 128)));
        search.record(per_row(8, 128), 1.0);
        assert_eq!(search.next(), Some(per_row(2, 128)));
        search.record(per_row(2, 128), 1.0);
        assert_eq!(search.next(), Some(balanced(128)));
    }

    #[test]
    fn stale_timings_are_ignored() {
        let start = per_row(4, 128);
        let mut search = Search::new(start, start);
        search.record(per_row(2, 128), 0.1);
        assert_eq!(search.next(), Some(start));
        assert_eq!(search.best(), start);
        assert!(search.timed().is_empty());
    }

    #[test]
    fn finds_the_minimum_near_auto_within_eight_products() {
        for (start, target) in [
            (per_row(4, 128), per_row(4, 128)),
            (per_row(4, 128), per_row(16, 128)),
            (per_row(4, 128), per_row(1, 256)),
            (per_row(1, 128), per_row(2, 64)),
            (per_row(8, 128), balanced(256)),
            (balanced(128), per_row(4, 128)),
            (balanced(128), balanced(64)),
            (per_row(16, 128), Kernel::CsrAligned { group: 16, cached_x: true, block_size: 128 }),
            // From the plain row kernels, the start of Auto's fitted rule.
            (Kernel::CsrVector { coop: 4, block_size: 128 }, Kernel::CsrVector { coop: 16, block_size: 128 }),
            (Kernel::CsrScalar { block_size: 128 }, Kernel::CsrVector { coop: 2, block_size: 64 }),
            (Kernel::CsrVector { coop: 2, block_size: 128 }, Kernel::CsrScalar { block_size: 256 }),
        ] {
            let (best, timed) = run(start, per_row(4, 128), bowl(target));
            assert_eq!(best, target, "from {start:?}, timed {timed:?}");
            assert_eq!(timed[0], start);
        }
    }

    #[test]
    fn gains_under_the_threshold_are_not_taken() {
        // Every other kernel is 2% faster than the start: within the noise.
        let start = per_row(4, 128);
        let (best, timed) = run(start, start, |k| if k == start { 1.0 } else { 0.98 });
        assert_eq!(best, start);
        // The start, its three neighbours, two block sizes: both widths were timed, nothing widens.
        assert_eq!(timed.len(), 1 + 3 + 2, "{timed:?}");
        // 4% faster is taken.
        let (best, _) = run(start, start, |k| if k == balanced(128) { 0.96 } else { 1.0 });
        assert_eq!(best, balanced(128));
    }

    /// Whatever the timings, the search ends within [`MAX_TIMED_PRODUCTS`], times each kernel once,
    /// only kernels of the search space, and its best is never slower than its start.
    #[test]
    fn every_search_is_short_and_stays_in_the_space() {
        let space: HashSet<Kernel> = search_space().into_iter().collect();
        let starts: Vec<Kernel> = CSR_PARAM_COOPS
            .iter()
            .flat_map(|&c| [per_row(c, BLOCK_SIZE), row_kernel(Rows::Plain, c, BLOCK_SIZE)])
            .chain([balanced(BLOCK_SIZE)])
            .collect();
        for seed in 0..300u64 {
            let noise = |k: Kernel| {
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&(k, seed), &mut h);
                (std::hash::Hasher::finish(&h) % 1000) as f32 / 100.0 + 0.5
            };
            for &start in &starts {
                let (best, timed) = run(start, per_row(2, BLOCK_SIZE), noise);
                assert!(timed.len() <= MAX_TIMED_PRODUCTS);
                assert_eq!(timed.iter().collect::<HashSet<_>>().len(), timed.len(), "{timed:?}");
                assert!(timed.iter().all(|k| space.contains(k)), "{timed:?}");
                assert!(noise(best) <= noise(start), "{start:?} -> {best:?}");
            }
        }
    }

    /// From Auto's column-panel start: the kernel Auto takes without its panel term, the panel
    /// sizes next to 64 KiB, then the other block sizes of the best; a refused candidate (timed as
    /// never finishing) is never taken.
    #[test]
    fn from_the_panels_tries_auto_without_them_and_the_panel_sizes() {
        let panels = |panel_kib, block_size| Kernel::CsrPanels { panel_kib, block_size };
        let start = panels(64, 512);
        assert_eq!(panel_neighbours(64, 512), [panels(48, 512), panels(96, 512)]);
        assert_eq!(panel_neighbours(48, 256), [panels(64, 256)]);
        assert_eq!(panel_neighbours(192, 512), [panels(96, 512)]);
        assert_eq!(panel_neighbours(40, 512), []);
        // The start wins: the neighbours, then its other block sizes.
        let (best, timed) = run(start, balanced(128), |k| if k == start { 1.0 } else { 2.0 });
        assert_eq!(best, start);
        assert_eq!(
            timed,
            [start, balanced(128), panels(48, 512), panels(96, 512), panels(64, 256), panels(64, 1024)]
        );
        // The balanced kernel wins: then its block sizes.
        let (best, timed) = run(start, balanced(128), |k| match k {
            k if k == balanced(128) => 0.8,
            k if k == balanced(64) => 0.5,
            _ => 1.0,
        });
        assert_eq!(best, balanced(64), "{timed:?}");
        assert_eq!(&timed[..4], [start, balanced(128), panels(48, 512), panels(96, 512)]);
        // 96 KiB wins; 1024 threads refused (infinite) is not taken.
        let (best, timed) = run(start, balanced(128), |k| match k {
            k if k == panels(96, 512) => 0.8,
            k if k == panels(96, 1024) => f32::INFINITY,
            _ => 1.0,
        });
        assert_eq!(best, panels(96, 512), "{timed:?}");
        assert!(timed.contains(&panels(96, 1024)) && timed.contains(&panels(96, 256)), "{timed:?}");
    }

    /// From Auto's compressed columns: the kernel Auto takes without them, then the copy at half
    /// and twice its width (at 32 lanes, half only); the row kernel's steps only if it wins.
    #[test]
    fn from_the_compressed_columns_tries_auto_without_them_and_the_widths() {
        let copy = |coop| Kernel::CsrCompressedCopy { coop };
        let vector = row_kernel(Rows::Plain, 8, BLOCK_SIZE);
        let (best, timed) = run(copy(8), vector, |k| if k == copy(16) { 0.5 } else { 1.0 });
        assert_eq!(best, copy(16));
        assert_eq!(timed, [copy(8), vector, copy(16), copy(4)]);
        let (_, timed) = run(copy(32), vector, |_| 1.0);
        assert_eq!(timed, [copy(32), vector, copy(16)]);
        let (best, timed) = run(copy(1), vector, |k| if k == vector { 0.5 } else { 1.0 });
        assert_eq!(best, vector, "{timed:?}");
        assert_eq!(&timed[..3], [copy(1), vector, copy(2)]);
        assert!(timed.len() > 3 && timed.len() <= MAX_TIMED_PRODUCTS, "the vector kernel's steps: {timed:?}");
    }

    #[test]
    fn a_converged_search_asks_for_nothing() {
        let search = Search::converged_at(per_row(8, 128));
        assert_eq!(search.next(), None);
        assert_eq!(search.best(), per_row(8, 128));
    }
}
