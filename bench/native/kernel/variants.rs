//! Which tilings are timed: the crate's choice for a shape with `--set`'s knobs applied, and
//! the grid `--sweep` walks.

use webgpu_rmsnorm::call::device::Caps;
use webgpu_rmsnorm::call::options::Options;
use webgpu_rmsnorm::call::plan::Kernel;
use webgpu_rmsnorm::gpu::kernel::tiling::fused::FusedTiling;
use webgpu_rmsnorm::gpu::kernel::tiling::{balanced_fan, lanes, max_slots, FEW_ROWS};
use webgpu_rmsnorm::gpu::kernel::{Storage, Tiling, Variant};

/// `tiling` with one knob changed. `slots=full` covers the row; setting `wg` alone also
/// resets `slots` to cover the row at the new size.
pub fn apply_knob(mut t: FusedTiling, key: &str, value: &str) -> Result<FusedTiling, String> {
    let num = || {
        value
            .parse::<u32>()
            .map_err(|_| format!("{key}={value}: not a number"))
    };
    let flag = || match value {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("{key}={value}: not 0 or 1")),
    };
    match key {
        "wg" => {
            let wg = num()?;
            if !wg.is_power_of_two() || wg > 1024 {
                return Err(format!("wg={wg}: not a power of two up to 1024"));
            }
            t.workgroup = wg;
        }
        "slots" if value == "full" => t.slots = u32::MAX,
        "slots" => t.slots = num()?,
        "fan" if value == "bal" => t.fan = balanced_fan(t.workgroup),
        "fan" => t.fan = num()?,
        "preload" => t.preload = flag()?,
        "exact" => t.exact = flag()?,
        "split" => t.split = num()?.max(1),
        _ => {
            return Err(format!(
                "{key}: not one of wg, slots, fan, preload, exact, split"
            ))
        }
    }
    Ok(t)
}

/// What the crate runs a call of `rows` rows of `hidden` as on this device (the tiling for
/// that many rows included), with the command line's overrides.
pub fn chosen(
    caps: &Caps,
    rows: usize,
    hidden: usize,
    options: Options,
    set: &[(String, String)],
) -> Variant {
    overridden(
        Kernel::f32(hidden, options).variant(caps, rows),
        hidden,
        set,
    )
}

/// The browser's choice for a row of `hidden` (Dawn's tiling, as for a call of more than a
/// few rows: rows not split), with the command line's overrides: for `--emit-wgsl`.
pub fn chosen_for_web(
    hidden: usize,
    options: Options,
    set: &[(String, String)],
    max_wg: u32,
) -> Variant {
    let caps = Caps {
        max_binding: 1 << 30,
        max_groups_per_dim: 65535,
        max_workgroup: max_wg,
        shader_f16: true,
        timestamps: false,
        cpu_tiling: false,
    };
    let v = Kernel::f32(hidden, options).variant_on(&caps, FEW_ROWS + 1, true);
    overridden(v, hidden, set)
}

/// `v` with `--set`'s knobs applied (to the fused kernel's tiling; the family kernel has
/// none here).
fn overridden(v: Variant, hidden: usize, set: &[(String, String)]) -> Variant {
    let Tiling::Fused(mut t) = v.tiling else {
        if !set.is_empty() {
            eprintln!(
                "bench: --set applies to the fused kernel; {} is not",
                v.label()
            );
            std::process::exit(2)
        }
        return v;
    };
    let mut slots_set = false;
    for (k, val) in set {
        t = apply_knob(t, k, val).expect("checked when parsed");
        slots_set |= k == "slots";
    }
    let width = hidden as u32 / v.lanes;
    let full = width.div_ceil(t.workgroup).clamp(1, max_slots(v.lanes));
    if t.slots == u32::MAX || (!slots_set && set.iter().any(|(k, _)| k == "wg")) {
        t.slots = full;
    }
    // Dropping the bounds checks is only right where the row fills the cache exactly.
    t.exact &= t.slots * t.workgroup == width;
    fused(v, t)
}

/// `v` (its options and data) with the fused kernel tiled as `t`.
fn fused(v: Variant, tiling: FusedTiling) -> Variant {
    Variant {
        tiling: Tiling::Fused(tiling),
        ..v
    }
}

/// The tiling grid `--sweep` times for rows of `hidden`, in workgroups of up to `max_wg`.
pub fn sweep_candidates(hidden: usize, options: Options, max_wg: u32) -> Vec<Variant> {
    let lanes = lanes(hidden as u32);
    let width = hidden as u32 / lanes;
    let base = Variant {
        options,
        storage: Storage::F32,
        out_storage: Storage::F32,
        in_place: false,
        lanes,
        tiling: Tiling::Fused(FusedTiling {
            workgroup: 1,
            slots: 1,
            fan: 0,
            preload: false,
            exact: false,
            split: 1,
        }),
    };
    let mut out = Vec::new();
    for wg in [32u32, 64, 128, 256, 512, 1024]
        .into_iter()
        .filter(|&wg| wg <= max_wg)
    {
        let full = width.div_ceil(wg);
        let fan = balanced_fan(wg);
        let exact = full * wg == width;
        let at = |slots, fan, preload, exact| {
            let t = FusedTiling {
                workgroup: wg,
                slots,
                fan,
                preload,
                exact,
                split: 1,
            };
            fused(base, t)
        };
        // A workgroup of one warp only pays where the row is short.
        if full <= max_slots(lanes) && (wg > 32 || full <= 8) {
            for preload in [false, true] {
                out.push(at(full, fan, preload, false));
                if exact {
                    out.push(at(full, fan, preload, true));
                }
            }
            // The pairwise tree, for comparison.
            out.push(at(full, 0, false, exact));
        }
        if wg >= 128 {
            // Nothing held: the write phase reads the row again (from L2, mostly).
            out.push(at(0, fan, false, false));
        }
    }
    out
}

/// The knobs of `v`, as `--set` spells them (the family kernel's: its label).
pub fn short(v: &Variant) -> String {
    let Tiling::Fused(t) = v.tiling else {
        return v.label();
    };
    format!(
        "wg={} slots={} fan={} preload={} exact={}{}",
        t.workgroup,
        t.slots,
        t.fan,
        t.preload as u8,
        t.exact as u8,
        match v.workgroups_per_row() {
            1 => String::new(),
            k => format!(" split={k}"),
        }
    )
}
