//! The GPU driver's side of a buffer of the app's own on the instance's device
//! (`call::host::AppBuffer`), passed to `run` / `runWithSum` where an array goes: the app's
//! activations come in without a trip through JavaScript.
//!
//! wgpu cannot bind a `GPUBuffer` it did not create, so the call copies the elements it needs
//! into a pooled buffer of its own, on the GPU, in a submission ahead of the call's on the
//! same queue (so the kernel sees the copy). That submission runs in an error scope of its
//! own: a destroyed buffer, or one of another device, is known only once the GPU process has
//! looked, and comes back as the call's named rejection.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;

use crate::call::error::Error;
use crate::call::host::{AppBuffer, BufferHandle};

/// What a copy's error scope found, named after the argument.
pub type Check = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

/// An app's buffer as this driver holds it: the `GPUBuffer` itself in the browser (wgpu
/// cannot wrap one it did not create), a wgpu buffer natively.
#[cfg(target_arch = "wasm32")]
pub type Handle = wasm_bindgen::JsValue;
#[cfg(not(target_arch = "wasm32"))]
pub type Handle = wgpu::Buffer;

impl BufferHandle for Handle {
    fn same(&self, other: &dyn BufferHandle) -> bool {
        let other: &dyn Any = other;
        other.downcast_ref::<Handle>() == Some(self)
    }
}

/// An app's buffer as the GPU driver reads it.
impl AppBuffer {
    /// The buffer itself, where it is one this driver can read.
    pub fn gpu_handle(&self) -> Option<&Handle> {
        let handle: &dyn Any = self.handle();
        handle.downcast_ref()
    }

    /// Copies elements `start .. start + count` to byte `to` of `dst` on the GPU.
    pub fn copy_into(
        &self,
        name: &'static str,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        dst: &wgpu::Buffer,
        (start, count): (usize, usize),
        to: u64,
    ) -> Result<Check, Error> {
        let Some(src) = self.gpu_handle() else {
            return Err(Error::Type(format!(
                "{name}: expected a GPUBuffer, got a buffer this package cannot read"
            )));
        };
        let bytes = self.dtype.bytes() as u64;
        // f16 rows have hidden % 4 == 0 (the plan checks), so both stay multiples of 4 bytes
        // as copies require.
        let (offset, size) = (start as u64 * bytes, count as u64 * bytes);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = name;
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(src, offset, dst, to, size);
            queue.submit([encoder.finish()]);
            Ok(Box::pin(async { Ok(()) }))
        }
        #[cfg(target_arch = "wasm32")]
        {
            use crate::gpu::webgpu_raw as raw;
            let (Some(raw_device), Some(raw_queue)) = (raw::device(device), raw::queue(queue))
            else {
                return Err(Error::Type(format!(
                    "{name}: expected a GpuTensor or a typed array on this device, got a GPUBuffer"
                )));
            };
            let dst = raw::buffer(dst);
            let ((), found) = raw::scoped(&raw_device, || {
                let encoder = raw_device.create_command_encoder()?;
                encoder.copy_buffer_to_buffer(src, offset as f64, &dst, to as f64, size as f64)?;
                raw_queue.submit(&js_sys::Array::of1(&encoder.finish()?))
            })
            .map_err(|e| {
                Error::Type(format!(
                    "{name}: expected a GPUBuffer, got an object WebGPU refused ({})",
                    raw::message(&e)
                ))
            })?;
            Ok(Box::pin(async move {
                match found.await {
                    None => Ok(()),
                    Some(m) => Err(refused(name, &m)),
                }
            }))
        }
    }
}

/// The named error for a copy the GPU refused, from the browser's message (Chrome's Dawn
/// names the cause; another implementation's wording falls through to `GpuDeviceError`).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn refused(name: &str, message: &str) -> Error {
    let m = message.to_ascii_lowercase();
    if m.contains("destroyed") {
        Error::InvalidState(format!(
            "{name}: expected a live GPUBuffer, got one that was destroyed ({message})"
        ))
    } else if m.contains("associated with") || m.contains("different device") {
        Error::Type(format!(
            "{name}: expected a GPUBuffer created on norm.device, got one of another device ({message})"
        ))
    } else {
        Error::GpuDevice(format!(
            "{name}: the GPU refused to copy the GPUBuffer ({message})"
        ))
    }
}
