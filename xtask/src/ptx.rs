//! `cargo xtask ptx`: the kernels to PTX with rustc's nvptx64 backend.

use crate::{nightly_cargo, root, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The modules `cargo xtask ptx` builds, each from the whole crate for one virtual architecture.
/// The driver compiles PTX for any GPU at least that new when the module loads.
/// - sm_70: every kernel but the streaming engine, so one file serves Volta to Hopper; docs/PERF.md
///   records the measurement behind choosing it over sm_90 for them.
/// - sm_90 (PTX ISA 8.0): the streaming engine alone (`kernels-gpu/src/stream/`), whose bulk copies
///   and transaction barriers Hopper introduced; the host loads it on GPUs that run it.
const MODULES: [Module; 2] = [
    Module {
        target_cpu: "sm_70",
        features: "",
        committed: "host/ptx/kernels.ptx",
        budgets: kernels_gpu::abi::REGISTER_BUDGETS,
    },
    Module { target_cpu: "sm_90", features: "+ptx80", committed: "host/ptx/kernels_sm90.ptx", budgets: &[] },
];

struct Module {
    target_cpu: &'static str,
    /// Extra `-C target-feature` flags (the PTX ISA version), or none.
    features: &'static str,
    /// Where the host library embeds the PTX from (`include_str!`).
    committed: &'static str,
    /// The register budgets of its entries (see [`with_register_budgets`]).
    budgets: &'static [(&'static str, u32)],
}

const COMPONENTS: &str = "rust-src,llvm-bitcode-linker-preview,llvm-tools-preview";

fn build(module: &Module, toolchain: &str, check: bool) -> Result<(), String> {
    let root = root();
    let target_dir = root.join("target/ptx").join(module.target_cpu);
    let mut flags = format!("-C target-cpu={}", module.target_cpu);
    if !module.features.is_empty() {
        flags += &format!(" -C target-feature={}", module.features);
    }
    let mut cmd = nightly_cargo(toolchain);
    // Set through RUSTFLAGS so that `core`, built by -Zbuild-std, gets the same target CPU.
    cmd.env("RUSTFLAGS", flags)
        .args(["rustc", "--package", "kernels-gpu", "--profile", "ptx"])
        .args(["--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core", "--crate-type", "cdylib"])
        .arg("--target-dir")
        .arg(&target_dir);
    run(&mut cmd)?;
    let built = target_dir.join("nvptx64-nvidia-cuda/ptx/kernels_gpu.ptx");
    let fresh = std::fs::read_to_string(&built).map_err(|e| format!("{}: {e}", built.display()))?;
    let fresh = with_register_budgets(&fresh, module.budgets)?;
    let committed = module.committed;
    let committed_path = root.join(committed);
    if check {
        let on_disk = std::fs::read_to_string(&committed_path).unwrap_or_default();
        if on_disk != fresh {
            return Err(format!(
                "{committed} differs from a fresh build of kernels-gpu: run `cargo xtask ptx` and commit it"
            ));
        }
        println!("{committed} matches a fresh build");
    } else {
        std::fs::write(&committed_path, &fresh).map_err(|e| format!("{committed}: {e}"))?;
        println!("wrote {committed} ({} lines)", fresh.lines().count());
    }
    Ok(())
}

/// `ptx` with `.maxnreg N` in the header of each entry that `budgets` gives `N` registers: the
/// performance directive goes between an entry's parameter list and its body (PTX ISA,
/// "Performance-Tuning Directives"), on the line that closes the list, which LLVM's NVPTX backend
/// starts with `)`. An entry named in `budgets` but not found, or found twice, is an error.
fn with_register_budgets(ptx: &str, budgets: &[(&str, u32)]) -> Result<String, String> {
    let mut out = String::with_capacity(ptx.len() + 32 * budgets.len());
    let mut found = vec![0usize; budgets.len()];
    // The budget of the entry whose parameter list is open.
    let mut open: Option<u32> = None;
    for line in ptx.split_inclusive('\n') {
        if let Some(name) = line.strip_prefix(".visible .entry ").and_then(|rest| rest.split('(').next()) {
            open = budgets.iter().position(|&(entry, _)| entry == name).map(|i| {
                found[i] += 1;
                budgets[i].1
            });
        }
        match (open, line.strip_prefix(')')) {
            (Some(registers), Some(rest)) => {
                out.push_str(&format!(") .maxnreg {registers}{rest}"));
                open = None;
            }
            _ => out.push_str(line),
        }
    }
    match budgets.iter().zip(&found).find(|&(_, &n)| n != 1) {
        Some(((entry, _), n)) => {
            Err(format!("register budget for {entry}: {n} entries of that name in the PTX"))
        }
        None => Ok(out),
    }
}

fn build_all(check: bool) -> Result<(), String> {
    let toolchain = pinned_toolchain(&root())?;
    ensure_toolchain(&toolchain)?;
    MODULES.iter().try_for_each(|module| build(module, &toolchain, check))
}

pub fn task(args: &[String]) -> Result<(), String> {
    match args {
        [] => build_all(false),
        [flag] if flag == "--check" => build_all(true),
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

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.visible .entry a_f32(
\t.param .align 8 .b8 a_f32_param_0[80]
)                                       // @a_f32
{
\tret;
}
.visible .entry a_f64(
\t.param .align 8 .b8 a_f64_param_0[80]
)                                       // @a_f64
{
\tret;
}
";

    #[test]
    fn a_budget_goes_into_its_entry_header_alone() {
        let out = with_register_budgets(PTX, &[("a_f64", 48)]).unwrap();
        assert_eq!(out.matches(".maxnreg").count(), 1);
        assert!(out.contains("a_f64_param_0[80]\n) .maxnreg 48 "), "{out}");
        assert_eq!(out.replacen(" .maxnreg 48", "", 1), PTX);
    }

    #[test]
    fn no_budget_leaves_the_ptx_as_it_is() {
        assert_eq!(with_register_budgets(PTX, &[]).unwrap(), PTX);
    }

    #[test]
    fn a_budget_for_a_missing_entry_is_an_error() {
        let err = with_register_budgets(PTX, &[("b_f64", 48)]).unwrap_err();
        assert!(err.contains("b_f64: 0 entries"), "{err}");
    }
}
