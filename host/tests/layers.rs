//! The layering of `docs/ARCHITECTURE.md`, checked on the source: a top-level module of `host/src`
//! imports only from the tiers below its own (never from its own tier's other modules, nor from
//! above), so there is no import cycle between top-level modules. A name the crate root re-exports
//! counts as the module it comes from, so `crate::Gpu` in `formats/` is caught like `crate::device`.
//! Comments are skipped: a doc link may point anywhere.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The tiers, lowest first: each paragraph of `docs/ARCHITECTURE.md`.
const TIERS: &[&[&str]] = &[
    &["error", "scalar"],
    &["formats"],
    &["io", "reference"],
    &["device"],
    &["enqueue"],
    &["select", "solve", "tune"],
    &["distributed"],
];

fn tier(module: &str) -> Option<usize> {
    TIERS.iter().position(|tier| tier.contains(&module))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The file's text without its comments (line comments and doc comments; the crate has no block
/// comments).
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The first identifier of each path that follows `crate::`: `crate::device::Gpu` gives `device`,
/// `crate::{Error, formats::csr::CsrRef}` gives `Error` and `formats`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let group = if let Some(inner) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = inner
                .char_indices()
                .find(|&(_, c)| {
                    depth += i32::from(c == '{') - i32::from(c == '}');
                    depth == 0
                })
                .map_or(inner.len(), |(i, _)| i);
            let mut parts = Vec::new();
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        parts.push(&inner[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            parts.push(&inner[start..end]);
            parts
        } else {
            vec![rest]
        };
        for part in group {
            let ident: String =
                part.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !ident.is_empty() {
                found.push(ident);
            }
        }
    }
    found
}

/// What each name the crate root re-exports comes from: `pub use device::{Gpu, ...}` maps `Gpu` to
/// `device`; the root's own `Result` alias is the error tier's.
fn root_names() -> BTreeMap<String, String> {
    let lib = code(&src().join("lib.rs"));
    let mut names = BTreeMap::from([("Result".to_owned(), "error".to_owned())]);
    for item in lib.split(';') {
        let Some(path) = item.trim().strip_prefix("pub use ") else { continue };
        let (module, rest) = path.split_once("::").expect("a re-export names its module");
        let list = rest.trim_start_matches('{').trim_end_matches('}');
        for name in list.split(',') {
            let name = name.trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    names
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn modules_import_only_from_lower_tiers() {
    let root = src();
    let names = root_names();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        let own =
            tier(module).unwrap_or_else(|| panic!("{module} is in no tier: add it to TIERS and the doc"));
        for ident in crate_paths(&code(file)) {
            let target = names.get(&ident).cloned().unwrap_or(ident);
            if target == module {
                continue;
            }
            let Some(theirs) = tier(&target) else { continue };
            checked += 1;
            if theirs >= own {
                violations
                    .push(format!("{} imports {target} (tier {theirs}, its own {own})", relative.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} imports found: is the parser still reading the source?");
    assert!(violations.is_empty(), "imports against the layering:\n{}", violations.join("\n"));
}

#[test]
fn the_parser_finds_grouped_and_nested_paths() {
    let found =
        crate_paths("use crate::{Error, formats::{csr::CsrRef, coo}};\nlet g = crate::device::Gpu::new();");
    assert_eq!(found, ["Error", "formats", "device"]);
}
