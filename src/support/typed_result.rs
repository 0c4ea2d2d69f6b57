//! A result as the browser receives it ([`TypedResult`]): a typed array owned by JavaScript,
//! never a view into wasm memory (which a `memory.grow` detaches). The drivers fill it: the
//! GPU driver copies each mapped chunk into it (`gpu/transfer/web.rs`), the CPU backend its
//! numbers out of wasm memory (`cpu/results.rs`).

use js_sys::{Float32Array, Uint16Array};
use wasm_bindgen::JsValue;

/// A result in the browser: a fresh typed array, or the caller's own (`output`, `sum`); an
/// f32 result's numbers, or an f16 result's bits.
pub enum TypedResult {
    F32(Float32Array),
    F16(Uint16Array),
}

impl TypedResult {
    /// Elements of the array (0 once its buffer is detached).
    pub fn len(&self) -> usize {
        match self {
            TypedResult::F32(a) => a.length() as usize,
            TypedResult::F16(a) => a.length() as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<TypedResult> for JsValue {
    fn from(v: TypedResult) -> JsValue {
        match v {
            TypedResult::F32(a) => a.into(),
            // Always the bits: every browser has Uint16Array and every TypeScript lib
            // types it (`new Float16Array(bits.buffer)` views it where that exists).
            TypedResult::F16(a) => a.into(),
        }
    }
}
