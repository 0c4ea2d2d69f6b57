//! Which tilings are timed: the crate's choice for a shape with `--set`'s knobs applied, and
//! the grid `--sweep` walks.

use webgpu_rmsnorm::call::device::Caps;
use webgpu_rmsnorm::call::dtype::Dtype;
use webgpu_rmsnorm::call::options::Options;
use webgpu_rmsnorm::call::plan::Kernel;
use webgpu_rmsnorm::gpu::kernel::Variant;
use webgpu_rmsnorm::gpu::tiling::max_slots;

/// `variant` with one knob changed. `slots=full` covers the row; setting `wg` alone also
/// resets `slots` to cover the row at the new size.
pub fn apply_knob(mut v: Variant, key: &str, value: &str) -> Result<Variant, String> {
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
            v.workgroup = wg;
        }
        "slots" if value == "full" => v.slots = u32::MAX,
        "slots" => v.slots = num()?,
        "fan" if value == "bal" => v.fan = Variant::balanced_fan(v.workgroup),
        "fan" => v.fan = num()?,
        "flat" => v.flat = flag()?,
        "preload" => v.preload = flag()?,
        "unroll" => v.unroll = flag()?,
        "exact" => v.exact = flag()?,
        "split" => v.split = num()?.max(1),
        _ => {
            return Err(format!(
                "{key}: not one of wg, slots, fan, flat, preload, unroll, exact, split"
            ))
        }
    }
    Ok(v)
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
    let kernel = Kernel {
        hidden,
        options,
        dtype: Dtype::F32,
        out_dtype: Dtype::F32,
        in_place: false,
    };
    overridden(kernel.variant(caps, rows), hidden, set)
}

/// The browser's choice for a row of `hidden` (Dawn's tiling, as for a decode-sized call
/// without the row split), with the command line's overrides: for `--emit-wgsl`.
pub fn chosen_for_web(
    hidden: usize,
    options: Options,
    set: &[(String, String)],
    max_wg: u32,
) -> Variant {
    let v = Variant::for_stack(hidden as u32, options, true).within(hidden as u32, max_wg);
    overridden(v, hidden, set)
}

/// `v` with `--set`'s knobs applied.
fn overridden(mut v: Variant, hidden: usize, set: &[(String, String)]) -> Variant {
    let mut slots_set = false;
    for (k, val) in set {
        v = apply_knob(v, k, val).expect("checked when parsed");
        slots_set |= k == "slots";
    }
    let full = width(hidden, v)
        .div_ceil(v.workgroup)
        .clamp(1, max_slots(v.lanes));
    if v.slots == u32::MAX || (!slots_set && set.iter().any(|(k, _)| k == "wg")) {
        v.slots = full;
    }
    // Dropping the bounds checks is only right where the row fills the cache exactly.
    v.exact &= v.slots * v.workgroup == width(hidden, v);
    v
}

fn width(hidden: usize, v: Variant) -> u32 {
    hidden as u32 / v.lanes
}

/// The tiling grid `--sweep` times for rows of `hidden`, in workgroups of up to `max_wg`.
pub fn sweep_candidates(hidden: usize, options: Options, max_wg: u32) -> Vec<Variant> {
    let base = Variant::for_shape(hidden as u32, options);
    let width = width(hidden, base);
    let mut out = Vec::new();
    for wg in [32u32, 64, 128, 256, 512, 1024]
        .into_iter()
        .filter(|&wg| wg <= max_wg)
    {
        let full = width.div_ceil(wg);
        let fan = Variant::balanced_fan(wg);
        let exact = full * wg == width;
        let at = |slots, fan, preload, unroll, exact| Variant {
            workgroup: wg,
            slots,
            fan,
            preload,
            unroll,
            exact,
            ..base
        };
        // A workgroup of one warp only pays where the row is short.
        if full <= max_slots(base.lanes) && (wg > 32 || full <= 8) {
            for preload in [false, true] {
                out.push(at(full, fan, preload, true, false));
                if exact {
                    out.push(at(full, fan, preload, true, true));
                }
            }
            // The pairwise tree, and the cache as an array indexed in a loop, for comparison.
            out.push(at(full, 0, false, true, exact));
            if full > 1 {
                out.push(at(full, fan, false, false, false));
            }
        }
        // One barrier and every lane folding every partial: for small workgroups, where
        // the tree's barriers are most of a short row's reduction.
        if full <= max_slots(base.lanes) && wg <= 256 {
            for preload in [false, true] {
                out.push(Variant {
                    flat: true,
                    ..at(full, 0, preload, true, exact)
                });
            }
        }
        if wg >= 128 {
            // Nothing held: the write phase reads the row again (from L2, mostly).
            out.push(at(0, fan, false, false, false));
        }
    }
    out
}

/// The knobs of `v`, as `--set` spells them.
pub fn short(v: &Variant) -> String {
    format!(
        "wg={} slots={} fan={} flat={} preload={} unroll={} exact={}{}",
        v.workgroup,
        v.slots,
        v.fan,
        v.flat as u8,
        v.preload as u8,
        v.unroll as u8,
        v.exact as u8,
        match v.split_in() {
            1 => String::new(),
            k => format!(" split={k}"),
        }
    )
}
