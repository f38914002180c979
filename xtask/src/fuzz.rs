//! `cargo xtask fuzz [--seconds N | --no-run] [TARGET...]`: every cargo-fuzz target of `fuzz/` (or
//! those named) for N seconds each, with the kernels' pinned nightly and AddressSanitizer; fails on
//! the first crash, whose input libFuzzer writes to `fuzz/artifacts/TARGET/`. An input that makes the
//! library ask for more than [`MEMORY_LIMIT_MB`] in one allocation or in all is a crash too. With
//! `--no-run` the targets are only built (CI builds them beside other steps and runs them alone).
//!
//! Each target reads the committed seeds (`fuzz/seeds/TARGET/`) and the corpus of earlier runs
//! (`fuzz/corpus/TARGET/`, not committed), and adds what it finds to the latter.
//!
//! The targets are built first, all in one cargo invocation (their links run in parallel), and then
//! run as many at a time as there are cores: a libFuzzer process uses one.

use crate::ptx::{ensure_toolchain, pinned_toolchain};
use crate::{nightly_cargo, root, run};
use std::io::Write;
use std::process::{Command, Output};
use std::sync::Mutex;
use std::thread::available_parallelism;

/// Seconds per target when not given: long enough to get past the seeds' neighbourhood, short
/// enough that all the targets run in about two and a half minutes on two cores.
const DEFAULT_SECONDS: u64 = 15;

/// libFuzzer's limit on the memory of the process and of any one allocation (`-rss_limit_mb`,
/// `-malloc_limit_mb`): 4 GiB, the cap the property tests run under (`host/tests/common`), far above
/// what any input of the targets needs, far below what an unchecked size asks for.
const MEMORY_LIMIT_MB: u64 = 4096;

/// libFuzzer's limit on one input, in seconds: far above the slowest input seen (a file declaring
/// 2^24 rows takes 0.2 s with AddressSanitizer), far below libFuzzer's own 20 minutes.
const INPUT_TIMEOUT_SECONDS: u64 = 10;

/// Code generation units per crate. cargo-fuzz builds with one (its release builds rely on ThinLTO,
/// which the coverage instrumentation defeats across units); sixteen let the largest crates (faer,
/// the library) compile on every core instead of one. The optimisation level is in
/// `fuzz/Cargo.toml`.
const CODEGEN_UNITS: &str = "16";

pub fn task(args: &[String]) -> Result<(), String> {
    let usage = || "usage: cargo xtask fuzz [--seconds N | --no-run] [TARGET...]".to_string();
    let mut seconds = None;
    let mut no_run = false;
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            seconds = Some(args.next().and_then(|s| s.parse().ok()).filter(|&s| s > 0).ok_or_else(usage)?);
        } else if arg == "--no-run" {
            no_run = true;
        } else if arg.starts_with('-') {
            return Err(usage());
        } else {
            targets.push(arg.clone());
        }
    }
    if no_run && seconds.is_some() {
        return Err(usage());
    }
    let toolchain = pinned_toolchain(&root())?;
    ensure_toolchain(&toolchain)?;
    ensure_cargo_fuzz()?;
    if targets.is_empty() {
        targets = all_targets()?;
        run(&mut cargo_fuzz(&toolchain, "build"))?;
    } else {
        for target in &targets {
            run(cargo_fuzz(&toolchain, "build").arg(target))?;
        }
    }
    if no_run {
        println!("xtask: {} fuzz targets built", targets.len());
        return Ok(());
    }
    let seconds = seconds.unwrap_or(DEFAULT_SECONDS);
    run_all(&toolchain, &targets, seconds)?;
    println!("xtask: {} fuzz targets ran {seconds} s each without a crash", targets.len());
    Ok(())
}

/// `cargo fuzz SUBCOMMAND` with the build options that `build` and `run` must share (`run` builds
/// again, and would rebuild everything if they differed).
fn cargo_fuzz(toolchain: &str, subcommand: &str) -> Command {
    let mut cmd = nightly_cargo(toolchain);
    cmd.args(["fuzz", subcommand, "--codegen-units", CODEGEN_UNITS]);
    cmd
}

/// Runs the built `targets`, one per core at a time. Each target's output is held until it ends and
/// then printed whole, so that the targets' lines do not interleave. After a failure no further
/// target starts; the error names every target that failed.
fn run_all(toolchain: &str, targets: &[String], seconds: u64) -> Result<(), String> {
    let workers = available_parallelism().map_or(1, |n| n.get()).min(targets.len());
    let queue = Mutex::new(targets.iter());
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(target) = next(&queue, &failed) {
                    if let Err(message) = run_one(toolchain, target, seconds) {
                        failed.lock().unwrap_or_else(|e| e.into_inner()).push(message);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    if failed.is_empty() { Ok(()) } else { Err(failed.join("\n")) }
}

/// The next target to run, or none once the queue is empty or a target has failed.
fn next<'a>(queue: &Mutex<std::slice::Iter<'a, String>>, failed: &Mutex<Vec<String>>) -> Option<&'a String> {
    if !failed.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
        return None;
    }
    queue.lock().unwrap_or_else(|e| e.into_inner()).next()
}

/// Fuzzes `target` for `seconds`, then prints its output: all of it if it failed, else its final
/// statistics (how many inputs it ran, how much memory it took).
fn run_one(toolchain: &str, target: &str, seconds: u64) -> Result<(), String> {
    let root = root();
    let corpus = root.join("fuzz/corpus").join(target);
    let seeds = root.join("fuzz/seeds").join(target);
    std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let mut cmd = cargo_fuzz(toolchain, "run");
    cmd.arg(target)
        .arg(&corpus)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg(format!("-rss_limit_mb={MEMORY_LIMIT_MB}"))
        .arg(format!("-malloc_limit_mb={MEMORY_LIMIT_MB}"))
        .arg("-print_final_stats=1");
    let output = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    print_output(target, seconds, &output);
    if output.status.success() { Ok(()) } else { Err(format!("{target}: {cmd:?} failed: {}", output.status)) }
}

/// Writes what `target`'s run printed to stdout in one piece.
fn print_output(target: &str, seconds: u64, output: &Output) {
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let mut text = format!("xtask: fuzzed {target} for {seconds} s: {}\n", output.status);
    if output.status.success() {
        let stats = stderr.lines().filter(|line| line.starts_with("stat::"));
        stats.for_each(|line| text += &format!("  {line}\n"));
    } else {
        text += &stdout;
        text += &stderr;
    }
    // Output that cannot be written (a closed terminal) must not stop the fuzzing.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
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
