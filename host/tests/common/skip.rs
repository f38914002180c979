//! How a GPU test that finds too few GPUs says so, and how a test that finds one shares it with the
//! tests beside it. The skip's line is read back by `cargo xtask test` (`xtask/src/tally.rs`), which
//! ends with how many tests skipped and why, so a skip never passes for a pass. The benchmark's GPU
//! tests include this file too (`#[path]`), so that every test binary writes the same line.

use std::cell::RefCell;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Writes straight to stderr, past the test harness's capture, so a line is seen in every run. One
/// write of the whole line, so that the harness's own lines never land inside it.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// The GPUs `SPMV_REQUIRE_GPU` asks for: a test that needs no more than that many and finds fewer
/// fails instead of skipping (`1` for the single-GPU tests, `2` for those of several GPUs too).
pub fn required_gpus() -> usize {
    std::env::var("SPMV_REQUIRE_GPU").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Says that `test`, which needs `gpus` GPUs, skips for `reason`, or fails it when `SPMV_REQUIRE_GPU`
/// asks for at least that many. The line, `SKIPPED[gpus=N] TEST: REASON`, is the one
/// `cargo xtask test` counts (`xtask/src/tally.rs`): keep the two in step.
pub fn skipped(test: &str, gpus: usize, reason: &str) {
    let required = required_gpus();
    if required >= gpus {
        panic!("{test}: SPMV_REQUIRE_GPU={required}, but {reason}");
    }
    say(&format!("SKIPPED[gpus={gpus}] {test}: {reason}"));
}

/// Says that `test` skips on this GPU, which lacks `feature` (`sm_90`): a skip that
/// `SPMV_REQUIRE_GPU` cannot prevent, so it is never turned into a failure. Same line as
/// [`skipped`], with the feature in place of the GPU count.
pub fn skipped_without(test: &str, feature: &str, reason: &str) {
    say(&format!("SKIPPED[{feature}] {test}: {reason}"));
}

/// The first GPU, or `None` after saying why there is none; with `SPMV_REQUIRE_GPU=1` (or more) a
/// missing GPU fails the test instead.
///
/// The test holds the GPUs shared from here until it ends (see [`GPUS`]): call it on the test's own
/// thread, not on one the test spawns and waits for.
pub fn gpu_or_skip(test: &str) -> Option<gpu_spmv::Gpu> {
    share_the_gpus();
    match gpu_spmv::Gpu::new() {
        Ok(gpu) => {
            say(&format!("{test}: running on {}", gpu.name()));
            Some(gpu)
        }
        Err(e) => {
            skipped(test, 1, &e.to_string());
            None
        }
    }
}

/// The GPUs as the tests of one process hold them. The tests of a test binary (the library's GPU
/// tests are all one, `host/tests/gpu/`) run side by side on the harness's threads and share the
/// devices, their memory included: each test holds the GPUs shared from [`gpu_or_skip`] on, and a
/// test that must not have others beside it holds them whole ([`alone_on_the_gpus`]), which waits for
/// the tests holding them to end and keeps the tests after it waiting until it is done.
static GPUS: RwLock<()> = RwLock::new(());

/// What the current thread holds of [`GPUS`].
enum Hold {
    Nothing,
    /// Until the thread ends: the harness runs each test on a thread of its own, so a test holds the
    /// GPUs shared until it ends without keeping a guard of its own.
    Shared {
        _guard: RwLockReadGuard<'static, ()>,
    },
    /// Through the [`Alone`] this thread was given.
    Whole,
}

thread_local! {
    static HOLD: RefCell<Hold> = const { RefCell::new(Hold::Nothing) };
}

/// Holds the GPUs shared until the current thread ends, unless it holds them already.
fn share_the_gpus() {
    HOLD.with_borrow_mut(|hold| {
        if let Hold::Nothing = hold {
            *hold = Hold::Shared { _guard: GPUS.read().unwrap_or_else(PoisonError::into_inner) };
        }
    });
}

/// The GPUs held whole by the test that has this, until it is dropped (see [`alone_on_the_gpus`]).
#[must_use = "the GPUs are the test's alone only while this is kept"]
pub struct Alone {
    _whole: RwLockWriteGuard<'static, ()>,
}

/// Holds the GPUs whole until the returned [`Alone`] is dropped: waits until no other test holds them,
/// and keeps every other test waiting meanwhile (at its [`gpu_or_skip`]). For a test that takes every
/// byte of device memory for a moment, which would make another's allocation fail, and for the
/// multi-GPU tests, whose NCCL launches across the GPUs can hang with a thread that synchronises a
/// device meanwhile (a `cuMemFree`). The current thread's shared hold, if any, is let go first.
pub fn alone_on_the_gpus() -> Alone {
    HOLD.with_borrow_mut(|hold| {
        assert!(!matches!(hold, Hold::Whole), "the GPUs are held whole by this thread already");
        *hold = Hold::Nothing;
    });
    let whole = GPUS.write().unwrap_or_else(PoisonError::into_inner);
    HOLD.with_borrow_mut(|hold| *hold = Hold::Whole);
    Alone { _whole: whole }
}

impl Drop for Alone {
    fn drop(&mut self) {
        // The thread may be ending, its `HOLD` gone already; then there is nothing to reset.
        let _ = HOLD.try_with(|hold| *hold.borrow_mut() = Hold::Nothing);
    }
}
