//! The run-time tuner of Reguly & Giles ("Efficient sparse matrix-vector multiplication on cache-based
//! GPUs", InPar 2012, their run-time parameter tuning): for products repeated with one matrix, start
//! at the fixed rule and move the parametrised kernel's parameters while each step makes products
//! faster, timing the products the caller asks for anyway.
//!
//! Two parts: [`Search`], the pure state machine (timings in, next parameters out, tested on the CPU),
//! and [`TunedSpmv`], which runs products with the parameters the search asks for and times them with
//! CUDA events, read only once they have completed, so that tuning never waits on the GPU.

use crate::device::{DeviceCsr, Gpu, VectorMut, VectorRef};
use crate::enqueue::{Kernel, MAX_REPEAT, ParamConfig, Plan, fixed_rule};
use crate::scalar::{Precision, Scalar};
use crate::{Error, Result};
use cudarc::driver::{CudaEvent, sys};
use kernels_gpu::abi::{BLOCK_SIZE, CSR_PARAM_COOPS};

/// A step is kept only when it makes products faster by more than this fraction (Reguly & Giles'
/// 5%): smaller differences are within the noise of one timing.
pub const MIN_GAIN: f32 = 0.05;

/// Timings per configuration, of which the search keeps the fastest: a one-off delay (another
/// process, a clock change) then costs one repeat instead of a wrong turn.
pub const SAMPLES_PER_CONFIG: u32 = 2;

/// The block size the search jumps to together with doubling `coop` (Reguly & Giles).
pub const JUMP_BLOCK_SIZE: u32 = 192;

/// The smallest and largest block sizes the search walks, and its steps in single and in double
/// precision (Reguly & Giles: 96 to 512, in steps of 32, of 64 in double).
pub const TUNE_MIN_BLOCK_SIZE: u32 = 96;
pub const TUNE_MAX_BLOCK_SIZE: u32 = 512;
pub const TUNE_BLOCK_STEP_F32: u32 = 32;
pub const TUNE_BLOCK_STEP_F64: u32 = 64;

fn block_step(precision: Precision) -> u32 {
    match precision {
        Precision::Single => TUNE_BLOCK_STEP_F32,
        Precision::Double => TUNE_BLOCK_STEP_F64,
    }
}

/// Every configuration the search can reach, for the given precision, as kernels: `coop` in 1 .. 32,
/// `repeat` a power of two up to [`MAX_REPEAT`], and the block sizes reachable from the rule's 128 and
/// the jump's 192 in the precision's steps between [`TUNE_MIN_BLOCK_SIZE`] and [`TUNE_MAX_BLOCK_SIZE`].
pub(crate) fn search_space(precision: Precision) -> Vec<Kernel> {
    let step = block_step(precision);
    let lowest = BLOCK_SIZE - (BLOCK_SIZE - TUNE_MIN_BLOCK_SIZE) / step * step;
    let blocks: Vec<u32> = (lowest..=TUNE_MAX_BLOCK_SIZE).step_by(step as usize).collect();
    let repeats = std::iter::successors(Some(1u32), |r| Some(r * 2)).take_while(|&r| r <= MAX_REPEAT);
    let mut space = Vec::new();
    for repeat in repeats {
        for coop in CSR_PARAM_COOPS {
            for &block_size in &blocks {
                space.push(ParamConfig { coop, repeat, block_size }.kernel());
            }
        }
    }
    space
}

/// The parameter a phase of the search moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    /// Halved, or doubled when halving does not help.
    Repeat,
    /// One probe: `coop` doubled and the block raised to [`JUMP_BLOCK_SIZE`] together.
    CoopJump,
    /// Doubled, or halved when doubling does not help.
    Coop,
    /// Raised by a step, or lowered when raising does not help.
    BlockSize,
}

/// The phases in order; the search has converged after the last.
const AXES: [Axis; 4] = [Axis::Repeat, Axis::CoopJump, Axis::Coop, Axis::BlockSize];

/// Where a phase stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Walk {
    /// Index into [`AXES`].
    axis: usize,
    /// Moving down (halving, lowering) rather than up.
    down: bool,
    /// A step of this phase has been kept.
    moved: bool,
    /// The phase has turned to its second direction.
    turned: bool,
}

impl Walk {
    fn start(axis: usize) -> Self {
        // Repeat goes down first, the others up first.
        Walk { axis, down: AXES.get(axis) == Some(&Axis::Repeat), moved: false, turned: false }
    }
}

/// The tuner's state machine: which configuration to time next, given the timings so far. Follows
/// Reguly & Giles: from the fixed rule, halve `repeat` (or double it), going on in a direction while
/// each step gains more than [`MIN_GAIN`]; then try `coop` doubled with a block of
/// [`JUMP_BLOCK_SIZE`]; then walk `coop`; then the block size; keeping the best configuration.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    step: u32,
    best: ParamConfig,
    /// The best configuration's time; `None` until the start has been timed.
    best_ms: Option<f32>,
    /// The phase under way; `None` before the start is timed.
    walk: Option<Walk>,
    /// The configuration being timed; `None` once converged.
    candidate: Option<ParamConfig>,
    /// Timings of the candidate so far: how many, and the fastest.
    samples: u32,
    fastest_ms: f32,
}

impl Search {
    /// A search from `start` (the fixed rule's configuration).
    pub fn new(start: ParamConfig, precision: Precision) -> Self {
        Search {
            step: block_step(precision),
            best: start,
            best_ms: None,
            walk: None,
            candidate: Some(start),
            samples: 0,
            fastest_ms: f32::INFINITY,
        }
    }

    /// A search that has nothing to do: `config` is final.
    pub fn converged_at(config: ParamConfig, precision: Precision) -> Self {
        Search { candidate: None, ..Search::new(config, precision) }
    }

    /// The configuration to time next, or `None` once the search has converged.
    pub fn next(&self) -> Option<ParamConfig> {
        self.candidate
    }

    /// The best configuration so far (the final one once converged).
    pub fn best(&self) -> ParamConfig {
        self.best
    }

    /// Takes a timing of `config`; a timing of anything but [`Search::next`] is stale and ignored.
    pub fn record(&mut self, config: ParamConfig, ms: f32) {
        if self.candidate != Some(config) {
            return;
        }
        self.samples += 1;
        self.fastest_ms = self.fastest_ms.min(ms);
        if self.samples < SAMPLES_PER_CONFIG {
            return;
        }
        let ms = self.fastest_ms;
        self.samples = 0;
        self.fastest_ms = f32::INFINITY;
        let Some(best_ms) = self.best_ms else {
            self.best_ms = Some(ms);
            self.walk = Some(Walk::start(0));
            self.propose();
            return;
        };
        let kept = ms < best_ms * (1.0 - MIN_GAIN);
        if kept {
            self.best = config;
            self.best_ms = Some(ms);
        }
        if let Some(walk) = &mut self.walk {
            if AXES.get(walk.axis) == Some(&Axis::CoopJump) {
                *walk = Walk::start(walk.axis + 1);
            } else if kept {
                walk.moved = true;
            } else {
                Self::turn_or_finish(walk);
            }
        }
        self.propose();
    }

    /// After a step that was not kept (or could not be made): the phase turns to its other direction
    /// if it has neither turned nor moved yet, and otherwise ends. The jump is a single probe.
    fn turn_or_finish(walk: &mut Walk) {
        if !walk.moved && !walk.turned && AXES.get(walk.axis) != Some(&Axis::CoopJump) {
            walk.down = !walk.down;
            walk.turned = true;
        } else {
            *walk = Walk::start(walk.axis + 1);
        }
    }

    /// Sets the candidate to the next step from the best configuration, moving through directions and
    /// phases that have no step left; `None` after the last phase.
    fn propose(&mut self) {
        self.candidate = None;
        while let Some(mut walk) = self.walk {
            let Some(&axis) = AXES.get(walk.axis) else {
                self.walk = None;
                return;
            };
            if let Some(next) = self.neighbour(axis, walk.down).filter(|&c| c != self.best) {
                self.candidate = Some(next);
                return;
            }
            Self::turn_or_finish(&mut walk);
            self.walk = Some(walk);
        }
    }

    /// The best configuration moved one step along `axis`, if that stays within the search space.
    fn neighbour(&self, axis: Axis, down: bool) -> Option<ParamConfig> {
        let b = self.best;
        let halve_or_double = |v: u32, max: u32| {
            let next = if down { v / 2 } else { v * 2 };
            (next >= 1 && next <= max).then_some(next)
        };
        match axis {
            Axis::Repeat => halve_or_double(b.repeat, MAX_REPEAT).map(|repeat| ParamConfig { repeat, ..b }),
            Axis::CoopJump => Some(ParamConfig {
                coop: (b.coop * 2).min(CSR_PARAM_COOPS[CSR_PARAM_COOPS.len() - 1]),
                block_size: JUMP_BLOCK_SIZE,
                ..b
            }),
            Axis::Coop => halve_or_double(b.coop, CSR_PARAM_COOPS[CSR_PARAM_COOPS.len() - 1])
                .map(|coop| ParamConfig { coop, ..b }),
            Axis::BlockSize => {
                let next = if down { b.block_size.checked_sub(self.step)? } else { b.block_size + self.step };
                (TUNE_MIN_BLOCK_SIZE..=TUNE_MAX_BLOCK_SIZE)
                    .contains(&next)
                    .then_some(ParamConfig { block_size: next, ..b })
            }
        }
    }
}

/// Two timing events around one product, and the configuration they time.
#[derive(Debug)]
struct Timer {
    start: CudaEvent,
    end: CudaEvent,
    /// The configuration of the product between the events, until its timing has been read.
    pending: Option<ParamConfig>,
}

/// Products `y = alpha * A * x + beta * y` with one matrix, by the parametrised kernel
/// ([`Kernel::CsrParam`]), whose parameters tune themselves over the calls: from the fixed rule,
/// `repeat` halved (or doubled) while that gains more than 5%, then `coop` doubled with 192 threads per
/// block, then `coop` walked, then the block size in steps of 32 (64 in `f64`) between 96 and 512.
///
/// Each call runs one product with a correct kernel; while tuning, some calls are timed with CUDA
/// events, whose result is read at a later call once the GPU has passed them, so no call waits on
/// the GPU. A caller that never waits on the stream (never reads a result) leaves the tuner where it
/// is, which costs nothing. Once converged ([`TunedSpmv::converged`]), a call is a plain launch.
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
    search: Search,
    /// Where the search stands: timing candidates, or converged with the plan of its choice.
    state: State<'a, T>,
    tuning_products: u64,
}

#[derive(Debug)]
enum State<'a, T: Scalar> {
    Tuning(Timer),
    /// The events were released with the timer; products run the plan.
    Converged(Plan<'a, T, DeviceCsr<T>>),
}

impl<'a, T: Scalar> TunedSpmv<'a, T> {
    /// A tuner for products with `a` on `gpu`, starting at Reguly & Giles' fixed rule
    /// ([`Kernel::fixed_rule`]). A matrix without entries needs no tuning: it starts converged.
    pub fn new(gpu: &'a Gpu, a: &'a DeviceCsr<T>) -> Result<Self> {
        if !a.belongs_to(gpu) {
            return Err(Error::ForeignBuffer("the matrix"));
        }
        let start = fixed_rule(a.stats(), gpu.sm_count());
        let (search, state) = if a.nnz() == 0 {
            (Search::converged_at(start, T::PRECISION), State::Converged(gpu.plan(a, start.kernel())?))
        } else {
            let event = || gpu.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
            let timer = Timer { start: event()?, end: event()?, pending: None };
            (Search::new(start, T::PRECISION), State::Tuning(timer))
        };
        Ok(Self { gpu, a, search, state, tuning_products: 0 })
    }

    /// Every kernel configuration the tuner can reach for `T`, for an exhaustive search to compare
    /// with.
    pub fn search_space() -> Vec<Kernel> {
        search_space(T::PRECISION)
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
            let plan = self.gpu.plan(self.a, self.search.best().kernel())?;
            let product = plan.spmv(alpha, x, beta, y);
            self.state = State::Converged(plan);
            return product;
        };
        self.tuning_products += 1;
        // While a timing is in flight, or for a product that runs no SpMV kernel, run the candidate
        // untimed.
        if timer.pending.is_some() || alpha == T::ZERO {
            let config = timer.pending.unwrap_or(next);
            return self.gpu.spmv_with(config.kernel(), alpha, self.a, x, beta, y);
        }
        let plan = self.gpu.plan(self.a, next.kernel())?;
        timer.start.record(self.gpu.stream())?;
        plan.spmv(alpha, x, beta, y)?;
        timer.end.record(self.gpu.stream())?;
        timer.pending = Some(next);
        Ok(())
    }

    /// The chosen kernel, once the search has converged; `None` while it is still tuning.
    pub fn converged(&self) -> Option<Kernel> {
        self.search.next().is_none().then(|| self.search.best().kernel())
    }

    /// The fastest kernel so far (the chosen one once converged).
    pub fn best(&self) -> Kernel {
        self.search.best().kernel()
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

    fn rule(coop: u32, repeat: u32) -> ParamConfig {
        ParamConfig { coop, repeat, block_size: BLOCK_SIZE }
    }

    /// Runs a search to the end with `time` as the cost of a configuration; returns the best and the
    /// configurations timed, in order.
    fn run(
        start: ParamConfig,
        precision: Precision,
        time: impl Fn(ParamConfig) -> f32,
    ) -> (ParamConfig, Vec<ParamConfig>) {
        let mut search = Search::new(start, precision);
        let mut timed = Vec::new();
        while let Some(c) = search.next() {
            timed.push(c);
            for _ in 0..SAMPLES_PER_CONFIG {
                search.record(c, time(c));
            }
            assert!(timed.len() < 200, "no convergence: {timed:?}");
        }
        (search.best(), timed)
    }

    /// A bowl with its minimum at `target`: a factor per parameter, growing with the square of the
    /// distance in steps (doublings for coop and repeat, 32 threads for the block), so that each step
    /// towards the target gains at least a third.
    fn bowl(target: ParamConfig) -> impl Fn(ParamConfig) -> f32 {
        move |c| {
            let steps = |a: f32, b: f32| 1.0 + (a - b).powi(2);
            let log = |v: u32| (v as f32).log2();
            steps(log(c.coop), log(target.coop))
                * steps(log(c.repeat), log(target.repeat))
                * steps(c.block_size as f32 / 32.0, target.block_size as f32 / 32.0)
        }
    }

    #[test]
    fn space_sizes_and_bounds() {
        let f32_space = search_space(Precision::Single);
        let f64_space = search_space(Precision::Double);
        // 6 coops x 7 repeats x 14 block sizes (96 ..= 512 by 32), and 7 block sizes (128 ..= 512 by 64).
        assert_eq!(f32_space.len(), 6 * 7 * 14);
        assert_eq!(f64_space.len(), 6 * 7 * 7);
        for space in [&f32_space, &f64_space] {
            assert_eq!(space.iter().collect::<HashSet<_>>().len(), space.len());
            assert!(space.contains(&rule(4, 1).kernel()));
            assert!(
                space.contains(&ParamConfig { coop: 8, repeat: 1, block_size: JUMP_BLOCK_SIZE }.kernel())
            );
        }
        assert!(f32_space.contains(&ParamConfig { coop: 1, repeat: 64, block_size: 96 }.kernel()));
        assert!(!f64_space.contains(&ParamConfig { coop: 1, repeat: 1, block_size: 96 }.kernel()));
    }

    #[test]
    fn starts_at_the_rule_then_halves_repeat() {
        let mut search = Search::new(rule(4, 8), Precision::Single);
        assert_eq!(search.next(), Some(rule(4, 8)));
        search.record(rule(4, 8), 1.0);
        assert_eq!(search.next(), Some(rule(4, 8)), "a second sample of the start");
        search.record(rule(4, 8), 1.0);
        assert_eq!(search.next(), Some(rule(4, 4)));
    }

    #[test]
    fn stale_timings_are_ignored() {
        let mut search = Search::new(rule(4, 8), Precision::Single);
        search.record(rule(2, 8), 0.1);
        search.record(rule(2, 8), 0.1);
        assert_eq!(search.next(), Some(rule(4, 8)));
        assert_eq!(search.best(), rule(4, 8));
    }

    #[test]
    fn finds_the_minimum_of_a_bowl() {
        for target in [
            ParamConfig { coop: 4, repeat: 8, block_size: 128 },
            ParamConfig { coop: 16, repeat: 1, block_size: 256 },
            ParamConfig { coop: 1, repeat: 64, block_size: 96 },
            ParamConfig { coop: 32, repeat: 2, block_size: 512 },
            ParamConfig { coop: 8, repeat: 1, block_size: 192 },
        ] {
            let (best, timed) = run(rule(4, 1), Precision::Single, bowl(target));
            assert_eq!(best, target, "timed {timed:?}");
        }
        // In double precision the block walk takes steps of 64 from 128 or 192.
        let target = ParamConfig { coop: 2, repeat: 4, block_size: 320 };
        assert_eq!(run(rule(4, 1), Precision::Double, bowl(target)).0, target);
    }

    #[test]
    fn gains_under_five_percent_are_not_taken() {
        // Every other configuration is 4% faster than the start: within the noise.
        let start = rule(4, 2);
        let (best, timed) = run(start, Precision::Single, |c| if c == start { 1.0 } else { 0.96 });
        assert_eq!(best, start);
        // The start, both directions of repeat, the jump, both directions of coop and of the block.
        assert_eq!(timed.len(), 1 + 2 + 1 + 2 + 2, "{timed:?}");
        // 6% faster is taken.
        let (best, _) = run(start, Precision::Single, |c| if c.repeat == 1 { 0.94 } else { 1.0 });
        assert_eq!(best.repeat, 1);
    }

    #[test]
    fn repeat_is_doubled_when_halving_does_not_help() {
        let (best, timed) = run(rule(4, 2), Precision::Single, |c| 1.0 / c.repeat as f32);
        assert_eq!(best.repeat, MAX_REPEAT);
        assert_eq!(&timed[..3], [rule(4, 2), rule(4, 1), rule(4, 4)]);
    }

    #[test]
    fn the_jump_doubles_coop_and_raises_the_block() {
        let (_, timed) = run(rule(4, 1), Precision::Single, |_| 1.0);
        // repeat 1 cannot halve: the doubling is tried, then the jump.
        assert_eq!(
            &timed[..3],
            [rule(4, 1), rule(4, 2), ParamConfig { coop: 8, repeat: 1, block_size: 192 }]
        );
    }

    /// Whatever the timings, the search ends, and times only configurations of the search space.
    #[test]
    fn every_candidate_is_in_the_space() {
        for precision in [Precision::Single, Precision::Double] {
            let space: HashSet<Kernel> = search_space(precision).into_iter().collect();
            for seed in 0..200u64 {
                let noise = |c: ParamConfig| {
                    let h = ((u64::from(c.coop) * 0x9e37_79b9)
                        ^ (u64::from(c.repeat) * 0x85eb_ca6b)
                        ^ (u64::from(c.block_size) * 0xc2b2_ae35))
                        .wrapping_mul(seed | 1)
                        .rotate_left(17);
                    (h % 1000) as f32 / 100.0 + 0.5
                };
                for start in [rule(1, 1), rule(4, 8), rule(32, 64)] {
                    let (best, timed) = run(start, precision, noise);
                    assert!(space.contains(&best.kernel()));
                    for c in timed {
                        assert!(space.contains(&c.kernel()), "{c:?} from {start:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_converged_search_asks_for_nothing() {
        let search = Search::converged_at(rule(8, 1), Precision::Double);
        assert_eq!(search.next(), None);
        assert_eq!(search.best(), rule(8, 1));
    }
}
