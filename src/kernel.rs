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

/// One compiled form of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub options: Options,
    pub storage: Storage,
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
    /// Reduce with one barrier, after which every lane folds all `workgroup` partials
    /// itself (plus one barrier for the rescaling decision): two barriers instead of
    /// the tree's `log2(workgroup) + 2`, for small workgroups. `fan` then serves only the
    /// rescaled path. Measured slower than the tree on an H200 (docs/PERFORMANCE.md): a
    /// sweep knob, never chosen.
    pub flat: bool,
    /// Load gamma and beta of the cached columns before the reduction.
    pub preload: bool,
    /// Hold the cache in a struct written out slot by slot instead of an array indexed in a
    /// loop, so that it cannot land in local memory whatever the driver's unroller does.
    pub unroll: bool,
    /// The row is exactly `slots * workgroup` columns: the per-column bounds checks go.
    /// Only for the `hidden` the variant was made for.
    pub exact: bool,
    /// Workgroups per row (see the WGSL's `owns`): 1, or more for a decode-sized call
    /// ([`Variant::for_few_rows`]). Takes effect only where [`Variant::split_in`] allows.
    pub split: u32,
}

/// Calls of this many rows or more may be tiled differently from decode-sized ones
/// ([`Variant::for_many_rows`]).
pub const MANY_ROWS: usize = 1024;

/// Calls of at most this many rows may spread each row over several workgroups
/// ([`Variant::for_few_rows`]).
pub const FEW_ROWS: usize = 4;

/// The most scalars a thread keeps in registers (16 vec4 or 64 f32); more would cost
/// occupancy for nothing.
pub const MAX_CACHED_SCALARS: u32 = 64;

/// The most columns of `lanes` scalars a variant keeps per thread.
pub fn max_slots(lanes: u32) -> u32 {
    MAX_CACHED_SCALARS / lanes
}

impl Variant {
    /// The variant for a row of `hidden` scalars on the stack this build runs on: in the
    /// browser (wasm) the tiling measured on Dawn, Chrome's WebGPU; natively the one
    /// measured on wgpu/Vulkan.
    pub fn for_shape(hidden: u32, options: Options) -> Self {
        Self::for_stack(hidden, options, cfg!(target_arch = "wasm32"))
    }

    /// The variant for a row of `hidden` scalars, tiled for the browser's WebGPU (`web`)
    /// or for wgpu/Vulkan. The two compilers (Tint with Chrome's robustness checks, naga)
    /// turn the same WGSL into different code, and the best tiling differs on an H200
    /// (docs/PERFORMANCE.md, the Dawn section).
    pub fn for_stack(hidden: u32, options: Options, web: bool) -> Self {
        let lanes = if hidden % 4 == 0 { 4 } else { 1 };
        let width = hidden / lanes;
        if web && lanes == 4 && width >= 128 {
            // Measured on Dawn on an H200 in a dependent chain: eight vec4 per thread (wg
            // 128 at 4096, 32 at 896), gamma and beta loaded with the row before the
            // reduction, and the two-step fan-in took a decode row from 3.40 to 2.94 µs
            // at 1×4096 and 2.81 to 2.49 µs at 1×896, 128×4096 from 4.08 to 3.80, and
            // stayed within 1 % of the roofline at 16384×4096 and 32768×896. Loading
            // gamma with the row saves a memory round trip after the reduction, which is
            // what a latency-bound row waits on. On wgpu/Vulkan the same variant was
            // slower at every size measured, so native builds keep the tiling below.
            let workgroup = width.div_ceil(8).next_power_of_two().clamp(32, 512);
            let slots = width.div_ceil(workgroup).clamp(1, max_slots(lanes));
            return Variant {
                fan: Self::balanced_fan(workgroup),
                preload: true,
                workgroup,
                slots,
                exact: slots * workgroup == width,
                ..Self::for_stack(hidden, options, false)
            };
        }
        let workgroup = if width < 128 {
            // Short rows: one column per thread, and no more idle threads than the rounding.
            width.next_power_of_two().max(32)
        } else if lanes == 4 {
            // Two to four vec4 per thread, in workgroups of 128 to 512: on an H200 the best
            // or within noise of it for every row length measured, from 896 to 8192; 1024
            // threads of one vec4, or 64 threads of sixteen, lost at every size. Longer rows
            // keep more per thread rather than growing the workgroup.
            width.div_ceil(4).next_power_of_two().clamp(128, 512)
        } else {
            // Scalar rows: at hidden 4099, 512 threads of nine beat 128 to 1024 threads.
            width.div_ceil(8).next_power_of_two().clamp(64, 512)
        };
        let slots = width.div_ceil(workgroup).clamp(1, max_slots(lanes));
        Variant {
            options,
            storage: Storage::F32,
            in_place: false,
            lanes,
            workgroup,
            slots,
            // The pairwise tree: one lane folding many partials serially cost more than the
            // barriers it saved.
            fan: 0,
            flat: false,
            // Loading gamma and beta before the reduction holds registers across it, and
            // measured slower as often as faster.
            preload: false,
            // Measured on an H200: the array form ran at under a third of the roofline, the
            // struct at 95-99 % (docs/PERFORMANCE.md).
            unroll: true,
            exact: slots * workgroup == width,
            split: 1,
        }
    }

    /// The tiling for a call of at most [`FEW_ROWS`] rows, where it differs from `self`: in
    /// the browser, a row of 1024 vec4 or more that the cache holds whole is spread over two
    /// workgroups. Each reads the whole row for its sums and writes half of it, so the row's
    /// memory traffic goes through two SMs instead of one. Measured on Dawn on an H200 in a
    /// dependent chain (docs/PERFORMANCE.md): 1×4096 2.78 → 2.62 µs plain, 3.04 → 2.75 with
    /// bias and beta, 16×4096 2.95 → 2.82; at 1×896 (shorter rows) and at 128 rows (as many
    /// workgroups as SMs already) slower, so only long rows, and only a few of them: a GPU
    /// with fewer cores than the H200 runs out of idle ones sooner.
    pub fn for_few_rows(self, hidden: u32, web: bool) -> Variant {
        let width = hidden / self.lanes;
        if !(web && self.lanes == 4 && width >= 1024 && self.exact) {
            return self;
        }
        Variant { split: 2, ..self }
    }

    /// Workgroups per row as the kernel runs it: `split` where the cache holds the whole row
    /// (`exact`, so no column is read again after the reduction) and not in place (a
    /// workgroup writing its part of `input` would change what the others still read), at
    /// most one part per cached slot; else 1.
    pub fn split_in(&self) -> u32 {
        if self.in_place || !self.exact || self.slots == 0 {
            1
        } else {
            self.split.clamp(1, self.slots)
        }
    }

    /// The grid of a dispatch of `rows` rows on a device with `max_per_dim` workgroups a
    /// dimension: every path that dispatches the kernel, and `kernelSource`, asks here.
    pub fn grid(&self, rows: u32, max_per_dim: u32) -> (u32, u32) {
        grid(rows.saturating_mul(self.split_in()), max_per_dim)
    }

    /// The tiling for a call of [`MANY_ROWS`] rows or more, where it differs from `self`:
    /// in the browser, a row of 1024 vec4 or more with beta keeps four vec4 per thread
    /// instead of eight. Preloading gamma and beta holds three vec4 per column in registers,
    /// which at eight columns costs the occupancy that a call of a few waves of rows needs;
    /// a decode row wants the eight (one workgroup waits on its own loads). Measured on Dawn
    /// on an H200, bias+beta in a dependent chain: 2048×4096 89.9 → 93.9 % of `a + b`,
    /// 4096×8192 94.1 → 97.6 %, 16384×4096 98.9 → 98.6 %; at 1×4096 and 16×4096 four
    /// columns were 8 % slower, at 32768×896 and 70000×1024 (shorter rows) slower too
    /// (docs/PERFORMANCE.md). Without beta but with the `sum` output (two writes a column),
    /// two vec4 a thread in workgroups of up to 512: 2048×4096 93.7 → 95.3 % of `a + b`'s
    /// bandwidth, 16384×4096 94.0 → 95.1 %, 4096×8192 (four vec4 at the cap) 93.6 → 94.5 %,
    /// same sweep. wgpu/Vulkan keeps its tiling: no tiling reached 95 % there.
    pub fn for_many_rows(self, hidden: u32, web: bool) -> Variant {
        let width = hidden / self.lanes;
        let Options { beta, sum, .. } = self.options;
        if !(web && self.lanes == 4 && self.preload && (beta || sum) && width >= 1024) {
            return self;
        }
        let per_thread = if beta { 4 } else { 2 };
        let workgroup = width
            .div_ceil(per_thread)
            .next_power_of_two()
            .clamp(32, 512);
        let slots = width.div_ceil(workgroup).clamp(1, max_slots(self.lanes));
        Variant {
            workgroup,
            slots,
            fan: Self::balanced_fan(workgroup),
            exact: slots * workgroup == width,
            ..self
        }
    }

    /// The fan-in that folds `workgroup` partials in two even steps.
    pub fn balanced_fan(workgroup: u32) -> u32 {
        1 << workgroup.max(1).trailing_zeros().div_ceil(2)
    }

    /// The directive the storage needs, and the bindings and element conversions for it.
    /// f16 storage needs `hidden % 4 == 0` (the driver checks), so it is always four lanes.
    fn storage_wgsl(&self) -> (&'static str, String) {
        let (enable, storage) = match self.storage {
            Storage::F32 => ("", "alias S = V;\nfn ld(x: S) -> V { return x; }\nfn st(v: V) -> S { return v; }\n"),
            Storage::F16 => (
                "enable f16;\n",
                "alias S = vec4<f16>;\nfn ld(x: S) -> V { return V(x); }\nfn st(v: V) -> S { return S(v); }\n",
            ),
            Storage::F16Packed => (
                "",
                "alias S = vec2<u32>;\n\
                 fn ld(x: S) -> V { return V(unpack2x16float(x.x), unpack2x16float(x.y)); }\n\
                 fn st(v: V) -> S { return S(pack2x16float(v.xy), pack2x16float(v.zw)); }\n",
            ),
        };
        let put = if self.in_place {
            "fn put_y(j: u32, y: V) { input[j] = st(y); }\nfn put_v(j: u32, v: V) { residual[j] = st(v); }\n"
        } else {
            "fn put_y(j: u32, y: V) { output[j] = st(y); }\nfn put_v(j: u32, v: V) { sum[j] = st(v); }\n"
        };
        let body = format!(
            "{storage}{}{put}",
            crate::pipelines::wgsl_declarations(self.in_place)
        );
        (enable, body)
    }

    /// The complete WGSL for this variant.
    pub fn wgsl(&self) -> String {
        let Options { bias, beta, sum } = self.options;
        // `enable` must come before any declaration.
        let (enable, storage) = self.storage_wgsl();
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
            "{enable}const WG: u32 = {wg}u;\nconst SLOTS: u32 = {slots}u;\nconst FAN: u32 = {fan}u;\nconst SPLIT: u32 = {split}u;\n\
             const FLAT: bool = {flat};\nconst PRELOAD: bool = {preload};\nconst EXACT: bool = {exact};\n\
             const HAS_BIAS: bool = {bias};\nconst HAS_BETA: bool = {beta};\n\
             const WRITE_SUM: bool = {sum};\nconst IN_PLACE: bool = {in_place};\n\
             {helpers}{storage}{cache}\n{KERNEL_WGSL}",
            sum = sum || self.in_place,
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
            "fused_rms_norm {:?}{} lanes={} wg={} slots={} fan={} flat={} preload={} unroll={} exact={} split={} bias={} beta={} sum={}",
            self.storage,
            if self.in_place { " in-place" } else { "" },
            self.lanes,
            self.workgroup,
            self.slots,
            self.fan,
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

impl Variant {
    /// This variant with its workgroup no larger than the device allows: WebGPU's default
    /// `maxComputeInvocationsPerWorkgroup`, and SwiftShader's, is 256, while the best size
    /// on a large GPU can be more. Threads lost become columns per thread.
    pub fn within(mut self, hidden: u32, max_workgroup: u32) -> Variant {
        if self.workgroup <= max_workgroup {
            return self;
        }
        let workgroup = 1 << (31 - max_workgroup.max(1).leading_zeros());
        let width = hidden / self.lanes;
        self.slots = width.div_ceil(workgroup).clamp(1, max_slots(self.lanes));
        self.exact = self.slots * workgroup == width;
        if self.fan != 0 {
            self.fan = Self::balanced_fan(workgroup);
        }
        self.workgroup = workgroup;
        self
    }

    /// This variant as a CPU adapter runs it best. SwiftShader runs a workgroup as 4-wide
    /// SIMD groups that switch at every barrier, so each group beyond the first costs a
    /// switch per barrier: one group per row measured 3-8x faster than 256 threads
    /// (docs/PERFORMANCE.md). Few cached columns, because a CPU re-reads from its own cache
    /// while every cached column is unrolled code that SwiftShader compiles slowly.
    pub fn for_cpu(self, hidden: u32) -> Variant {
        // The reduction and the loads as they were measured there (the web tiling's fan-in
        // and preloading were measured on a GPU).
        let mut v = Variant {
            fan: 0,
            preload: false,
            ..self
        };
        v = v.within(hidden, CPU_WORKGROUP);
        v.slots = v.slots.min(CPU_SLOTS);
        v.exact = v.slots * v.workgroup == hidden / v.lanes;
        v
    }
}

/// Invocations per workgroup on CPU adapters: one SwiftShader SIMD group.
const CPU_WORKGROUP: u32 = 4;
/// Columns per thread held in registers there.
const CPU_SLOTS: u32 = 4;

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

    #[test]
    fn variants_cover_the_row() {
        for hidden in [
            1u32,
            3,
            4,
            5,
            768,
            769,
            896,
            4096,
            4099,
            8192,
            16384,
            1 << 20,
        ] {
            for bits in 0..8 {
                let (web, beta, sum) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
                let options = Options {
                    beta,
                    sum,
                    ..Options::default()
                };
                let decode = Variant::for_stack(hidden, options, web);
                let many = decode.for_many_rows(hidden, web);
                for v in [decode, many] {
                    assert_eq!(v.lanes, if hidden % 4 == 0 { 4 } else { 1 });
                    assert!(v.workgroup.is_power_of_two());
                    assert!((1..=max_slots(v.lanes)).contains(&v.slots));
                    assert_eq!(v.exact, v.slots * v.workgroup == hidden / v.lanes);
                    assert!(v.fan <= v.workgroup);
                    // Short rows keep every column in registers.
                    if hidden / v.lanes <= 1024 {
                        assert!(v.slots * v.workgroup >= hidden / v.lanes, "{hidden}");
                    }
                }
                // Only the browser's tiling with beta or the sum, on rows of 1024 vec4 or
                // more, changes (to fewer columns per thread, until the workgroup is at its
                // cap: four with beta, two with the sum alone).
                let may_change = web && (beta || sum) && hidden % 4 == 0 && hidden / 4 >= 1024;
                if !may_change {
                    assert_eq!(many, decode, "{hidden} web {web} beta {beta} sum {sum}");
                } else if decode.workgroup < 512 {
                    let per_thread = if beta { 4 } else { 2 };
                    assert_eq!(
                        many.slots * many.workgroup,
                        hidden / 4,
                        "{hidden} beta {beta} sum {sum}"
                    );
                    assert_eq!(
                        many.slots,
                        per_thread.max(hidden / 4 / 512),
                        "{hidden} beta {beta} sum {sum}"
                    );
                }
            }
        }
    }

    /// A row is split only in the browser's tiling of long rows that the cache holds whole,
    /// never in place, into at most one part per cached slot; the grid has that many
    /// workgroups a row.
    #[test]
    fn rows_are_split_only_where_every_part_can_own_whole_slots() {
        for hidden in [4u32, 896, 1024, 4096, 4099, 8192, 16384, 1 << 20] {
            for web in [false, true] {
                let v =
                    Variant::for_stack(hidden, Options::default(), web).for_few_rows(hidden, web);
                let long = web && hidden % 4 == 0 && hidden / 4 >= 1024 && v.exact;
                assert_eq!(v.split_in(), if long { 2 } else { 1 }, "{hidden} web {web}");
                assert_eq!(
                    Variant {
                        in_place: true,
                        ..v
                    }
                    .split_in(),
                    1
                );
                assert_eq!(Variant { exact: false, ..v }.split_in(), 1);
                assert_eq!(v.grid(3, 65535), (3 * v.split_in(), 1));
                assert!(v
                    .wgsl()
                    .contains(&format!("const SPLIT: u32 = {}u;", v.split_in())));
            }
        }
        let v = Variant::for_stack(4096, Options::default(), true);
        assert_eq!((v.slots, Variant { split: 100, ..v }.split_in()), (8, 8));
        // Folded past the per-dimension limit, whole rows' worth of workgroups included.
        let (x, y) = Variant { split: 2, ..v }.grid(40000, 65535);
        assert!(x <= 65535 && x as u64 * y as u64 >= 80000);
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
                            let options = Options {
                                bias: bits & 1 != 0,
                                beta: bits & 2 != 0,
                                sum: bits & 4 != 0,
                            };
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

    /// The browser's tiling in every storage, in place or not, with every option, through
    /// naga (the native suite runs it on lavapipe in f32).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn web_tilings_validate_in_every_storage() {
        for hidden in [4u32, 768, 896, 1024, 4096, 8192, 16384] {
            for bits in 0..8u8 {
                let options = Options {
                    bias: bits & 1 != 0,
                    beta: bits & 2 != 0,
                    sum: bits & 4 != 0,
                };
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

    #[test]
    fn balanced_fan_splits_the_workgroup_in_two_steps() {
        for (wg, fan) in [
            (1u32, 1u32),
            (64, 8),
            (128, 16),
            (256, 16),
            (512, 32),
            (1024, 32),
        ] {
            assert_eq!(Variant::balanced_fan(wg), fan, "{wg}");
        }
    }
}
