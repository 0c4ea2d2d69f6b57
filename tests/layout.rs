//! The source layout keeps the architecture visible: every module says what it holds, no
//! file grows past a reader's sitting and no function past a screen or two, every import
//! goes down the layers (a layer that imports one above it, or one beside it, cannot be read
//! without it), and no module imports another in a circle. Imports are read with a Rust
//! parser (`layout/imports.rs`), and `layout/injected.rs` shows that each way of writing
//! one is seen.

#![cfg(not(target_arch = "wasm32"))]

#[path = "layout/imports.rs"]
mod imports;
#[path = "layout/injected.rs"]
mod injected;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 400;
const MAX_FN_LINES: usize = 80;

/// The layers, bottom up: each top module (a folder of `src/`, or a file beside them) by its
/// rank. A module imports only from its own top module and from lower ranks, so modules of
/// one rank (the two drivers, `cpu` and `gpu`, and the f64 `reference`) never import each
/// other. `""` is `lib.rs`, which re-exports from every layer.
const RANKS: &[(&str, u32)] = &[
    ("support", 0),
    ("call", 1),
    ("cpu", 2),
    ("gpu", 2),
    ("reference", 2),
    ("instance", 3),
    ("backend", 4),
    ("js", 5),
    ("", 6),
];

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

/// The crate's `src/`.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every module of `src/` by name, with its text.
fn sources() -> BTreeMap<String, String> {
    imports::sources(&src())
}

/// The layer `module` is in: the rank of its top module.
fn rank(module: &str) -> u32 {
    let top = module.split("::").next().unwrap_or("");
    RANKS
        .iter()
        .find(|(name, _)| *name == top)
        .map(|&(_, r)| r)
        .unwrap_or_else(|| panic!("{module}: its top module {top:?} has no rank in RANKS"))
}

/// `text` with comments, string literals and char literals blanked out (newlines kept), so
/// that the braces left are the code's.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, part: &[char]| {
        out.extend(part.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let starts = |i: usize, s: &str| chars[i..].iter().take(s.len()).copied().eq(s.chars());
    let mut i = 0;
    while i < chars.len() {
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let end = if starts(i, "//") {
            (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len())
        } else if starts(i, "/*") {
            (i + 2..chars.len())
                .find(|&j| starts(j, "*/"))
                .map_or(chars.len(), |j| j + 2)
        } else if chars[i] == 'r' && !ident_before && (starts(i, "r\"") || starts(i, "r#")) {
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            let close: String = std::iter::once('"')
                .chain((0..hashes).map(|_| '#'))
                .collect();
            let open = i + 2 + hashes;
            (open..chars.len())
                .find(|&j| starts(j, &close))
                .map_or(chars.len(), |j| j + close.len())
        } else if chars[i] == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if chars[i] == '\'' && (starts(i + 2, "'") || starts(i + 1, "\\")) {
            // A char literal ('{', '\n', '\u{7b}'), not a lifetime.
            (i + 2..chars.len())
                .find(|&j| chars[j] == '\'')
                .map_or(chars.len(), |j| j + 1)
        } else {
            out.push(chars[i]);
            i += 1;
            continue;
        };
        let end = end.min(chars.len());
        blank(&mut out, &chars[i..end]);
        i = end;
    }
    out
}

/// Each function with a body in `text`: its name, first line and length in lines.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code: Vec<char> = blank_literals(text).chars().collect();
    let line_at = |i: usize| code[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = vec![];
    for i in 0..code.len().saturating_sub(3) {
        let keyword = code[i..i + 2] == ['f', 'n']
            && code[i + 2].is_whitespace()
            && (i == 0 || !is_ident(code[i - 1]));
        if !keyword {
            continue;
        }
        let name: String = code[i + 2..]
            .iter()
            .skip_while(|c| c.is_whitespace())
            .take_while(|&&c| is_ident(c))
            .collect();
        // The body's opening brace: the first `{` outside the signature's brackets, unless
        // a `;` ends a declaration first.
        let mut depth = 0i32;
        let Some(open) = (i..code.len()).find(|&j| {
            match code[j] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                _ => {}
            }
            depth == 0 && (code[j] == '{' || code[j] == ';')
        }) else {
            continue;
        };
        if code[open] == ';' {
            continue;
        }
        let mut depth = 0;
        let close = (open..code.len()).find(|&j| {
            match code[j] {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let first = line_at(i);
        let last = close.map_or(line_at(code.len()), line_at);
        found.push((name, first, last - first + 1));
    }
    found
}

#[test]
fn the_function_scan_measures_bodies_not_signatures_or_literals() {
    let text = "trait T {\n    fn declared(&self);\n}\nfn two() {\n    let s = \"}\";\n    let c = '}';\n}\n// fn commented() {\nfn one<'a>(x: &'a str) -> &'a str { x }\n";
    assert_eq!(
        functions(text),
        vec![("two".to_string(), 4, 4), ("one".to_string(), 9, 1)]
    );
}

#[test]
fn every_module_says_what_it_holds() {
    for (m, text) in &sources() {
        assert!(
            text.starts_with("//!"),
            "{m}: expected a module doc comment first"
        );
    }
}

#[test]
fn files_and_functions_stay_short() {
    let mut long = vec![];
    for (m, text) in &sources() {
        let lines = text.lines().count();
        if lines > MAX_LINES {
            long.push(format!("{m}: {lines} lines, expected at most {MAX_LINES}"));
        }
        for (name, line, length) in functions(text) {
            if length > MAX_FN_LINES {
                long.push(format!(
                    "{m}::{name} (line {line}): {length} lines, expected at most {MAX_FN_LINES}"
                ));
            }
        }
    }
    assert!(long.is_empty(), "too long:\n{}", long.join("\n"));
}

/// `call/` describes a call without a backend: no file of it names JavaScript's bindings
/// (`js_sys`, `wasm_bindgen`), which only the drivers, `support/` and `js/` use.
#[test]
fn call_names_no_javascript_binding() {
    let texts = sources();
    let call: Vec<_> = texts
        .iter()
        .filter(|(m, _)| *m == "call" || m.starts_with("call::"))
        .collect();
    assert!(!call.is_empty(), "no module of call/ found");
    let named: Vec<String> = call
        .iter()
        .flat_map(|(m, text)| {
            ["js_sys", "wasm_bindgen"]
                .into_iter()
                .filter(|binding| text.contains(binding))
                .map(move |binding| format!("{m} names {binding}"))
        })
        .collect();
    assert!(
        named.is_empty(),
        "call/ names JavaScript's bindings:\n{}",
        named.join("\n")
    );
}

/// Each import of `graph` that goes up or sideways (RANKS), and a circle of imports if any.
fn import_faults(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut faults = vec![];
    for (m, deps) in graph {
        let top = m.split("::").next().unwrap_or("");
        for d in deps {
            if d.split("::").next().unwrap_or("") != top && rank(d) >= rank(m) {
                faults.push(format!(
                    "{m} (rank {}) imports {d} (rank {})",
                    rank(m),
                    rank(d)
                ));
            }
        }
    }
    if let Some(c) = graph.keys().find_map(|m| circle(graph, m)) {
        faults.push(format!(
            "modules import each other in a circle: {}",
            c.join(" -> ")
        ));
    }
    faults
}

/// The imports of the tree at `src`: each module with the modules it imports.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    imports::Crate::parse(&imports::sources(src)).graph()
}

#[test]
fn modules_import_only_downward_and_never_in_a_circle() {
    let graph = import_graph(&src());
    // The checker itself: it must see the edges that exist.
    assert!(
        graph["gpu::submit"].contains("call::plan"),
        "{:?}",
        graph["gpu::submit"]
    );
    let faults = import_faults(&graph);
    assert!(
        faults.is_empty(),
        "imports that go up or sideways (RANKS), or in a circle:\n{}",
        faults.join("\n")
    );
}
