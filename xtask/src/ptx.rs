//! `cargo xtask ptx`: the kernels to PTX with rustc's nvptx64 backend.

use crate::{nightly_cargo, root, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The virtual architecture of the emitted PTX. The driver compiles PTX for any GPU at least this
/// new when the module loads, so one file serves Volta to Hopper; docs/PERF.md records the
/// measurement behind choosing it over sm_90.
const TARGET_CPU: &str = "sm_70";

/// Where the host library embeds the PTX from (`include_str!`).
const COMMITTED: &str = "host/ptx/kernels.ptx";

const COMPONENTS: &str = "rust-src,llvm-bitcode-linker-preview,llvm-tools-preview";

fn build(check: bool) -> Result<(), String> {
    let root = root();
    let toolchain = pinned_toolchain(&root)?;
    ensure_toolchain(&toolchain)?;
    let target_dir = root.join("target/ptx");
    let mut cmd = nightly_cargo(&toolchain);
    // Set through RUSTFLAGS so that `core`, built by -Zbuild-std, gets the same target CPU.
    cmd.env("RUSTFLAGS", format!("-C target-cpu={TARGET_CPU}"))
        .args(["rustc", "--package", "kernels-gpu", "--profile", "ptx"])
        .args(["--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core", "--crate-type", "cdylib"])
        .arg("--target-dir")
        .arg(&target_dir);
    run(&mut cmd)?;
    let built = target_dir.join("nvptx64-nvidia-cuda/ptx/kernels_gpu.ptx");
    let fresh = std::fs::read_to_string(&built).map_err(|e| format!("{}: {e}", built.display()))?;
    let committed_path = root.join(COMMITTED);
    if check {
        let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
        if committed != fresh {
            return Err(format!(
                "{COMMITTED} differs from a fresh build of kernels-gpu: run `cargo xtask ptx` and commit it"
            ));
        }
        println!("{COMMITTED} matches a fresh build");
    } else {
        std::fs::write(&committed_path, &fresh).map_err(|e| format!("{COMMITTED}: {e}"))?;
        println!("wrote {COMMITTED} ({} lines)", fresh.lines().count());
    }
    Ok(())
}

pub fn task(args: &[String]) -> Result<(), String> {
    match args {
        [] => build(false),
        [flag] if flag == "--check" => build(true),
        _ => Err("usage: cargo xtask ptx [--check]".into()),
    }
}

/// The channel pinned in `kernels-gpu/rust-toolchain.toml`.
pub(crate) fn pinned_toolchain(root: &Path) -> Result<String, String> {
    let path: PathBuf = root.join("kernels-gpu/rust-toolchain.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("channel"))
        .filter_map(|rest| rest.split('"').nth(1))
        .next()
        .map(str::to_owned)
        .ok_or_else(|| format!("no channel in {}", path.display()))
}

/// Installs the pinned nightly with its components unless it is already there. Machines here set
/// `RUSTUP_AUTO_INSTALL=0`, so nothing else would install it.
pub(crate) fn ensure_toolchain(toolchain: &str) -> Result<(), String> {
    let listed = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map_err(|e| format!("rustup is needed to build the kernels: {e}"))?;
    let have = String::from_utf8_lossy(&listed.stdout).lines().any(|l| l.starts_with(toolchain));
    if have {
        let installed = Command::new("rustup")
            .args(["component", "list", "--installed", "--toolchain", toolchain])
            .output()
            .map_err(|e| format!("rustup: {e}"))?;
        let installed = String::from_utf8_lossy(&installed.stdout);
        // Installed components are listed without the `-preview` suffix of their names.
        let complete = COMPONENTS
            .split(',')
            .map(|c| c.trim_end_matches("-preview"))
            .all(|c| installed.lines().any(|l| l.starts_with(c)));
        if complete {
            return Ok(());
        }
    }
    eprintln!("xtask: installing {toolchain} with {COMPONENTS}");
    run(Command::new("rustup")
        .args(["toolchain", "install", toolchain, "--profile", "minimal"])
        .args(["--component", COMPONENTS]))
}
