//! The docs stay findable and short: every section of `docs/` that the code, the shaders,
//! the scripts, the tests, the benchmarks or the demo names (by its title in quotes after
//! the file, or by a `#` anchor) is a heading of that file, and no page of `docs/` grows
//! past a reader's sitting.

#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 400;

/// Where references to `docs/` are looked for, from the crate's root.
const SEARCHED: &[&str] = &[
    "src",
    "shaders",
    "tests",
    "scripts",
    "bench",
    "www",
    "examples",
    "README.md",
    "ARCHITECTURE.md",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if !path.exists() {
        return;
    }
    if path.is_file() {
        out.push(path.to_owned());
        return;
    }
    for entry in std::fs::read_dir(path).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if !name.starts_with('.') && name != "node_modules" {
            files(&path, out);
        }
    }
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`, other punctuation gone.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of a markdown text, without their `#`s.
fn headings(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_owned())
        .collect()
}

/// A section reference: the page (`performance.md`), and its title or its anchor.
#[derive(Debug, PartialEq)]
enum Section {
    Page(String),
    Title(String, String),
    Anchor(String, String),
}

/// Each reference to `docs/` in `text`, with its line. A comment's lines are read as one
/// sentence (their markers dropped), so that a title may run onto the next line.
fn references(text: &str) -> Vec<(usize, Section)> {
    let mut flat = String::new();
    let mut line_at = vec![];
    for (n, line) in text.lines().enumerate() {
        let mut l = line.trim();
        for marker in ["//!", "///", "//", "/*", "<!--", "#", "*"] {
            if let Some(rest) = l.strip_prefix(marker) {
                l = rest.trim_start();
                break;
            }
        }
        line_at.push((flat.len(), n + 1));
        flat.push_str(l);
        flat.push(' ');
    }
    let line_of = |at: usize| line_at.iter().rev().find(|(o, _)| *o <= at).unwrap().1;
    let mut found = vec![];
    for (at, _) in flat.match_indices("docs/") {
        let before = flat[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || "/_-.".contains(c)) {
            continue;
        }
        let rest = &flat[at + "docs/".len()..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        let Some(after) = rest[name_len..].strip_prefix(".md") else {
            continue;
        };
        let page = format!("{}.md", &rest[..name_len]);
        let after = after.strip_prefix('`').unwrap_or(after);
        let section = if let Some(a) = after.strip_prefix('#') {
            let end = a
                .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(a.len());
            Section::Anchor(page, a[..end].to_owned())
        } else {
            // `docs/x.md, "Title"` or `docs/x.md ("Title")`.
            let quoted = after
                .strip_prefix(',')
                .map(|a| a.trim_start().trim_start_matches('('))
                .or_else(|| after.trim_start().strip_prefix('('));
            match quoted.and_then(|q| q.strip_prefix('"')?.split_once('"')) {
                Some((title, _)) => Section::Title(page, title.to_owned()),
                None => Section::Page(page),
            }
        };
        found.push((line_of(at), section));
    }
    found
}

/// What is wrong with `section`, if anything.
fn fault(docs: &Path, section: &Section) -> Option<String> {
    let (Section::Page(page) | Section::Title(page, _) | Section::Anchor(page, _)) = section;
    let Ok(text) = std::fs::read_to_string(docs.join(page)) else {
        return Some(format!("docs/{page} does not exist"));
    };
    let heads = headings(&text);
    let plain = |h: &String| h.replace('`', "");
    match section {
        Section::Page(_) => None,
        Section::Title(_, t) if heads.iter().any(|h| h == t || plain(h) == *t) => None,
        Section::Anchor(_, a) if heads.iter().any(|h| anchor(h) == *a) => None,
        Section::Title(_, t) => Some(format!("docs/{page} has no heading \"{t}\"")),
        Section::Anchor(_, a) => Some(format!("docs/{page} has no heading with anchor #{a}")),
    }
}

/// Each reference to a `docs/` section under `root` that names none, as `file:line: why`,
/// and how many references to a section (by title or anchor) there are.
fn broken_references(root: &Path) -> (Vec<String>, usize) {
    let mut all = vec![];
    for searched in SEARCHED {
        files(&root.join(searched), &mut all);
    }
    let mut broken = vec![];
    let mut sections = 0;
    // This file's own examples of broken references are not references.
    all.retain(|f| !f.ends_with("tests/docs.rs"));
    for file in all {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // not text
        };
        for (line, section) in references(&text) {
            sections += usize::from(!matches!(section, Section::Page(_)));
            if let Some(why) = fault(&root.join("docs"), &section) {
                let rel = file.strip_prefix(root).unwrap().display();
                broken.push(format!("{rel}:{line}: {why}"));
            }
        }
    }
    (broken, sections)
}

#[test]
fn every_docs_section_named_in_a_comment_exists() {
    let (broken, sections) = broken_references(&root());
    // The reader must find the references that exist (the code names many sections).
    assert!(sections > 0, "no reference to a docs/ section found");
    assert!(
        broken.is_empty(),
        "references to docs/ sections that do not exist:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_reference_reader_reads_each_form() {
    let page = |p: &str| format!("docs/{p}.md");
    let text = format!(
        "// A limit ({}, \"The first\n// part\"); {}#a-b-c;\n# see `{}`, \"Quoted\"\n{} alone\nsub{}\n{}\", \"x\"",
        page("x"),
        page("y"),
        page("z"),
        page("w"),
        page("v"),
        page("u"),
    );
    let x = |s: &str| s.to_owned();
    assert_eq!(
        references(&text),
        vec![
            (1, Section::Title(x("x.md"), x("The first part"))),
            (2, Section::Anchor(x("y.md"), x("a-b-c"))),
            (3, Section::Title(x("z.md"), x("Quoted"))),
            (4, Section::Page(x("w.md"))),
            (6, Section::Page(x("u.md"))),
        ]
    );
    assert_eq!(
        anchor("Into the caller's arrays"),
        "into-the-callers-arrays"
    );
    assert_eq!(anchor("`bind`"), "bind");
}

#[test]
fn a_reference_to_a_missing_heading_is_refused() {
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-check");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(copy.join("docs")).unwrap();
    std::fs::create_dir_all(copy.join("src")).unwrap();
    std::fs::write(copy.join("docs/p.md"), "# P\n\n## Kept\n\n## `bind`\n").unwrap();
    let refs = ["\"Kept\"", "\"bind\"", "\"Gone\"", "#kept", "#gone"];
    let code: String = refs
        .iter()
        .map(|r| {
            format!(
                "// (docs/{}.md{}{r})\n",
                "p",
                if r.starts_with('#') { "" } else { ", " }
            )
        })
        .collect();
    std::fs::write(copy.join("src/lib.rs"), code + "// docs/none.md\n").unwrap();
    let (broken, sections) = broken_references(&copy);
    let _ = std::fs::remove_dir_all(&copy);
    assert_eq!(sections, refs.len());
    assert_eq!(
        broken,
        vec![
            "src/lib.rs:3: docs/p.md has no heading \"Gone\"",
            "src/lib.rs:5: docs/p.md has no heading with anchor #gone",
            "src/lib.rs:6: docs/none.md does not exist",
        ]
    );
}

#[test]
fn every_docs_page_stays_short() {
    let mut long = vec![];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        if lines > MAX_LINES {
            let name = path.file_name().unwrap().to_string_lossy();
            long.push(format!("docs/{name}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "docs pages longer than {MAX_LINES} lines (split a page, or say it shorter):\n{}",
        long.join("\n")
    );
}
