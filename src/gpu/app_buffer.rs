//! A buffer of the app's own on the instance's device, passed to `run` / `runWithSum` where
//! an array goes: the app's activations come in without a trip through JavaScript.
//!
//! wgpu cannot bind a `GPUBuffer` it did not create, so the call copies the elements it needs
//! into a pooled buffer of its own, on the GPU, in a submission ahead of the call's on the
//! same queue (so the kernel sees the copy). That submission runs in an error scope of its
//! own: a destroyed buffer, or one of another device, is known only once the GPU process has
//! looked, and comes back as the call's named rejection.

use std::future::Future;
use std::pin::Pin;

use crate::call::dtype::Dtype;
use crate::call::error::Error;

/// What a copy's error scope found, named after the argument.
pub type Check = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

#[cfg(target_arch = "wasm32")]
type Handle = wasm_bindgen::JsValue;
#[cfg(not(target_arch = "wasm32"))]
type Handle = wgpu::Buffer;

#[derive(Clone)]
pub struct AppBuffer {
    /// Elements of `dtype` it holds: its whole size.
    pub len: usize,
    pub dtype: Dtype,
    pub(crate) buffer: Handle,
}

impl AppBuffer {
    /// `buffer` read as elements of `dtype` from offset 0 to its end.
    pub fn new(buffer: Handle, size: u64, dtype: Dtype) -> AppBuffer {
        AppBuffer {
            len: (size / dtype.bytes() as u64) as usize,
            dtype,
            buffer,
        }
    }

    /// The GPU handle (a `GPUBuffer` in the browser).
    pub fn handle(&self) -> &Handle {
        &self.buffer
    }

    /// Copies elements `start .. start + count` to the beginning of `dst` on the GPU.
    pub fn copy_into(
        &self,
        name: &'static str,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        dst: &wgpu::Buffer,
        start: usize,
        count: usize,
    ) -> Result<Check, Error> {
        let bytes = self.dtype.bytes() as u64;
        // f16 rows have hidden % 4 == 0 (the plan checks), so both stay multiples of 4 bytes
        // as copies require.
        let (offset, size) = (start as u64 * bytes, count as u64 * bytes);
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = name;
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&self.buffer, offset, dst, 0, size);
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
                encoder.copy_buffer_to_buffer(
                    &self.buffer,
                    offset as f64,
                    &dst,
                    0.0,
                    size as f64,
                )?;
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
fn refused(name: &str, message: &str) -> Error {
    let m = message.to_lowercase();
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
