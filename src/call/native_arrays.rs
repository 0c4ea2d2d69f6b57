//! Host arrays natively: Rust slices and vectors, uploaded through staging buffers of the
//! pool, results read back into a `Vec`. The browser's are `crate::js::array`.

use std::rc::Rc;

use super::host::{Arg, HostArray, OwnedArray};
use super::numbers::{CpuData, Upload};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::numbers::Len;

/// Numbers whose little-endian bytes are uploaded as they are: f32, or f16 as its bits.
trait Element: Copy + 'static {
    const DTYPE: Dtype;
    fn cpu(v: Vec<Self>) -> CpuData;
    fn le_bytes(self) -> impl IntoIterator<Item = u8>;
}

macro_rules! element {
    ($t:ty, $dtype:ident) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            fn cpu(v: Vec<$t>) -> CpuData {
                CpuData::$dtype(v)
            }
            fn le_bytes(self) -> impl IntoIterator<Item = u8> {
                self.to_le_bytes()
            }
        }
    };
}
element!(f32, F32);
element!(u16, F16);

/// Uploads of this many bytes or more go through a pooled staging buffer.
///
/// wgpu's native `Queue::write_buffer` allocates a staging buffer of the whole upload
/// for every call and frees it once the copy is done (wgpu-core `StagingBuffer::new`),
/// in host-visible memory that on an H200 is device memory. At 16384×4096 that is
/// 256 MiB allocated and freed per array per call: the churn after which large buffers
/// land in slow memory on that driver (the 128 MiB cliff, docs/PERFORMANCE.md). Staging
/// buffers kept in the pool, by the same size classes as the rest, are allocated once
/// per class and reused. Small uploads stay on `write_buffer`: they are sub-allocated,
/// and a mapping round trip would cost more than the copy.
pub const STAGED_UPLOAD_BYTES: usize = 1 << 20;

fn upload<E: Element>(elements: &[E], to: Upload) -> Result<(), String> {
    // Copies move whole 4-byte words.
    let len = std::mem::size_of_val(elements).next_multiple_of(4);
    if len < STAGED_UPLOAD_BYTES {
        let mut bytes: Vec<u8> = elements.iter().flat_map(|v| v.le_bytes()).collect();
        bytes.resize(len, 0);
        to.queue.write_buffer(to.buffer, 0, &bytes);
        return Ok(());
    }
    let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
    let staging = to.pool.take(to.device, usage, len as u64, &|| {});
    // A reused staging buffer may still be the source of an earlier copy: the mapping
    // completes once that copy is done. Natively the wait blocks, as uploads do.
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Write, ..len as u64, move |r| {
        let _ = tx.send(r);
    });
    to.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| format!("waiting for a staging buffer: {e}"))?;
    rx.try_recv()
        .map_err(|_| "a staging buffer was not mapped".to_string())?
        .map_err(|e| format!("mapping a staging buffer: {e}"))?;
    {
        let mut view = staging
            .slice(..len as u64)
            .get_mapped_range_mut()
            .map_err(|e| format!("a staging buffer's mapped range: {e}"))?;
        // Mapped memory is write-only (wgpu's `WriteOnly`): bytes are formed in a block
        // on the host and copied in, a block at a time.
        const BLOCK: usize = 1 << 20;
        let mut bytes = Vec::with_capacity(BLOCK);
        let mut at = 0;
        for part in elements.chunks(BLOCK / std::mem::size_of::<E>()) {
            bytes.clear();
            bytes.extend(part.iter().flat_map(|v| v.le_bytes()));
            if at + bytes.len() == std::mem::size_of_val(elements) {
                bytes.resize(len - at, 0);
            }
            view.slice(at..at + bytes.len()).copy_from_slice(&bytes);
            at += bytes.len();
        }
    }
    staging.unmap();
    let mut encoder = to.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&staging, 0, to.buffer, 0, len as u64);
    // Submitted now, so that it precedes the call's own submission in the queue.
    to.queue.submit([encoder.finish()]);
    // Back at once, before the copy is done (the pool otherwise takes buffers back only
    // once their work is): only staged uploads take buffers of this usage, and each maps
    // its buffer first, which waits for the copy.
    to.pool.give_back(staging, crate::support::clock::now_ms());
    Ok(())
}

impl Len for &[u16] {
    fn len(&self) -> usize {
        <[u16]>::len(self)
    }
}

impl<E: Element> Len for Vec<E> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

macro_rules! host_array {
    ($t:ty, $e:ty) => {
        impl HostArray for $t {
            fn upload(&self, to: Upload) -> Result<(), String> {
                upload(&self[to.start..to.start + to.count], to)
            }

            fn dtype(&self) -> Dtype {
                <$e as Element>::DTYPE
            }

            fn detach(&self) -> Arg<OwnedArray> {
                Arg::Host(Rc::new(self.to_vec()))
            }

            fn to_cpu(&self, _: &str) -> Result<CpuData, Error> {
                Ok(<$e as Element>::cpu(self.to_vec()))
            }
        }
    };
}
host_array!(&[f32], f32);
host_array!(&[u16], u16);
host_array!(Vec<f32>, f32);
host_array!(Vec<u16>, u16);
