//! The family kernel's tiling (`norm_family.wgsl`: LayerNorm, the sandwich, and RMSNorm's
//! short rows): threads a row, rows a workgroup, where its weights are loaded, how its rows
//! reduce, and the WGSL's placeholders that follow from those. Measured on an H200 and an
//! H100 through Dawn, as [`crate::gpu::tiling`] is for the fused kernel (docs/PERFORMANCE.md).

use crate::call::shape::NormKind;
use crate::gpu::device::Caps;
use crate::gpu::kernel::{Storage, Variant, FAMILY_WGSL};
use crate::gpu::options::Options;
use crate::gpu::tiling::{CPU_WORKGROUP, FEW_ROWS};

/// Columns (of `V`) per thread that the family kernel keeps in registers at most; longer
/// rows are formed again from memory in each of its passes.
const FAMILY_SLOTS: u32 = 8;

impl Variant {
    /// The family kernel (`norm_family.wgsl`): LayerNorm, the sandwich, and RMSNorm's short
    /// rows. A row gets a thread per four vectors (so that a thread's loads are in flight
    /// together), up to `FAMILY_SLOTS` vectors a thread in registers; rows of fewer than
    /// `FAMILY_GROUP` such threads share a workgroup of `FAMILY_GROUP`. Each row of a QK-norm
    /// call (heads of 64 or 128) in a workgroup of its own left 8 or 4 threads a workgroup:
    /// 21-40 % of the `a + b` roofline on an H200 through Dawn (docs/PERFORMANCE.md). Eight
    /// vectors a thread on those short rows (half the threads, one reduction level fewer)
    /// measured worse there, not better: 65536×128 RMSNorm at 82.7 % against 92.6 % with
    /// four, 131072×64 at 66.6 % against 86.2 % (fewer threads in flight hide less latency).
    /// Rows of 32 threads or more fold their partials in the two-step fan-in, as the RMSNorm
    /// kernel's browser tiling does; rows of at most `FLAT_ROW_THREADS` several a workgroup
    /// fold flat. On a CPU adapter (SwiftShader) the small workgroups its fused kernel
    /// measured best with.
    pub fn for_family(hidden: u32, options: Options, caps: &Caps) -> Variant {
        let lanes = if hidden.is_multiple_of(4) { 4 } else { 1 };
        let width = hidden / lanes;
        let most = if caps.cpu_tiling {
            CPU_WORKGROUP
        } else {
            256.min(caps.max_workgroup)
        };
        let pow2_below = |n: u32| 1u32 << (31 - n.max(1).leading_zeros());
        let most = pow2_below(most);
        let row_threads = pow2_below(width.div_ceil(4).next_power_of_two().min(most));
        let workgroup = row_threads.max(FAMILY_GROUP.min(most));
        let rows_per_group = workgroup / row_threads;
        // Storage and in place are the call's (`Kernel::variant`); the fused kernel's knobs
        // (struct cache, split rows, exact widths) do not exist here.
        Variant {
            options,
            storage: Storage::F32,
            out_storage: Storage::F32,
            in_place: false,
            lanes,
            workgroup,
            rows_per_group,
            slots: width.div_ceil(row_threads).clamp(1, FAMILY_SLOTS),
            fan: if row_threads >= 32 && !caps.cpu_tiling {
                Self::balanced_fan(row_threads)
            } else {
                0
            },
            flat: rows_per_group > 1 && row_threads <= FLAT_ROW_THREADS,
            preload: false,
            unroll: false,
            exact: false,
            split: 1,
        }
    }
}

/// The workgroup that rows too short for one of their own share (see `Variant::for_family`).
const FAMILY_GROUP: u32 = 128;

/// Threads a row at most where rows several a workgroup fold their partials flat (QK-norm's
/// heads): each lane reads this many partials after one barrier, where the tree waits on
/// 2 + log2 of it. On an H100 through Dawn and in Chrome, 131072×64 RMSNorm 92.5 → 95.2 % of
/// `a + b`, LayerNorm's sandwich 81.3 → 85.1 % (docs/PERFORMANCE.md, 2026-12-06).
const FLAT_ROW_THREADS: u32 = 16;

impl Variant {
    /// The family kernel's tiling for a call of `rows` rows, where it differs from `self`:
    /// the weights loaded with the row (PRELOAD) for decode-sized calls and for the RMSNorm
    /// sandwich on short rows. A decode row otherwise waits on one more round trip to memory
    /// after its reductions; elsewhere the weights' registers, held across the reductions,
    /// cost more than the round trip, which other workgroups' loads hide. Measured through
    /// Dawn (docs/PERFORMANCE.md, "The family's weights with the row"): on an H100 at 1×4096
    /// LayerNorm with bias and beta 4.81 → 4.20 µs, the sandwich 5.00 → 4.45, LayerNorm's
    /// sandwich 5.75 → 5.73; at 65536×128 the sandwich 89.0 → 92.6 % of `a + b`; but at
    /// 8192×4096 LayerNorm 95.8 → 88.8 % and its sandwich 86.5 → 63.3 %, at 65536×128
    /// RMSNorm 96.4 → 94.0 % and LayerNorm's sandwich 80.8 → 65.6 %.
    pub fn for_family_rows(self, rows: usize, caps: &Caps) -> Variant {
        let short_sandwich = self.rows_per_group > 1
            && self.options.post_gamma
            && self.options.kind == NormKind::Rms;
        let preload = !caps.cpu_tiling && (rows <= FEW_ROWS || short_sandwich);
        Variant { preload, ..self }
    }
}

impl Variant {
    /// Threads a row of the family kernel: the workgroup, or its share of it.
    pub fn row_threads(&self) -> u32 {
        self.workgroup / self.rows_per_group.max(1)
    }

    /// `norm_family.wgsl` for this variant: which reduction folds a row's partials (flat, or
    /// the fan-in or the tree), how a row reads its totals (one row a workgroup: as uniform
    /// values), and how a workgroup decides on the exact path: on uniform totals directly,
    /// else through `any_row`. As text: WGSL's uniformity analysis prunes no branch on a
    /// constant, so a function choosing among them returns a non-uniform total. `__` names
    /// are WGSL-reserved: nothing else matches.
    pub(crate) fn family_wgsl(&self) -> String {
        let reduce = if self.flat { "reduce_flat" } else { "reduce" };
        // Totals folded flat are each lane's own: never uniform values.
        let (total, any) = if !self.flat && self.rows_per_group <= 1 {
            (
                "workgroupUniformLoad(&partials[0])",
                "(rescale || off_center)",
            )
        } else {
            (
                "partials[lid - t]",
                "any_row(lid, which, rescale || off_center)",
            )
        };
        FAMILY_WGSL
            .replace("__TOTAL__", total)
            .replace("__ANY_ROW__", any)
            .replace("__REDUCE__", reduce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The family kernel loads its weights with the row for decode-sized calls and for the
    /// RMSNorm sandwich on rows that share a workgroup, nowhere else and never on a CPU
    /// adapter; the choice reaches the WGSL.
    #[test]
    fn the_family_preloads_for_decode_and_the_short_sandwich() {
        use crate::gpu::device::Caps;
        let caps = |cpu_tiling| Caps {
            max_binding: 1 << 30,
            max_groups_per_dim: 65535,
            max_workgroup: 256,
            shader_f16: true,
            timestamps: false,
            cpu_tiling,
        };
        for (hidden, short) in [(64u32, true), (128, true), (4096, false)] {
            for (kind, post) in [
                (NormKind::Layer, false),
                (NormKind::Layer, true),
                (NormKind::Rms, true),
            ] {
                let options = Options {
                    kind,
                    post_gamma: post,
                    ..Options::default()
                };
                for rows in [1usize, FEW_ROWS, FEW_ROWS + 1, 65536] {
                    for cpu in [false, true] {
                        let v = Variant::for_family(hidden, options, &caps(cpu))
                            .for_family_rows(rows, &caps(cpu));
                        let want =
                            !cpu && (rows <= FEW_ROWS || (short && post && kind == NormKind::Rms));
                        let what = format!("{hidden} {kind:?} post {post} rows {rows} cpu {cpu}");
                        assert_eq!(v.rows_per_group > 1, short && !cpu, "{what}");
                        assert_eq!(v.preload, want, "{what}");
                        assert!(v.wgsl().contains(&format!("const PRELOAD: bool = {want};")));
                    }
                }
            }
        }
    }
}
