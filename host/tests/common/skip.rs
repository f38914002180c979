//! How a GPU test that finds too few GPUs says so. Its line is read back by `cargo xtask test`
//! (`xtask/src/tally.rs`), which ends with how many tests skipped and why, so a skip never passes
//! for a pass. The benchmark's GPU tests include this file too (`#[path]`), so that every test
//! binary writes the same line.

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
pub fn gpu_or_skip(test: &str) -> Option<gpu_spmv::Gpu> {
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
