//! The family kernel's tiling (`norm_family.wgsl`: LayerNorm, the sandwich, and RMSNorm's
//! short rows): threads a row, rows a workgroup, where its weights and the sandwich's residual
//! are loaded, and how its rows reduce. Each choice was measured through Dawn, as
//! [`super::fused`]'s are for the fused kernel (docs/performance.md, "The family
//! kernel's tiling").

use crate::call::device::Caps;
use crate::call::plan::Kernel;
use crate::call::rotary::RotaryStyle;
use crate::call::shape::NormKind;

use super::{balanced_fan, pow2_floor, CPU_WORKGROUP, FEW_ROWS, SHORT_ROW};

/// Columns (of `V`) per thread that the family kernel keeps in registers at most; longer
/// rows are formed again from memory in each of its passes.
const FAMILY_SLOTS: u32 = 8;

/// The family kernel's largest workgroup.
const MOST_THREADS: u32 = 256;

/// The workgroup that rows too short for one of their own share: one row a workgroup would
/// leave most of its threads idle.
const FAMILY_GROUP: u32 = 128;

/// The workgroup of short rows ([`SHORT_ROW`]), smaller than other rows' so that more of them
/// run at once; larger and smaller ones lost.
const SHORT_ROW_GROUP: u32 = 64;

/// Threads a row at most where rows several a workgroup fold their partials flat (QK-norm's
/// heads): each lane reads this many partials after one barrier, where the tree waits on
/// 2 + log2 of it.
const FLAT_ROW_THREADS: u32 = 16;

/// How the family kernel (`norm_family.wgsl`) spreads its rows over workgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FamilyTiling {
    /// Workgroup size, a power of two.
    pub workgroup: u32,
    /// Rows a workgroup normalizes (short rows: QK-norm's heads); each takes
    /// `workgroup / rows_per_group` threads.
    pub rows_per_group: u32,
    /// Columns (of `V`) each thread keeps in registers through every reduction.
    pub slots: u32,
    /// Reduction fan-in: 0 for a pairwise tree, else this many lanes of a row fold its
    /// partials first.
    pub fan: u32,
    /// Rows fold their partials flat: every lane of a row folds all of them itself.
    pub flat: bool,
    /// The weights are loaded with the row, before the reductions.
    pub preload: bool,
    /// The sandwich loads its residual with the row.
    pub early_residual: bool,
}

impl FamilyTiling {
    /// The tiling of `kernel`'s calls of `rows` rows on a device with `caps`.
    ///
    /// A row gets a thread per four vectors (so that a thread's loads are in flight
    /// together), a short row a thread per two (more loads in flight for the few it has), up
    /// to `FAMILY_SLOTS` vectors a thread in registers; rows too short for a workgroup of
    /// their own share one. Rows of 32 threads or more fold their partials in the two-step
    /// fan-in, as the fused kernel's browser tiling does. On a CPU adapter, the small
    /// workgroups the fused kernel measured best with there.
    pub fn choose(kernel: &Kernel, caps: &Caps, rows: usize) -> FamilyTiling {
        let hidden = kernel.hidden as u32;
        let width = hidden / kernel.lanes();
        let most = pow2_floor(if caps.cpu_tiling {
            CPU_WORKGROUP
        } else {
            MOST_THREADS.min(caps.max_workgroup)
        });
        let short = width <= SHORT_ROW;
        let (vectors, group) = if short {
            (2, SHORT_ROW_GROUP)
        } else {
            (4, FAMILY_GROUP)
        };
        let row_threads = pow2_floor(width.div_ceil(vectors).next_power_of_two().min(most))
            .min(rotary_threads(kernel));
        let workgroup = row_threads.max(group.min(most));
        let rows_per_group = workgroup / row_threads;
        let options = kernel.options;
        // The RMSNorm sandwich on rows that share a workgroup loads its weights with the row,
        // and its residual after.
        let short_rms_sandwich =
            rows_per_group > 1 && options.post_gamma && options.kind == NormKind::Rms;
        FamilyTiling {
            workgroup,
            rows_per_group,
            slots: width.div_ceil(row_threads).clamp(1, FAMILY_SLOTS),
            fan: if row_threads >= 32 && !caps.cpu_tiling {
                balanced_fan(row_threads)
            } else {
                0
            },
            flat: rows_per_group > 1 && row_threads <= FLAT_ROW_THREADS,
            // A decode row otherwise waits on one more round trip to memory after its
            // reductions; elsewhere the weights' registers, held across the reductions, cost
            // more than the round trip, which other workgroups' loads hide.
            preload: !caps.cpu_tiling && (rows <= FEW_ROWS || short_rms_sandwich),
            // Then the residual's round trip overlaps the first normalization's reductions
            // instead of following them. On a CPU adapter too, where it changes only when the
            // residual is read, not what.
            early_residual: options.post_gamma && options.residual && !short_rms_sandwich,
        }
    }

    /// Threads a row: the workgroup, or its share of it.
    pub fn row_threads(&self) -> u32 {
        self.workgroup / self.rows_per_group.max(1)
    }

    /// Whether a row reads its totals as uniform values (one row a workgroup, reduced by the
    /// fan-in or the tree: folded flat, they are each lane's own), and so the workgroup
    /// reduces its exact path's sums; else each row decides alone, from memory.
    pub fn uniform_totals(&self) -> bool {
        !self.flat && self.rows_per_group <= 1
    }
}

/// The most threads a row of a rotary stage may take, so that the thread that holds a value
/// of a pair holds its partner too (`norm_family.wgsl`, `store_turned`): columns `t + k·ROW_T`
/// of a thread then meet every head and every half of a head at the same place. Interleaved
/// pairs sit in one vector; a scalar row's are neighbours, which one thread must hold.
fn rotary_threads(kernel: &Kernel) -> u32 {
    let Some(r) = kernel.options.rotary else {
        return u32::MAX;
    };
    let lanes = kernel.lanes();
    match r.style {
        RotaryStyle::Interleaved if lanes == 1 => 1,
        RotaryStyle::Interleaved => u32::MAX,
        RotaryStyle::NeoX => {
            let (half, head) = (r.rotary_dim / 2 / lanes, r.head_size / lanes);
            // The largest power of two dividing both.
            let both = half | head;
            both & both.wrapping_neg()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::options::Options;

    /// The family kernel loads its weights with the row for decode-sized calls and for the
    /// RMSNorm sandwich on rows that share a workgroup, nowhere else and never on a CPU
    /// adapter, and its sandwich's residual everywhere else; short rows take a thread per two
    /// vectors. The choices reach the WGSL.
    #[test]
    fn the_family_preloads_for_decode_and_the_short_sandwich() {
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
                let kernel = Kernel::f32(hidden as usize, options);
                for rows in [1usize, FEW_ROWS, FEW_ROWS + 1, 65536] {
                    for cpu in [false, true] {
                        let v = kernel.variant(&caps(cpu), rows);
                        let crate::gpu::kernel::Tiling::Family(t) = v.tiling else {
                            panic!("{}: not the family kernel", v.label())
                        };
                        let want =
                            !cpu && (rows <= FEW_ROWS || (short && post && kind == NormKind::Rms));
                        let what = format!("{hidden} {kind:?} post {post} rows {rows} cpu {cpu}");
                        assert_eq!(t.rows_per_group > 1, short && !cpu, "{what}");
                        assert_eq!(t.preload, want, "{what}");
                        assert!(v.wgsl().contains(&format!("const PRELOAD: bool = {want};")));
                        // Short rows: a thread per two vectors, SHORT_ROW_GROUP threads.
                        if short && !cpu {
                            assert_eq!(
                                (t.row_threads(), t.workgroup),
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
