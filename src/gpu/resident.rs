//! The driver's tensors: uploads, placing a tensor that waited for a device, and reading
//! one back. Calls bind tensors as they are (see `submit.rs`).

use std::rc::Rc;

use crate::call::checks::check_upload;
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::host::HostArray;
use crate::call::numbers::DeferredUpload;
use crate::call::shape::Shape;
use crate::call::tensor::{Placed, Tensor};
use crate::gpu::pending::{Chunk, Pending};
use crate::gpu::pool::Pooled;
use crate::gpu::tensor_buffer::{Loaned, TensorBuffer};
use crate::gpu::transfer::BufferUpload;
use crate::gpu::GpuContext;

impl GpuContext {
    /// Uploads `data` as a tensor of this context.
    pub fn upload<A: HostArray>(&self, data: &A) -> Result<Rc<Tensor>, Error> {
        let (len, dtype) = (data.len(), data.dtype());
        check_upload(len, dtype, &self.dev.caps)?;
        self.dev.check_live()?;
        let buffer = self.tensor_buffer(len, dtype);
        data.upload(&self.upload_to(&buffer, 0, len))
            .map_err(|e| Error::Type(format!("data: the browser refused the array ({e})")))?;
        Ok(Rc::new(Tensor::placed(len, dtype, self.placed(buffer))))
    }

    /// Places a tensor uploaded while no device was live, on this context.
    pub fn place(&self, t: &Tensor) {
        t.place(|upload: &DeferredUpload| {
            let buffer = self.tensor_buffer(t.len, t.dtype);
            // A refusal here has no caller left to tell; the tensor then holds zeros.
            let _ = upload(&self.upload_to(&buffer, 0, t.len));
            self.placed(buffer)
        });
    }

    fn placed(&self, buffer: Pooled) -> Placed {
        Placed {
            owner: self.dev.id,
            storage: Box::new(Loaned::new(
                buffer,
                Rc::downgrade(&self.pool),
                self.dev.lost.clone(),
            )),
        }
    }

    pub(crate) fn upload_to<'a>(
        &'a self,
        buffer: &'a wgpu::Buffer,
        start: usize,
        count: usize,
    ) -> BufferUpload<'a> {
        BufferUpload {
            queue: &self.dev.queue,
            buffer,
            start,
            count,
            #[cfg(not(target_arch = "wasm32"))]
            device: &self.dev.device,
            #[cfg(not(target_arch = "wasm32"))]
            pool: &self.pool,
        }
    }

    /// A tensor's buffer, from the pool: a freed tensor's buffer is the next one's. `creating`
    /// runs before a new one is made, so a call's error scopes cover it. Its size is exact
    /// (a multiple of 16): an app sees its `GPUBuffer`, sized as documented
    /// (`GpuTensor.buffer`).
    fn tensor_buffer(&self, len: usize, dtype: Dtype) -> Pooled {
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let size = (len.max(4) * dtype.bytes()).next_multiple_of(16) as u64;
        self.pool
            .take_within(&self.dev.device, usage, size..=size, &|| self.creating())
    }

    /// An uninitialised tensor of `len` elements on this context.
    pub(crate) fn tensor(&self, len: usize, dtype: Dtype) -> Rc<Tensor> {
        let buffer = self.tensor_buffer(len, dtype);
        Rc::new(Tensor::placed(len, dtype, self.placed(buffer)))
    }

    /// Copies a tensor of this context back to the host.
    pub fn read_tensor(&self, t: &Rc<Tensor>) -> Result<Pending, Error> {
        t.check("tensor", self.dev.id)?;
        let Some(buffer) = t.buffer() else {
            return Err(Error::Type(
                "tensor: expected a GpuTensor on this device".into(),
            ));
        };
        let shape = Shape {
            rows: usize::from(t.len > 0),
            hidden: t.len.max(1),
        };
        let mut pending = self.pending(shape, false, (t.dtype, t.dtype), true);
        if t.len == 0 {
            return Ok(pending);
        }
        let mut encoder = self.dev.device.create_command_encoder(&Default::default());
        let y = self.readback(&mut encoder, buffer, t.len, t.dtype);
        self.dev.queue.submit([encoder.finish()]);
        pending.chunks.push(Chunk {
            start: 0,
            len: t.len,
            y: Some(y),
            sum: None,
        });
        pending.holds.push(t.clone());
        pending.reads_a_tensor = true;
        Ok(pending)
    }
}
