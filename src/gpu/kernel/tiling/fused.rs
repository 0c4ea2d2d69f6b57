//! The fused RMSNorm kernel's tiling (`fused_rms_norm.wgsl`): workgroup size, columns per
//! thread, how the row is reduced and spread over workgroups (docs/performance.md, "Tiling of
//! the RMSNorm kernel").

use crate::call::device::Caps;
use crate::call::plan::Kernel;

use super::{balanced_fan, lanes, max_slots, pow2_floor, CPU_WORKGROUP, FEW_ROWS, MANY_ROWS};

/// Columns each of `threads` threads keeps of a row of `width`, at most `most`, and whether
/// they are the whole row exactly (then the kernel drops its bounds checks).
fn cover(width: u32, threads: u32, most: u32) -> (u32, bool) {
    let slots = width.div_ceil(threads).clamp(1, most);
    (slots, slots * threads == width)
}

/// The largest workgroup the fused kernel's tilings take: longer rows keep more columns per
/// thread instead.
const MOST_THREADS: u32 = 512;

/// Columns per thread held in registers on CPU adapters (in workgroups of [`CPU_WORKGROUP`]).
const CPU_SLOTS: u32 = 4;

/// How the fused kernel (`fused_rms_norm.wgsl`) walks a row: one workgroup a row, or a few.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FusedTiling {
    /// Workgroup size, a power of two.
    pub workgroup: u32,
    /// Columns (of `V`) each thread keeps in registers between the reduction and the write;
    /// columns beyond `slots * workgroup` are read again from memory.
    pub slots: u32,
    /// Reduction fan-in: 0 for a pairwise tree, else this many lanes fold the partials first
    /// (as the WGSL's FAN: [`fan_in`](super::fan_in)).
    pub fan: u32,
    /// Load gamma and beta of the cached columns before the reduction.
    pub preload: bool,
    /// The row is exactly `slots * workgroup` columns: the per-column bounds checks go.
    /// Only for the `hidden` the tiling was made for.
    pub exact: bool,
    /// Workgroups per row asked for; [`FusedTiling::workgroups_per_row`] says where it holds.
    pub split: u32,
}

impl FusedTiling {
    /// The tiling of `kernel`'s calls of `rows` rows on a device with `caps`, for the browser's
    /// stack (`web`) or wgpu/Vulkan's (see [`WEB`](super::WEB)).
    pub fn choose(kernel: &Kernel, caps: &Caps, rows: usize, web: bool) -> FusedTiling {
        let hidden = kernel.hidden as u32;
        let lanes = lanes(hidden);
        let width = hidden / lanes;
        let most = pow2_floor(caps.max_workgroup);
        if caps.cpu_tiling {
            // SwiftShader runs a workgroup as 4-wide SIMD groups that switch at every
            // barrier: one group a row, few cached columns (a CPU re-reads from its own cache,
            // and each cached column is code it compiles slowly), the tree, nothing spread.
            let workgroup = CPU_WORKGROUP.min(most);
            let (slots, exact) = cover(width, workgroup, CPU_SLOTS);
            return FusedTiling {
                workgroup,
                slots,
                fan: 0,
                preload: false,
                exact,
                split: 1,
            };
        }
        let (per_thread, fewest, fan_in) = columns(width, lanes, kernel, rows, web);
        let threads = width.div_ceil(per_thread).next_power_of_two();
        let workgroup = threads.clamp(fewest, MOST_THREADS).min(most);
        let (slots, exact) = cover(width, workgroup, max_slots(lanes));
        // A few long rows held whole in the browser take two workgroups each, so that a row's
        // traffic goes through two multiprocessors; never in place (a workgroup would
        // overwrite what the other reads).
        let spread = web && lanes == 4 && width >= 1024 && exact;
        let split = if rows <= FEW_ROWS && !kernel.in_place && spread {
            2
        } else {
            1
        };
        FusedTiling {
            workgroup,
            slots,
            fan: if fan_in { balanced_fan(workgroup) } else { 0 },
            preload: fan_in,
            exact,
            split,
        }
    }

    /// Workgroups per row as the kernel runs it: `split` where the cache holds the whole row
    /// (`exact`, so no column is read again after the reduction) and not in place (a
    /// workgroup writing its part of `input` would change what the others still read), at
    /// most one part per cached slot; else 1.
    pub fn workgroups_per_row(&self, in_place: bool) -> u32 {
        if in_place || !self.exact || self.slots == 0 {
            1
        } else {
            self.split.clamp(1, self.slots)
        }
    }
}

/// Columns per thread (before the workgroup is rounded to a power of two), the fewest
/// threads, and whether the reduction is the two-step fan-in with gamma and beta loaded
/// before it, for a row of `width` vectors of `lanes` (docs/performance.md, "Tiling of the
/// RMSNorm kernel").
fn columns(width: u32, lanes: u32, kernel: &Kernel, rows: usize, web: bool) -> (u32, u32, bool) {
    let beta = kernel.options.beta;
    if rows >= MANY_ROWS && lanes == 4 && (beta || kernel.options.sum) && width >= 1024 {
        // Many long rows with beta or `sum`: fewer columns a thread than a decode row, whose
        // one workgroup waits on its own loads, since preloaded weights held across the
        // reduction cost a call of many waves of rows occupancy. Natively, with beta on the
        // longest rows, the most a thread caches, with the fan-in and preloading.
        return match (web, beta) {
            (true, true) => (4, 32, true),
            (true, false) => (2, 32, true),
            (false, true) if width >= 2048 => (max_slots(lanes), 32, true),
            (false, _) => (2, 32, false),
        };
    }
    if width < 128 {
        // Short rows: one column a thread, and no more idle threads than the rounding.
        (1, 32, false)
    } else if web && lanes == 4 {
        // In the browser eight vec4 a thread with the fan-in and gamma preloaded: a decode
        // row waits on its memory round trips, which loading gamma with the row saves one of.
        (8, 32, true)
    } else if lanes == 4 {
        // Natively two to four vec4 a thread in workgroups of 128 to 512, the tree.
        (4, 128, false)
    } else {
        // Scalar rows: about eight a thread in workgroups of 64 to 512.
        (8, 64, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::options::Options;
    use crate::gpu::kernel::{Storage, Tiling, Variant};

    fn caps(max_workgroup: u32) -> Caps {
        Caps {
            max_binding: 1 << 30,
            max_groups_per_dim: 65535,
            max_workgroup,
            shader_f16: true,
            timestamps: false,
            cpu_tiling: false,
        }
    }

    /// The fused kernel's tiling of `rows` rows of `hidden` with `options`, not in place.
    fn fused(hidden: u32, options: Options, rows: usize, web: bool) -> FusedTiling {
        let kernel = Kernel::f32(hidden as usize, options);
        FusedTiling::choose(&kernel, &caps(1024), rows, web)
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
            let lanes = lanes(hidden);
            assert_eq!(lanes, if hidden % 4 == 0 { 4 } else { 1 });
            for bits in 0..8 {
                let (web, beta, sum) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
                let options = Options {
                    beta,
                    sum,
                    ..Options::default()
                };
                let decode = fused(hidden, options, FEW_ROWS + 1, web);
                let many = fused(hidden, options, MANY_ROWS, web);
                for v in [decode, many] {
                    assert!(v.workgroup.is_power_of_two());
                    assert!((1..=max_slots(lanes)).contains(&v.slots));
                    assert_eq!(v.exact, v.slots * v.workgroup == hidden / lanes);
                    assert!(v.fan <= v.workgroup);
                    // Short rows keep every column in registers.
                    if hidden / lanes <= 1024 {
                        assert!(v.slots * v.workgroup >= hidden / lanes, "{hidden}");
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
                    let fan_in = (balanced_fan(many.workgroup), true);
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
                    let what = format!("{hidden} beta {beta} sum {sum}");
                    assert_eq!(many.slots * many.workgroup, hidden / 4, "{what}");
                    assert_eq!(many.slots, per_thread, "{what}");
                }
            }
        }
    }

    /// A row is split only in the browser's tiling of long rows that the cache holds whole,
    /// never in place, into at most one part per cached slot; the grid has that many
    /// workgroups a row.
    #[test]
    fn rows_are_split_only_where_every_part_can_own_whole_slots() {
        let variant = |tiling| Variant {
            options: Options::default(),
            storage: Storage::F32,
            out_storage: Storage::F32,
            in_place: false,
            lanes: 4,
            tiling: Tiling::Fused(tiling),
        };
        for hidden in [4u32, 896, 1024, 4096, 4099, 8192, 16384, 1 << 20] {
            for web in [false, true] {
                let t = fused(hidden, Options::default(), 1, web);
                let long = web && hidden % 4 == 0 && hidden / 4 >= 1024 && t.exact;
                assert_eq!(t.workgroups_per_row(false), if long { 2 } else { 1 });
                assert_eq!(t.workgroups_per_row(true), 1);
                let inexact = FusedTiling { exact: false, ..t };
                assert_eq!(inexact.workgroups_per_row(false), 1);
                let v = variant(t);
                assert_eq!(v.workgroups_per_row(), t.workgroups_per_row(false));
                assert_eq!(v.grid(3, 65535), (3 * v.workgroups_per_row(), 1));
                assert_eq!(v.whole_rows().workgroups_per_row(), 1);
                let split = format!("const SPLIT: u32 = {}u;", v.workgroups_per_row());
                assert!(v.wgsl().contains(&split));
            }
        }
        let t = fused(4096, Options::default(), FEW_ROWS + 1, true);
        let asked = FusedTiling { split: 100, ..t };
        assert_eq!((t.slots, asked.workgroups_per_row(false)), (8, 8));
        // Folded past the per-dimension limit, whole rows' worth of workgroups included.
        let (x, y) = variant(FusedTiling { split: 2, ..t }).grid(40000, 65535);
        assert!(x <= 65535 && x as u64 * y as u64 >= 80000);
    }
}
