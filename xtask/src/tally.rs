//! The tally `cargo xtask test` ends with: how many tests passed, and how many of them were GPU tests
//! that skipped, one line per reason. A skipped GPU test returns early and the harness counts it as a
//! pass, so without this a run on a machine without a GPU looks complete.
//!
//! A test that skips writes `SKIPPED[NEED] TEST: REASON` to stderr (`host/tests/common/skip.rs`
//! makes that line; keep the two in step). NEED is `gpus=N` for a test that needs N GPUs, so that a
//! run with `SPMV_REQUIRE_GPU=N` can refuse the skips it asked not to have, or a feature of the GPU
//! (`sm_90`), which no number of GPUs provides.

use std::collections::BTreeMap;

/// What a run's output said, read a line at a time.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// The sum of the harness's `N passed` over every test binary.
    passed: usize,
    /// The tests that skipped, by what they need and their reason.
    skipped: BTreeMap<(Need, String), Vec<String>>,
}

/// What a skipped test needs and did not find.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// This many GPUs.
    Gpus(usize),
    /// A feature of the GPU, by name (`sm_90`).
    Feature(String),
}

/// A test's skip line, parsed.
#[derive(Debug, PartialEq, Eq)]
struct Skip<'a> {
    need: Need,
    test: &'a str,
    reason: &'a str,
}

fn skip(line: &str) -> Option<Skip<'_>> {
    let rest = line.trim_end().strip_prefix("SKIPPED[")?;
    let (need, rest) = rest.split_once("] ")?;
    let need = match need.strip_prefix("gpus=") {
        Some(gpus) => Need::Gpus(gpus.parse().ok()?),
        None if !need.is_empty() && !need.contains(char::is_whitespace) => Need::Feature(need.to_owned()),
        None => return None,
    };
    let (test, reason) = rest.split_once(": ")?;
    Some(Skip { need, test, reason })
}

/// The passes of the harness's summary line of one binary, `test result: ok. 12 passed; 0 failed; ...`.
fn passed(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("test result: ")?;
    let (_, rest) = rest.split_once(". ")?;
    rest.split_once(" passed")?.0.parse().ok()
}

impl Tally {
    /// Counts what `line` says, if anything.
    pub(crate) fn read(&mut self, line: &str) {
        if let Some(s) = skip(line) {
            self.skipped.entry((s.need, s.reason.to_owned())).or_default().push(s.test.to_owned());
        } else if let Some(n) = passed(line) {
            self.passed += n;
        }
    }

    /// The lines to end the run with: the passes, then one line per reason a test skipped.
    pub(crate) fn summary(&self) -> Vec<String> {
        let skipped: usize = self.skipped.values().map(Vec::len).sum();
        let mut lines = vec![format!(
            "tests: {} passed, of which {skipped} GPU tests skipped and {} ran",
            self.passed,
            self.passed.saturating_sub(skipped)
        )];
        for ((need, reason), tests) in &self.skipped {
            let need = match need {
                Need::Gpus(1) => "1 GPU".to_owned(),
                Need::Gpus(n) => format!("{n} GPUs"),
                Need::Feature(feature) => format!("a GPU with {feature}"),
            };
            lines.push(format!("  skipped {} needing {need}: {reason}", tests.len()));
        }
        lines
    }

    /// The skips that `SPMV_REQUIRE_GPU=required` forbids: those of tests needing at most `required`
    /// GPUs, as `TEST: REASON`. (Such a test fails by itself; this catches one that skipped anyway.)
    /// A skip for a feature the GPU lacks is never forbidden: requiring GPUs cannot add it.
    pub(crate) fn forbidden(&self, required: usize) -> Vec<String> {
        self.skipped
            .iter()
            .filter(|((need, _), _)| matches!(need, Need::Gpus(gpus) if *gpus <= required))
            .flat_map(|((_, reason), tests)| tests.iter().map(move |t| format!("{t}: {reason}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's output as it comes: cargo's lines, the harness's (test names with their module's
    /// path, as in the one binary of the GPU tests), the tests' own, and skips of two reasons from
    /// several binaries.
    const OUTPUT: &str = "\
     Running tests/gpu/main.rs (target/debug/deps/gpu-0123)
gpu_csr: seed 7 (replay with SPMV_TEST_SEED=7)
SKIPPED[gpus=1] gpu_csr: no CUDA GPU available: libcuda.so: cannot open shared object file
SKIPPED[gpus=1] gpu_ell: no CUDA GPU available: libcuda.so: cannot open shared object file
test kernels::gpu_csr ... ok
test formats::gpu_ell ... ok
test reliability::cpu_only ... ok

test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

SKIPPED[gpus=2] distributed_spmv: 0 GPU(s) found
SKIPPED[gpus=1] gpu_graph: no CUDA GPU available: libcuda.so: cannot open shared object file
SKIPPED[sm_90] gpu_stream: NVIDIA A100 has no streaming engine
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
a line that mentions SKIPPED[gpus=1] in passing: is not a skip
test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s
";

    fn tally() -> Tally {
        let mut tally = Tally::default();
        OUTPUT.lines().for_each(|line| tally.read(line));
        tally
    }

    #[test]
    fn one_line_per_reason_with_its_count() {
        assert_eq!(
            tally().summary(),
            [
                "tests: 9 passed, of which 5 GPU tests skipped and 4 ran",
                "  skipped 3 needing 1 GPU: no CUDA GPU available: libcuda.so: cannot open shared object file",
                "  skipped 1 needing 2 GPUs: 0 GPU(s) found",
                "  skipped 1 needing a GPU with sm_90: NVIDIA A100 has no streaming engine",
            ]
        );
    }

    #[test]
    fn requiring_gpus_forbids_the_skips_of_tests_that_need_no_more() {
        let tally = tally();
        assert!(tally.forbidden(0).is_empty());
        assert_eq!(tally.forbidden(1).len(), 3);
        assert_eq!(tally.forbidden(2).len(), 4, "the sm_90 skip is never forbidden");
        assert!(tally.forbidden(1)[0].starts_with("gpu_csr: no CUDA GPU available"));
    }

    #[test]
    fn a_run_without_skips_says_so() {
        let mut tally = Tally::default();
        tally.read("test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
        assert_eq!(tally.summary(), ["tests: 5 passed, of which 0 GPU tests skipped and 5 ran"]);
    }

    #[test]
    fn malformed_skip_lines_are_not_counted() {
        for line in [
            "SKIPPED[gpus=x] t: r",
            "SKIPPED[gpus=1] no reason",
            "SKIPPED t: r",
            "SKIPPED[] t: r",
            "t: SKIPPED, r",
        ] {
            assert_eq!(skip(line), None, "{line}");
        }
        assert_eq!(
            skip("SKIPPED[gpus=2] t: a: b"),
            Some(Skip { need: Need::Gpus(2), test: "t", reason: "a: b" })
        );
    }
}
