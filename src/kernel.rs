//! The WGSL kernel's variants: which one a shape gets, and the source each compiles from.
//!
//! Options (bias, beta, the `sum` output) and the tiling (workgroup size, registers per
//! thread) are compile-time constants of a pipeline rather than runtime flags, so the hot
//! loops carry no option branches. A variant is chosen per call from the shape, and its
//! pipeline is built once and cached by the driver.

/// The WGSL source shared by every variant; [`Variant::wgsl`] prepends its constants.
pub const KERNEL_WGSL: &str = include_str!("../shaders/fused_rms_norm.wgsl");

/// The kernel's uniform block. Mirrors `struct Params` in the WGSL (a test checks the layout).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Rows in this dispatch.
    pub rows: u32,
    /// Row length in vector elements (`hidden / lanes`).
    pub width: u32,
    /// Row length in scalars, for the mean.
    pub hidden: f32,
    pub eps: f32,
}

impl Params {
    pub const SIZE: usize = 16;

    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[0..4].copy_from_slice(&self.rows.to_le_bytes());
        out[4..8].copy_from_slice(&self.width.to_le_bytes());
        out[8..12].copy_from_slice(&self.hidden.to_le_bytes());
        out[12..16].copy_from_slice(&self.eps.to_le_bytes());
        out
    }
}

/// Which optional inputs and outputs a call has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Options {
    pub bias: bool,
    pub beta: bool,
    pub sum: bool,
}

/// One compiled form of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub options: Options,
    /// 4 when `hidden % 4 == 0` (vec4 loads), else 1.
    pub lanes: u32,
    /// Workgroup size, a power of two.
    pub workgroup: u32,
    /// Elements of `V` each thread keeps in registers between the reduction and the write.
    pub slots: u32,
}

/// Beyond this many `V` per thread, the rest of the row is read again instead of held:
/// registers run out and the array spills to slow memory.
const MAX_SLOTS: u32 = 8;

impl Variant {
    /// The variant for a row of `hidden` scalars.
    pub fn for_shape(hidden: u32, options: Options) -> Self {
        let lanes = if hidden % 4 == 0 { 4 } else { 1 };
        let width = hidden / lanes;
        // Enough threads to cover a row in a few steps, few enough that short rows do not
        // leave most of a workgroup idle.
        let workgroup = width.div_ceil(4).next_power_of_two().clamp(64, 256);
        let slots = width.div_ceil(workgroup).clamp(1, MAX_SLOTS);
        Variant { options, lanes, workgroup, slots }
    }

    /// The complete WGSL for this variant.
    pub fn wgsl(&self) -> String {
        let Options { bias, beta, sum } = self.options;
        let helpers = if self.lanes == 4 {
            "alias V = vec4<f32>;\n\
             fn square_sum(x: V) -> f32 { return dot(x, x); }\n\
             fn max_abs(x: V) -> f32 { let a = abs(x); return max(max(a.x, a.y), max(a.z, a.w)); }\n"
        } else {
            "alias V = f32;\n\
             fn square_sum(x: V) -> f32 { return x * x; }\n\
             fn max_abs(x: V) -> f32 { return abs(x); }\n"
        };
        format!(
            "const WG: u32 = {wg}u;\nconst SLOTS: u32 = {slots}u;\n\
             const HAS_BIAS: bool = {bias};\nconst HAS_BETA: bool = {beta};\n\
             const WRITE_SUM: bool = {sum};\n{helpers}\n{KERNEL_WGSL}",
            wg = self.workgroup,
            slots = self.slots,
        )
    }

    pub fn label(&self) -> String {
        format!(
            "fused_rms_norm lanes={} wg={} slots={} bias={} beta={} sum={}",
            self.lanes, self.workgroup, self.slots, self.options.bias, self.options.beta, self.options.sum
        )
    }
}

/// The dispatch grid for `rows` workgroups: WebGPU caps each dimension at 65535, so
/// larger counts fold into a second dimension (the kernel unfolds `x + y * groups.x`).
pub fn grid(rows: u32, max_per_dim: u32) -> (u32, u32) {
    if rows <= max_per_dim {
        (rows, 1)
    } else {
        let y = rows.div_ceil(max_per_dim);
        (rows.div_ceil(y), y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_every_row_within_limits() {
        for rows in [1u32, 7, 65535, 65536, 70000, 1 << 20, 4_000_000] {
            let (x, y) = grid(rows, 65535);
            assert!(x <= 65535 && y <= 65535, "{rows}: {x}x{y}");
            assert!(x as u64 * y as u64 >= rows as u64, "{rows}: {x}x{y}");
            assert!((x as u64) * (y as u64 - 1) < rows as u64, "{rows}: a whole idle grid row");
        }
    }

    #[test]
    fn variants_cover_the_row() {
        for hidden in [1u32, 3, 4, 5, 768, 769, 896, 4096, 4099, 8192, 16384, 1 << 20] {
            let v = Variant::for_shape(hidden, Options::default());
            assert_eq!(v.lanes, if hidden % 4 == 0 { 4 } else { 1 });
            assert!(v.workgroup.is_power_of_two());
            assert!((1..=MAX_SLOTS).contains(&v.slots));
        }
    }
}
