//! The kernels: their variants and the WGSL each compiles from, what every variant shares
//! (the one binding table, [`bindings`], and the uniform block, [`params`]), and which tiling
//! a call gets ([`tiling`]: the fused RMSNorm kernel's and the family kernel's).
//!
//! Options (bias, beta, the `sum` output) and the tiling (workgroup size, registers per
//! thread) are compile-time constants of a pipeline rather than runtime flags, so the hot
//! loops carry no option branches. A variant is chosen per call from the shape, and its
//! pipeline is built once and cached by the driver. Its WGSL is its kernel's file of
//! `shaders/` with its [`Variant::constants`], assembled by [`wgsl`].

use crate::call::options::Options;
use crate::call::rotary::{RotaryKernel, RotaryStyle};
use crate::call::shape::NormKind;
use tiling::family::FamilyTiling;
use tiling::fan_in;
use tiling::fused::FusedTiling;
use wgsl::{assemble, Constant, Value};

pub mod bindings;
mod choose;
pub mod params;
pub mod tiling;
pub mod wgsl;

/// How the kernel's arrays hold their numbers; arithmetic is f32 in every case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Storage {
    #[default]
    F32,
    /// `vec4<f16>` through WGSL's `shader-f16` extension.
    F16,
    /// Four halves in two `u32`s, through `unpack2x16float` / `pack2x16float`: f16 on
    /// adapters without `shader-f16`.
    F16Packed,
}

impl Storage {
    /// As `kernelSource` describes it.
    pub fn name(self) -> &'static str {
        match self {
            Storage::F32 => "f32",
            Storage::F16 => "f16",
            Storage::F16Packed => "f16-packed",
        }
    }
}

/// One compiled form of a kernel, the key its pipeline is cached by: what the call reads and
/// writes, shared by both kernels, and the kernel with its tiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub options: Options,
    pub storage: Storage,
    /// `output`'s storage: `storage` unless the call asks for another dtype.
    pub out_storage: Storage,
    /// `y` is written over `input` and `v` over `residual` (no separate outputs).
    pub in_place: bool,
    /// Scalars a load: [`tiling::lanes`].
    pub lanes: u32,
    pub tiling: Tiling,
}

/// Which kernel a variant runs, tiled how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tiling {
    /// `fused_rms_norm.wgsl`: RMSNorm, a workgroup a row (or a few).
    Fused(FusedTiling),
    /// `norm_family.wgsl`: LayerNorm, the sandwich, and short rows several a workgroup.
    Family(FamilyTiling),
}

impl Variant {
    /// Whether this variant compiles from `norm_family.wgsl`.
    pub fn is_family(&self) -> bool {
        matches!(self.tiling, Tiling::Family(_))
    }

    /// Invocations per workgroup.
    pub fn workgroup(&self) -> u32 {
        match self.tiling {
            Tiling::Fused(t) => t.workgroup,
            Tiling::Family(t) => t.workgroup,
        }
    }

    /// Rows a workgroup normalizes: more than one only for the family's short rows.
    pub fn rows_per_group(&self) -> u32 {
        match self.tiling {
            Tiling::Fused(_) => 1,
            Tiling::Family(t) => t.rows_per_group,
        }
    }

    /// Workgroups per row: more than one only for a few long rows of the fused kernel.
    pub fn workgroups_per_row(&self) -> u32 {
        match self.tiling {
            Tiling::Fused(t) => t.workgroups_per_row(self.in_place),
            Tiling::Family(_) => 1,
        }
    }

    /// This variant with each row in one workgroup, for an engine that dispatches a
    /// workgroup a row (`kernelSource` without `rows`).
    pub fn whole_rows(self) -> Variant {
        let mut v = self;
        if let Tiling::Fused(t) = &mut v.tiling {
            t.split = 1;
        }
        v
    }

    /// The grid of a dispatch of `rows` rows on a device with `max_per_dim` workgroups a
    /// dimension: every path that dispatches the kernel, and `kernelSource`, asks here.
    pub fn grid(&self, rows: u32, max_per_dim: u32) -> (u32, u32) {
        let groups = rows.div_ceil(self.rows_per_group().max(1));
        grid(
            groups.saturating_mul(self.workgroups_per_row()),
            max_per_dim,
        )
    }

    /// The complete WGSL for this variant.
    pub fn wgsl(&self) -> String {
        let file = match self.tiling {
            Tiling::Fused(_) => "fused_rms_norm.wgsl",
            Tiling::Family(_) => "norm_family.wgsl",
        };
        assemble(file, &self.constants())
    }

    /// The variant's choices as its WGSL names them: those of `common.wgsl`, then its
    /// kernel's (listed at the top of each kernel's file).
    pub fn constants(&self) -> Vec<Constant> {
        use Value::{Bool, U32};
        let o = self.options;
        let f16 = |s: Storage| s == Storage::F16;
        let packed = |s: Storage| s == Storage::F16Packed;
        let mut c: Vec<Constant> = vec![
            ("VEC4", Bool(self.lanes == 4)),
            ("S_F16", Bool(f16(self.storage))),
            ("S_PACKED", Bool(packed(self.storage))),
            ("SO_F16", Bool(f16(self.out_storage))),
            ("SO_PACKED", Bool(packed(self.out_storage))),
            (
                "ENABLE_F16",
                Bool(f16(self.storage) || f16(self.out_storage)),
            ),
            ("HAS_BIAS", Bool(o.bias)),
            ("HAS_BETA", Bool(o.beta)),
            ("HAS_RESIDUAL", Bool(o.residual)),
            ("HAS_INPUT2", Bool(o.input2)),
            // In place, v goes over the residual whether or not the call asked for it.
            ("WRITE_SUM", Bool(o.sum || (self.in_place && o.residual))),
            ("WRITE_Y", Bool(o.output)),
            ("IN_PLACE", Bool(self.in_place)),
            ("HAS_ROTARY", Bool(o.rotary.is_some())),
        ];
        match self.tiling {
            Tiling::Fused(t) => c.extend([
                ("WG", U32(t.workgroup)),
                ("SLOTS", U32(t.slots)),
                // The row cache's blocks of slots (`row_cache.wgsl`).
                ("SLOTS_OVER_4", Bool(t.slots > 4)),
                ("SLOTS_OVER_8", Bool(t.slots > 8)),
                ("SLOTS_OVER_16", Bool(t.slots > 16)),
                ("SLOTS_OVER_32", Bool(t.slots > 32)),
                ("FAN", U32(fan_in(t.fan, t.workgroup))),
                ("SPLIT", U32(self.workgroups_per_row())),
                ("PRELOAD", Bool(t.preload)),
                ("EXACT", Bool(t.exact && t.slots > 0)),
                ("HAS_OFFSET", Bool(o.gamma_offset)),
            ]),
            Tiling::Family(t) => c.extend([
                ("WG", U32(t.workgroup)),
                ("ROW_T", U32(t.row_threads())),
                ("SLOTS", U32(t.slots)),
                ("FAN", U32(fan_in(t.fan, t.row_threads()))),
                ("FLAT", Bool(t.flat)),
                ("UNIFORM_TOTALS", Bool(t.uniform_totals())),
                ("PRELOAD", Bool(t.preload)),
                ("EARLY_RESIDUAL", Bool(t.early_residual)),
                ("HAS_POST", Bool(o.post_gamma)),
                ("LAYER", Bool(o.kind == NormKind::Layer)),
                ("NORM_NONE", Bool(o.kind == NormKind::None)),
            ]),
        }
        if let Tiling::Family(_) = self.tiling {
            c.extend(self.rotary_constants());
        }
        c
    }

    /// The family kernel's rotary stage (`norm_family.wgsl`, `store_turned`), in vectors of
    /// `lanes` where the name ends in `_W`; zeros (a head of one) without one.
    fn rotary_constants(&self) -> Vec<Constant> {
        use Value::{Bool, U32};
        let r = self.options.rotary.unwrap_or(RotaryKernel {
            style: RotaryStyle::NeoX,
            rotary_dim: 0,
            head_size: self.lanes,
            each: false,
            gamma_heads: false,
            table_positions: 0,
        });
        vec![
            ("ROT_NEOX", Bool(r.style == RotaryStyle::NeoX)),
            ("ROT_EACH", Bool(r.each)),
            ("ROT_TABLE", Bool(r.table_positions > 0)),
            ("ROT_POSITIONS_AT", U32(r.positions_at())),
            ("GAMMA_HEADS", Bool(r.gamma_heads)),
            ("ROT_DIM", U32(r.rotary_dim)),
            ("ROT_HALF", U32(r.rotary_dim / 2)),
            ("ROT_HALF_W", U32(r.rotary_dim / 2 / self.lanes)),
            ("ROT_W", U32(r.rotary_dim.div_ceil(self.lanes))),
            ("HEAD_W", U32(r.head_size / self.lanes)),
        ]
    }

    /// The pipeline's label: the kernel, the data's form and the tiling.
    pub fn label(&self) -> String {
        let o = self.options;
        let data = format!(
            "{:?}{}{}{}{}{}{}{} lanes={} bias={} beta={} sum={}",
            self.storage,
            if self.out_storage != self.storage {
                format!(" out={:?}", self.out_storage)
            } else {
                String::new()
            },
            if o.residual { "" } else { " no-residual" },
            if o.post_gamma { " sandwich" } else { "" },
            if o.input2 { " parallel" } else { "" },
            if o.output { "" } else { " sum-alone" },
            match o.rotary {
                Some(r) => format!(
                    " rotary={}/{}/{}{}{}",
                    r.style.name(),
                    r.rotary_dim,
                    r.head_size,
                    if r.each { "" } else { " from-start" },
                    if r.gamma_heads { " gamma-heads" } else { "" }
                ),
                None => String::new(),
            },
            if self.in_place { " in-place" } else { "" },
            self.lanes,
            o.bias,
            o.beta,
            o.sum,
        );
        match self.tiling {
            Tiling::Fused(t) => format!(
                "fused_rms_norm {data} wg={} slots={} fan={} preload={} exact={} split={}",
                t.workgroup,
                t.slots,
                fan_in(t.fan, t.workgroup),
                t.preload,
                t.exact,
                self.workgroups_per_row(),
            ),
            Tiling::Family(t) => format!(
                "norm_family {} {data} wg={} rows/wg={} slots={} fan={} flat={} preload={}",
                o.kind.name(),
                t.workgroup,
                t.rows_per_group,
                t.slots,
                fan_in(t.fan, t.row_threads()),
                t.flat,
                t.preload,
            ),
        }
    }
}

/// The dispatch grid for `groups` workgroups: WebGPU caps each dimension at 65535, so
/// larger counts fold into a second dimension (the kernel unfolds `x + y * groups.x`).
/// The kernels' dispatches take theirs from [`Variant::grid`].
pub fn grid(groups: u32, max_per_dim: u32) -> (u32, u32) {
    if groups <= max_per_dim {
        (groups, 1)
    } else {
        let y = groups.div_ceil(max_per_dim);
        (groups.div_ceil(y), y)
    }
}

// The tests validate WGSL with naga, a native dev-dependency.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) mod tests;
