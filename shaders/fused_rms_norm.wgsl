// Fused residual add + optional bias + RMSNorm (gamma scale, optional beta shift).
//
//   v[r, i] = input[r, i] + residual[r, i] + bias[i]          (residual optional)
//   y[r, i] = v[r, i] * inverseSqrt(mean_i(v[r, i]^2) + eps) * (gamma[i] + offset) + beta[i]
//
// LayerNorm and the sandwich's post-norm are `norm_family.wgsl`.
//
// One workgroup owns one row (or SPLIT of them share it, see `owns`). Threads walk the row in
// steps of WG so that neighbouring threads touch neighbouring addresses (coalesced). Values
// are vec4 when hidden % 4 == 0 and scalar otherwise; `V` says which.
//
// A pipeline's choices are constants (src/gpu/kernel/mod.rs writes them at `#constants`, from the
// variant's tiling in src/gpu/kernel/tiling/fused.rs), beside those of `common.wgsl`:
//   WG         workgroup size
//   SLOTS      how many columns per thread are kept in registers between the two phases
//              (`row_cache.wgsl`); the rest of a long row is read from memory again
//   FAN        0: pairwise tree reduction (log2(WG) barriers); otherwise FAN lanes each fold
//              WG / FAN partials, then one lane folds those (three barriers whatever WG is)
//   PRELOAD    gamma and beta of the cached columns are loaded before the reduction, so
//              their latency hides behind it
//   EXACT      the row is exactly SLOTS * WG columns, so the cached columns need no bounds
//              checks (set only for the hidden it was made for)
//   SPLIT      workgroups per row (see `owns`); 1 but for decode-sized calls
//   HAS_OFFSET whether gamma_offset is added (a call with gammaOffset other than 0)
// so every variant is straight-line code with no per-element branching on options. In place,
// y goes to input and v to residual, both in phase 2, so that nothing is overwritten while a
// rescaled row still reads it.

#include "common.wgsl"
#include "row_cache.wgsl"

// One column of one thread: v, and gamma and beta when PRELOAD.
struct Slot {
    v: V,
    g: V,
    b: V,
};

// Per-thread (sum of squares, largest magnitude) pairs.
var<workgroup> partials: array<vec2<f32>, WG>;

fn combine(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2(a.x + b.x, max(a.y, b.y));
}

fn reduce_workgroup(lid: u32, value: vec2<f32>) -> vec2<f32> {
    partials[lid] = value;
    workgroupBarrier();
    if FAN == 0u {
        for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
            if lid < stride {
                partials[lid] = combine(partials[lid], partials[lid + stride]);
            }
            workgroupBarrier();
        }
    } else {
        // Lane l folds l, l + FAN, l + 2 FAN, ...: neighbouring lanes read
        // neighbouring words, and no lane reads another's result slot. The trip
        // counts are constants, not bounds that depend on the lane, so that the
        // compiler unrolls the loops and issues a lane's reads together, which a
        // decode row waits on (docs/performance.md, "Tiling of the RMSNorm kernel").
        if lid < FAN {
            var a = partials[lid];
            // max: FAN is 0 for the tree, and this branch is still evaluated as a constant.
            for (var k = 1u; k < WG / max(FAN, 1u); k++) {
                a = combine(a, partials[lid + k * FAN]);
            }
            partials[lid] = a;
        }
        workgroupBarrier();
        if lid == 0u {
            var a = partials[0];
            for (var k = 1u; k < FAN; k++) {
                a = combine(a, partials[k]);
            }
            partials[0] = a;
        }
    }
    return workgroupUniformLoad(&partials[0]);
}

// gamma plus the offset only where the call has one: the add costs a memory-bound kernel
// measurably (docs/performance.md, "Tiling of the RMSNorm kernel").
fn gamma_at(i: u32) -> V {
    var g = ld(gamma[i]);
    if HAS_OFFSET {
        g += params.gamma_offset;
    }
    return g;
}

fn load_v(base: u32, i: u32) -> V {
    var v = ld(input[base + i]);
    if HAS_RESIDUAL {
        v += ld(residual[base + i]);
    }
    if HAS_BIAS {
        v += ld(bias[i]);
    }
    return v;
}

// v * scale for a power of two `scale`, formed from scaled terms: the inputs of
// a tiny row can be normal while their sum is subnormal, which a GPU may flush
// to zero; scaled first, every term and sum is normal. Scaling by 2^k is exact,
// so this is the f32 sum the reference forms, times scale. Written as fma: as
// a * s + b * s, NVIDIA's compiler factors it into (a + b) * s, and the sum is
// flushed after all (docs/numerics.md).
fn load_v_scaled(base: u32, i: u32, scale: f32) -> V {
    let s = V(scale);
    var v = ld(input[base + i]) * s;
    if HAS_RESIDUAL {
        v = fma(ld(input[base + i]), s, ld(residual[base + i]) * s);
    }
    if HAS_BIAS {
        v = fma(ld(bias[i]), s, v);
    }
    return v;
}

// SPLIT > 1 spreads a row over SPLIT workgroups, `part` 0 .. SPLIT - 1 of it. Each
// reads the whole row for its sums (workgroups cannot wait on each other) but loads
// gamma and beta for, and writes, only the cached slots it owns: a decode row's loads
// and stores then go through several SMs rather than one (docs/performance.md,
// "Tiling of the RMSNorm kernel"). Only variants whose cache holds the whole row, and
// never in place, are split (`FusedTiling::workgroups_per_row`), so the uncached loops
// below own nothing then and never run.
var<private> part: u32;

fn owns(slot: u32) -> bool {
    return SPLIT == 1u || slot * SPLIT / max(SLOTS, 1u) == part;
}

fn fetch(base: u32, i: u32, own: bool) -> Slot {
    var s: Slot;
    s.v = load_v(base, i);
    if PRELOAD && own {
        s.g = gamma_at(i);
        if HAS_BETA {
            s.b = ld(beta[i]);
        }
    }
    return s;
}

// Column i again in phase 2, when it was not cached. In place too, v is formed
// again from input and residual, which phase 1 left as they were: reading v back
// from residual would read it rounded to the storage type (f16), and y would be
// rounded twice.
fn refetch(base: u32, i: u32) -> Slot {
    var s: Slot;
    s.v = load_v(base, i);
    s.g = gamma_at(i);
    if HAS_BETA {
        s.b = ld(beta[i]);
    }
    return s;
}

// `acc` with column v added: its squares' sum and its largest magnitude.
fn tallied(acc: vec2<f32>, v: V) -> vec2<f32> {
    return combine(acc, vec2(square_sum(v), max_abs(v)));
}

// `s` with gamma and beta of column i, from memory unless PRELOAD has them.
fn with_affine(i: u32, s: Slot) -> Slot {
    var t = s;
    if !PRELOAD {
        t.g = gamma_at(i);
        if HAS_BETA {
            t.b = ld(beta[i]);
        }
    }
    return t;
}

fn store_y(base: u32, i: u32, s: Slot, post: f32) {
    var y = s.v * post * s.g;
    if HAS_BETA {
        y += s.b;
    }
    put_y(base + i, y);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // More than 65535 workgroups fold into a 2-D grid (per-dimension dispatch limit).
    let group = wg.x + wg.y * groups.x;
    let row = group / SPLIT;
    part = group % SPLIT;
    if row >= params.rows {
        return;
    }
    let width = params.width;
    let base = row * width;

    // Phase 1: v, its sum of squares and its largest magnitude, in one read.
    var cache: Cache;
    var acc = vec2(0.0);
    fill(&cache, base, lid, width, &acc);
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        let v = load_v(base, i);
        acc = tallied(acc, v);
        // In place, an uncached column's v goes to residual in phase 2, once y
        // no longer needs the residual it came from.
        if WRITE_SUM && !IN_PLACE && owns(i / WG) {
            put_v(base + i, v);
        }
    }
    let total = reduce_workgroup(lid, acc);

    // y = v * post * gamma + beta, post = inverseSqrt(mean + eps). A row whose
    // squares overflow f32 (values ~1e20 and up) or underflow it (~1e-19 and
    // down) is normalized from v scaled by a power of two instead, formed again
    // from the scaled inputs, so it normalizes like a row of ~1. Only such rows
    // pay for the second pass. NaN and Inf rows stay on the plain path and
    // poison only themselves.
    var post = inverseSqrt(total.x / params.hidden + params.eps);
    var scale = 1.0;
    if needs_rescaling(total.x, total.y) {
        let k = rescale_exponent(total.y);
        var squares = 0.0;
        for (var i = lid; i < width; i += WG) {
            squares += square_sum(load_v_scaled(base, i, ldexp(1.0, k)));
        }
        // Every lane has read the first result before `partials` is reused.
        workgroupBarrier();
        let mean = reduce_workgroup(lid, vec2(squares, 0.0)).x / params.hidden;
        let eps_scaled = eps_rescaled(k);
        if is_finite(eps_scaled) {
            scale = ldexp(1.0, k);
            post = inverseSqrt(mean + eps_scaled);
        } else {
            // eps dominates a mean this small by more than f32 can see.
            post = inverseSqrt(params.eps);
        }
    }

    // Phase 2: normalize and write (in place, v too: nothing was overwritten before).
    if scale != 1.0 {
        for (var i = lid; i < width; i += WG) {
            if !owns(i / WG) {
                continue;
            }
            var s = refetch(base, i);
            // Scaled from the residual before v goes over it in place.
            let scaled = load_v_scaled(base, i, scale);
            if IN_PLACE {
                put_v(base + i, s.v);
            }
            s.v = scaled;
            store_y(base, i, s, post);
        }
        return;
    }
    drain(&cache, base, lid, width, post);
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        if !owns(i / WG) {
            continue;
        }
        let s = refetch(base, i);
        if IN_PLACE {
            put_v(base + i, s.v);
        }
        store_y(base, i, s, post);
    }
}
