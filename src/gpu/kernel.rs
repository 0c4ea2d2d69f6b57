//! The WGSL kernel's variants and the source each compiles from; which tiling a shape gets
//! (measured) is in [`crate::gpu::tiling`].
//!
//! Options (bias, beta, the `sum` output) and the tiling (workgroup size, registers per
//! thread) are compile-time constants of a pipeline rather than runtime flags, so the hot
//! loops carry no option branches. A variant is chosen per call from the shape, and its
//! pipeline is built once and cached by the driver.

use crate::call::options::Options;
use crate::call::shape::NormKind;

/// The WGSL source of the RMSNorm variants; [`Variant::wgsl`] prepends its constants.
pub const KERNEL_WGSL: &str = include_str!("../../shaders/fused_rms_norm.wgsl");
/// The WGSL source of LayerNorm and the sandwich ([`Variant::is_family`]).
pub const FAMILY_WGSL: &str = include_str!("../../shaders/norm_family.wgsl");

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

/// One compiled form of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub options: Options,
    pub storage: Storage,
    /// `output`'s storage: `storage` unless the call asks for another dtype.
    pub out_storage: Storage,
    /// `y` is written over `input` and `v` over `residual` (no separate outputs).
    pub in_place: bool,
    /// 4 when `hidden % 4 == 0` (vec4 loads), else 1.
    pub lanes: u32,
    /// Workgroup size, a power of two.
    pub workgroup: u32,
    /// Columns (of `V`) each thread keeps in registers between the reduction and the
    /// write; columns beyond `slots * workgroup` are read again from memory.
    pub slots: u32,
    /// Reduction fan-in: 0 for a pairwise tree, else this many lanes fold the partials
    /// first (see the WGSL).
    pub fan: u32,
    /// Reduce with one barrier, after which every lane folds all its row's partials itself.
    /// The family kernel: for short rows several a workgroup (`for_family`). The fused
    /// kernel: all `workgroup` partials (plus one barrier for the rescaling decision), two
    /// barriers instead of the tree's `log2(workgroup) + 2`, `fan` then serving only the
    /// rescaled path; measured slower than the tree there on an H200 (docs/PERFORMANCE.md):
    /// a sweep knob, never chosen.
    pub flat: bool,
    /// Load gamma and beta of the cached columns before the reduction.
    pub preload: bool,
    /// Hold the cache in a struct written out slot by slot instead of an array indexed in a
    /// loop, so that it cannot land in local memory whatever the driver's unroller does.
    pub unroll: bool,
    /// The row is exactly `slots * workgroup` columns: the per-column bounds checks go.
    /// Only for the `hidden` the variant was made for.
    pub exact: bool,
    /// Rows a workgroup of the family kernel normalizes (short rows: QK-norm's heads); 1 for
    /// the fused kernel, and for rows of more than a few hundred columns.
    pub rows_per_group: u32,
    /// Workgroups per row (see the WGSL's `owns`): 1, or more for a decode-sized call
    /// ([`Variant::for_few_rows`]). Takes effect only where [`Variant::split_in`] allows.
    pub split: u32,
}

impl Variant {
    /// Whether this variant compiles from `norm_family.wgsl` (LayerNorm, the sandwich, and
    /// short rows many a workgroup) rather than the fused RMSNorm kernel, whose tuned tilings
    /// and split rows it does not take.
    pub fn is_family(&self) -> bool {
        self.options.need_family() || self.rows_per_group > 1
    }

    /// Workgroups per row as the kernel runs it: `split` where the cache holds the whole row
    /// (`exact`, so no column is read again after the reduction) and not in place (a
    /// workgroup writing its part of `input` would change what the others still read), at
    /// most one part per cached slot; else 1.
    pub fn split_in(&self) -> u32 {
        if self.in_place || !self.exact || self.slots == 0 || self.is_family() {
            1
        } else {
            self.split.clamp(1, self.slots)
        }
    }

    /// The grid of a dispatch of `rows` rows on a device with `max_per_dim` workgroups a
    /// dimension: every path that dispatches the kernel, and `kernelSource`, asks here.
    pub fn grid(&self, rows: u32, max_per_dim: u32) -> (u32, u32) {
        let groups = rows.div_ceil(self.rows_per_group.max(1));
        grid(groups.saturating_mul(self.split_in()), max_per_dim)
    }

    /// The directive the storage needs, and the bindings and element conversions for it:
    /// `S`, `ld` and `st` for the data, `SO` and `st_out` for `output`. f16 storage needs
    /// `hidden % 4 == 0` (the driver checks), so it is always four lanes.
    fn storage_wgsl(&self) -> (&'static str, String) {
        let convert = |storage: Storage, name: &str, store: &str, load: bool| -> String {
            let (ty, ld, st) = match storage {
                Storage::F32 => ("V", "x", "v"),
                Storage::F16 => ("vec4<f16>", "V(x)", "vec4<f16>(v)"),
                Storage::F16Packed => (
                    "vec2<u32>",
                    "V(unpack2x16float(x.x), unpack2x16float(x.y))",
                    "vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw))",
                ),
            };
            let ld = if load {
                format!("fn ld(x: {name}) -> V {{ return {ld}; }}\n")
            } else {
                String::new()
            };
            format!("alias {name} = {ty};\n{ld}fn {store}(v: V) -> {name} {{ return {st}; }}\n")
        };
        let f16 = [self.storage, self.out_storage].contains(&Storage::F16);
        let enable = if f16 { "enable f16;\n" } else { "" };
        let put = if self.in_place {
            "fn put_y(j: u32, y: V) { input[j] = st(y); }\n\
             fn put_v(j: u32, v: V) { if HAS_RESIDUAL { residual[j] = st(v); } }\n"
        } else {
            "fn put_y(j: u32, y: V) { output[j] = st_out(y); }\nfn put_v(j: u32, v: V) { sum[j] = st(v); }\n"
        };
        let body = format!(
            "{}{}{}{put}",
            convert(self.storage, "S", "st", true),
            convert(self.out_storage, "SO", "st_out", false),
            crate::gpu::bindings::wgsl_declarations(self.in_place)
        );
        (enable, body)
    }

    /// The complete WGSL for this variant.
    pub fn wgsl(&self) -> String {
        let Options {
            bias,
            beta,
            sum,
            residual,
            ..
        } = self.options;
        // `enable` must come before any declaration.
        let (enable, storage) = self.storage_wgsl();
        let helpers = if self.lanes == 4 {
            "alias V = vec4<f32>;\n\
             fn square_sum(x: V) -> f32 { return dot(x, x); }\n\
             fn max_abs(x: V) -> f32 { let a = abs(x); return max(max(a.x, a.y), max(a.z, a.w)); }\n\
             fn lane_sum(x: V) -> f32 { return (x.x + x.y) + (x.z + x.w); }\n"
        } else {
            "alias V = f32;\n\
             fn square_sum(x: V) -> f32 { return x * x; }\n\
             fn max_abs(x: V) -> f32 { return abs(x); }\n\
             fn lane_sum(x: V) -> f32 { return x; }\n"
        };
        if self.is_family() {
            return format!(
                "{enable}const WG: u32 = {wg}u;\nconst ROW_T: u32 = {row_t}u;\nconst FAN: u32 = {fan}u;\nconst SLOTS: u32 = {slots}u;\n\
                 const HAS_BIAS: bool = {bias};\nconst HAS_BETA: bool = {beta};\nconst HAS_RESIDUAL: bool = {residual};\n\
                 const HAS_POST: bool = {post};\nconst LAYER: bool = {layer};\nconst FLAT: bool = {flat};\n\
                 const WRITE_SUM: bool = {sum};\nconst IN_PLACE: bool = {in_place};\nconst PRELOAD: bool = {preload};\n\
                 {helpers}{storage}\n{family}",
                family = self.family_wgsl(),
                wg = self.workgroup,
                row_t = self.row_threads(),
                fan = self.fan_in().min(self.row_threads()),
                slots = self.slots,
                post = self.options.post_gamma,
                layer = self.options.kind == NormKind::Layer,
                flat = self.flat,
                sum = sum || (self.in_place && residual),
                in_place = self.in_place,
                preload = self.preload,
            );
        }
        format!(
            "{enable}const WG: u32 = {wg}u;\nconst SLOTS: u32 = {slots}u;\nconst FAN: u32 = {fan}u;\nconst SPLIT: u32 = {split}u;\n\
             const FLAT: bool = {flat};\nconst PRELOAD: bool = {preload};\nconst EXACT: bool = {exact};\n\
             const HAS_BIAS: bool = {bias};\nconst HAS_BETA: bool = {beta};\nconst HAS_RESIDUAL: bool = {residual};\n\
             const HAS_OFFSET: bool = {offset};\nconst WRITE_SUM: bool = {sum};\nconst IN_PLACE: bool = {in_place};\n\
             {helpers}{storage}{cache}\n{KERNEL_WGSL}",
            sum = sum || (self.in_place && residual),
            offset = self.options.gamma_offset,
            in_place = self.in_place,
            wg = self.workgroup,
            slots = self.slots,
            fan = self.fan_in(),
            split = self.split_in(),
            flat = self.flat,
            preload = self.preload,
            exact = self.exact && self.slots > 0,
            cache = self.cache_wgsl(),
        )
    }

    /// `fan` as the WGSL's FAN: at most the workgroup, and a power of two, so that it divides
    /// the workgroup (the fan-in's loops run a constant `WG / FAN` steps).
    fn fan_in(&self) -> u32 {
        // The tree halves the workgroup and the fan-in divides it: both need a power of two,
        // which every tiling and the bench's `--set wg` give.
        debug_assert!(self.workgroup.is_power_of_two(), "{}", self.workgroup);
        match self.fan.min(self.workgroup) {
            0 => 0,
            fan => 1 << (31 - fan.leading_zeros()),
        }
    }

    /// `Cache` and the functions that fill, drain and rescale it. As an array, the kernel
    /// relies on the driver unrolling the constant-trip loops to keep it in registers; as
    /// a struct every access is a named field, which needs no unrolling.
    fn cache_wgsl(&self) -> String {
        const SIG_FILL: &str = "fn fill(c: ptr<function, Cache>, base: u32, lid: u32, width: u32, acc: ptr<function, vec2<f32>>)";
        const SIG_DRAIN: &str =
            "fn drain(c: ptr<function, Cache>, base: u32, lid: u32, width: u32, post: f32)";
        if self.slots == 0 {
            return format!("alias Cache = u32;\n{SIG_FILL} {{}}\n{SIG_DRAIN} {{}}\n");
        }
        if !self.unroll {
            let each = |body: &str| {
                format!("    for (var k = 0u; k < SLOTS; k++) {{ let i = lid + k * WG; {body} }}\n")
            };
            return format!(
                "alias Cache = array<Slot, SLOTS>;\n\
                 {SIG_FILL} {{\n{}{}    if WRITE_SUM && !IN_PLACE {{\n{}    }}\n}}\n\
                 {SIG_DRAIN} {{\n{}{}{}}}\n",
                each("if EXACT || i < width { (*c)[k] = fetch(base, i, owns(k)); }"),
                each("tally(acc, (*c)[k].v);"),
                each("if owns(k) && (EXACT || i < width) { put_v(base + i, (*c)[k].v); }"),
                each("if IN_PLACE && owns(k) && (EXACT || i < width) { put_v(base + i, (*c)[k].v); }"),
                each("if owns(k) && (EXACT || i < width) { (*c)[k] = with_affine(i, (*c)[k]); }"),
                each("if owns(k) && (EXACT || i < width) { store_y(base, i, (*c)[k], post); }"),
            );
        }
        let fields: String = (0..self.slots).map(|k| format!(" s{k}: Slot,")).collect();
        let each = |body: &str| -> String {
            (0..self.slots)
                .map(|k| {
                    format!(
                        "    {{ let i = lid + {k}u * WG; {} }}\n",
                        body.replace("SLOT", &format!("(*c).s{k}"))
                            .replace("owns(K)", &format!("owns({k}u)"))
                    )
                })
                .collect()
        };
        format!(
            "struct Cache {{{fields} }};\n\
             {SIG_FILL} {{\n{}{}    if WRITE_SUM && !IN_PLACE {{\n{}    }}\n}}\n\
             {SIG_DRAIN} {{\n{}{}{}}}\n",
            each("if EXACT || i < width { SLOT = fetch(base, i, owns(K)); }"),
            each("tally(acc, SLOT.v);"),
            each("if owns(K) && (EXACT || i < width) { put_v(base + i, SLOT.v); }"),
            each("if IN_PLACE && owns(K) && (EXACT || i < width) { put_v(base + i, SLOT.v); }"),
            each("if owns(K) && (EXACT || i < width) { SLOT = with_affine(i, SLOT); }"),
            each("if owns(K) && (EXACT || i < width) { store_y(base, i, SLOT, post); }"),
        )
    }

    pub fn label(&self) -> String {
        format!(
            "fused_{}_norm {:?}{}{}{}{} lanes={} wg={} rows/wg={} slots={} fan={} flat={} preload={} unroll={} exact={} split={} bias={} beta={} sum={}",
            self.options.kind.name(),
            self.storage,
            if self.out_storage != self.storage {
                format!(" out={:?}", self.out_storage)
            } else {
                String::new()
            },
            if self.options.residual { "" } else { " no-residual" },
            if self.options.post_gamma { " sandwich" } else { "" },
            if self.in_place { " in-place" } else { "" },
            self.lanes,
            self.workgroup,
            self.rows_per_group,
            self.slots,
            self.fan_in(),
            self.flat,
            self.preload,
            self.unroll,
            self.exact,
            self.split_in(),
            self.options.bias,
            self.options.beta,
            self.options.sum
        )
    }
}

/// The dispatch grid for `groups` workgroups: WebGPU caps each dimension at 65535, so
/// larger counts fold into a second dimension (the kernel unfolds `x + y * groups.x`).
/// The fused kernel's dispatches take theirs from [`Variant::grid`].
pub fn grid(groups: u32, max_per_dim: u32) -> (u32, u32) {
    if groups <= max_per_dim {
        (groups, 1)
    } else {
        let y = groups.div_ceil(max_per_dim);
        (groups.div_ceil(y), y)
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
            assert!(
                (x as u64) * (y as u64 - 1) < rows as u64,
                "{rows}: a whole idle grid row"
            );
        }
    }

    /// The fan-in's loops fold `WG / FAN` partials per lane: every partial only if FAN
    /// divides the workgroup.
    #[test]
    fn fan_in_divides_the_workgroup() {
        for workgroup in [1u32, 2, 32, 128, 512, 1024] {
            for fan in 0..=workgroup + 3 {
                let f = Variant {
                    workgroup,
                    fan,
                    ..Variant::for_shape(4096, Options::default())
                }
                .fan_in();
                assert!(
                    f == 0 || (f <= workgroup && workgroup % f == 0),
                    "wg {workgroup} fan {fan}: {f}"
                );
                assert_eq!(f == 0, fan == 0);
            }
        }
    }

    /// Every knob the benchmark sweeps must give WGSL that naga accepts, in every option set.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn every_knob_combination_validates() {
        for hidden in [4099u32, 4096] {
            for workgroup in [1u32, 2, 64, 256, 1024] {
                for slots in [0u32, 1, 3] {
                    // 3 and 6: a fan that is not a power of two (rounded down, see fan_in).
                    for fan in [0u32, Variant::balanced_fan(workgroup), workgroup, 3, 6] {
                        for bits in 0..64u8 {
                            let options = Options::with_flags(bits);
                            let v = Variant {
                                workgroup,
                                slots,
                                fan,
                                preload: bits & 8 != 0,
                                unroll: bits & 16 != 0,
                                exact: slots == 3,
                                flat: bits & 32 != 0,
                                ..Variant::for_shape(hidden, options)
                            };
                            let src = v.wgsl();
                            let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| {
                                panic!("{}: {}", v.label(), e.emit_to_string(&src))
                            });
                            naga::valid::Validator::new(
                                naga::valid::ValidationFlags::all(),
                                naga::valid::Capabilities::empty(),
                            )
                            .validate(&module)
                            .unwrap_or_else(|e| panic!("{}: {e:?}", v.label()));
                        }
                    }
                }
            }
        }
    }

    /// The family kernel's tilings (rows a workgroup, tree or fan-in, a CPU adapter's) in every
    /// storage and output dtype and option, through naga: lavapipe compiles only what runs.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn family_tilings_validate_in_every_storage() {
        use crate::call::device::Caps;
        use Storage::{F16Packed, F16, F32};
        let stores = [
            (F32, F32),
            (F32, F16),
            (F32, F16Packed),
            (F16, F16),
            (F16Packed, F16Packed),
        ];
        for hidden in [7u32, 64, 128, 768, 4096, 20000] {
            // f16 data and outputs need whole vec4s (a call's plan rejects others).
            let stores = &stores[..if hidden % 4 == 0 { 5 } else { 1 }];
            for bits in 0..=255u8 {
                let options = Options {
                    residual: bits & 8 != 0,
                    post_gamma: bits & 16 != 0,
                    kind: [NormKind::Rms, NormKind::Layer][usize::from(bits & 32 != 0)],
                    gamma_offset: bits & 64 != 0,
                    ..Options::with_flags(bits)
                };
                for (i, &(storage, out_storage)) in stores.iter().enumerate() {
                    let caps = Caps {
                        max_binding: 1 << 30,
                        max_groups_per_dim: 65535,
                        max_workgroup: 256,
                        shader_f16: true,
                        timestamps: false,
                        cpu_tiling: i % 2 == 1,
                    };
                    let v = Variant {
                        storage,
                        out_storage,
                        in_place: storage == out_storage && bits & 1 == 0,
                        preload: bits & 128 != 0,
                        ..Variant::for_family(hidden, options, &caps)
                    };
                    let src = v.wgsl();
                    let module = naga::front::wgsl::parse_str(&src)
                        .unwrap_or_else(|e| panic!("{}: {}", v.label(), e.emit_to_string(&src)));
                    naga::valid::Validator::new(
                        naga::valid::ValidationFlags::all(),
                        naga::valid::Capabilities::SHADER_FLOAT16
                            | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32,
                    )
                    .validate(&module)
                    .unwrap_or_else(|e| panic!("{}: {e:?}", v.label()));
                }
            }
        }
    }

    /// The browser's tiling in every storage, in place or not, with every option, through
    /// naga (the native suite runs it on lavapipe in f32).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn web_tilings_validate_in_every_storage() {
        for hidden in [4u32, 768, 896, 1024, 4096, 8192, 16384] {
            for bits in 0..8u8 {
                let options = Options::with_flags(bits);
                for storage in [Storage::F32, Storage::F16, Storage::F16Packed] {
                    for in_place in [false, true] {
                        let v = Variant {
                            storage,
                            in_place,
                            ..Variant::for_stack(hidden, options, true).within(hidden, 256)
                        };
                        let src = v.wgsl();
                        let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| {
                            panic!("{}: {}", v.label(), e.emit_to_string(&src))
                        });
                        let caps = match storage {
                            Storage::F32 => naga::valid::Capabilities::empty(),
                            Storage::F16 => naga::valid::Capabilities::SHADER_FLOAT16,
                            Storage::F16Packed => {
                                naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32
                            }
                        };
                        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                            .validate(&module)
                            .unwrap_or_else(|e| panic!("{}: {e:?}", v.label()));
                    }
                }
            }
        }
    }
}
