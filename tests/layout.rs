//! The source layout keeps the architecture visible: every module says what it holds, no
//! file grows past a reader's sitting, and no module imports another in a circle (a circle
//! is two layers that cannot be read apart).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 500;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `call::shape` for `src/call/shape.rs`, `gpu` for `src/gpu/mod.rs`, `` for `lib.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without comments and without its unit tests (whose `super::` is the
/// file itself).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    text.lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules `text` (the code of `module`) names through `crate::` paths, `super::`, and,
/// in a folder's `mod.rs`, the re-exports of its children.
fn imports(module: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let longest = |path: &[&str]| {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '{' || c == ','))
            .map(str::to_owned)
            .collect()
    };
    let parent: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    let mut found = BTreeSet::new();
    for word in words(text) {
        for (prefix, base) in [
            ("crate::", vec![]),
            ("super::", parent[..parent.len().saturating_sub(1)].to_vec()),
        ] {
            let Some(start) = word.find(prefix) else {
                continue;
            };
            let rest = &word[start + prefix.len()..];
            // `crate::a::{b, c::d}`: the part before the brace, then each item in it.
            let (head, items) = match rest.split_once('{') {
                Some((h, i)) => (h.trim_end_matches(':'), i.split(',').collect()),
                None => (rest, vec![""]),
            };
            for item in items {
                let mut path = base.clone();
                path.extend(head.split("::").filter(|s| !s.is_empty()));
                path.extend(item.split("::").filter(|s| !s.is_empty()));
                if let Some(m) = longest(&path) {
                    found.insert(m);
                }
            }
        }
    }
    if modules
        .iter()
        .any(|m| m.starts_with(&format!("{module}::")) || module.is_empty())
    {
        for line in text.lines().map(str::trim) {
            let Some(rest) = line
                .strip_prefix("pub use ")
                .or_else(|| line.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            let child = rest.split("::").next().unwrap();
            let m = if module.is_empty() {
                child.to_owned()
            } else {
                format!("{module}::{child}")
            };
            if modules.contains(&m) {
                found.insert(m);
            }
        }
    }
    found.remove(module);
    found.remove("");
    found
}

/// A circle of imports that `start` is on, if any.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((m, path)) = stack.pop() {
        for next in &graph[&m] {
            if next == start {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn modules_import_in_one_direction_say_what_they_hold_and_stay_short() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let texts: BTreeMap<String, String> = files
        .iter()
        .map(|f| (module_of(&src, f), std::fs::read_to_string(f).unwrap()))
        .collect();
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    for (m, text) in &texts {
        assert!(
            text.starts_with("//!"),
            "{m}: expected a module doc comment first"
        );
        let lines = text.lines().count();
        assert!(
            lines <= MAX_LINES,
            "{m}: {lines} lines, expected at most {MAX_LINES}"
        );
    }
    let graph: BTreeMap<String, BTreeSet<String>> = texts
        .iter()
        .map(|(m, t)| (m.clone(), imports(m, &code(t), &modules)))
        .collect();
    // The checker itself: it must see the edges that exist.
    assert!(
        graph["gpu::submit"].contains("call::plan"),
        "{:?}",
        graph["gpu::submit"]
    );
    for m in &modules {
        if let Some(c) = circle(&graph, m) {
            panic!("modules import each other in a circle: {}", c.join(" -> "));
        }
    }
}
