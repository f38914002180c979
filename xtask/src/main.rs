//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `ptx [--check]`: build `kernels-gpu` to PTX with the pinned nightly (installed when missing) and
//!   write `host/ptx/kernels.ptx`; with `--check`, fail if the committed file differs from a fresh build.
//! - `test`: the whole test suite and the library's examples, with the library's optional inputs
//!   (`sprs`, `faer`) on (the GPU tests and examples skip, saying why, on a machine without a GPU);
//!   it ends with how many tests passed and how many GPU tests skipped, one line per reason (see
//!   `tally.rs`), and with `SPMV_REQUIRE_GPU=N` it fails if a test needing at most N GPUs skipped.
//! - `fuzz [--seconds N | --no-run] [TARGET...]`: the cargo-fuzz targets of `fuzz/`, N seconds each,
//!   or only built (see `fuzz.rs`).
//! - `bench [ARGS]`: build the benchmark in release and run it; ARGS go to `spmv-bench`.

mod fuzz;
mod ptx;
mod tally;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Mutex, PoisonError};
use tally::Tally;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ptx") => ptx::task(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("fuzz") => fuzz::task(&args[1..]),
        Some("bench") => bench(&args[1..]),
        _ => Err(format!(
            "usage: cargo xtask <ptx [--check] | test [CARGO TEST ARGS] | fuzz [--seconds N | --no-run] [TARGET...] | \
             bench [BENCH ARGS]>\n{}",
            "  bench --help lists the benchmark's options"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's folder).
pub(crate) fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().expect("xtask lives one level below the root").to_path_buf()
}

/// Runs `cmd` to completion, turning a failure into a message that names it.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} failed: {status}")) }
}

/// `cargo +TOOLCHAIN` in the root, for a toolchain named explicitly (the kernels' nightly): without
/// what the outer (stable) cargo and rustup set for us, or the inner cargo would use the stable rustc.
pub(crate) fn nightly_cargo(toolchain: &str) -> Command {
    let mut cmd = Command::new("cargo");
    for var in ["RUSTC", "RUSTDOC", "RUSTC_WRAPPER", "RUSTUP_TOOLCHAIN", "CARGO", "CARGO_TARGET_DIR"] {
        cmd.env_remove(var);
    }
    cmd.env_remove("CARGO_ENCODED_RUSTFLAGS").current_dir(root()).arg(format!("+{toolchain}"));
    cmd
}

/// A `cargo` command on the workspace's own (stable) toolchain.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// The library's optional inputs (`sprs`, `faer`), on in every step of `test` so that their tests
/// run, and so that the steps share one build of the library (a step with other features would build
/// it again). faer is built without its default features (no std gemm kernels, no rayon), the
/// cheapest build that holds its sparse types.
const TEST_FEATURES: &str = "gpu-spmv/sprs,gpu-spmv/faer";

fn test(extra: &[String]) -> Result<(), String> {
    let mut tally = Tally::default();
    let result = test_steps(extra, &mut tally);
    println!();
    for line in tally.summary() {
        println!("{line}");
    }
    result?;
    let required = std::env::var("SPMV_REQUIRE_GPU").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let forbidden = tally.forbidden(required);
    if forbidden.is_empty() {
        Ok(())
    } else {
        Err(format!("SPMV_REQUIRE_GPU={required}, but these tests skipped:\n{}", forbidden.join("\n")))
    }
}

/// The steps of `test`, their output read into `tally` as it passes.
fn test_steps(extra: &[String], tally: &mut Tally) -> Result<(), String> {
    let features = ["--features", TEST_FEATURES];
    run_tallied(cargo().args(["test", "--workspace", "--all-targets"]).args(features).args(extra), tally)?;
    // Doc tests are not part of --all-targets.
    run_tallied(cargo().args(["test", "--workspace", "--doc"]).args(features), tally)?;
    // The examples run too (they say why they skip without a GPU): what they show must keep working.
    // They are built for the whole workspace, as the tests were, and so on the tests' build of their
    // dependencies: `cargo run --package gpu-spmv` would resolve features for that package alone
    // and compile some thirty crates again (faer, nalgebra and cudarc among them).
    run(cargo().args(["build", "--quiet", "--workspace", "--examples"]).args(features))?;
    let built = target_dir().join("debug/examples");
    for example in examples()? {
        println!("example {example}:");
        run(Command::new(built.join(&example)).current_dir(root()))?;
    }
    Ok(())
}

/// The workspace's target folder: `CARGO_TARGET_DIR` where it is set (relative to the root, where
/// [`cargo`] runs), else `target/` in the root; the workspace configures no other.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), |dir| root().join(dir))
}

/// Runs `cmd` like [`run`], passing its stdout and stderr through line by line and reading each
/// line into `tally` on the way.
fn run_tallied(cmd: &mut Command, tally: &mut Tally) -> Result<(), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let shared = Mutex::new(std::mem::take(tally));
    std::thread::scope(|s| {
        s.spawn(|| pass_through(stdout, std::io::stdout(), &shared));
        s.spawn(|| pass_through(stderr, std::io::stderr(), &shared));
    });
    *tally = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    let status = child.wait().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} failed: {status}")) }
}

/// Copies `from` to `to` a line at a time (bytes as they are), reading each line into `tally`.
fn pass_through(from: Option<impl Read>, mut to: impl Write, tally: &Mutex<Tally>) {
    let Some(from) = from else { return };
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    while from.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
        // Output that cannot be written (a closed terminal) must not stop the tests.
        let _ = to.write_all(&line).and_then(|()| to.flush());
        tally.lock().unwrap_or_else(PoisonError::into_inner).read(&String::from_utf8_lossy(&line));
        line.clear();
    }
}

/// The names of the library's examples, `host/examples/*.rs`, sorted.
fn examples() -> Result<Vec<String>, String> {
    let dir = root().join("host/examples");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()?.path().file_stem()?.to_str().map(str::to_owned)).collect();
    names.sort();
    Ok(names)
}

fn bench(extra: &[String]) -> Result<(), String> {
    run(cargo()
        .args(["run", "--release", "--package", "spmv-bench", "--bin", "spmv-bench", "--"])
        .args(extra))
}
