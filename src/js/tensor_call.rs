//! The common call read in one step: a plain object of live `GpuTensor`s, numbers and known
//! flags (an inference app's decode step), taken into Rust by one JavaScript function. Every
//! other argument object, and every error, goes through the field-by-field reading of
//! `args.rs`, which has the messages; the values are checked by the same functions.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

use crate::call::checks::{eps_from_number, hidden_from_number};
use crate::call::error::Error;
use crate::call::host::Arg;
use crate::call::plan::Request;
use crate::call::shape::{fit_buffers, Inputs};
use crate::js::array::Args;
use crate::js::glue::POINTER_FIELD;
use crate::js::keys::{keys_of, Readers, CALL_KEYS};

#[wasm_bindgen(inline_js = r#"
const TENSORS = ["input", "residual", "gamma", "beta", "bias"];
// The keys this path takes (keys.rs), and the glue's pointer field (glue.rs).
let known, pointer;
export function tensorCallInit(names, pointerField) {
  known = new Set(names);
  pointer = pointerField;
}
export function readTensorCall(a, proto, out) {
  try {
    if (a === null || typeof a !== "object" || Object.getPrototypeOf(a) !== Object.prototype) return false;
    for (const k in a) if (!known.has(k)) return false;
    for (let i = 0; i < 5; i++) {
      const t = a[TENSORS[i]];
      if (t === undefined && i >= 3) { out[i] = 0; continue; }
      if (t === null || typeof t !== "object" || Object.getPrototypeOf(t) !== proto || t[pointer] === 0) return false;
      out[i] = t.__handle;
    }
    const hidden = a.hidden, eps = a.eps, inPlace = a.inPlace, output = a.output;
    if (typeof hidden !== "number") return false;
    out[5] = hidden;
    if (eps === undefined) out[6] = 0;
    else if (typeof eps === "number") { out[6] = 1; out[7] = eps; }
    else return false;
    if (inPlace === undefined || inPlace === false) out[8] = 0;
    else if (inPlace === true) out[8] = 1;
    else return false;
    // "array" apart from an absent output: beside inPlace it is refused (args.rs says why).
    if (output === undefined) out[9] = 0;
    else if (output === "gpu") out[9] = 1;
    else if (output === "array") out[9] = 2;
    else return false;
    return true;
  } catch {
    return false;
  }
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = tensorCallInit)]
    fn tensor_call_init(names: &js_sys::Array, pointer_field: &str);
    /// The common call (a plain object of live `GpuTensor`s, numbers and known flags: a
    /// decode step) read in one crossing into `out`; `false` for anything else. Read field by
    /// field it took some thirty crossings into JavaScript, a large part of such a call
    /// (docs/performance.md, "Dawn in Node").
    #[wasm_bindgen(js_name = readTensorCall)]
    fn read_tensor_call(args: &JsValue, tensor_prototype: &JsValue, out: &mut [f64]) -> bool;
}

thread_local! {
    static READY: Cell<bool> = const { Cell::new(false) };
}

/// Hands the JavaScript reader what it takes from Rust, once.
fn ready() {
    if !READY.get() {
        let known: &[&str] = keys_of!(CALL_KEYS, Readers::TENSOR_CALL);
        let names: js_sys::Array = known.iter().map(|k| JsValue::from_str(k)).collect();
        tensor_call_init(&names, POINTER_FIELD);
        READY.set(true);
    }
}

/// `args.rs`'s `parse_args` for the common call, or `None` where the field-by-field reading (which
/// has every message) must look: anything [`read_tensor_call`] does not take, a freed
/// tensor, `inPlace` with an `output`. The values are checked as that path checks them.
pub fn parse(args: &JsValue, sum: bool) -> Option<Result<(Args, Request), Error>> {
    parse_read(&read(args)?, sum)
}

/// `args` read in one crossing, as `[input, residual, gamma, beta, bias]` (tensor handles, 0
/// where absent), `hidden`, whether `eps` is given and its value, `inPlace`, `output: "gpu"`;
/// `None` where the field-by-field reading must look.
pub fn read(args: &JsValue) -> Option<TensorCall> {
    let prototype = crate::js::tensor::tensor_prototype()?;
    ready();
    let mut out = [0f64; 10];
    read_tensor_call(args, &prototype, &mut out).then_some(TensorCall(out))
}

/// A call [`read`] in one crossing (its fields as `readTensorCall` writes them).
pub struct TensorCall(pub [f64; 10]);

impl TensorCall {
    /// The tensors' handles, 0 where absent.
    pub fn handles(&self) -> [u32; 5] {
        let o = &self.0;
        [o[0], o[1], o[2], o[3], o[4]].map(|h| h as u32)
    }

    /// `inPlace: true` (and no `output`).
    pub fn in_place(&self) -> bool {
        self.0[8] == 1.0 && self.0[9] == 0.0
    }

    /// `hidden`, and `eps` where given, as read: what else identifies the call.
    pub fn numbers(&self) -> [u64; 3] {
        [
            self.0[5].to_bits(),
            self.0[6].to_bits(),
            self.0[7].to_bits(),
        ]
    }
}

/// [`parse`] of a call already read.
pub fn parse_read(read: &TensorCall, sum: bool) -> Option<Result<(Args, Request), Error>> {
    let out = &read.0;
    let tensor = |h: f64| crate::js::tensor::tensor_by_handle(h as u32).map(Arg::Gpu);
    let optional = |h: f64| {
        if h == 0.0 {
            Some(None)
        } else {
            tensor(h).map(Some)
        }
    };
    let (input, residual, gamma) = (tensor(out[0])?, tensor(out[1])?, tensor(out[2])?);
    let (beta, bias) = (optional(out[3])?, optional(out[4])?);
    let (in_place, to_gpu) = (out[8] == 1.0, out[9] == 1.0);
    let request = match (in_place, to_gpu) {
        // Any output beside inPlace: the field-by-field path refuses it with its message.
        (true, _) if out[9] != 0.0 => return None,
        (true, _) => Request::in_place(),
        (false, true) => Request::to_gpu(sum),
        (false, false) => Request::host(sum),
    };
    let parsed = (|| {
        let hidden = hidden_from_number(out[5])?;
        let eps = if out[6] == 1.0 {
            eps_from_number(out[7])?
        } else {
            crate::call::shape::DEFAULT_EPS
        };
        let mut x = Inputs {
            residual: Some(residual),
            beta,
            bias,
            eps,
            ..Inputs::without_residual(input, gamma, hidden)
        };
        fit_buffers(&mut x, None, None)?;
        Ok((x, request))
    })();
    Some(parsed)
}
