//! How a kernel's WGSL is assembled: the one way a variant's choices reach its source.
//!
//! The `.wgsl` files in `shaders/` hold every line a variant may compile; a variant's choices
//! are named constants ([`Constant`], from [`crate::gpu::kernel::Variant::constants`]). Three
//! directives, each alone on its line, select and join the text:
//!
//! - `#include "common.wgsl"`: the text of another file of `shaders/` ([`SOURCES`]), in place.
//! - `#if NAME`, `#if !NAME`, `#else`, `#endif`: the lines between are kept where the boolean
//!   constant `NAME` is true (false). Only where the choice cannot be an ordinary `if` on the
//!   constant: a type, a declaration, or code that WGSL's uniformity analysis must not see.
//! - `#constants`: `const NAME: type = value;` for each of the variant's constants, so that the
//!   code tests them as ordinary WGSL constants, which every compiler folds.
//!
//! Nothing else is rewritten: the text a pipeline compiles is the files' lines, in order, less
//! their `//` comments ([`SOURCES`]).

use std::fmt::Write;

/// A constant's value: a `bool` (which `#if` may test) or a `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    U32(u32),
}

/// One of a variant's compile-time choices, by the name the WGSL gives it.
pub type Constant = (&'static str, Value);

/// The files of `shaders/` a kernel is assembled from, by the name `#include` gives, as
/// [`shader!`] ships them.
pub const SOURCES: [(&str, &str); 5] = [
    ("common.wgsl", shader!("common.wgsl")),
    ("row_cache.wgsl", shader!("row_cache.wgsl")),
    ("fused_rms_norm.wgsl", shader!("fused_rms_norm.wgsl")),
    ("norm_family.wgsl", shader!("norm_family.wgsl")),
    ("rotary_angle.wgsl", shader!("rotary_angle.wgsl")),
];

/// A file of `shaders/` without its `//` comments, at compile time: the prose is for readers
/// of `shaders/`, and in the wasm it was most of the shaders' share of the download
/// (docs/performance.md, "The download"). Each line stays, so a line number still points
/// into the file.
macro_rules! shader {
    ($file:literal) => {{
        const TEXT: &[u8] = include_bytes!(concat!("../../../shaders/", $file));
        const LEN: usize = uncomment(TEXT, &mut []);
        const BYTES: [u8; LEN] = {
            let mut out = [0; LEN];
            uncomment(TEXT, &mut out);
            out
        };
        const SOURCE: &str = match std::str::from_utf8(&BYTES) {
            Ok(s) => s,
            Err(_) => panic!(concat!("shaders/", $file, ": not UTF-8")),
        };
        SOURCE
    }};
}
use shader;

/// Writes `text` less its comments to `out` (where `out` has room: an empty one only counts)
/// and returns their length. A comment runs from `//` to the end of its line (WGSL has no
/// strings that could hold one) and goes with the blanks before it.
const fn uncomment(text: &[u8], out: &mut [u8]) -> usize {
    let (mut i, mut len, mut code_end) = (0, 0, 0);
    let mut in_comment = false;
    while i < text.len() {
        let c = text[i];
        if c == b'\n' {
            in_comment = false;
            len = code_end;
        } else if in_comment || (c == b'/' && i + 1 < text.len() && text[i + 1] == b'/') {
            in_comment = true;
            i += 1;
            continue;
        }
        if len < out.len() {
            out[len] = c;
        }
        len += 1;
        if c != b' ' && c != b'\t' {
            code_end = len;
        }
        i += 1;
    }
    code_end
}

/// The WGSL of `file` (one of [`SOURCES`]) with `constants`.
///
/// # Panics
///
/// On a malformed directive (an unknown file or constant, an `#if` on a number, an unbalanced
/// `#if`): the sources and each kernel's constant names are fixed, so the tests that assemble
/// every kernel find any such mistake before a build ships.
pub fn assemble(file: &str, constants: &[Constant]) -> String {
    assemble_from(&SOURCES, file, constants)
}

/// [`assemble`] over the files `sources`.
fn assemble_from(sources: &[(&str, &str)], file: &str, constants: &[Constant]) -> String {
    let mut out = String::new();
    emit(sources, file, constants, &mut out, 0);
    out
}

/// One `#if` being read: whether its lines are kept, and whether its `#else` was seen.
struct Open {
    keep: bool,
    in_else: bool,
}

/// Appends `file`'s lines to `out`, `depth` includes deep.
fn emit(
    sources: &[(&str, &str)],
    file: &str,
    constants: &[Constant],
    out: &mut String,
    depth: u32,
) {
    // An include of an include of an include is already more than the kernels need.
    assert!(depth < 4, "shaders/{file}: #include nested too deep");
    let text = sources
        .iter()
        .find(|(name, _)| *name == file)
        .unwrap_or_else(|| panic!("#include \"{file}\": not a file of shaders/"))
        .1;
    let mut open: Vec<Open> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("shaders/{file}:{}", n + 1);
        let live = open.iter().all(|o| o.keep);
        let Some(directive) = line.trim().strip_prefix('#') else {
            if live {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        };
        let (word, arg) = directive.split_once(' ').unwrap_or((directive, ""));
        match (word, arg.trim()) {
            ("if", name) => {
                let (negated, name) = match name.strip_prefix('!') {
                    Some(name) => (true, name),
                    None => (false, name),
                };
                let value = flag(constants, name)
                    .unwrap_or_else(|| panic!("{}: #if {name}: not a boolean constant", at()));
                open.push(Open {
                    keep: value != negated,
                    in_else: false,
                });
            }
            ("else", "") => match open.last_mut() {
                Some(o) if !o.in_else => {
                    o.keep = !o.keep;
                    o.in_else = true;
                }
                _ => panic!("{}: #else without its #if", at()),
            },
            ("endif", "") => {
                open.pop()
                    .unwrap_or_else(|| panic!("{}: #endif without its #if", at()));
            }
            ("include", name) if live => {
                let name = name
                    .strip_prefix('"')
                    .and_then(|n| n.strip_suffix('"'))
                    .unwrap_or_else(|| panic!("{}: #include takes a \"file\"", at()));
                emit(sources, name, constants, out, depth + 1);
            }
            ("constants", "") if live => {
                for &(name, value) in constants {
                    let _ = match value {
                        Value::Bool(b) => writeln!(out, "const {name}: bool = {b};"),
                        Value::U32(n) => writeln!(out, "const {name}: u32 = {n}u;"),
                    };
                }
            }
            ("include" | "constants", _) if !live => {}
            _ => panic!("{}: unknown directive {line:?}", at()),
        }
    }
    assert!(open.is_empty(), "shaders/{file}: #if without #endif");
}

/// The boolean constant `name`, if there is one.
fn flag(constants: &[Constant], name: &str) -> Option<bool> {
    constants.iter().find_map(|&(n, v)| match v {
        Value::Bool(b) if n == name => Some(b),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: [(&str, &str); 3] = [
        (
            "main.wgsl",
            "// head\n#include \"lib.wgsl\"\n#if A\na\n#if !B\nnot b\n#else\nb\n#endif\n\
             #else\nnot a\n#endif\n#if !A\n#include \"missing.wgsl\"\n#endif\ntail\n",
        ),
        ("lib.wgsl", "#constants\nlib\n"),
        ("loop.wgsl", "#include \"loop.wgsl\"\n"),
    ];

    fn main_with(b: bool) -> String {
        let constants = [
            ("A", Value::Bool(true)),
            ("N", Value::U32(7)),
            ("B", Value::Bool(b)),
        ];
        assemble_from(&FILES, "main.wgsl", &constants)
    }

    #[test]
    fn includes_constants_and_conditions() {
        let head = "// head\nconst A: bool = true;\nconst N: u32 = 7u;\n";
        // The include in a branch not taken is not read: it names no file.
        assert_eq!(
            main_with(false),
            format!("{head}const B: bool = false;\nlib\na\nnot b\ntail\n")
        );
        assert_eq!(
            main_with(true),
            format!("{head}const B: bool = true;\nlib\na\nb\ntail\n")
        );
        let files = [("main.wgsl", "#if A\na\n#else\nnot a\n#endif\n")];
        let not_a = assemble_from(&files, "main.wgsl", &[("A", Value::Bool(false))]);
        assert_eq!(not_a, "not a\n");
    }

    #[test]
    fn a_shipped_file_keeps_its_code_and_lines_without_comments() {
        let text = b"// head\nfn f() {  // why\n    x = a / b;\t\n  // more\n}";
        let mut out = [0; 64];
        let len = uncomment(text, &mut out);
        assert_eq!(uncomment(text, &mut []), len);
        assert_eq!(&out[..len], b"\nfn f() {\n    x = a / b;\n\n}");
        for (name, source) in SOURCES {
            let file = std::fs::read_to_string(format!("shaders/{name}")).unwrap();
            assert_eq!(source.lines().count(), file.lines().count(), "{name}");
            assert!(!source.contains("//"), "{name}");
        }
    }

    #[test]
    #[should_panic(expected = "not a file of shaders/")]
    fn an_include_of_no_file_fails() {
        let files = [("main.wgsl", "#include \"missing.wgsl\"\n")];
        assemble_from(&files, "main.wgsl", &[]);
    }

    #[test]
    #[should_panic(expected = "nested too deep")]
    fn an_include_cycle_fails() {
        assemble_from(&FILES, "loop.wgsl", &[]);
    }

    #[test]
    #[should_panic(expected = "#if C: not a boolean constant")]
    fn an_if_on_an_unknown_name_fails_even_where_not_taken() {
        let files = [("main.wgsl", "#if !A\n#if C\n#endif\n#endif\n")];
        assemble_from(&files, "main.wgsl", &[("A", Value::Bool(true))]);
    }

    #[test]
    #[should_panic(expected = "#if N: not a boolean constant")]
    fn an_if_on_a_number_fails() {
        let files = [("main.wgsl", "#if N\n#endif\n")];
        assemble_from(&files, "main.wgsl", &[("N", Value::U32(1))]);
    }

    #[test]
    fn unbalanced_conditions_fail() {
        for text in [
            "#if A\n",
            "#endif\n",
            "#else\n",
            "#if A\n#else\n#else\n#endif\n",
            "#iff A\n",
        ] {
            let files = [("main.wgsl", text)];
            let failed = std::panic::catch_unwind(|| {
                assemble_from(&files, "main.wgsl", &[("A", Value::Bool(true))])
            });
            assert!(failed.is_err(), "{text:?}");
        }
    }

    /// Every file of SOURCES is read by a kernel, and each one's directives are whole.
    #[test]
    fn every_source_is_included_somewhere() {
        let all: String = SOURCES.iter().map(|(_, text)| *text).collect();
        for (name, _) in &SOURCES[..2] {
            assert!(all.contains(&format!("#include \"{name}\"")), "{name}");
        }
    }
}
