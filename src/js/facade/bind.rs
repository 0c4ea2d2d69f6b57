//! `FusedRmsNorm.bind`: a call's arguments read and checked once, for an app that makes the
//! same call step after step (`js/bound.rs`).

use wasm_bindgen::prelude::*;

use crate::js::args::parse_encode;
use crate::js::bound::BoundNorm;
use crate::js::call_record::Call;
use crate::js::value::to_js;

use super::FusedRmsNorm;

#[wasm_bindgen]
impl FusedRmsNorm {
    /// Reads and checks `args` (`encode`'s: GPU data, and `inPlace` or `output` and `sum`)
    /// once, and makes the call's pipeline, bind group and uniform block: the `BoundNorm`'s
    /// `encode(encoder)` and `run()` then cost little more than recording the pass by hand.
    /// Throws what `encode` throws for its arguments; on the CPU backend the bound call runs
    /// on the CPU.
    #[wasm_bindgen(unchecked_return_type = "BoundNorm")]
    pub fn bind(
        &self,
        #[wasm_bindgen(unchecked_param_type = "FusedRmsNormEncodeArgs")] args: JsValue,
    ) -> Result<BoundNorm, JsValue> {
        let call = parse_encode(&Call::read(&args)).map_err(to_js)?;
        let ctx = match self.engine.gpu() {
            Some(_) => Some(self.live_device("bind").map_err(to_js)?),
            None => None,
        };
        BoundNorm::new(&self.engine, ctx, call).map_err(to_js)
    }
}
