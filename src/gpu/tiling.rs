//! Which tiling a call gets: workgroup size, columns per thread, how the row is reduced and
//! spread over workgroups, per stack (the browser's Dawn, or wgpu/Vulkan natively), per row
//! length and per number of rows. Every choice here was measured on an H200, and each one
//! says what it was measured against (docs/PERFORMANCE.md); [`crate::gpu::kernel`] turns a
//! choice into WGSL. The family kernel's own tiling is in [`crate::gpu::family_tiling`].

use crate::call::device::Caps;
use crate::call::dtype::Dtype;
use crate::call::options::Options;
use crate::call::plan::Kernel;
use crate::gpu::kernel::{Storage, Variant};

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

/// Invocations per workgroup on CPU adapters: one SwiftShader SIMD group.
pub(super) const CPU_WORKGROUP: u32 = 4;
/// Columns per thread held in registers there.
const CPU_SLOTS: u32 = 4;

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
        let lanes = if hidden.is_multiple_of(4) { 4 } else { 1 };
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
            out_storage: Storage::F32,
            in_place: false,
            rows_per_group: 1,
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
    /// same sweep.
    ///
    /// On wgpu/Vulkan (measured on an H200 in passes of 20 dispatches, three rounds alike
    /// to 0.2 %; docs/PERFORMANCE.md), with beta or `sum`, two vec4 a thread in workgroups
    /// of up to 512, keeping that stack's tree and no preloading: bias+beta 2048×4096
    /// 88.0 → 92.5 % of `a + b`, 4096×4096 93.9 → 96.4 %, 16384×4096 98.3 → 99.6 %; `sum`
    /// 94.3 → 94.6 %, 95.3 → 96.4 % and 95.6 → 97.1 % of `a ± b`. Plain keeps four: two
    /// lost 0.5–0.8 % at 2048 and 4096 rows. On rows of 2048 vec4 and more, with beta, the
    /// most columns a thread caches (sixteen) with the fan-in and gamma and beta preloaded,
    /// as in the browser's decode tiling: bias+beta 2048×8192 89.4 → 91.4 %, 4096×8192
    /// 94.4 → 95.7 %, 8192×8192 96.5 → 97.6 %; for plain and `sum` that tiling was slower.
    pub fn for_many_rows(self, hidden: u32, web: bool) -> Variant {
        let width = hidden / self.lanes;
        let Options { beta, sum, .. } = self.options;
        if !(self.lanes == 4 && (beta || sum) && width >= 1024) {
            return self;
        }
        // Columns per thread, and whether the reduction is the two-step fan-in with gamma
        // and beta loaded before it.
        let (per_thread, fan_in) = match (web, beta) {
            (true, true) => (4, true),
            (true, false) => (2, true),
            (false, true) if width >= 2048 => (max_slots(self.lanes), true),
            (false, _) => (2, false),
        };
        let workgroup = width
            .div_ceil(per_thread)
            .next_power_of_two()
            .clamp(32, 512);
        let slots = width.div_ceil(workgroup).clamp(1, max_slots(self.lanes));
        Variant {
            workgroup,
            slots,
            fan: if fan_in {
                Self::balanced_fan(workgroup)
            } else {
                self.fan
            },
            preload: fan_in || self.preload,
            exact: slots * workgroup == width,
            ..self
        }
    }

    /// The fan-in that folds `workgroup` partials in two even steps.
    pub fn balanced_fan(workgroup: u32) -> u32 {
        1 << workgroup.max(1).trailing_zeros().div_ceil(2)
    }

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
            // A CPU runs a workgroup's loads itself: spreading them buys nothing there.
            split: 1,
            ..self
        };
        v = v.within(hidden, CPU_WORKGROUP);
        v.slots = v.slots.min(CPU_SLOTS);
        v.exact = v.slots * v.workgroup == hidden / v.lanes;
        v
    }
}

/// RMSNorm calls of at least this many rows of at most `SHORT_ROW` vectors take the family
/// kernel, several rows a workgroup: QK-norm's heads.
const SHORT_ROWS: usize = 256;
const SHORT_ROW: u32 = 64;

/// Which variant a call of a kernel runs as, on a device with `caps`.
impl Kernel {
    /// The compiled form the device runs a call of `rows` rows as.
    pub fn variant(&self, caps: &Caps, rows: usize) -> Variant {
        let storage_of = |dtype| match dtype {
            Dtype::F32 => Storage::F32,
            Dtype::F16 if caps.shader_f16 => Storage::F16,
            Dtype::F16 => Storage::F16Packed,
        };
        let (storage, out_storage) = (storage_of(self.dtype), storage_of(self.out_dtype));
        let hidden = self.hidden as u32;
        let web = cfg!(target_arch = "wasm32");
        let lanes = if hidden.is_multiple_of(4) { 4 } else { 1 };
        let short = rows >= SHORT_ROWS && hidden / lanes <= SHORT_ROW && !caps.cpu_tiling;
        if self.options.need_family() || short {
            return Variant {
                storage,
                out_storage,
                in_place: self.in_place,
                ..Variant::for_family(hidden, self.options, caps).for_family_rows(rows, caps)
            };
        }
        let mut tiled = Variant::for_shape(hidden, self.options);
        if rows >= MANY_ROWS && !caps.cpu_tiling {
            tiled = tiled.for_many_rows(hidden, web);
        }
        let mut tiled = tiled.within(hidden, caps.max_workgroup);
        // In place a row cannot be split (Variant::split_in); asking would only make a second
        // pipeline of the same code.
        if rows <= FEW_ROWS && !caps.cpu_tiling && !self.in_place {
            tiled = tiled.for_few_rows(hidden, web);
        }
        Variant {
            storage,
            out_storage,
            in_place: self.in_place,
            ..if caps.cpu_tiling {
                tiled.for_cpu(hidden)
            } else {
                tiled
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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
                // Only a tiling with beta or the sum, on rows of 1024 vec4 or more, changes
                // to a number of columns per thread (until the workgroup is at its cap): in
                // the browser four with beta, two with the sum alone; natively two, or with
                // beta on rows of 2048 vec4 or more sixteen with the fan-in and preloading.
                let width = hidden / 4;
                let may_change = (beta || sum) && hidden % 4 == 0 && width >= 1024;
                let native_long = !web && beta && width >= 2048;
                if may_change && !web {
                    let fan_in = (Variant::balanced_fan(many.workgroup), true);
                    let kept = (decode.fan, decode.preload);
                    let want = if native_long { fan_in } else { kept };
                    assert_eq!((many.fan, many.preload), want, "{hidden} beta {beta}");
                }
                let per_thread = match (web, beta) {
                    (true, true) => 4,
                    _ if native_long => 16,
                    _ => 2,
                };
                if !may_change {
                    assert_eq!(many, decode, "{hidden} web {web} beta {beta} sum {sum}");
                } else if width / per_thread <= 512 {
                    assert_eq!(
                        many.slots * many.workgroup,
                        hidden / 4,
                        "{hidden} beta {beta} sum {sum}"
                    );
                    assert_eq!(many.slots, per_thread, "{hidden} beta {beta} sum {sum}");
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
