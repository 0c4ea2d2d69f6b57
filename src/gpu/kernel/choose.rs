//! Which variant a call runs as: the kernel (the fused RMSNorm kernel, or the family kernel
//! for LayerNorm, the sandwich and short rows), the storage of its dtypes, and the tiling
//! each kernel's own file chooses (`tiling/fused.rs`, `tiling/family.rs`).

use crate::call::device::Caps;
use crate::call::dtype::Dtype;
use crate::call::plan::Kernel;
use crate::gpu::kernel::tiling::family::FamilyTiling;
use crate::gpu::kernel::tiling::fused::FusedTiling;
use crate::gpu::kernel::tiling::{lanes, FEW_ROWS, MANY_ROWS, SHORT_ROW, SHORT_ROWS, WEB};

use super::{Storage, Tiling, Variant};

impl Kernel {
    /// Scalars a load: [`lanes`] of the row, or one where a rotary stage's pairs do not fall
    /// at the same place of two vectors (`RotaryKernel::scalar`).
    pub fn lanes(&self) -> u32 {
        match self.options.rotary {
            Some(r) if r.scalar() => 1,
            _ => lanes(self.hidden as u32),
        }
    }

    /// The compiled form the device runs a call of `rows` rows as.
    pub fn variant(&self, caps: &Caps, rows: usize) -> Variant {
        self.variant_on(caps, rows, WEB)
    }

    /// [`Kernel::variant`] tiled for the browser's stack (`web`) or wgpu/Vulkan's, whichever
    /// this build runs on: the tests and the benchmark ask for either.
    pub fn variant_on(&self, caps: &Caps, rows: usize, web: bool) -> Variant {
        let storage_of = |dtype| match dtype {
            Dtype::F32 => Storage::F32,
            Dtype::F16 if caps.shader_f16 => Storage::F16,
            Dtype::F16 => Storage::F16Packed,
        };
        let hidden = self.hidden as u32;
        let lanes = self.lanes();
        let short = rows >= SHORT_ROWS && hidden / lanes <= SHORT_ROW && !caps.cpu_tiling;
        let tiling = if self.options.need_family() || short {
            Tiling::Family(FamilyTiling::choose(self, caps, rows))
        } else {
            Tiling::Fused(FusedTiling::choose(self, caps, rows, web))
        };
        Variant {
            options: self.options,
            storage: storage_of(self.dtype),
            out_storage: storage_of(self.out_dtype),
            in_place: self.in_place,
            lanes,
            tiling,
        }
    }

    /// Every variant a call of this kernel may run as: of few rows, in between, of many.
    pub fn variants(&self, caps: &Caps) -> Vec<Variant> {
        let mut all = Vec::with_capacity(3);
        for rows in [1, FEW_ROWS + 1, MANY_ROWS] {
            let v = self.variant(caps, rows);
            if !all.contains(&v) {
                all.push(v);
            }
        }
        all
    }
}
