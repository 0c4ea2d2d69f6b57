// What both kernels share (`fused_rms_norm.wgsl`, `norm_family.wgsl` include it first): the
// variant's constants, the uniform block, the element and storage types with their
// conversions, the bindings, and the test that sends a row down the rescaled path.
//
// Constants every variant has (src/gpu/kernel/mod.rs, `Variant::constants`):
//   VEC4          V is vec4<f32> (hidden % 4 == 0: vec4 loads), else f32
//   S_F16, S_PACKED     the data's storage S: vec4<f16> (`shader-f16`), or four halves in
//                 two u32s (`unpack2x16float`: f16 without `shader-f16`), else V
//   SO_F16, SO_PACKED   the same for `output`'s storage SO (the call's outputDtype)
//   ENABLE_F16    S or SO is vec4<f16>
//   HAS_BIAS, HAS_BETA, HAS_RESIDUAL, HAS_INPUT2   which optional inputs the call has
//   HAS_ROTARY    a rotary stage turns y (the family kernel's), its table at binding 8
//   WRITE_SUM     v is written (to `sum`, or in place to `residual`)
//   WRITE_Y       y is computed and written (not for a post-norm's sum alone, without gamma)
//   IN_PLACE      y goes to `input` and v to `residual`; there is no `output` or `sum`

#if ENABLE_F16
enable f16;
#endif
#constants

// Mirrors `Params` in src/gpu/kernel/params.rs (a test checks the layout).
struct Params {
    rows: u32,      // rows in this dispatch
    width: u32,     // row length in V (hidden / lanes)
    hidden: f32,    // row length in scalars, for the mean
    eps: f32,
    gamma_offset: f32,  // added to every gamma (Gemma's 1 + weight)
    rotary_start: u32,  // a rotary stage's first position of consecutive tokens
    rotary_heads: u32,  // a rotary stage's rows a token
    rotary_scaling: f32,  // a rotary stage's factor on cos and sin
    rotary_pass: u32,  // of a rotary stage's rows a token, the last ones, which pass as they are
};

#if VEC4
alias V = vec4<f32>;
fn square_sum(x: V) -> f32 { return dot(x, x); }
fn max_abs(x: V) -> f32 { let a = abs(x); return max(max(a.x, a.y), max(a.z, a.w)); }
fn lane_sum(x: V) -> f32 { return (x.x + x.y) + (x.z + x.w); }
#else
alias V = f32;
fn square_sum(x: V) -> f32 { return x * x; }
fn max_abs(x: V) -> f32 { return abs(x); }
fn lane_sum(x: V) -> f32 { return x; }
#endif

// ld(S) -> V and st(V) -> S convert the data; st_out(V) -> SO converts y for `output`.
// Arithmetic is f32 in every storage. f16 storage comes only with VEC4 (the driver checks
// that a row is whole vec4s).
#if S_F16
alias S = vec4<f16>;
fn ld(x: S) -> V { return V(x); }
fn st(v: V) -> S { return vec4<f16>(v); }
#else
#if S_PACKED
alias S = vec2<u32>;
fn ld(x: S) -> V { return V(unpack2x16float(x.x), unpack2x16float(x.y)); }
fn st(v: V) -> S { return vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw)); }
#else
alias S = V;
fn ld(x: S) -> V { return x; }
fn st(v: V) -> S { return v; }
#endif
#endif
#if SO_F16
alias SO = vec4<f16>;
fn st_out(v: V) -> SO { return vec4<f16>(v); }
#else
#if SO_PACKED
alias SO = vec2<u32>;
fn st_out(v: V) -> SO { return vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw)); }
#else
alias SO = V;
fn st_out(v: V) -> SO { return v; }
#endif
#endif

// The bindings, as the binding table (`BINDINGS` in src/gpu/kernel/bindings.rs) lays them out; a
// test checks the two agree. Shapes: input, residual, input2, output, sum are rows x width;
// gamma, beta, bias, post_gamma are width (gamma rotary_heads x width where the call has a gamma
// a head, GAMMA_HEADS). Read-only where possible: some drivers route
// read-only storage through a non-coherent cache. Binding 8 holds a parallel block's input2
// where the call has one, a rotary stage's table (its inverse frequencies' bits, then each
// token's position where the call gives them) where it has that, else post_gamma: no call
// has two of them, and so eight storage bindings are enough, the most WebGPU's default
// limits allow.
#if IN_PLACE
@group(0) @binding(0) var<storage, read_write> input: array<S>;
@group(0) @binding(1) var<storage, read_write> residual: array<S>;
#else
@group(0) @binding(0) var<storage, read> input: array<S>;
@group(0) @binding(1) var<storage, read> residual: array<S>;
#endif
@group(0) @binding(2) var<storage, read> gamma: array<S>;
@group(0) @binding(3) var<storage, read> beta: array<S>;
@group(0) @binding(4) var<storage, read> bias: array<S>;
#if !IN_PLACE
@group(0) @binding(5) var<storage, read_write> output: array<SO>;
@group(0) @binding(6) var<storage, read_write> sum: array<S>;
#endif
@group(0) @binding(7) var<uniform> params: Params;
#if HAS_INPUT2
@group(0) @binding(8) var<storage, read> input2: array<S>;
#else
#if HAS_ROTARY
@group(0) @binding(8) var<storage, read> rotary: array<u32>;
#else
@group(0) @binding(8) var<storage, read> post_gamma: array<S>;
#endif
#endif

// put_y and put_v store y and v at element j of the row's arrays.
#if IN_PLACE
fn put_y(j: u32, y: V) { input[j] = st(y); }
fn put_v(j: u32, v: V) { if HAS_RESIDUAL { residual[j] = st(v); } }
#else
fn put_y(j: u32, y: V) { output[j] = st_out(y); }
fn put_v(j: u32, v: V) { sum[j] = st(v); }
#endif

// Rows with a sum of squares below this take the rescaled path: squares of values under
// ~1e-19 are subnormal or zero in f32, so the plain sum would lose them. 2^-60 keeps every
// square that matters normal.
const TINY_SUM: f32 = 8.673617e-19;
const EXP_MASK: u32 = 0x7f800000u;

// Bit tests rather than comparisons: they cannot be folded away by a compiler that assumes
// no NaN.
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & EXP_MASK) != EXP_MASK;
}

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > EXP_MASK;
}

// Whether a row whose sum of squares is `squares` and largest magnitude `largest` takes the
// rescaled path: its squares overflow f32 (values ~1e20 and up) or underflow it (~1e-19 and
// down). A NaN row must stay NaN: `max` may drop NaNs, so its largest magnitude can look
// finite, and the eps-dominated branch would then hide the NaN.
fn needs_rescaling(squares: f32, largest: f32) -> bool {
    return !is_nan(squares) && (!is_finite(squares) || squares < TINY_SUM)
        && is_finite(largest) && largest > 0.0;
}

// k such that 2^k brings `largest` (finite, not 0) near 1: frexp(m).exp puts m * 2^-exp in
// [0.5, 1); clamping keeps 2^k a normal f32 (subnormals may be flushed to zero on GPUs).
fn rescale_exponent(largest: f32) -> i32 {
    return clamp(-frexp(largest).exp, -126, 126);
}

// eps * (2^k)^2, as two exact steps: written as a product, a compiler may form the square
// first (NVIDIA's does), which overflows to Inf, and 0 * Inf is NaN. Not finite where eps
// dominates the row's mean by more than f32 can see.
fn eps_rescaled(k: i32) -> f32 {
    return ldexp(ldexp(params.eps, k), k);
}
