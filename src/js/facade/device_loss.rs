//! The app's device-loss handlers as properties of `FusedRmsNorm`: `ondevicelost`, called
//! with WebGPU's `GPUDeviceLostInfo` when the device is lost, `ondevicerestored`, once a new
//! one is open, and `onbackendchange`, when an `"auto"` instance continues on the CPU
//! backend. What keeps and fires them is `handlers.rs`.

use wasm_bindgen::prelude::*;

use super::FusedRmsNorm;

#[wasm_bindgen]
impl FusedRmsNorm {
    /// Called with `{ reason, message }` when the device is lost (a GPU reset, or
    /// `simulateDeviceLoss()`); the next call opens a new one. `GpuTensor`s of the lost device
    /// hold nothing: upload resident data (weights) again in `ondevicerestored`.
    #[wasm_bindgen(
        getter,
        unchecked_return_type = "((event: { reason: string; message: string }) => void) | null"
    )]
    pub fn ondevicelost(&self) -> JsValue {
        self.handlers.lost.borrow().clone()
    }

    #[wasm_bindgen(setter)]
    pub fn set_ondevicelost(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "((event: { reason: string; message: string }) => void) | null"
        )]
        f: JsValue,
    ) {
        *self.handlers.lost.borrow_mut() = if f.is_function() { f } else { JsValue::NULL };
    }

    /// Called when a new device has been opened after a loss, before the call that needed
    /// it runs.
    #[wasm_bindgen(getter, unchecked_return_type = "(() => void) | null")]
    pub fn ondevicerestored(&self) -> JsValue {
        self.handlers.restored.borrow().clone()
    }

    /// Called with `{ backend, reason }` when an `"auto"` instance whose device was lost, where
    /// no new one can be had, continues on the CPU backend.
    #[wasm_bindgen(
        getter,
        unchecked_return_type = "((event: FusedRmsNormBackendChangeEvent) => void) | null"
    )]
    pub fn onbackendchange(&self) -> JsValue {
        self.handlers.backend.borrow().clone()
    }

    #[wasm_bindgen(setter)]
    pub fn set_onbackendchange(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "((event: FusedRmsNormBackendChangeEvent) => void) | null"
        )]
        f: JsValue,
    ) {
        *self.handlers.backend.borrow_mut() = if f.is_function() { f } else { JsValue::NULL };
    }

    #[wasm_bindgen(setter)]
    pub fn set_ondevicerestored(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(() => void) | null")] f: JsValue,
    ) {
        *self.handlers.restored.borrow_mut() = if f.is_function() { f } else { JsValue::NULL };
    }
}
