//! Natively, numbers cross as Rust slices: uploads of little-endian bytes (large ones through
//! pooled staging buffers, [`STAGED_UPLOAD_BYTES`]), and mapped buffers read into vectors.

use std::ops::Range;

use crate::call::dtype::Dtype;
use crate::call::numbers::{Numbers, Upload};
use crate::call::results::ResultArray;

use super::BufferUpload;

impl Upload for BufferUpload<'_> {
    fn range(&self) -> Range<usize> {
        self.start..self.start + self.count
    }

    fn write(&self, numbers: Numbers) -> Result<(), String> {
        match numbers {
            Numbers::F32(v) => self.write_le(v),
            Numbers::F16(v) => self.write_le(v),
        }
    }
}

/// Numbers whose little-endian bytes are uploaded as they are: f32, or f16 as its bits.
trait LeBytes: Copy {
    fn le_bytes(self) -> impl IntoIterator<Item = u8>;
}

impl LeBytes for f32 {
    fn le_bytes(self) -> impl IntoIterator<Item = u8> {
        self.to_le_bytes()
    }
}

impl LeBytes for u16 {
    fn le_bytes(self) -> impl IntoIterator<Item = u8> {
        self.to_le_bytes()
    }
}

/// Uploads of this many bytes or more go through a pooled staging buffer.
///
/// wgpu's native `Queue::write_buffer` allocates a staging buffer of the whole upload for
/// every call and frees it once the copy is done (wgpu-core `StagingBuffer::new`), in
/// host-visible memory that on an H200 is device memory: for a large call, the churn after
/// which large buffers land in slow memory on that driver (docs/performance.md, "The 128 MiB
/// cliff"). Staging buffers kept in the pool, by the same size classes as the rest, are
/// allocated once per class and reused. Small uploads stay on `write_buffer`: they are
/// sub-allocated, and a mapping round trip would cost more than the copy.
pub const STAGED_UPLOAD_BYTES: usize = 1 << 20;

impl BufferUpload<'_> {
    fn write_le<E: LeBytes>(&self, elements: &[E]) -> Result<(), String> {
        // Copies move whole 4-byte words.
        let len = std::mem::size_of_val(elements).next_multiple_of(4);
        if len < STAGED_UPLOAD_BYTES {
            let mut bytes: Vec<u8> = elements.iter().flat_map(|v| v.le_bytes()).collect();
            bytes.resize(len, 0);
            self.queue.write_buffer(self.buffer, 0, &bytes);
            return Ok(());
        }
        let usage = wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC;
        let staging = self.pool.take(self.device, usage, len as u64, &|| {});
        // A reused staging buffer may still be the source of an earlier copy: the mapping
        // completes once that copy is done. Natively the wait blocks, as uploads do.
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Write, ..len as u64, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| format!("waiting for a staging buffer: {e}"))?;
        rx.try_recv()
            .map_err(|_| "a staging buffer was not mapped".to_string())?
            .map_err(|e| format!("mapping a staging buffer: {e}"))?;
        fill_staging(&staging, elements, len)?;
        staging.unmap();
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&staging, 0, self.buffer, 0, len as u64);
        // Submitted now, so that it precedes the call's own submission in the queue.
        self.queue.submit([encoder.finish()]);
        // Back at once, before the copy is done (the pool otherwise takes buffers back only
        // once their work is): only staged uploads take buffers of this usage, and each maps
        // its buffer first, which waits for the copy.
        self.pool
            .give_back(staging, crate::support::clock::now_ms());
        Ok(())
    }
}

/// Writes `elements` as little-endian bytes, padded to `len`, into the mapped `staging`.
fn fill_staging<E: LeBytes>(
    staging: &wgpu::Buffer,
    elements: &[E],
    len: usize,
) -> Result<(), String> {
    let mut view = staging
        .slice(..len as u64)
        .get_mapped_range_mut()
        .map_err(|e| format!("a staging buffer's mapped range: {e}"))?;
    // Mapped memory is write-only (wgpu's `WriteOnly`): bytes are formed in a block on the
    // host and copied in, a block at a time.
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
    Ok(())
}

/// An empty result of `len` elements to fill, one chunk after another.
pub fn new_result(len: usize, _dtype: Dtype) -> ResultArray {
    Vec::with_capacity(len)
}

/// Appends `count` numbers read from the mapped `buffer` to `dst` (natively chunks arrive in
/// order, so `_start` is where `dst` ends).
pub fn read_mapped(
    buffer: &wgpu::Buffer,
    dst: &mut ResultArray,
    _start: usize,
    count: usize,
    dtype: Dtype,
) {
    let size = (count * dtype.bytes()).next_multiple_of(4) as u64;
    let view = buffer
        .slice(..size)
        .get_mapped_range()
        .expect("buffer was mapped");
    match dtype {
        Dtype::F32 => dst.extend(
            view.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        ),
        Dtype::F16 => dst.extend(
            view.chunks_exact(2)
                .take(count)
                .map(|b| crate::call::dtype::f16_value(u16::from_le_bytes([b[0], b[1]]))),
        ),
    }
}

/// The first `count` words (`u32`) of the mapped `buffer`.
pub fn read_words(buffer: &wgpu::Buffer, count: usize) -> Vec<u32> {
    let view = buffer
        .slice(..(count * 4) as u64)
        .get_mapped_range()
        .expect("buffer was mapped");
    view.chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}
