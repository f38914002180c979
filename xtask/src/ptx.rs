//! `cargo xtask ptx`: the kernels to PTX with rustc's nvptx64 backend.

use crate::{nightly_cargo, root, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The modules `cargo xtask ptx` builds, each from the whole crate for one virtual architecture.
/// The driver compiles PTX for any GPU at least that new when the module loads.
/// - sm_70 (PTX ISA 7.4, for the L1 eviction priorities of the matrix's loads,
///   `Load::load_nc_evict_first`; drivers of CUDA 11.4 and later, below the CUDA 13 the library
///   asks for): every kernel but the streaming engine, so one file serves Volta to Hopper;
///   docs/PERF.md records the measurement behind choosing it over sm_90 for them.
/// - sm_90 (PTX ISA 8.0): the streaming engine (`kernels-gpu/src/stream/`), whose bulk copies and
///   transaction barriers Hopper introduced, and a second build of the kernels that newer
///   instructions make faster (`abi::SM90_ENTRIES`: the balanced kernel's `redux.sync`, and the
///   wait that lets them launch before the kernel ahead of them ends); the host loads it on GPUs
///   that run it and takes those entries from it.
const MODULES: [Module; 2] = [
    Module {
        target_cpu: "sm_70",
        features: "+ptx74",
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

/// `ptx` with `.maxnreg N` in the header of each entry that `budgets` gives `N` registers, on a line
/// of its own before the entry's opening `{`: a performance-tuning directive goes between an
/// entry's parameter list and its body (PTX ISA, "Performance-Tuning Directives"), where LLVM's
/// NVPTX backend puts its own `.maxntid`. An entry named twice in `budgets`, or not written exactly
/// once (missing from the PTX, or exported twice), is an error.
fn with_register_budgets(ptx: &str, budgets: &[(&str, u32)]) -> Result<String, String> {
    if let Some((entry, _)) = budgets.iter().enumerate().find_map(|(i, budget)| {
        budgets[..i].iter().any(|(earlier, _)| *earlier == budget.0).then_some(budget)
    }) {
        return Err(format!("register budget for {entry} given twice"));
    }
    let mut out = String::with_capacity(ptx.len() + 16 * budgets.len());
    let mut written = vec![0usize; budgets.len()];
    // The budget (its index) of the entry whose header is being read, up to its `{`.
    let mut open: Option<usize> = None;
    for line in ptx.split_inclusive('\n') {
        let text = line.trim_end();
        if text.starts_with('.') {
            // Any new declaration ends the header before it; only an entry opens one.
            open = text
                .strip_prefix(".visible .entry ")
                .or_else(|| text.strip_prefix(".entry "))
                .and_then(|rest| rest.split(['(', ' ']).next())
                .and_then(|name| budgets.iter().position(|&(entry, _)| entry == name));
        } else if text == "{"
            && let Some(i) = open.take()
        {
            out.push_str(&format!(".maxnreg {}\n", budgets[i].1));
            written[i] += 1;
        }
        out.push_str(line);
    }
    match budgets.iter().zip(&written).find(|&(_, &n)| n != 1) {
        Some(((entry, _), n)) => Err(format!("register budget for {entry}: written {n} times, not once")),
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

    /// Two entries whose names one prefixes, one without parameters, and a `.func` between them.
    const PTX: &str = "\
.visible .entry a_f64(
\t.param .align 8 .b8 a_f64_param_0[80]
)                                       // @a_f64
{
\tret;
}
.visible .entry a_f64_x()
{
\tret;
}
.func b(
\t.param .b64 b_param_0
)
{
\tret;
}
.visible .entry c_f32(.param .b64 c_f32_param_0)
{
\tret;
}
";

    #[test]
    fn a_budget_goes_before_its_entry_body_alone() {
        let out = with_register_budgets(PTX, &[("a_f64", 48)]).unwrap();
        assert_eq!(out.matches(".maxnreg").count(), 1);
        assert!(out.contains("// @a_f64\n.maxnreg 48\n{\n"), "{out}");
        assert_eq!(out.replacen(".maxnreg 48\n", "", 1), PTX);
    }

    #[test]
    fn entries_without_parameters_or_on_one_line_get_theirs() {
        let out = with_register_budgets(PTX, &[("a_f64_x", 32), ("c_f32", 40)]).unwrap();
        assert!(out.contains(".visible .entry a_f64_x()\n.maxnreg 32\n{"), "{out}");
        assert!(out.contains("c_f32_param_0)\n.maxnreg 40\n{"), "{out}");
        assert_eq!(out.matches(".maxnreg").count(), 2, "none in the .func: {out}");
    }

    #[test]
    fn no_budget_leaves_the_ptx_as_it_is() {
        assert_eq!(with_register_budgets(PTX, &[]).unwrap(), PTX);
    }

    #[test]
    fn a_budget_for_a_missing_or_twice_exported_entry_is_an_error() {
        let err = with_register_budgets(PTX, &[("b", 48)]).unwrap_err();
        assert!(err.contains("b: written 0 times"), "{err}");
        let twice = format!("{PTX}{}", &PTX[..PTX.find(".visible .entry a_f64_x").unwrap()]);
        let err = with_register_budgets(&twice, &[("a_f64", 48)]).unwrap_err();
        assert!(err.contains("a_f64: written 2 times"), "{err}");
    }

    #[test]
    fn a_budget_given_twice_is_an_error() {
        let err = with_register_budgets(PTX, &[("a_f64", 48), ("a_f64", 64)]).unwrap_err();
        assert!(err.contains("a_f64 given twice"), "{err}");
    }
}
