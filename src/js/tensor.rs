//! `GpuTensor`, the JavaScript face of a GPU-resident tensor, and how a tensor passed in an
//! argument object is found again.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::backend::Engine;
use crate::call::tensor::Tensor;
use crate::gpu::tensor_buffer::TensorBuffer;
use crate::js::call_js::tag_tensor;
use crate::js::value::to_js;

/// Data on the GPU: made by `FusedRmsNorm.upload` or returned by `run` / `runWithSum` with
/// `output: "gpu"`, and accepted by them wherever an array is. Release with `free()`.
#[wasm_bindgen(skip_typescript)]
pub struct GpuTensor {
    handle: u32,
    tensor: Rc<Tensor>,
    engine: Engine,
}

thread_local! {
    /// Live tensors by handle: how an argument object's `GpuTensor` is found again (an
    /// object's fields arrive as plain `JsValue`s, not as Rust references).
    static TENSORS: RefCell<HashMap<u32, Rc<Tensor>>> = RefCell::new(HashMap::new());
    static NEXT_HANDLE: Cell<u32> = const { Cell::new(1) };
    /// Tensors freed so far: a bound call (`bound.rs`) looks its tensors up again only
    /// when this has moved since it last did.
    static FREED: Cell<u64> = const { Cell::new(0) };
}

/// Hands `tensor` to JavaScript as a `GpuTensor`.
pub fn tensor_value(tensor: Rc<Tensor>, engine: &Engine) -> JsValue {
    let handle = NEXT_HANDLE.with(|n| {
        let h = n.get();
        n.set(h.wrapping_add(1).max(1));
        h
    });
    TENSORS.with(|t| t.borrow_mut().insert(handle, tensor.clone()));
    let v: JsValue = GpuTensor {
        handle,
        tensor,
        engine: engine.clone(),
    }
    .into();
    tag_tensor(&v, handle);
    v
}

/// The live tensor `handle` names.
pub fn tensor_by_handle(handle: u32) -> Option<Rc<Tensor>> {
    TENSORS.with(|t| t.borrow().get(&handle).cloned())
}

/// The handle of `tensor`'s `GpuTensor`, while it is not freed.
pub fn handle_of(tensor: &Rc<Tensor>) -> Option<u32> {
    TENSORS.with(|t| {
        t.borrow()
            .iter()
            .find(|(_, v)| Rc::ptr_eq(v, tensor))
            .map(|(h, _)| *h)
    })
}

/// Whether the `GpuTensor` of `handle` is not freed.
pub fn is_live(handle: u32) -> bool {
    TENSORS.with(|t| t.borrow().contains_key(&handle))
}

/// How many tensors have been freed so far.
pub fn freed_count() -> u64 {
    FREED.get()
}

/// Tensors alive in JavaScript (not yet freed), and their bytes.
pub fn live_tensors() -> (usize, u64) {
    TENSORS.with(|t| {
        let t = t.borrow();
        let bytes = t.values().map(|t| (t.len * t.dtype.bytes()) as u64).sum();
        (t.len(), bytes)
    })
}

impl Drop for GpuTensor {
    fn drop(&mut self) {
        TENSORS.with(|t| t.borrow_mut().remove(&self.handle));
        FREED.set(FREED.get() + 1);
    }
}

#[wasm_bindgen]
impl GpuTensor {
    /// Number of elements.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.tensor.len as f64
    }

    /// Element type on the GPU.
    #[wasm_bindgen(getter, unchecked_return_type = "\"f32\" | \"f16\"")]
    pub fn dtype(&self) -> String {
        self.tensor.dtype.name().into()
    }

    /// Copies the data back into a fresh typed array: a `Float32Array` for f32, a
    /// `Uint16Array` of the half-precision bits for f16.
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array | Uint16Array>")]
    pub fn read(&self) -> Promise {
        let read = self.engine.read(&self.tensor);
        future_to_promise(async move {
            let done = read.await.map_err(to_js)?;
            Ok(done.host.map_or(JsValue::UNDEFINED, |o| o.y.into()))
        })
    }

    /// The `GPUBuffer` holding the numbers (`undefined` on the CPU backend), valid until the
    /// tensor is freed: `length` elements of `dtype` from offset 0, row-major, f16 as packed
    /// halves; its size is rounded up to a multiple of 16 bytes. The app's shaders may read it,
    /// and write it between the package's calls.
    #[wasm_bindgen(getter)]
    pub fn buffer(&self) -> JsValue {
        self.tensor
            .buffer()
            .and_then(|b| b.as_webgpu().map(|b| JsValue::from(b.clone())))
            .unwrap_or(JsValue::UNDEFINED)
    }
}
