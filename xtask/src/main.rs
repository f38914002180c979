//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `ptx [--check]`: build `kernels-gpu` to PTX with the pinned nightly (installed when missing) and
//!   write `host/ptx/kernels.ptx`; with `--check`, fail if the committed file differs from a fresh build.
//! - `test`: the whole test suite and the library's examples, with the library's optional inputs
//!   (`sprs`, `faer`) on (the GPU tests and examples skip, saying why, on a machine without a GPU).
//! - `fuzz [--seconds N] [TARGET...]`: the cargo-fuzz targets of `fuzz/`, N seconds each (see `fuzz.rs`).
//! - `bench [ARGS]`: build the benchmark in release and run it; ARGS go to `spmv-bench`.

mod fuzz;
mod ptx;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ptx") => ptx::task(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("fuzz") => fuzz::task(&args[1..]),
        Some("bench") => bench(&args[1..]),
        _ => Err(format!(
            "usage: cargo xtask <ptx [--check] | test [CARGO TEST ARGS] | fuzz [--seconds N] [TARGET...] | \
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
    run(cargo().args(["test", "--workspace", "--all-targets", "--features", TEST_FEATURES]).args(extra))?;
    // Doc tests are not part of --all-targets.
    run(cargo().args(["test", "--workspace", "--doc", "--features", TEST_FEATURES]))?;
    // The examples run too (they say why they skip without a GPU): what they show must keep working.
    for example in examples()? {
        println!("example {example}:");
        run(cargo()
            .args(["run", "--quiet", "--package", "gpu-spmv", "--features", TEST_FEATURES])
            .args(["--example", &example]))?;
    }
    Ok(())
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
