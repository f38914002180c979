//! The layering of `docs/ARCHITECTURE.md`, checked on the source: a top-level module of `host/src`
//! imports only from the tiers below its own (never from its own tier's other modules, nor from
//! above), so there is no import cycle between top-level modules.
//!
//! Every path that leaves a module is resolved: `crate::X` and `super::…::X` that climbs to the
//! crate root (counting the inline modules it is written in, such as `mod tests`). `X` must be a
//! top-level module or a name the crate root defines: a re-exported name counts as the module it comes
//! from (`crate::Gpu` in `formats/` is caught like `crate::device`), an inline module of the root
//! (`transpose`, `spmm`) as the facade above every tier, and a re-exported crate (`cudarc`) as
//! outside the crate. A name that is none of these fails the test rather than being skipped, and so
//! does a root item the root map does not understand. Comments and string contents are skipped: a
//! doc link may point anywhere.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The tiers, lowest first: each paragraph of `docs/ARCHITECTURE.md`.
const TIERS: &[&[&str]] = &[
    &["error", "scalar"],
    &["formats", "iterative"],
    &["io", "reference"],
    &["device"],
    &["enqueue"],
    &["select", "solve", "tune"],
    &["distributed"],
];

fn tier(module: &str) -> Option<usize> {
    TIERS.iter().position(|tier| tier.contains(&module))
}

/// What a name at the crate root stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Root {
    /// A top-level module, or a name re-exported from one.
    Module(String),
    /// An inline module of `lib.rs` (a facade of re-exports): above every tier.
    Facade,
    /// A crate re-exported whole (`pub use cudarc;`): not part of the layering.
    External,
}

/// `text` with comments removed and string and character literals emptied (`"…"` becomes `""`), so
/// that neither a doc link nor a brace inside a string is read as code. Lifetimes stay.
fn code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('#' | '"')) && !ident_char(chars.get(i.wrapping_sub(1))) {
            // A raw string: r"…", r#"…"#.
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body = i + 2 + hashes;
            let rest: String = chars[body..].iter().collect();
            let end = rest.find(&close).map_or(chars.len(), |at| body + rest[..at].chars().count());
            out.push_str("\"\"");
            i = end + close.chars().count();
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('a', '{', '\n', '\u{7f}'); a lifetime ('a) has no closing quote.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            out.push_str("' '");
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The inline modules (`mod NAME { … }`) open at each byte of `code`, innermost last.
fn inline_modules(code: &str) -> Vec<Vec<String>> {
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut at = vec![Vec::new(); code.len() + 1];
    let mut pending: Option<String> = None;
    let mut prev = None;
    for (i, c) in code.char_indices() {
        if !ident_char(prev.as_ref()) && code[i..].starts_with("mod ") {
            let r = code[i + 4..].trim_start();
            let name = ident(r);
            if !name.is_empty() && r[name.len()..].trim_start().starts_with('{') {
                pending = Some(name.to_owned());
            }
        }
        match c {
            '{' => {
                depth += 1;
                if let Some(name) = pending.take() {
                    open.push((name, depth));
                }
            }
            '}' => {
                if open.last().is_some_and(|(_, d)| *d == depth) {
                    open.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        at[i] = open.iter().map(|(name, _)| name.clone()).collect();
        prev = Some(c);
    }
    at
}

/// Every path of `code` that starts at the crate root, resolved from `module` (the file's module
/// path, `["enqueue", "csr", "rule"]`): the first name after the root of each, with the byte where
/// its path starts. `crate::{a, b::c}` gives `a` and `b`; `super::super::x` from two levels down
/// gives `x`; a `super::` that stays inside the top-level module gives nothing.
fn root_paths(code: &str, module: &[String]) -> Vec<(usize, String)> {
    let inline = inline_modules(code);
    let mut found = Vec::new();
    let mut prev = None;
    let mut skip_to = 0;
    for (i, c) in code.char_indices() {
        let word_start = !ident_char(prev.as_ref());
        prev = Some(c);
        if i < skip_to || !word_start {
            continue;
        }
        let rest = &code[i..];
        let after_root = if let Some(r) = rest.strip_prefix("crate::") {
            Some(r)
        } else if rest.starts_with("super::") {
            let mut r = rest;
            let mut ups = 0;
            while let Some(next) = r.strip_prefix("super::") {
                ups += 1;
                r = next;
            }
            // `super::` climbs out of the inline modules first, then the file's modules.
            let depth = module.len() + inline[i].len();
            (ups >= depth).then_some(r)
        } else {
            None
        };
        if let Some(after) = after_root {
            found.extend(group_heads(after).into_iter().map(|name| (i, name)));
            skip_to = code.len() - after.len();
        }
    }
    found
}

/// The first identifier of each path in `s`, a path or a `{…}` group of paths.
fn group_heads(s: &str) -> Vec<String> {
    let Some(inner) = s.strip_prefix('{') else {
        let name = ident(s);
        return if name.is_empty() { Vec::new() } else { vec![name.to_owned()] };
    };
    let mut heads = Vec::new();
    let (mut depth, mut item_start) = (0i32, true);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                item_start = false;
                let name = ident(&inner[i..]);
                if !name.is_empty() {
                    heads.push(name.to_owned());
                }
            }
            _ => {}
        }
    }
    heads
}

/// The leaves of a use tree (`a::{b, c::{d, e as f}}` gives `(a::b, b)`, `(a::c::d, d)`,
/// `(a::c::e, f)`), each as its full path and the name it binds.
fn use_leaves(tree: &str) -> Vec<(String, String)> {
    fn walk(prefix: &str, tree: &str, out: &mut Vec<(String, String)>) {
        let tree = tree.trim();
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::");
            let body = &tree[open + 1..tree.rfind('}').expect("a closed use group")];
            let prefix = if head.is_empty() { prefix.to_owned() } else { format!("{prefix}{head}::") };
            let (mut depth, mut start) = (0, 0);
            for (i, c) in body.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        walk(&prefix, &body[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            walk(&prefix, &body[start..], out);
        } else if !tree.is_empty() {
            let (path, name) = match tree.split_once(" as ") {
                Some((path, alias)) => (path.trim(), alias.trim()),
                None => (tree, tree.rsplit("::").next().unwrap_or(tree)),
            };
            out.push((format!("{prefix}{path}"), name.to_owned()));
        }
    }
    let mut out = Vec::new();
    walk("", tree, &mut out);
    out
}

/// What each name of the crate root stands for, from `lib.rs`: its modules (`mod x;`), inline
/// modules (`mod x { … }`), and re-exports (`pub use x::{…};`, `pub use krate;`). Any other item at
/// the root is an error: the map would not know its tier.
fn root_names(lib: &str) -> Result<BTreeMap<String, Root>, String> {
    let lib = code(lib);
    let mut names = BTreeMap::new();
    let mut rest = lib.as_str();
    loop {
        rest = rest.trim_start();
        // Attributes (`#![…]`, `#[cfg(…)]`) and visibility carry no name.
        if let Some(r) = rest.strip_prefix("#") {
            let close = r.find(']').ok_or("an unclosed attribute in lib.rs")?;
            rest = &r[close + 1..];
            continue;
        }
        if rest.is_empty() {
            return Ok(names);
        }
        let item = rest.strip_prefix("pub ").unwrap_or(rest).trim_start();
        if let Some(r) = item.strip_prefix("mod ") {
            let name = ident(r.trim_start()).to_owned();
            let after = r.trim_start()[name.len()..].trim_start();
            if let Some(body) = after.strip_prefix('{') {
                let end = matching_brace(body).ok_or("an unclosed module in lib.rs")?;
                names.insert(name, Root::Facade);
                rest = &body[end + 1..];
            } else {
                names.insert(name.clone(), Root::Module(name));
                rest = after.strip_prefix(';').ok_or("`mod` without `;` in lib.rs")?;
            }
        } else if let Some(r) = item.strip_prefix("use ") {
            let end = r.find(';').ok_or("`use` without `;` in lib.rs")?;
            for (path, name) in use_leaves(&r[..end]) {
                let first = path.split("::").next().unwrap_or_default().trim();
                let source = if first == name && !path.contains("::") {
                    Root::External
                } else if tier(first).is_some() {
                    Root::Module(first.to_owned())
                } else {
                    return Err(format!("lib.rs re-exports {name} from {path}, in no tier"));
                };
                names.insert(name, source);
            }
            rest = &r[end + 1..];
        } else {
            let line = rest.lines().next().unwrap_or_default();
            return Err(format!(
                "lib.rs defines an item the layering cannot place: `{line}`; move it into a tier"
            ));
        }
    }
}

/// The byte of the `}` that closes a block whose `{` precedes `body`.
fn matching_brace(body: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// A source file's module path from its path under `src`: `enqueue/csr/rule.rs` gives
/// `["enqueue", "csr", "rule"]`, `enqueue/mod.rs` gives `["enqueue"]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The imports against the layering in `files` (each a path under `src` and its text), given
/// `lib.rs`; an error for a name or a file the layering cannot place.
fn violations(lib: &str, files: &[(PathBuf, String)]) -> Result<(Vec<String>, usize), String> {
    let names = root_names(lib)?;
    let mut violations = Vec::new();
    let mut checked = 0;
    for (relative, text) in files {
        let module = module_path(relative);
        let top = module[0].as_str();
        let own = tier(top).ok_or_else(|| format!("{top} is in no tier: add it to TIERS and the doc"))?;
        let code = code(text);
        for (at, name) in root_paths(&code, &module) {
            let line = code[..at].matches('\n').count() + 1;
            let target = match names.get(&name) {
                Some(Root::Module(m)) => m.as_str(),
                Some(Root::Facade) => "the facade (lib.rs)",
                Some(Root::External) => continue,
                None => {
                    return Err(format!(
                        "{}:{line}: `{name}` at the crate root is neither a module nor a name lib.rs maps",
                        relative.display()
                    ));
                }
            };
            if target == top {
                continue;
            }
            checked += 1;
            let theirs = tier(target);
            if theirs.is_none_or(|theirs| theirs >= own) {
                let theirs = theirs.map_or("above every tier".to_owned(), |t| format!("tier {t}"));
                violations.push(format!(
                    "{}:{line} imports {name} from {target} ({theirs}; its own is tier {own})",
                    relative.display()
                ));
            }
        }
    }
    Ok((violations, checked))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `lib.rs` and every other `.rs` file under `src`, as paths under `src` and texts.
fn sources() -> (String, Vec<(PathBuf, String)>) {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((path.strip_prefix(root).unwrap().to_owned(), text));
            }
        }
    }
    let root = src();
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    let at = files.iter().position(|(p, _)| p == Path::new("lib.rs")).expect("src/lib.rs");
    let (_, lib) = files.swap_remove(at);
    files.sort();
    (lib, files)
}

#[test]
fn modules_import_only_from_lower_tiers() {
    let (lib, files) = sources();
    let (violations, checked) = violations(&lib, &files).unwrap_or_else(|e| panic!("{e}"));
    assert!(checked > 50, "only {checked} imports found: is the parser still reading the source?");
    assert!(violations.is_empty(), "imports against the layering:\n{}", violations.join("\n"));
}

/// The crate's own source with `planted` added to the file `file`: the violations found.
fn planted(file: &str, planted: &str) -> Result<Vec<String>, String> {
    let (lib, mut files) = sources();
    let (_, text) = files.iter_mut().find(|(p, _)| p == Path::new(file)).expect("the file to plant in");
    text.push_str(planted);
    violations(&lib, &files).map(|(v, _)| v)
}

#[test]
fn a_planted_import_from_above_is_caught() {
    // The example of the module doc: a name the root re-exports from `device`, inside `formats`.
    let found = planted("formats/mod.rs", "\nuse crate::Gpu;\n").unwrap();
    assert!(found.len() == 1 && found[0].contains("imports Gpu from device (tier 3"), "{found:?}");
    // Reached by `super::` from two levels down, and from an inline test module one level deeper.
    let found = planted("formats/interop/mod.rs", "\nuse super::super::enqueue::Plan;\n").unwrap();
    assert!(found.len() == 1 && found[0].contains("imports enqueue from enqueue"), "{found:?}");
    let inline = "\n#[cfg(test)]\nmod tests {\n    use super::super::super::tune::TunedSpmv;\n}\n";
    let found = planted("formats/interop/mod.rs", inline).unwrap();
    assert!(found.len() == 1 && found[0].contains("imports tune from tune"), "{found:?}");
    // A sibling of the same tier, and the facade's inline modules.
    let found = planted("io.rs", "\nfn f() { let _ = crate::reference::spmv_f64::<f64>; }\n").unwrap();
    assert!(found.len() == 1 && found[0].contains("reference (tier 2; its own is tier 2)"), "{found:?}");
    let found = planted("enqueue/mod.rs", "\nuse crate::spmm::DeviceDense;\n").unwrap();
    assert!(found.len() == 1 && found[0].contains("the facade"), "{found:?}");
}

#[test]
fn paths_that_stay_below_or_inside_pass() {
    assert_eq!(planted("enqueue/mod.rs", "\nuse crate::{Gpu, formats::CsrRef, Result};\n"), Ok(Vec::new()));
    // `super::` that stays in `formats`, and one in a string or a comment.
    let inside = "\nuse super::csr::CsrRef;\nconst S: &str = \"crate::Gpu\"; // crate::tune\n";
    assert_eq!(planted("formats/interop/mod.rs", inside), Ok(Vec::new()));
}

#[test]
fn a_name_the_root_does_not_map_fails() {
    let err = planted("formats/mod.rs", "\nuse crate::NoSuchThing;\n").unwrap_err();
    assert!(err.contains("formats/mod.rs") && err.contains("`NoSuchThing`"), "{err}");
    let (lib, files) = sources();
    let err = violations(&format!("{lib}\npub fn helper() {{}}\n"), &files).unwrap_err();
    assert!(err.contains("pub fn helper"), "{err}");
}

#[test]
fn the_root_map_reads_every_kind_of_item() {
    let lib = "//! Doc with crate::tune.\n#![warn(x)]\nmod error;\npub mod device;\n\
               pub mod spmm {\n    pub use crate::device::{A, b::{C, D as E}};\n}\n\
               pub use device::{Gpu, Graph};\npub use error::Result;\npub use cudarc;\n";
    let names = root_names(lib).unwrap();
    let module = |m: &str| Root::Module(m.to_owned());
    let expected = [
        ("Gpu", module("device")),
        ("Graph", module("device")),
        ("Result", module("error")),
        ("cudarc", Root::External),
        ("device", module("device")),
        ("error", module("error")),
        ("spmm", Root::Facade),
    ];
    assert_eq!(names, expected.into_iter().map(|(n, r)| (n.to_owned(), r)).collect());
}

#[test]
fn the_lexer_keeps_code_and_drops_comments_and_strings() {
    let text = "let a = \"crate::x { \"; // crate::y\nlet b = r#\"}\"#; let c = '{'; fn f<'a>(x: &'a u8) {}\n/* crate::z /* nested */ */ crate::w";
    assert_eq!(code(text), "let a = \"\"; \nlet b = \"\"; let c = ' '; fn f<'a>(x: &'a u8) {}\n  crate::w");
    assert_eq!(group_heads("{Error, formats::{csr::CsrRef, coo}};"), ["Error", "formats"]);
}
