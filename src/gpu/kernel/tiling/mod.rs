//! Which tiling a call gets: per stack (the browser's Dawn, or wgpu/Vulkan natively), per row
//! length and per number of rows, what both kernels' tilings share (the thresholds, the
//! registers a thread keeps, the fan-in), and each kernel's own: [`fused`] (the fused RMSNorm
//! kernel's) and [`family`] (the family kernel's). Every choice was measured, against what it
//! says it beat (docs/performance.md, "Tiling of the RMSNorm kernel", "The family kernel's
//! tiling"); [`crate::gpu::kernel`] turns a variant into WGSL.

pub mod family;
pub mod fused;

/// The stack this build's tilings are for: the browser's WebGPU (Dawn, whose compiler Tint
/// adds robustness checks) in wasm, else wgpu/Vulkan (naga). The two turn the same WGSL into
/// different code, and the best tiling differs.
pub const WEB: bool = cfg!(target_arch = "wasm32");

/// Calls of this many rows or more may be tiled differently from decode-sized ones.
pub const MANY_ROWS: usize = 1024;

/// Calls of at most this many rows may spread each row over several workgroups, and the
/// family kernel loads its weights with the row for them.
pub const FEW_ROWS: usize = 4;

/// A row of at most this many vectors is short: many of them share a workgroup of the family
/// kernel, each thread taking two vectors (QK-norm's heads).
pub const SHORT_ROW: u32 = 64;

/// RMSNorm calls of at least this many short rows take the family kernel, several rows a
/// workgroup, rather than the fused kernel's workgroup a row.
pub const SHORT_ROWS: usize = 256;

/// The most scalars a thread keeps in registers (16 vec4 or 64 f32); more would cost
/// occupancy for nothing. `shaders/row_cache.wgsl` lists this many slots.
pub const MAX_CACHED_SCALARS: u32 = 64;

/// The most columns of `lanes` scalars a variant keeps per thread.
pub fn max_slots(lanes: u32) -> u32 {
    MAX_CACHED_SCALARS / lanes
}

/// Scalars a kernel loads at once for a row of `hidden`: a vec4 where the row is whole vec4s.
pub fn lanes(hidden: u32) -> u32 {
    if hidden.is_multiple_of(4) {
        4
    } else {
        1
    }
}

/// The largest power of two at most `n` (1 for 0): workgroups, and the fan-in that divides
/// them, are powers of two because the reductions halve them.
pub fn pow2_floor(n: u32) -> u32 {
    1 << (31 - n.max(1).leading_zeros())
}

/// The fan-in that folds `threads` partials in two even steps.
pub fn balanced_fan(threads: u32) -> u32 {
    1 << threads.max(1).trailing_zeros().div_ceil(2)
}

/// `fan` as a kernel's FAN for `threads` lanes: 0 (the tree), or a power of two at most
/// `threads`, so that it divides them (the fan-in's loops run a constant `threads / FAN`
/// steps).
pub fn fan_in(fan: u32, threads: u32) -> u32 {
    match fan.min(threads) {
        0 => 0,
        fan => pow2_floor(fan),
    }
}

/// Invocations per workgroup on CPU adapters: one SwiftShader SIMD group.
const CPU_WORKGROUP: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_fan_splits_the_workgroup_in_two_steps() {
        let fans = [1u32, 8, 16, 16, 32, 32];
        for (wg, fan) in [1u32, 64, 128, 256, 512, 1024].into_iter().zip(fans) {
            assert_eq!(balanced_fan(wg), fan, "{wg}");
        }
    }
}
