//! The JavaScript API: `FusedRmsNorm`, in files by concern: the calls (`calls.rs`), what an
//! app reads of an instance and asks of its device (`state.rs`), and the device-loss
//! handlers (`device_loss.rs`, the properties; `handlers.rs`, what keeps and fires them).
//!
//! Every method that does GPU work returns a Promise and reports every failure as a
//! rejection with a named `Error`; nothing here panics on any input (a panic in wasm aborts
//! the whole instance). Each entry point is the same three steps: parse the JavaScript
//! values (`args.rs`, `options.rs`), hand the call to the backend (`backend.rs`: the
//! instance in `instance.rs`, the live device or a new one after a loss, or the CPU
//! backend), and turn what comes back into JavaScript values. The returned future owns what
//! it needs (`Rc`s, not `&self`), so concurrent calls and `free()` during a call are safe.

mod bind;
mod calls;
mod device_loss;
mod handlers;
mod state;

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use crate::backend::Engine;
use crate::js::options::settings;
use crate::js::value::to_js;

use handlers::Handlers;

#[wasm_bindgen]
extern "C" {
    /// `FusedRmsNormOptions` as the `.d.ts` names it; checked field by field at runtime.
    #[wasm_bindgen(typescript_type = "FusedRmsNormOptions")]
    pub type CreateOptions;
}

/// Fused residual add and normalization on WebGPU (or the CPU backend), row by row: the
/// normalization family of `kind` (RMSNorm or LayerNorm), with the optional bias, residual,
/// `postGamma` (the sandwich), `gammaOffset` and f16 output the TypeScript declarations
/// describe (`types/`). Create with `await FusedRmsNorm.create()`; release with `free()`.
#[wasm_bindgen(skip_typescript)]
pub struct FusedRmsNorm {
    engine: Engine,
    handlers: Rc<Handlers>,
}

#[wasm_bindgen]
impl FusedRmsNorm {
    /// Opens a WebGPU device (or the CPU backend, as `options.backend` says). Rejects with `WebGpuUnavailableError` where the browser has no
    /// WebGPU or no adapter, `GpuDeviceError` where the device cannot be created, and
    /// `TypeError` for malformed options.
    pub async fn create(options: Option<CreateOptions>) -> Result<FusedRmsNorm, JsValue> {
        let (settings, choice) = settings(options.as_ref().map(|o| o.as_ref())).map_err(to_js)?;
        let engine = Engine::open(choice, settings).await.map_err(to_js)?;
        let handlers = Handlers::watching(&engine);
        Ok(FusedRmsNorm { engine, handlers })
    }
}
