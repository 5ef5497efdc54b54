//! The arrows of docs/architecture.md, checked on the source: every module imports only
//! from the layers below it, and no two files import each other, directly or through
//! others (a `mod.rs` naming its own children, which it declares, re-exports or
//! dispatches to, is not counted).
//!
//! Imports are read from the text: every `crate::a::b` and `super::a` path, and the
//! entries of `crate::{…}` / `super::{…}` groups.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level module of `tvbo-core` may import (besides itself), bottom to top.
const CORE_LAYERS: &[(&str, &[&str])] = &[
    ("domain", &[]),
    ("optim", &[]),
    ("gp", &["domain", "optim"]),
    ("acquisition", &["domain", "optim", "gp"]),
    ("policy", &["domain", "optim", "gp", "acquisition"]),
    (
        "engine",
        &["domain", "optim", "gp", "acquisition", "policy"],
    ),
];

/// What each top-level module of the server may import (besides itself), bottom to top:
/// its own modules, and the core's modules that it re-exports. That the core imports
/// nothing of the server, and the bench nothing but the core, the compiler keeps.
const SERVER_LAYERS: &[(&str, &[&str])] = &[
    ("store", &["domain"]),
    ("telemetry", &["domain", "policy", "store"]),
    (
        "session",
        &[
            "domain",
            "optim",
            "gp",
            "acquisition",
            "policy",
            "engine",
            "store",
            "telemetry",
        ],
    ),
    ("keys", &["domain", "store"]),
    (
        "delivery",
        &["domain", "store", "telemetry", "session", "keys"],
    ),
    ("dashboard", &[]),
    ("docs_ui", &["dashboard"]),
    (
        "api",
        &[
            "domain",
            "engine",
            "session",
            "store",
            "keys",
            "delivery",
            "dashboard",
            "docs_ui",
            "telemetry",
        ],
    ),
    ("server", &["domain", "engine", "session", "store", "api"]),
    (
        "config",
        &[
            "domain",
            "engine",
            "store",
            "session",
            "keys",
            "api",
            "server",
            "dashboard",
            "delivery",
        ],
    ),
];

fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The module path of a file under src/: `src/policy/bolt.rs` → `["policy", "bolt"]`,
/// `src/policy/mod.rs` → `["policy"]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The module paths a file names after `crate::` or `super::`, as written (first
/// segments of groups expanded).
fn imports(text: &str, module: &[String]) -> Vec<Vec<String>> {
    // After `#[cfg(test)]` comes the file's `mod tests`, whose `super` is the file's own
    // module; before it, `super` is the parent module (of a mod.rs as of a file).
    let (code, tests) = text.split_at(text.find("#[cfg(test)]").unwrap_or(text.len()));
    let parent = module[..module.len().saturating_sub(1)].to_vec();
    let mut found = Vec::new();
    for (text, prefix, base) in [
        (text, "crate::", Vec::new()),
        (code, "super::", parent),
        (tests, "super::", module.to_vec()),
    ] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            for path in paths(rest) {
                let mut full = base.clone();
                full.extend(path);
                found.push(full);
            }
        }
    }
    found
}

/// The paths at the start of `text`: `a::b::C` → [[a, b, C]]; `{a::b, c}` → [[a, b], [c]].
fn paths(text: &str) -> Vec<Vec<String>> {
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut end = group.len();
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    end = i;
                    break;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        let inner = &group[..end];
        let mut entries = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    entries.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        entries.push(&inner[start..]);
        return entries
            .into_iter()
            .map(str::trim)
            .filter(|e| !e.is_empty() && *e != "self")
            .flat_map(paths)
            .collect();
    }
    let mut path = Vec::new();
    let mut rest = text;
    loop {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            if rest.starts_with('{') {
                return paths(rest)
                    .into_iter()
                    .map(|tail| path.iter().cloned().chain(tail).collect())
                    .collect();
            }
            break;
        }
        path.push(rest[..end].to_string());
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    vec![path]
}

/// The file a module path lands in: the longest prefix that is a file or a folder's
/// mod.rs.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    (1..=path.len()).rev().find_map(|n| {
        let folder: PathBuf = path[..n].iter().collect();
        let file = src.join(&folder).with_extension("rs");
        let module = src.join(&folder).join("mod.rs");
        [file, module].into_iter().find(|f| f.is_file())
    })
}

#[test]
fn the_cores_modules_import_only_from_layers_below_and_form_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    check_layers(&root.join("crates/tvbo-core/src"), CORE_LAYERS);
}

#[test]
fn the_servers_modules_import_only_from_layers_below_and_form_no_circle() {
    check_layers(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        SERVER_LAYERS,
    );
}

/// The core's default build carries no wire schemas: utoipa is an optional dependency,
/// behind the `openapi` feature that only the server turns on (CI builds the core alone,
/// without it).
#[test]
fn the_cores_default_build_has_no_utoipa() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("crates/tvbo-core/Cargo.toml")).unwrap();
    let utoipa: Vec<&str> = manifest
        .lines()
        .filter(|line| line.starts_with("utoipa"))
        .collect();
    assert!(
        utoipa.len() == 1 && utoipa[0].contains("optional = true"),
        "{utoipa:?}"
    );
    assert!(manifest.contains("openapi = [\"dep:utoipa\"]"));
    let default = manifest.lines().find(|line| line.starts_with("default ="));
    assert!(
        default.is_none_or(|line| !line.contains("openapi")),
        "{default:?}"
    );
}

/// The layers of one crate's `src`: every import allowed by `layers`, and no two files
/// importing each other.
fn check_layers(src: &Path, layers: &[(&str, &[&str])]) {
    let mut files = Vec::new();
    source_files(src, &mut files);
    files.sort();
    let layers: BTreeMap<&str, &[&str]> = layers.iter().copied().collect();
    let mut violations = Vec::new();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        if file.ends_with("main.rs") || file.ends_with("lib.rs") {
            continue;
        }
        let module = module_of(src, file);
        let is_mod_rs = file.ends_with("mod.rs");
        let top = module[0].as_str();
        let allowed = layers.get(top).unwrap_or_else(|| {
            panic!(
                "{}/{top} is in no layer of tests/it/layering.rs",
                src.display()
            )
        });
        let text = std::fs::read_to_string(file).unwrap();
        for path in imports(&text, &module) {
            let Some(target_top) = path.first() else {
                continue;
            };
            if target_top != top && !allowed.contains(&target_top.as_str()) {
                violations.push(format!(
                    "{} imports {} ({top} may import {allowed:?})",
                    file.strip_prefix(src).unwrap().display(),
                    path.join("::"),
                ));
            }
            if let Some(target) = file_of(src, &path)
                && &target != file
            {
                // A mod.rs naming its own children does not count.
                let own_child = is_mod_rs
                    && (target.parent() == file.parent()
                        || target.parent().and_then(Path::parent) == file.parent());
                if !own_child {
                    edges.entry(file.clone()).or_default().insert(target);
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the layers:\n{}",
        violations.join("\n")
    );
    // Depth-first search for a circle.
    fn visit(
        file: &PathBuf,
        edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        state: &mut BTreeMap<PathBuf, bool>,
        stack: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        match state.get(file) {
            Some(true) => return None,
            Some(false) => {
                let at = stack.iter().position(|f| f == file).unwrap();
                return Some(stack[at..].to_vec());
            }
            None => {}
        }
        state.insert(file.clone(), false);
        stack.push(file.clone());
        for next in edges.get(file).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, state, stack) {
                return Some(circle);
            }
        }
        stack.pop();
        state.insert(file.clone(), true);
        None
    }
    let mut state = BTreeMap::new();
    for file in edges.keys() {
        let mut stack = Vec::new();
        if let Some(circle) = visit(file, &edges, &mut state, &mut stack) {
            let names: Vec<String> = circle
                .iter()
                .map(|f| f.strip_prefix(src).unwrap().display().to_string())
                .collect();
            panic!("files import each other: {}", names.join(" → "));
        }
    }
}
