//! Hands `src/js/call.js` to wasm-bindgen as inline JavaScript: wasm-bindgen takes inline
//! JavaScript only as a string literal, so the file is written into one here and included by
//! `src/js/call_record.rs` (which says why it is inline).

use std::{env, fs, path::Path};

fn main() {
    let source = "src/js/call.js";
    println!("cargo:rerun-if-changed={source}");
    let js = fs::read_to_string(source).expect("src/js/call.js");
    assert!(!js.contains("\"####"), "{source}: a raw string's delimiter");
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("call_js.rs");
    fs::write(out, format!("call_js_imports!(r####\"{js}\"####);\n")).unwrap();
}
