//! Hands `src/js/call.js` to wasm-bindgen as inline JavaScript: wasm-bindgen takes inline
//! JavaScript only as a string literal, so the file is written into one here and included by
//! `src/js/call_js.rs` (which says why it is inline). On the way, the body of its
//! `readFields` gets one read per row of `src/js/keys.rs`'s `CALL_KEYS`, by name, and the
//! names read go into `FIELDS`, which `call_js.rs` holds to the table.

use std::{env, fs, path::Path};

const JS: &str = "src/js/call.js";
const KEYS: &str = "src/js/keys.rs";
const MARK: &str = "  // build.rs: the reads.\n";

fn main() {
    println!("cargo:rerun-if-changed={JS}");
    println!("cargo:rerun-if-changed={KEYS}");
    let js = fs::read_to_string(JS).expect(JS);
    let names = call_keys(&fs::read_to_string(KEYS).expect(KEYS));
    assert!(js.contains(MARK), "{JS}: no line {MARK:?} for the reads");
    let reads: String = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "  try {{ x = a[{n:?}]; }} catch {{ x = undefined; }}\n  \
                 if (x !== undefined) (v[{i}] = x), (given[c++] = {i});\n"
            )
        })
        .collect();
    let js = js.replace(MARK, &reads);
    assert!(!js.contains("\"####"), "{JS}: a raw string's delimiter");
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("call_js.rs");
    let fields = format!("const FIELDS: [&str; {}] = {names:?};\n", names.len());
    fs::write(
        out,
        format!("{fields}call_js_imports!(r####\"{js}\"####);\n"),
    )
    .unwrap();
}

/// The names of `CALL_KEYS`' rows, `call(CallKey::Input, "input", Kind::Array),`, in order.
fn call_keys(keys: &str) -> Vec<String> {
    let names: Vec<String> = keys
        .lines()
        .filter_map(|l| l.trim().strip_prefix("call(CallKey::"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_owned))
        .collect();
    assert!(!names.is_empty(), "{KEYS}: no rows of CALL_KEYS found");
    names
}
