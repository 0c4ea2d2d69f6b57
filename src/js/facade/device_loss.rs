//! The app's device-loss handlers: `ondevicelost`, called with WebGPU's `GPUDeviceLostInfo`
//! when the device is lost, `ondevicerestored`, once a new one is open, and
//! `onbackendchange`, when an `"auto"` instance continues on the CPU backend.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::backend::Engine;
use crate::gpu::GpuContext;
use crate::js::value::object;

use super::FusedRmsNorm;

/// The app's device-loss handlers (`ondevicelost`, `ondevicerestored`, `onbackendchange`).
pub(super) struct Handlers {
    lost: RefCell<JsValue>,
    restored: RefCell<JsValue>,
    backend: RefCell<JsValue>,
}

impl Handlers {
    /// Handlers that hear of `engine`'s device losses, and of each new device opened after
    /// one (none on the CPU backend).
    pub(super) fn watching(engine: &Engine) -> Rc<Handlers> {
        let handlers = Rc::new(Handlers {
            lost: RefCell::new(JsValue::NULL),
            restored: RefCell::new(JsValue::NULL),
            backend: RefCell::new(JsValue::NULL),
        });
        let weak = Rc::downgrade(&handlers);
        engine.set_on_fall_back(move |why| {
            if let Some(h) = weak.upgrade() {
                let event = object(&[("backend", "cpu".into()), ("reason", why.message().into())]);
                Handlers::fire(&h.backend, &event);
            }
        });
        if let Some(instance) = engine.gpu() {
            handlers.watch(&instance.latest());
            let weak = Rc::downgrade(&handlers);
            instance.set_on_reopen(move |ctx| {
                if let Some(h) = weak.upgrade() {
                    h.watch(ctx);
                    Handlers::fire(&h.restored, &JsValue::UNDEFINED);
                }
            });
        }
        handlers
    }

    fn fire(which: &RefCell<JsValue>, event: &JsValue) {
        let f = which.borrow().clone();
        if let Some(f) = f.dyn_ref::<js_sys::Function>() {
            // A handler that throws is the app's business; it must not unwind into wasm.
            let _ = f.call1(&JsValue::UNDEFINED, event);
        }
    }

    /// Calls `ondevicelost` when the device of `ctx` is lost (WebGPU's `device.lost`).
    fn watch(self: &Rc<Self>, ctx: &GpuContext) {
        let Some(device) = ctx.device().as_webgpu() else {
            return;
        };
        let Ok(lost) = js_sys::Reflect::get(device.as_ref(), &"lost".into()) else {
            return;
        };
        let handlers = Rc::downgrade(self);
        let on_lost = Closure::once(move |info: JsValue| {
            if let Some(h) = handlers.upgrade() {
                let field =
                    |k: &str| js_sys::Reflect::get(&info, &k.into()).unwrap_or(JsValue::UNDEFINED);
                let event = object(&[("reason", field("reason")), ("message", field("message"))]);
                Handlers::fire(&h.lost, &event);
            }
        });
        let _ = lost.unchecked_into::<Promise>().then(&on_lost);
        on_lost.forget();
    }
}

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
