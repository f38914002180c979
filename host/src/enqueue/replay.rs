//! A hot plan's products replayed from CUDA graphs: the host's cost of a product that runs back to
//! back with the same operands, cut from a driver launch per kernel to one graph launch.
//!
//! Why (PERF section 17, "Item 4"): on the H100 a bare `cuLaunchKernel` costs the host 3.4 µs and a
//! plan's product 3.1 µs, while launching a graph that holds the same kernel costs 1.2 µs, because
//! the graph's launches were validated and packed once, when it was instantiated. For a small matrix
//! called back to back (a solver's product), the host's enqueue is longer than the kernel, so it
//! sets the rate. A graph's kernels hold their arguments (the vectors' addresses, `alpha`, `beta`),
//! so a graph serves only the operands it was captured with: the [`Replays`] of a plan keep a few,
//! each made at the second product with its operands, so that operands used once cost no capture.

use crate::Result;
use crate::device::{Gpu, Graph, Sibling};
use std::sync::{Mutex, PoisonError};

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

/// The graphs of a plan's recent operands ([`Cache`]) and the [`Gpu::sibling`] they are captured on,
/// behind a lock: a plan is shared by reference, and a graph's calls must be serialised.
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
    /// A capture failed (a caller's context whose cudarc event tracking puts event waits into the
    /// capture, say): the plan enqueues its products directly from then on.
    off: bool,
}

impl std::fmt::Debug for Replays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replays").finish_non_exhaustive()
    }
}

impl Replays {
    /// Enqueues on `gpu`'s stream the product that `enqueue` enqueues on the `Gpu` it is given (with
    /// `operands`): by replaying its graph if one was captured; by capturing one and replaying it if
    /// these operands were seen before; otherwise, and whenever `gpu`'s stream is capturing a
    /// caller's graph (the product then joins that graph, as any other), by `enqueue` on `gpu`.
    pub fn run(&self, gpu: &Gpu, operands: Operands, enqueue: impl Fn(&Gpu) -> Result<()>) -> Result<()> {
        if gpu.capturing()? {
            return enqueue(gpu);
        }
        // The state stays consistent whatever panicked while it was held: each change is one
        // assignment. A graph's launch and a capture need the lock; a direct enqueue does not.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.off {
            drop(state);
            return enqueue(gpu);
        }
        let State { cache, side, off } = &mut *state;
        match cache.look_up(operands) {
            Lookup::Hit(graph) => graph.launch_on(gpu),
            Lookup::Second => match capture(side, gpu, &enqueue) {
                Ok(graph) => {
                    graph.launch_on(gpu)?;
                    cache.keep(operands, graph);
                    Ok(())
                }
                Err(_) => {
                    *off = true;
                    drop(state);
                    enqueue(gpu)
                }
            },
            Lookup::First => {
                drop(state);
                enqueue(gpu)
            }
        }
    }

    /// How many operand sets have a graph kept.
    pub fn kept(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).cache.kept.len()
    }
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
    pub fn keep(&mut self, key: K, value: G) {
        if self.kept.len() == KEPT {
            self.kept.remove(0);
        }
        self.kept.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
