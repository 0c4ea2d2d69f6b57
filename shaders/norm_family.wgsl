// The normalization family beyond plain RMSNorm: LayerNorm, and the sandwich (a post-norm of
// the sublayer's output before the residual add), with or without a residual, bias, beta.
//
//   u = input + bias
//   w = HAS_POST ? N(u) * (post_gamma + offset) : u
//   v = residual + w                                  (the `sum` output)
//   y = N(v) * (gamma + offset) + beta                (`output`, in its own storage SO)
//
//   N_rms(x)   = x * inverseSqrt(mean(x^2) + eps)
//   N_layer(x) = (x - m) * inverseSqrt(mean((x - m)^2) + eps),  m = mean(x)
//
// One workgroup owns one row. Each thread keeps SLOTS columns of it in registers (`cache`)
// through every reduction, so each input is read once and each output written once; the
// columns of a longer row are formed again from memory in each pass.
//
// LayerNorm never forms mean(x^2) - mean(x)^2, and does not subtract a plain f32 mean
// either: for a row whose mean is 1e4 times its spread, the mean's own rounding is ~1e-3 of
// the spread. The mean is taken in two steps: m1, the plain f32 mean, then its correction
// c, the sum of x - m1 with each difference and the running sum kept as unevaluated pairs
// of floats, so x - (m1 + c) is right to one rounding where the compiler keeps the order of
// the adds. WGSL lets it reassociate them (Mesa's lavapipe folds the error terms away), and
// then c is a plain second pass: the mean is still right to ~1e-9 of the spread. The squares are scaled by a power of two chosen from the largest
// magnitude, so rows of ~1e30 or ~1e-30 neither overflow nor vanish; RMSNorm takes that
// path only for rows that need it, as the fused kernel does.
//
// The driver (src/gpu/kernel.rs) prepends WG, SLOTS, HAS_BIAS, HAS_BETA, HAS_RESIDUAL,
// HAS_POST, LAYER, WRITE_SUM, IN_PLACE, V with LANES, lane / set_lane, square_sum, max_abs and
// lane_sum, the
// bindings (from the binding table), ld / st / st_out and put_y / put_v.

struct Params {
    rows: u32,
    width: u32,
    hidden: f32,
    eps: f32,
    gamma_offset: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
};

// Below this a sum of squares takes the rescaled path (squares of ~1e-19 are subnormal).
const TINY_SUM: f32 = 8.673617e-19;
const EXP_MASK: u32 = 0x7f800000u;
const N_CACHE: u32 = max(SLOTS, 1u);

fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & EXP_MASK) != EXP_MASK;
}

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > EXP_MASK;
}

// a + b as an unevaluated pair (sum, rounding error): exact with f32 adds in IEEE order.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    let bb = s - a;
    return vec2(s, (a - (s - bb)) + (b - bb));
}

// Per-thread partials: (sum, its rounding error, largest magnitude, unused).
var<workgroup> partials: array<vec4<f32>, WG>;

fn combine(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    let t = two_sum(a.x, b.x);
    return vec4(t.x, (a.y + b.y) + t.y, max(a.z, b.z), 0.0);
}

// The row's total over the workgroup. The barrier first: every lane has read the previous
// total before `partials` is written again.
fn reduce(lid: u32, value: vec4<f32>) -> vec4<f32> {
    workgroupBarrier();
    partials[lid] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            partials[lid] = combine(partials[lid], partials[lid + stride]);
        }
        workgroupBarrier();
    }
    return workgroupUniformLoad(&partials[0]);
}

// How a row is normalized: (x - m) * scale * post, with the mean m = m1 + c held as two
// floats (for RMSNorm both are 0), scale a power of two.
struct Stat {
    m1: f32,
    c: f32,
    scale: f32,
    post: f32,
};

// x - m, exact but for one rounding of the result: x - m1 as an exact pair, then c.
fn centered(x: V, s: Stat) -> V {
    var r: V;
    for (var j = 0u; j < LANES; j++) {
        let t = two_sum(lane(x, j), -s.m1);
        set_lane(&r, j, t.x + (t.y - s.c));
    }
    return r;
}

// The vector the first normalization reads, at column i: u with a post-norm, else v in the
// fused kernel's order (input + residual) + bias, so that `sum` matches it bit for bit.
fn first_at(base: u32, i: u32) -> V {
    var x = ld(input[base + i]);
    if HAS_RESIDUAL && !HAS_POST {
        x += ld(residual[base + i]);
    }
    if HAS_BIAS {
        x += ld(bias[i]);
    }
    return x;
}

fn normalized(x: V, s: Stat) -> V {
    if LAYER {
        return centered(x, s) * (s.scale * s.post);
    }
    return x * (s.scale * s.post);
}

// v from the post-norm's input u at column i.
fn v_from_u(base: u32, i: u32, u: V, s: Stat) -> V {
    var v = normalized(u, s) * (ld(post_gamma[i]) + params.gamma_offset);
    if HAS_RESIDUAL {
        v += ld(residual[base + i]);
    }
    return v;
}

// Column i of the vector pass `which` normalizes: 0 the first, 1 the sandwich's v.
fn column(base: u32, i: u32, which: u32, s1: Stat) -> V {
    let x = first_at(base, i);
    if which == 1u {
        return v_from_u(base, i, x, s1);
    }
    return x;
}

// What one column adds to a pass's partials. Pass 0: the plain sum (LayerNorm) or sum of
// squares (RMSNorm), and the largest magnitude. Pass 1 (LayerNorm): x - m1 summed exactly,
// each difference an exact pair and the running sum compensated, so that the mean's
// correction c carries no rounding of the terms (a near-mean element's x - m is as small as
// 1e-6 of the spread, and a plain f32 mean is off by more than that).
fn tally(acc: vec4<f32>, x: V, phase: u32, s: Stat) -> vec4<f32> {
    var a = acc;
    if phase == 0u {
        a.x += select(square_sum(x), lane_sum(x), LAYER);
        a.z = max(a.z, max_abs(x));
        return a;
    }
    for (var j = 0u; j < LANES; j++) {
        let d = two_sum(lane(x, j), -s.m1);
        let t = two_sum(a.x, d.x);
        a.x = t.x;
        a.y += t.y + d.y;
        a.z = max(a.z, abs(d.x));
    }
    return a;
}

// The workgroup's totals of pass `pass` over the vector `which` of this row.
fn totals(lid: u32, base: u32, width: u32, cache: ptr<function, array<V, N_CACHE>>,
          which: u32, s1: Stat, phase: u32, s: Stat) -> vec4<f32> {
    var acc = vec4(0.0);
    for (var k = 0u; k < N_CACHE; k++) {
        let i = lid + k * WG;
        if k < SLOTS && i < width {
            acc = tally(acc, (*cache)[k], phase, s);
        }
    }
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        acc = tally(acc, column(base, i, which, s1), phase, s);
    }
    return reduce(lid, acc);
}

// The workgroup's Stat for the vector `which` of this row, its cached columns in `cache`.
fn stats(lid: u32, base: u32, width: u32, cache: ptr<function, array<V, N_CACHE>>,
         which: u32, s1: Stat) -> Stat {
    var s = Stat(0.0, 0.0, 1.0, 0.0);
    var total = totals(lid, base, width, cache, which, s1, 0u, s);
    if LAYER {
        s.m1 = total.x / params.hidden;
        total = totals(lid, base, width, cache, which, s1, 1u, s);
        s.c = (total.x + total.y) / params.hidden;
    } else {
        let rescale = !is_nan(total.x) && (!is_finite(total.x) || total.x < TINY_SUM)
            && is_finite(total.z) && total.z > 0.0;
        if !rescale {
            s.post = inverseSqrt(total.x / params.hidden + params.eps);
            return s;
        }
    }
    // The (centered) squares, scaled by 2^k so that the largest magnitude is near 1: rows
    // of ~1e30 or ~1e-30 neither overflow nor vanish.
    var k = 0;
    if is_finite(total.z) && total.z > 0.0 {
        k = clamp(-frexp(total.z).exp, -126, 126);
    }
    let scale = ldexp(1.0, k);
    var squares = 0.0;
    for (var j = 0u; j < N_CACHE; j++) {
        let i = lid + j * WG;
        if j < SLOTS && i < width {
            squares += square_sum(select((*cache)[j], centered((*cache)[j], s), LAYER) * scale);
        }
    }
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        let x = column(base, i, which, s1);
        squares += square_sum(select(x, centered(x, s), LAYER) * scale);
    }
    let var_scaled = reduce(lid, vec4(squares, 0.0, 0.0, 0.0)).x / params.hidden;
    // eps * scale^2 in two exact steps (as a product a compiler may form scale^2 first,
    // which overflows): the fused kernel's rescaled path, alike on purpose (the two
    // shaders share no source).
    let eps_scaled = ldexp(ldexp(params.eps, k), k);
    if is_finite(eps_scaled) {
        s.scale = scale;
        s.post = inverseSqrt(var_scaled + eps_scaled);
    } else {
        // eps dominates a spread this small by more than f32 can see.
        s.post = inverseSqrt(params.eps);
    }
    return s;
}

fn store(base: u32, i: u32, v: V, s: Stat) {
    if WRITE_SUM {
        put_v(base + i, v);
    }
    var y = normalized(v, s) * (ld(gamma[i]) + params.gamma_offset);
    if HAS_BETA {
        y += ld(beta[i]);
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
    let row = wg.x + wg.y * groups.x;
    if row >= params.rows {
        return;
    }
    let width = params.width;
    let base = row * width;
    var cache: array<V, N_CACHE>;
    for (var k = 0u; k < N_CACHE; k++) {
        let i = lid + k * WG;
        if k < SLOTS && i < width {
            cache[k] = first_at(base, i);
        }
    }
    let s1 = stats(lid, base, width, &cache, 0u, Stat(0.0, 0.0, 1.0, 0.0));
    var s = s1;
    if HAS_POST {
        for (var k = 0u; k < N_CACHE; k++) {
            let i = lid + k * WG;
            if k < SLOTS && i < width {
                cache[k] = v_from_u(base, i, cache[k], s1);
            }
        }
        s = stats(lid, base, width, &cache, 1u, s1);
    }
    // Every output is written here, after the last read of the row: in place, y goes over
    // input and v over residual, which the passes above read.
    for (var k = 0u; k < N_CACHE; k++) {
        let i = lid + k * WG;
        if k < SLOTS && i < width {
            store(base, i, cache[k], s);
        }
    }
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        store(base, i, column(base, i, select(0u, 1u, HAS_POST), s1), s);
    }
}
