//! `cargo xtask fuzz [--seconds N] [TARGET...]`: every cargo-fuzz target of `fuzz/` (or those named)
//! for N seconds each, with the kernels' pinned nightly and AddressSanitizer; fails on the first crash,
//! whose input libFuzzer writes to `fuzz/artifacts/TARGET/`. An input that makes the library ask for
//! more than [`MEMORY_LIMIT_MB`] in one allocation or in all is a crash too.
//!
//! Each target reads the committed seeds (`fuzz/seeds/TARGET/`) and the corpus of earlier runs
//! (`fuzz/corpus/TARGET/`, not committed), and adds what it finds to the latter.

use crate::ptx::{ensure_toolchain, pinned_toolchain};
use crate::{nightly_cargo, root, run};
use std::process::Command;

/// Seconds per target when not given: long enough to get past the seeds' neighbourhood, short
/// enough that CI runs all fourteen targets in under four minutes on two cores.
const DEFAULT_SECONDS: u64 = 15;

/// libFuzzer's limit on the memory of the process and of any one allocation (`-rss_limit_mb`,
/// `-malloc_limit_mb`): 4 GiB, the cap the property tests run under (`host/tests/common`), far above
/// what any input of the targets needs, far below what an unchecked size asks for.
const MEMORY_LIMIT_MB: u64 = 4096;

/// libFuzzer's limit on one input, in seconds: far above the slowest input seen (a file declaring
/// 2^24 rows takes 0.2 s with AddressSanitizer), far below libFuzzer's own 20 minutes.
const INPUT_TIMEOUT_SECONDS: u64 = 10;

pub fn task(args: &[String]) -> Result<(), String> {
    let usage = || "usage: cargo xtask fuzz [--seconds N] [TARGET...]".to_string();
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            seconds = args.next().and_then(|s| s.parse().ok()).filter(|&s| s > 0).ok_or_else(usage)?;
        } else if arg.starts_with('-') {
            return Err(usage());
        } else {
            targets.push(arg.clone());
        }
    }
    let root = root();
    let toolchain = pinned_toolchain(&root)?;
    ensure_toolchain(&toolchain)?;
    ensure_cargo_fuzz()?;
    if targets.is_empty() {
        targets = all_targets()?;
    }
    for target in &targets {
        println!("xtask: fuzzing {target} for {seconds} s");
        let corpus = root.join("fuzz/corpus").join(target);
        let seeds = root.join("fuzz/seeds").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let mut cmd = nightly_cargo(&toolchain);
        cmd.args(["fuzz", "run", target])
            .arg(&corpus)
            .arg(&seeds)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
            .arg(format!("-rss_limit_mb={MEMORY_LIMIT_MB}"))
            .arg(format!("-malloc_limit_mb={MEMORY_LIMIT_MB}"))
            .arg("-print_final_stats=1");
        run(&mut cmd)?;
    }
    println!("xtask: {} fuzz targets ran {seconds} s each without a crash", targets.len());
    Ok(())
}

/// The targets `cargo fuzz list` names.
fn all_targets() -> Result<Vec<String>, String> {
    let out = Command::new("cargo")
        .args(["fuzz", "list"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cargo fuzz list: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo fuzz list failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect())
}

/// Installs cargo-fuzz from crates.io unless `cargo fuzz` already runs.
fn ensure_cargo_fuzz() -> Result<(), String> {
    let have = Command::new("cargo").args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if have {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-fuzz");
    run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))
}
