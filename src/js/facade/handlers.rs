//! The app's device-loss handlers as an instance keeps them, and what fires them: the device's
//! `lost` Promise (`ondevicelost`, with WebGPU's `GPUDeviceLostInfo`), each new device opened
//! after a loss (`ondevicerestored`), and an `"auto"` instance continuing on the CPU backend
//! (`onbackendchange`). The properties that set them are in `device_loss.rs`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::backend::Engine;
use crate::gpu::GpuContext;
use crate::js::value::object;

/// The app's device-loss handlers (`ondevicelost`, `ondevicerestored`, `onbackendchange`).
pub(super) struct Handlers {
    pub(super) lost: RefCell<JsValue>,
    pub(super) restored: RefCell<JsValue>,
    pub(super) backend: RefCell<JsValue>,
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
