//! `call.js`'s functions as Rust calls them. `build.rs` writes the file, with one read by name
//! per row of `keys.rs`'s `CALL_KEYS` in its `readFields`, into a string literal, since
//! wasm-bindgen takes inline JavaScript only as one (and a module snippet is not always served
//! whole by wasm-bindgen-test's server: a page that never loads its tests times out).

use wasm_bindgen::prelude::*;

use crate::js::keys::CALL_KEYS;

macro_rules! call_js_imports {
    ($js:tt) => {
        #[wasm_bindgen(inline_js = $js)]
        extern "C" {
            #[wasm_bindgen(js_name = callInit)]
            pub(crate) fn call_init(memory: &JsValue, names: &js_sys::Array, layout: &JsValue);
            #[wasm_bindgen(js_name = readCall)]
            pub(crate) fn read_call(args: &JsValue, at: u32);
            /// Keeps `handle` on the tensor's object, where `readCall` reads it.
            #[wasm_bindgen(js_name = tagTensor)]
            pub(crate) fn tag_tensor(tensor: &JsValue, handle: u32);
            #[wasm_bindgen(js_name = callValue)]
            pub(crate) fn call_value(index: u32) -> JsValue;
            #[wasm_bindgen(js_name = callRelease)]
            pub(crate) fn call_release();
            /// The `len` 32-bit elements of the table field at `index` (an `Int32Array`,
            /// `Uint32Array` or `Float32Array`), as their bits, to byte address `at`; `false`
            /// where they could not be copied (a length that changed included).
            #[wasm_bindgen(js_name = callTable)]
            pub(crate) fn call_table(index: u32, at: u32, len: u32) -> bool;
            #[wasm_bindgen(js_name = isWebGpu)]
            fn is_webgpu_js(v: &JsValue, name: &str) -> bool;
            /// The elements `[from, from + count)` of the input and residual read last, and
            /// with `columns` its other arrays, to the byte addresses at `at` (one `f64` per
            /// array of [`CallKey::ARRAYS`]). `false` (the values released) where one could
            /// not be copied.
            #[wasm_bindgen(js_name = cpuCopy)]
            pub(crate) fn cpu_copy(at: u32, from: f64, count: u32, columns: bool) -> bool;
            /// A block's `len` results, `y` at byte address `y_at` (and `v` at `v_at` unless
            /// it is negative), into the caller's arrays from element `from`.
            #[wasm_bindgen(js_name = cpuCopyOut)]
            pub(crate) fn cpu_copy_out(
                y_at: u32,
                v_at: f64,
                from: u32,
                len: u32,
                y_f16: bool,
                v_f16: bool,
            ) -> bool;
            /// A Promise of `y` (`y_len` elements from byte address `y_at`, into the caller's
            /// array or a fresh one), or of `{ output, sum }` where `v_len` is not negative;
            /// the caller's arrays as they are where `written` (by `cpu_copy_out`).
            #[wasm_bindgen(js_name = cpuFinish)]
            pub(crate) fn cpu_finish(
                y_at: u32,
                y_len: u32,
                y_f16: bool,
                v_at: u32,
                v_len: i32,
                v_f16: bool,
                written: bool,
            ) -> js_sys::Promise;
        }
    };
}
include!(concat!(env!("OUT_DIR"), "/call_js.rs"));

// `call.js` reads the fields `build.rs` found in `CALL_KEYS`: the same, in the same order.
const _: () = {
    assert!(
        FIELDS.len() == CALL_KEYS.len(),
        "build.rs found CALL_KEYS' rows"
    );
    let mut i = 0;
    while i < FIELDS.len() {
        let (a, b) = (FIELDS[i].as_bytes(), CALL_KEYS[i].name.as_bytes());
        assert!(a.len() == b.len(), "build.rs read CALL_KEYS' names");
        let mut j = 0;
        while j < a.len() {
            assert!(a[j] == b[j], "build.rs read CALL_KEYS' names");
            j += 1;
        }
        i += 1;
    }
};

/// Whether `v` is the WebGPU interface `name` (`"GPUBuffer"`, `"GPUCommandEncoder"`), as
/// `call.js` recognises the app's buffers.
pub fn is_webgpu(v: &JsValue, name: &str) -> bool {
    is_webgpu_js(v, name)
}
