//! A hot plan's products replayed from CUDA graphs, or launched directly, whichever the plan
//! measured faster: the host's cost of a product that runs back to back with the same operands.
//!
//! Why replay (PERF section 17, "Item 4"): on the H100 a bare `cuLaunchKernel` costs the host 3.4 µs
//! and a plan's product 3.1 µs, while launching a graph that holds the same kernel costs 1.2 µs,
//! because the graph's launches were validated and packed once, when it was instantiated. For a
//! small matrix called back to back (a solver's product), the host's enqueue is longer than the
//! kernel, so it sets the rate. A graph's kernels hold their arguments (the vectors' addresses,
//! `alpha`, `beta`), so a graph serves only the operands it was captured with: the [`Replays`] of a
//! plan keep a few, each made at the second product with its operands, so that operands used once
//! cost no capture.
//!
//! Why measure (PERF section 49): on Hopper a direct launch of the kernels that wait for the grid
//! ahead (`abi::SM90_ENTRIES`, section 47) starts while the product before it still runs, which a
//! graph launch does not; a product longer than the host's launch gains that overlap, one shorter
//! loses the host's extra cost. Which is faster depends on the kernel's time against the host's,
//! and the latter is the machine's, so the plan times both ([`Trial`]) and keeps the faster.

use crate::Result;
use crate::device::{Gpu, Graph, Sibling};
use cudarc::driver::CudaEvent;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// What a captured product depends on besides the plan: the vectors' device addresses and the
/// scalars' bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Operands {
    pub x: u64,
    pub y: u64,
    pub alpha: u64,
    pub beta: u64,
}

/// How many operand sets a plan keeps graphs for: a solver's products use one or two (`A p`, or a
/// power iteration's swapped `x` and `y`), and each graph holds a little device memory.
const KEPT: usize = 4;

/// How a hot plan enqueues a product whose operands it keeps a graph for ([`Plan::hot_launch`](
/// crate::Plan::hot_launch)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HotLaunch {
    /// Not decided: no operands were used twice yet, or the plan is timing both ways.
    Measuring,
    /// Replayed from the operands' graph: one cheap launch for the host, the product starting
    /// when the one before it has ended.
    Replay,
    /// Launched directly, as a cold plan's products: a dearer launch for the host, and on Hopper
    /// the product's kernels start while the product before it ends (PERF section 47). Also the
    /// way of a plan whose capture failed.
    Direct,
}

/// The graphs of a plan's recent operands ([`Cache`]), the [`Gpu::sibling`] they are captured on,
/// and how the products that have one are launched, behind a lock: a plan is shared by reference,
/// and a graph's calls must be serialised.
///
/// The captures run on a stream of their own because a stream that captures takes in whatever
/// is enqueued on it, from any thread: captured on the plan's own stream, a product that another
/// thread enqueued there meanwhile would not run, but replay with this graph.
#[derive(Default)]
pub(crate) struct Replays {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Declared before `side`, so dropped before the stream they were captured on.
    cache: Cache<Operands, Graph>,
    side: Option<Sibling>,
    way: Way,
}

/// [`HotLaunch`] with the trial's state.
#[derive(Default)]
enum Way {
    /// No graph captured yet.
    #[default]
    Untimed,
    Timing(Trial),
    Decided(HotLaunch),
}

impl std::fmt::Debug for Replays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replays").finish_non_exhaustive()
    }
}

impl Replays {
    /// Enqueues on `gpu`'s stream the product that `enqueue` enqueues on the `Gpu` it is given (with
    /// `operands`): directly if the plan chose so; by replaying its graph if one was captured;
    /// by capturing one and replaying it if these operands were seen before; otherwise, and
    /// whenever `gpu`'s stream is capturing a caller's graph (the product then joins that graph,
    /// as any other), by `enqueue` on `gpu`. While the plan times both ways, every product that
    /// has a kept graph, whatever its operands, takes the way the [`Trial`] gives.
    pub fn run(&self, gpu: &Gpu, operands: Operands, enqueue: impl Fn(&Gpu) -> Result<()>) -> Result<()> {
        if gpu.capturing()? {
            return enqueue(gpu);
        }
        // The state stays consistent whatever panicked while it was held: each change is one
        // assignment, or a trial's mark that the next product records again. A graph's launch, a
        // capture and a trial's products need the lock; a direct enqueue outside a trial does not.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State { cache, side, way } = &mut *state;
        let graph = match way {
            Way::Decided(HotLaunch::Direct) => None,
            _ => match cache.look_up(operands) {
                Lookup::Hit(graph) => Some(graph),
                Lookup::Second => match capture(side, gpu, &enqueue) {
                    Ok(graph) => Some(cache.keep(operands, graph)),
                    Err(_) => {
                        *way = Way::Decided(HotLaunch::Direct);
                        None
                    }
                },
                Lookup::First => None,
            },
        };
        let Some(graph) = graph else {
            drop(state);
            return enqueue(gpu);
        };
        way.enqueue(gpu, graph, &enqueue)
    }

    /// How many operand sets have a graph kept.
    pub fn kept(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).cache.kept.len()
    }

    /// How the products with a kept graph are launched.
    pub fn launch(&self) -> HotLaunch {
        match self.state.lock().unwrap_or_else(PoisonError::into_inner).way {
            Way::Untimed | Way::Timing(_) => HotLaunch::Measuring,
            Way::Decided(way) => way,
        }
    }
}

impl Way {
    /// Enqueues one product that has `graph`, the plan's way, and moves the way on: the first such
    /// product starts the trial (or, without events to time it by, decides to replay, as plans did
    /// before the trial), and the trial's last decides.
    fn enqueue(&mut self, gpu: &Gpu, graph: &Graph, enqueue: &impl Fn(&Gpu) -> Result<()>) -> Result<()> {
        if matches!(self, Way::Untimed) {
            *self = Trial::new(gpu).map_or(Way::Decided(HotLaunch::Replay), Way::Timing);
        }
        match self {
            Way::Timing(trial) => {
                if let Some(kept) = trial.step(gpu, || graph.launch_on(gpu), || enqueue(gpu))? {
                    *self = Way::Decided(kept);
                }
                Ok(())
            }
            Way::Decided(HotLaunch::Replay) => graph.launch_on(gpu),
            Way::Decided(HotLaunch::Direct | HotLaunch::Measuring) | Way::Untimed => enqueue(gpu),
        }
    }
}

/// Products a window of a [`Trial`] holds.
const WINDOW: usize = 16;

/// Windows a [`Trial`] times, replayed and launched directly by turns: four of each way, so that
/// the median of a way's windows leaves out one that met something else (the caller waiting for
/// the GPU, another process's work).
const WINDOWS: usize = 8;

/// How the products of a [`Trial`]'s window `window` are launched: even windows replay, so that
/// the product that captured the graph replays it at once, as before the trial.
fn window_way(window: usize) -> HotLaunch {
    if window.is_multiple_of(2) { HotLaunch::Replay } else { HotLaunch::Direct }
}

/// A hot plan timing its two ways of launching: [`WINDOWS`] windows of [`WINDOW`] products that
/// have a kept graph, by turns as [`window_way`] gives; the way whose windows cost less in the
/// median wins.
///
/// Products back to back run at the pace of the slower of the host and the GPU, so a window costs
/// the longer of its two spans: the host's, on its clock, from the window's first product to the
/// next window's (the caller's own work between products included); and the GPU's, between events
/// recorded on the stream at the same points. Either alone misleads: the GPU's span of a window
/// that starts behind a queue of work (a replayed window fills one when the host outruns the GPU)
/// leaves out the host's cost of its products, which were enqueued while the GPU drained that
/// queue; the host's span leaves out a GPU slower than the host. No product waits for the timing:
/// once every window is enqueued, products replay until the last event has completed, and the
/// product that finds it so decides. A timing the driver fails to give decides to replay.
struct Trial {
    /// `marks[w]` recorded before window `w`'s first product, `marks[WINDOWS]` before the first
    /// product after the last window.
    marks: Vec<CudaEvent>,
    /// The host's clock where each mark was recorded.
    clock: [Instant; WINDOWS + 1],
    /// Products enqueued so far in the trial's windows; one more once the last mark is recorded.
    products: usize,
}

impl Trial {
    fn new(gpu: &Gpu) -> Result<Self> {
        let marks = (0..=WINDOWS).map(|_| gpu.timing_event()).collect::<Result<_>>()?;
        Ok(Self { marks, clock: [Instant::now(); WINDOWS + 1], products: 0 })
    }

    /// Enqueues one product, by `replay` or `direct` as the trial's window asks, after the mark
    /// that opens the window; the way the plan should keep, once the windows' spans are known.
    /// An error leaves the product not enqueued and the trial where it was.
    fn step(
        &mut self,
        gpu: &Gpu,
        replay: impl FnOnce() -> Result<()>,
        direct: impl FnOnce() -> Result<()>,
    ) -> Result<Option<HotLaunch>> {
        let window = self.products / WINDOW;
        if window < WINDOWS {
            if self.products.is_multiple_of(WINDOW) {
                self.mark(gpu, window)?;
            }
            match window_way(window) {
                HotLaunch::Direct => direct()?,
                HotLaunch::Replay | HotLaunch::Measuring => replay()?,
            }
            self.products += 1;
            return Ok(None);
        }
        if self.products == WINDOW * WINDOWS {
            self.mark(gpu, WINDOWS)?;
            self.products += 1;
        }
        replay()?;
        Ok(match self.marks[WINDOWS].try_is_complete() {
            Ok(false) => None,
            Ok(true) => Some(self.spans().map_or(HotLaunch::Replay, |spans| faster(&spans))),
            Err(_) => Some(HotLaunch::Replay),
        })
    }

    /// Records mark `at` on the stream and the host's clock beside it.
    fn mark(&mut self, gpu: &Gpu, at: usize) -> Result<()> {
        self.marks[at].record(gpu.stream())?;
        self.clock[at] = Instant::now();
        Ok(())
    }

    /// Each window's cost, milliseconds, once the last mark has completed (so that reading the
    /// events waits for nothing).
    fn spans(&self) -> Result<[f64; WINDOWS]> {
        let mut spans = [0.0; WINDOWS];
        for (w, span) in spans.iter_mut().enumerate() {
            let gpu_ms = f64::from(self.marks[w].elapsed_ms(&self.marks[w + 1])?);
            let host_ms = (self.clock[w + 1] - self.clock[w]).as_secs_f64() * 1e3;
            *span = gpu_ms.max(host_ms);
        }
        Ok(spans)
    }
}

/// The way whose windows cost less in the median, of [`Trial`]'s windows' `spans` (by
/// [`window_way`]); replaying where they tie, which costs the host less.
fn faster(spans: &[f64; WINDOWS]) -> HotLaunch {
    let median = |way: HotLaunch| {
        let mut of_way: Vec<f64> = (0..WINDOWS).filter(|&w| window_way(w) == way).map(|w| spans[w]).collect();
        of_way.sort_by(f64::total_cmp);
        let n = of_way.len();
        (of_way[(n - 1) / 2] + of_way[n / 2]) / 2.0
    };
    if median(HotLaunch::Direct) < median(HotLaunch::Replay) { HotLaunch::Direct } else { HotLaunch::Replay }
}

/// `enqueue`'s work captured on `side`, made from `gpu` if there is none yet.
fn capture(side: &mut Option<Sibling>, gpu: &Gpu, enqueue: impl Fn(&Gpu) -> Result<()>) -> Result<Graph> {
    let side = match side.take() {
        Some(kept) => side.insert(kept),
        None => side.insert(gpu.sibling()?),
    };
    side.capture(|| enqueue(side))
}

/// What [`Cache::look_up`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup<'c, G> {
    /// A kept value for the key.
    Hit(&'c G),
    /// None, but the key was looked up before (and is now forgotten as such): make one and
    /// [`Cache::keep`] it.
    Second,
    /// Neither: the key is noted.
    First,
}

/// Up to [`KEPT`] values by key, the least recently used dropped first, and as many keys seen once:
/// a value is made only for a key looked up twice while it was among the last [`KEPT`] such keys.
#[derive(Debug)]
pub(crate) struct Cache<K, G> {
    /// Most recently used last.
    kept: Vec<(K, G)>,
    /// Most recently seen last.
    seen: Vec<K>,
}

impl<K, G> Default for Cache<K, G> {
    fn default() -> Self {
        Self { kept: Vec::with_capacity(KEPT), seen: Vec::with_capacity(KEPT) }
    }
}

impl<K: Copy + PartialEq, G> Cache<K, G> {
    pub fn look_up(&mut self, key: K) -> Lookup<'_, G> {
        if let Some(at) = self.kept.iter().position(|(k, _)| *k == key) {
            self.kept[at..].rotate_left(1);
            let last = self.kept.len() - 1;
            return Lookup::Hit(&self.kept[last].1);
        }
        if let Some(at) = self.seen.iter().position(|k| *k == key) {
            self.seen.remove(at);
            return Lookup::Second;
        }
        if self.seen.len() == KEPT {
            self.seen.remove(0);
        }
        self.seen.push(key);
        Lookup::First
    }

    /// Keeps `value` for `key`, dropping the least recently used value if [`KEPT`] are kept.
    pub fn keep(&mut self, key: K, value: G) -> &G {
        if self.kept.len() == KEPT {
            self.kept.remove(0);
        }
        self.kept.push((key, value));
        &self.kept[self.kept.len() - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trial_takes_each_way_by_turns_the_capturing_product_replaying() {
        let ways: Vec<HotLaunch> = (0..WINDOWS).map(window_way).collect();
        assert_eq!(ways[0], HotLaunch::Replay);
        for way in [HotLaunch::Replay, HotLaunch::Direct] {
            assert_eq!(ways.iter().filter(|&&w| w == way).count(), WINDOWS / 2);
        }
        assert!(ways.windows(2).all(|pair| pair[0] != pair[1]));
    }

    #[test]
    fn the_trial_keeps_the_way_that_took_less_time() {
        // Even windows replay, odd ones launch directly.
        assert_eq!(faster(&[12.0, 10.0, 12.5, 11.0, 12.0, 10.5, 12.0, 11.0]), HotLaunch::Direct);
        assert_eq!(faster(&[9.0, 10.0, 10.5, 11.0, 9.5, 10.0, 9.0, 11.0]), HotLaunch::Replay);
        // The median of each way's windows: one window that met a wait does not decide.
        assert_eq!(faster(&[12.0, 10.0, 12.0, 40.0, 12.0, 10.0, 12.0, 10.5]), HotLaunch::Direct);
        assert_eq!(faster(&[12.0, 13.0, 3.0, 13.0, 12.0, 13.0, 12.0, 13.0]), HotLaunch::Replay);
        assert_eq!(faster(&[10.0; WINDOWS]), HotLaunch::Replay, "a tie replays");
    }

    #[test]
    fn a_value_is_made_at_the_second_look_up_and_hit_after() {
        let mut cache = Cache::<u32, &str>::default();
        assert_eq!(cache.look_up(7), Lookup::First);
        assert_eq!(cache.look_up(7), Lookup::Second);
        cache.keep(7, "g7");
        assert_eq!(cache.look_up(7), Lookup::Hit(&"g7"));
        assert_eq!(cache.look_up(7), Lookup::Hit(&"g7"));
    }

    #[test]
    fn alternating_keys_each_get_a_value() {
        let mut cache = Cache::<u32, u32>::default();
        for key in [1, 2] {
            assert_eq!(cache.look_up(key), Lookup::First);
        }
        for key in [1, 2] {
            assert_eq!(cache.look_up(key), Lookup::Second);
            cache.keep(key, key * 10);
        }
        for _ in 0..3 {
            assert_eq!(cache.look_up(1), Lookup::Hit(&10));
            assert_eq!(cache.look_up(2), Lookup::Hit(&20));
        }
    }

    #[test]
    fn keys_used_once_make_nothing_and_are_forgotten_after_kept_others() {
        let mut cache = Cache::<usize, usize>::default();
        assert_eq!(cache.look_up(0), Lookup::First);
        for key in 1..=KEPT {
            assert_eq!(cache.look_up(key), Lookup::First);
        }
        // 0 was pushed out of the keys seen once by the `KEPT` after it.
        assert_eq!(cache.look_up(0), Lookup::First);
        assert!(cache.kept.is_empty());
    }

    #[test]
    fn the_least_recently_used_value_goes_first() {
        let mut cache = Cache::<usize, usize>::default();
        for key in 0..KEPT {
            cache.keep(key, key);
        }
        assert_eq!(cache.look_up(0), Lookup::Hit(&0)); // 1 is now the least recently used
        cache.keep(99, 99);
        assert_eq!(cache.look_up(1), Lookup::First);
        assert_eq!(cache.look_up(0), Lookup::Hit(&0));
        assert_eq!(cache.look_up(99), Lookup::Hit(&99));
    }
}
