//! The family kernel's tiling (`norm_family.wgsl`: LayerNorm, the sandwich, and RMSNorm's
//! short rows): threads a row, rows a workgroup, where its weights are loaded, how its rows
//! reduce, and the WGSL's placeholders that follow from those. Measured on an H200 and an
//! H100 through Dawn, as [`crate::gpu::tiling`] is for the fused kernel (docs/PERFORMANCE.md).

use crate::call::device::Caps;
use crate::call::options::Options;
use crate::call::shape::NormKind;
use crate::gpu::kernel::{Storage, Variant, FAMILY_WGSL};
use crate::gpu::tiling::{CPU_WORKGROUP, FEW_ROWS};

/// Columns (of `V`) per thread that the family kernel keeps in registers at most; longer
/// rows are formed again from memory in each of its passes.
const FAMILY_SLOTS: u32 = 8;

impl Variant {
    /// The family kernel (`norm_family.wgsl`): LayerNorm, the sandwich, and RMSNorm's short
    /// rows. A row gets a thread per four vectors (so that a thread's loads are in flight
    /// together), up to `FAMILY_SLOTS` vectors a thread in registers, and rows of fewer than
    /// `FAMILY_GROUP` such threads share a workgroup of `FAMILY_GROUP`. Short rows (at most
    /// `SHORT_ROW_THREADS` threads of four vectors: QK-norm's heads of 64 and 128, rows up to
    /// 256) get a thread per two vectors instead, in workgroups of `SHORT_ROW_GROUP`: more
    /// loads in flight for the few each row has. Through Dawn on an H100, two against four
    /// vectors a thread: at 131072×64 LayerNorm 86.2 → 95.5 % of `a + b`, f16 results
    /// 89.1 → 98.5 %, the sandwich 95.0 → 99.7 %; at 65536×128 LayerNorm 90.8 → 96.3 %
    /// (docs/PERFORMANCE.md, 2026-12-06). (Each row in a workgroup of its own left 8 or 4 threads a workgroup:
    /// 21-40 % on an H200; eight vectors a thread: 65536×128 RMSNorm at 82.7 % against 92.6 %
    /// with four.) Rows of 32 threads or more fold their partials in the two-step fan-in, as
    /// the RMSNorm kernel's browser tiling does; rows of at most `FLAT_ROW_THREADS` several a
    /// workgroup fold flat. On a CPU adapter (SwiftShader) the small workgroups its fused
    /// kernel measured best with.
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
        let short = width.div_ceil(4) <= SHORT_ROW_THREADS;
        let (vectors, group) = if short {
            (2, SHORT_ROW_GROUP)
        } else {
            (4, FAMILY_GROUP)
        };
        let row_threads = pow2_below(width.div_ceil(vectors).next_power_of_two().min(most));
        let workgroup = row_threads.max(group.min(most));
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

/// The workgroup of short rows (`Variant::for_family`). 64 against 128 through Dawn on an
/// H100: at 65536×128 LayerNorm 90.7 → 91.6 %, the sandwich 94.6 → 96.2 %, LayerNorm's
/// sandwich 85.7 → 88.6 % of `a + b`; 256 lost at every shape and variant but RMSNorm
/// without a residual at 131072×64 (0.3–0.6 points up). (Longer rows keep 128: at 16384×768,
/// 64 cost LayerNorm 1.2 points and the sandwiches 1.7. A workgroup of one warp, 32, won
/// LayerNorm at 131072×64 by two points and lost the sandwich five at 32768×256 and
/// 65536×128.) docs/PERFORMANCE.md, 2026-12-06.
const SHORT_ROW_GROUP: u32 = 64;

/// Threads a row takes at four vectors a thread at most where it is short, and takes a thread
/// per two vectors instead (`Variant::for_family`): hidden ≤ 256. Measured on 64, 128 and
/// 256 (docs/PERFORMANCE.md, 2026-12-06); flat folding has its own bound below.
const SHORT_ROW_THREADS: u32 = 16;

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
        let preload = !caps.cpu_tiling && (rows <= FEW_ROWS || self.short_rms_sandwich());
        Variant { preload, ..self }
    }

    /// The RMSNorm sandwich on rows that share a workgroup, which loads its weights with the
    /// row rather than its residual (`for_family_rows`, `early_residual`).
    fn short_rms_sandwich(&self) -> bool {
        self.rows_per_group > 1 && self.options.post_gamma && self.options.kind == NormKind::Rms
    }
}

impl Variant {
    /// Threads a row of the family kernel: the workgroup, or its share of it.
    pub fn row_threads(&self) -> u32 {
        self.workgroup / self.rows_per_group.max(1)
    }

    /// `norm_family.wgsl` for this variant: which reduction folds a row's partials (flat, or
    /// the fan-in or the tree), how a row reads its totals (one row a workgroup: as uniform
    /// values), how a row's exact path sums (where its totals are uniform, reduced by the
    /// workgroup; else each lane alone from memory, `row_totals`, so that a row decides on it
    /// alone), and whether the sandwich loads its residual with the row. As text:
    /// WGSL's uniformity analysis prunes no branch on a constant, so a function choosing
    /// among them would need uniform control flow. `__` names are WGSL-reserved: nothing else
    /// matches.
    pub(crate) fn family_wgsl(&self) -> String {
        let reduce = if self.flat { "reduce_flat" } else { "reduce" };
        // Totals folded flat are each lane's own: never uniform values.
        let uniform = !self.flat && self.rows_per_group <= 1;
        let (total, exact) = if uniform {
            ("workgroupUniformLoad(&partials[0])", "totals")
        } else {
            ("partials[lid - t]", "row_totals")
        };
        FAMILY_WGSL
            .replace("__TOTAL__", total)
            .replace("__REDUCE__", reduce)
            .replace("__EXACT__", exact)
            .replace("__UNIFORM_TOTALS__", &uniform.to_string())
            .replace("__EARLY_RESIDUAL__", &self.early_residual().to_string())
    }

    /// Whether the sandwich loads its residual with the row: then the residual's round trip
    /// to memory overlaps the first normalization's reductions instead of following them.
    /// Through Dawn on an H100, LayerNorm's sandwich at 8192×4096 86.4 → 94.2–97.0 %, at
    /// 131072×64 86.2 → 93.1 %, at 65536×128 83.0 → 92.0 %; the RMSNorm sandwich at
    /// 16384×4096 98.3 → 99.4 %, at 1×4096 49.0 → 52.2 % of `a + b`. Not the RMSNorm sandwich
    /// on rows that share a workgroup, which loads its weights with the row
    /// (`for_family_rows`) and lost 0.7–2.0 points on short rows with its residual too (docs/PERFORMANCE.md, 2026-12-06). On a CPU
    /// adapter too, where it changes only when the residual is read, not what.
    fn early_residual(&self) -> bool {
        self.options.post_gamma && self.options.residual && !self.short_rms_sandwich()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The family kernel loads its weights with the row for decode-sized calls and for the
    /// RMSNorm sandwich on rows that share a workgroup, nowhere else and never on a CPU
    /// adapter, and its sandwich's residual everywhere else; short rows take a thread per two
    /// vectors. The choices reach the WGSL.
    #[test]
    fn the_family_preloads_for_decode_and_the_short_sandwich() {
        use crate::call::device::Caps;
        let caps = |cpu_tiling| Caps {
            max_binding: 1 << 30,
            max_groups_per_dim: 65535,
            max_workgroup: 256,
            shader_f16: true,
            timestamps: false,
            cpu_tiling,
        };
        for (hidden, short) in [(64u32, true), (128, true), (256, true), (4096, false)] {
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
                        // Short rows: a thread per two vectors, SHORT_ROW_GROUP threads.
                        if short && !cpu {
                            assert_eq!(
                                (v.row_threads(), v.workgroup),
                                (hidden / 8, SHORT_ROW_GROUP),
                                "{what}"
                            );
                        }
                        // Every sandwich with a residual but the RMSNorm one of short rows
                        // loads its residual with the row.
                        let early = post && !(short && !cpu && kind == NormKind::Rms);
                        assert!(
                            v.wgsl()
                                .contains(&format!("const EARLY_RESIDUAL: bool = {early};")),
                            "{what}"
                        );
                    }
                }
            }
        }
    }
}
