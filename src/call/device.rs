//! What a call knows of the device it runs on: its limits and features ([`Caps`]), which a
//! plan is checked against and a driver tiles for, and which context made a tensor
//! ([`ContextId`]), since a tensor of one context cannot be bound on another.

use std::sync::atomic::{AtomicU64, Ordering};

/// Identifies a context (a GPU device, or the CPU backend's instance): buffers of one device
/// cannot be bound on another, and a lost device's buffers hold nothing.
pub type ContextId = u64;

/// A context id no other context of this process has.
pub(crate) fn next_context_id() -> ContextId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The limits and features a call's plan depends on. The CPU backend states its own (no
/// limits) so that one `Plan` checks calls of both backends.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Largest storage binding in bytes: a chunk of rows never exceeds it.
    pub max_binding: u64,
    pub max_groups_per_dim: u32,
    /// Largest workgroup the device runs (invocations, and the x dimension).
    pub max_workgroup: u32,
    /// f16 data through WGSL `shader-f16`; otherwise packed in u32s.
    pub shader_f16: bool,
    pub timestamps: bool,
    /// Kernels tiled for a CPU adapter (`Variant::for_cpu`).
    pub cpu_tiling: bool,
}
