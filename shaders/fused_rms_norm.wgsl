// Fused residual add + optional bias + RMSNorm (gamma scale, optional beta shift).
//
//   v[r, i] = input[r, i] + residual[r, i] + bias[i]
//   y[r, i] = v[r, i] * inverseSqrt(mean_i(v[r, i]^2) + eps) * gamma[i] + beta[i]
//
// One workgroup owns one row. Threads walk the row in steps of WG so that
// neighbouring threads touch neighbouring addresses (coalesced). Values are
// vec4 when hidden % 4 == 0 and scalar otherwise; `V` says which.
//
// The driver (src/kernel.rs) prepends a prelude that defines, per pipeline:
//   WG         workgroup size
//   SLOTS      how many V per thread are kept in registers between the two
//              phases; the rest of a long row is read from memory again
//   HAS_BIAS, HAS_BETA, WRITE_SUM   which optional buffers exist
//   V, square_sum(V), max_abs(V)    the element type and its reductions
// so every variant is straight-line code with no per-element branching on
// options.

struct Params {
    rows: u32,      // rows in this dispatch
    width: u32,     // row length in V (hidden / lanes)
    hidden: f32,    // row length in scalars, for the mean
    eps: f32,
};

@group(0) @binding(0) var<storage, read> input: array<V>;          // (rows, width)
@group(0) @binding(1) var<storage, read> residual: array<V>;       // (rows, width)
@group(0) @binding(2) var<storage, read> gamma: array<V>;          // (width)
@group(0) @binding(3) var<storage, read> beta: array<V>;           // (width), or a stub
@group(0) @binding(4) var<storage, read> bias: array<V>;           // (width), or a stub
@group(0) @binding(5) var<storage, read_write> output: array<V>;   // (rows, width)
@group(0) @binding(6) var<storage, read_write> sum: array<V>;      // (rows, width), or a stub
@group(0) @binding(7) var<uniform> params: Params;

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

// Per-thread (sum of squares, largest magnitude) pairs, folded as a tree.
var<workgroup> partials: array<vec2<f32>, WG>;

fn reduce_workgroup(lid: u32, value: vec2<f32>) -> vec2<f32> {
    // A second reduction reuses the array: wait until the first result was read.
    workgroupBarrier();
    partials[lid] = value;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            let a = partials[lid];
            let b = partials[lid + stride];
            partials[lid] = vec2(a.x + b.x, max(a.y, b.y));
        }
        workgroupBarrier();
    }
    return workgroupUniformLoad(&partials[0]);
}

fn load_v(base: u32, i: u32) -> V {
    var v = input[base + i] + residual[base + i];
    if HAS_BIAS {
        v += bias[i];
    }
    return v;
}

fn store_y(base: u32, i: u32, v: V, pre: f32, post: f32) {
    var y = (v * pre) * post * gamma[i];
    if HAS_BETA {
        y += beta[i];
    }
    output[base + i] = y;
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // More than 65535 rows fold into a 2-D grid (per-dimension dispatch limit).
    let row = wg.x + wg.y * groups.x;
    if row >= params.rows {
        return;
    }
    let width = params.width;
    let base = row * width;

    // Phase 1: v, its sum of squares and its largest magnitude, in one read.
    var cache: array<V, SLOTS>;
    var squares = 0.0;
    var largest = 0.0;
    for (var k = 0u; k < SLOTS; k++) {
        let i = lid + k * WG;
        if i < width {
            let v = load_v(base, i);
            cache[k] = v;
            squares += square_sum(v);
            largest = max(largest, max_abs(v));
            if WRITE_SUM {
                sum[base + i] = v;
            }
        }
    }
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        let v = load_v(base, i);
        squares += square_sum(v);
        largest = max(largest, max_abs(v));
        if WRITE_SUM {
            sum[base + i] = v;
        }
    }
    let total = reduce_workgroup(lid, vec2(squares, largest));

    // y = (v * pre) * post * gamma + beta. The plain case is pre = 1 and
    // post = inverseSqrt(mean + eps). A row whose squares overflow f32 (values
    // ~1e20 and up) or underflow it (~1e-19 and down) is scaled by a power of
    // two first, which is exact, so it normalizes like a row of ~1. NaN and
    // Inf rows stay on the plain path and poison only themselves.
    var pre = 1.0;
    var post = inverseSqrt(total.x / params.hidden + params.eps);
    let needs_scaling = (!is_finite(total.x) || total.x < TINY_SUM)
        && is_finite(total.y) && total.y > 0.0;
    if needs_scaling {
        // frexp(m).exp puts m * 2^-exp in [0.5, 1); clamping keeps the scale a
        // normal f32 (subnormals may be flushed to zero on GPUs).
        let scale = ldexp(1.0, clamp(-frexp(total.y).exp, -126, 126));
        var scaled = 0.0;
        for (var k = 0u; k < SLOTS; k++) {
            let i = lid + k * WG;
            if i < width {
                scaled += square_sum(cache[k] * scale);
            }
        }
        for (var i = lid + SLOTS * WG; i < width; i += WG) {
            scaled += square_sum(load_v(base, i) * scale);
        }
        let mean = reduce_workgroup(lid, vec2(scaled, 0.0)).x / params.hidden;
        let eps_scaled = params.eps * scale * scale;
        if is_finite(eps_scaled) {
            pre = scale;
            post = inverseSqrt(mean + eps_scaled);
        } else {
            // eps dominates a mean this small by more than f32 can see.
            post = inverseSqrt(params.eps);
        }
    }

    // Phase 2: normalize and write.
    for (var k = 0u; k < SLOTS; k++) {
        let i = lid + k * WG;
        if i < width {
            store_y(base, i, cache[k], pre, post);
        }
    }
    for (var i = lid + SLOTS * WG; i < width; i += WG) {
        store_y(base, i, load_v(base, i), pre, post);
    }
}
