//! A panic is designed never to happen (every input is checked into a named error); if one
//! ever does, its Rust message and location reach `console.error` before the module traps,
//! instead of a bare `RuntimeError: unreachable`.

use wasm_bindgen::prelude::*;

/// Runs once, when `init()` instantiates the module.
#[wasm_bindgen(start)]
fn install_panic_hook() {
    console_error_panic_hook::set_once();
}

/// Panics with `message`: how the end-to-end suite reaches the hook. Only in builds with the
/// `test-hooks` feature, never in the package.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = __panicForTests)]
pub fn panic_for_tests(message: &str) {
    panic!("{message}");
}
