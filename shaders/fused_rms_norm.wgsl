// Fused residual add + optional bias + RMSNorm (gamma scale, optional beta shift).
//
//   v[r, i] = input[r, i] + residual[r, i] + bias[i]          (residual optional)
//   y[r, i] = v[r, i] * inverseSqrt(mean_i(v[r, i]^2) + eps) * (gamma[i] + offset) + beta[i]
//
// LayerNorm and the sandwich's post-norm are `norm_family.wgsl`.
//
// One workgroup owns one row (or SPLIT of them share it, see `owns`). Threads
// walk the row in steps of WG so that neighbouring threads touch neighbouring
// addresses (coalesced). Values are vec4 when hidden % 4 == 0 and scalar
// otherwise; `V` says which.
//
// The driver (src/gpu/kernel.rs) prepends a prelude that defines, per pipeline:
//   WG         workgroup size
//   SLOTS      how many columns per thread are kept in registers between the
//              two phases; the rest of a long row is read from memory again
//   FAN        0: pairwise tree reduction (log2(WG) barriers); otherwise FAN
//              lanes each fold WG / FAN partials, then one lane folds those
//              (three barriers whatever WG is)
//   FLAT       one barrier, then every lane folds every partial itself (and
//              one more barrier to make the rescaling decision uniform): two
//              barriers in all, for small workgroups; FAN then serves only the
//              rescaled path's second reduction
//   PRELOAD    gamma and beta of the cached columns are loaded before the
//              reduction, so their latency hides behind it
//   EXACT      the row is exactly SLOTS * WG columns, so the cached columns
//              need no bounds checks (set only for the hidden it was made for)
//   SPLIT      workgroups per row (see `owns`); 1 but for decode-sized calls
//   HAS_BIAS, HAS_BETA, HAS_RESIDUAL, WRITE_SUM   which optional buffers exist
//   HAS_OFFSET  whether gamma_offset is added (a call with gammaOffset other than 0)
//   IN_PLACE   y goes to input and v to residual, both in phase 2, so that
//              nothing is overwritten while a rescaled row still reads it
//   V, square_sum(V), max_abs(V)    the element type and its reductions
//   Cache, fill, drain   the per-thread cache of SLOTS
//              columns, as an array walked by loops or as a struct of named
//              fields written out slot by slot (see Variant::unroll). Each
//              phase issues all its loads before any arithmetic that uses them,
//              so that a thread's loads are in flight together without relying
//              on the compiler to hoist them out of their bounds checks. Slots
//              past the end of the row stay zero and add nothing to the sums.
// so every variant is straight-line code with no per-element branching on
// options.

struct Params {
    rows: u32,      // rows in this dispatch
    width: u32,     // row length in V (hidden / lanes)
    hidden: f32,    // row length in scalars, for the mean
    eps: f32,
    gamma_offset: f32,  // added to every gamma (Gemma's 1 + weight)
    pad0: u32,
    pad1: u32,
    pad2: u32,
};

// The bindings come from the prelude, generated from the one binding table
// (BINDINGS in src/gpu/bindings.rs), since their element type S (f32, f16 or
// packed f16) and, in place, their access mode vary. In place there is no
// output or sum: y goes to input and v to residual.
// ld(S) -> V and st(V) -> S convert; put_y and put_v store y and v.

// Rows with a sum of squares below this take the rescaled path: squares of
// values under ~1e-19 are subnormal or zero in f32, so the plain sum would
// lose them. 2^-60 keeps every square that matters normal.
const TINY_SUM: f32 = 8.673617e-19;
const EXP_MASK: u32 = 0x7f800000u;

fn is_finite(x: f32) -> bool {
    // Bit test rather than comparisons: it cannot be folded away by a
    // compiler that assumes no NaN.
    return (bitcast<u32>(x) & EXP_MASK) != EXP_MASK;
}

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
        // compiler unrolls the loops and issues a lane's reads together: on Dawn
        // on an H200 that took a decode row from 2.99 to 2.78 µs at 1x4096 and
        // 2.54 to 2.39 µs at 1x896 (docs/PERFORMANCE.md), with the same bits.
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

// FLAT: the row's total as every lane folds it from all WG partials after one
// barrier. Each lane reads the same words in the same order, so every lane gets
// the same bits; four accumulators keep the adds from forming one long chain.
fn fold_all() -> vec2<f32> {
    if WG % 4u != 0u {
        var a = partials[0];
        for (var j = 1u; j < WG; j++) {
            a = combine(a, partials[j]);
        }
        return a;
    }
    // Zero is neutral for both: sums, and largest magnitudes (never negative).
    var a0 = vec2(0.0);
    var a1 = a0;
    var a2 = a0;
    var a3 = a0;
    for (var j = 0u; j < WG; j += 4u) {
        a0 = combine(a0, partials[j]);
        a1 = combine(a1, partials[j + 1u]);
        a2 = combine(a2, partials[j + 2u]);
        a3 = combine(a3, partials[j + 3u]);
    }
    return combine(combine(a0, a1), combine(a2, a3));
}

// FLAT: lane 0's rescaling decision, read back by every lane through
// workgroupUniformLoad so that the rescaled path's barriers stay in uniform
// control flow (WGSL's uniformity analysis cannot see that fold_all's result is
// the same in every lane).
var<workgroup> rescale_row: u32;

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > EXP_MASK;
}

// Whether a row with (sum of squares, largest magnitude) `total` takes the
// rescaled path. A NaN row must stay NaN: `max` may drop NaNs, so its largest
// magnitude can look finite, and the eps-dominated branch would then hide the NaN.
fn needs_rescaling(total: vec2<f32>) -> bool {
    return !is_nan(total.x) && (!is_finite(total.x) || total.x < TINY_SUM)
        && is_finite(total.y) && total.y > 0.0;
}

// gamma plus the offset only where the call has one: the add, measured on Dawn on an
// H200, cost the plain kernel 98.1 -> 89.2 % of a + b at 2048x4096 (docs/PERFORMANCE.md).
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
// flushed after all (measured on an H200).
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
// and stores then go through several SMs rather than one, which on Dawn on an H200
// took 1x4096 from 2.78 to 2.62 µs (docs/PERFORMANCE.md). Only variants whose cache
// holds the whole row, and never in place, are split (Variant::split_in), so the
// uncached loops below own nothing then and never run.
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

fn tally(acc: ptr<function, vec2<f32>>, v: V) {
    *acc = combine(*acc, vec2(square_sum(v), max_abs(v)));
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
        tally(&acc, v);
        // In place, an uncached column's v goes to residual in phase 2, once y
        // no longer needs the residual it came from.
        if WRITE_SUM && !IN_PLACE && owns(i / WG) {
            put_v(base + i, v);
        }
    }
    var total: vec2<f32>;
    var needs_scaling: bool;
    if FLAT {
        partials[lid] = acc;
        workgroupBarrier();
        total = fold_all();
        if lid == 0u {
            rescale_row = u32(needs_rescaling(total));
        }
        needs_scaling = workgroupUniformLoad(&rescale_row) != 0u;
    } else {
        total = reduce_workgroup(lid, acc);
        needs_scaling = needs_rescaling(total);
    }

    // y = v * post * gamma + beta, post = inverseSqrt(mean + eps). A row whose
    // squares overflow f32 (values ~1e20 and up) or underflow it (~1e-19 and
    // down) is normalized from v scaled by a power of two instead, formed again
    // from the scaled inputs, so it normalizes like a row of ~1. Only such rows
    // pay for the second pass. NaN and Inf rows stay on the plain path and
    // poison only themselves.
    var post = inverseSqrt(total.x / params.hidden + params.eps);
    var scale = 1.0;
    if needs_scaling {
        // frexp(m).exp puts m * 2^-exp in [0.5, 1); clamping keeps the scale a
        // normal f32 (subnormals may be flushed to zero on GPUs).
        let k = clamp(-frexp(total.y).exp, -126, 126);
        var squares = 0.0;
        for (var i = lid; i < width; i += WG) {
            squares += square_sum(load_v_scaled(base, i, ldexp(1.0, k)));
        }
        // Every lane has read the first result before `partials` is reused.
        workgroupBarrier();
        let mean = reduce_workgroup(lid, vec2(squares, 0.0)).x / params.hidden;
        // eps * scale², as two exact steps: written as a product, a compiler may form
        // scale * scale first (NVIDIA's does), which overflows to Inf, and 0 * Inf is NaN.
        let eps_scaled = ldexp(ldexp(params.eps, k), k);
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
