// The cos and sin of a rotary (RoPE) angle as Hugging Face models compute them: of the f32
// product `f32(position) * inv_freq`, rounded once, as their rotary classes form it.
//
// WGSL's built-in `cos` and `sin` are specified only near [-pi, pi] and rotary angles reach
// millions of radians, so the angle is first reduced exactly to its nearest multiple of pi/2.
// The reduction is in u32 arithmetic (Payne and Hanek's method), because the floating-point
// ones (Cody and Waite's split constants, Dekker's exact products) need each product rounded
// on its own, which a compiler free to contract `a * b + c` into an fma or to reassociate
// (SPIR-V without NoContraction, Metal's fast math) does not promise.
// Every floating-point step below is exact, or one whose rounding only the polynomials feel,
// whether or not it is contracted.

// 2/pi as a 96-bit binary fraction, most significant word first:
// 2/pi = 0x0.A2F9836E_4E441529_FC2757D1 (truncated).
const ROTARY_TWO_OVER_PI_0: u32 = 0xA2F9836Eu;
const ROTARY_TWO_OVER_PI_1: u32 = 0x4E441529u;
const ROTARY_TWO_OVER_PI_2: u32 = 0xFC2757D1u;
// pi/2 * 2^31, rounded to nearest.
const ROTARY_HALF_PI_Q31: u32 = 0xC90FDAA2u;
// 2^-31 and 2^-32, exactly.
const ROTARY_TWO_M31: f32 = 4.656612873077392578125e-10;
const ROTARY_TWO_M32: f32 = 2.3283064365386962890625e-10;
// pi/4 rounded to f32: below it an angle is its own reduced angle.
const ROTARY_QUARTER_PI: f32 = 0.785398185253143310546875;
// Taylor coefficients of sin (to degree 9) and cos (to degree 10): on [0, pi/4] the first
// terms left out are below what f32 resolves.
const ROTARY_S3: f32 = -1.0 / 6.0;
const ROTARY_S5: f32 = 1.0 / 120.0;
const ROTARY_S7: f32 = -1.0 / 5040.0;
const ROTARY_S9: f32 = 1.0 / 362880.0;
const ROTARY_C4: f32 = 1.0 / 24.0;
const ROTARY_C6: f32 = -1.0 / 720.0;
const ROTARY_C8: f32 = 1.0 / 40320.0;
const ROTARY_C10: f32 = -1.0 / 3628800.0;

// An angle as `quadrant * pi/2 + r` with `r = r_hi + r_lo` (`-r` where `negative`) and
// `0 <= r <= pi/4`: `r_hi` exact and `r_lo` small enough that its square is lost in f32.
struct RotaryReduced {
    quadrant: u32,
    negative: bool,
    r_hi: f32,
    r_lo: f32,
}

// The full product of two u32 as (low word, high word), from 16-bit halves: WGSL has no
// 64-bit integers.
fn rotary_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xFFFFu;
    let ah = a >> 16u;
    let bl = b & 0xFFFFu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    // A sum of three 16-bit values, which cannot overflow.
    let mid = (ll >> 16u) + (lh & 0xFFFFu) + (hl & 0xFFFFu);
    let lo = (ll & 0xFFFFu) | (mid << 16u);
    let hi = ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// The 32 bits of the 64-bit value `hi:lo` from bit `b` up (b < 32), without a shift by 32,
// which WGSL leaves to the implementation's masking.
fn rotary_funnel(lo: u32, hi: u32, b: u32) -> u32 {
    return (lo >> b) | ((hi << 1u) << (31u - b));
}

// Reduces an angle `a` with pi/4 <= a < 2^58 to its nearest multiple of pi/2 (larger ones
// are outside the window of 2/pi below).
fn rotary_reduce(a: f32) -> RotaryReduced {
    let bits = bitcast<u32>(a);
    // a = m * 2^(e - 150), with m the significand and e the biased exponent.
    let m = (bits & 0x7FFFFFu) | 0x800000u;
    let e = clamp(bits >> 23u, 126u, 184u);
    // P = m * (2/pi as 96 bits) as four words p0..p3, so that a * 2/pi = P * 2^(e - 246).
    let w0 = rotary_mul_wide(m, ROTARY_TWO_OVER_PI_2);
    let w1 = rotary_mul_wide(m, ROTARY_TWO_OVER_PI_1);
    let w2 = rotary_mul_wide(m, ROTARY_TWO_OVER_PI_0);
    // Each product's high word holds at most 24 bits, so only the two sums carry.
    let p0 = w0.x;
    let p1 = w0.y + w1.x;
    let carry1 = select(0u, 1u, p1 < w1.x);
    let s2 = w1.y + w2.x;
    let carry2 = select(0u, 1u, s2 < w2.x);
    let p2 = s2 + carry1;
    let carry3 = select(0u, 1u, p2 < carry1);
    let p3 = w2.y + carry2 + carry3;
    // The 64 bits of P from bit t = 184 - e are (a * 2/pi) * 2^62 modulo 2^64: the quadrant in
    // the top two and the fraction of a quadrant below; the bits above count whole turns.
    let t = 184u - e;
    let by_word = t >= 32u;
    let b = t & 31u;
    let q0 = select(p0, p1, by_word);
    let q1 = select(p1, p2, by_word);
    let q2 = select(p2, p3, by_word);
    let lo = rotary_funnel(q0, q1, b);
    let hi = rotary_funnel(q1, q2, b);
    // Round to the nearest quadrant, so that `f`, the fraction's top 32 bits as a signed
    // number, is the angle's distance from it in units of 2^-32 quadrant.
    var out: RotaryReduced;
    out.quadrant = ((hi >> 30u) + ((hi >> 29u) & 1u)) & 3u;
    let f = (hi << 2u) | (lo >> 30u);
    out.negative = (f >> 31u) != 0u;
    let magnitude = select(f, 0u - f, out.negative);
    // r = magnitude * pi/2 in units of 2^-63, split where an f32 holds r_hi exactly, so that
    // whatever the compiler does only r_lo's last bits are rounded.
    let r = rotary_mul_wide(magnitude, ROTARY_HALF_PI_Q31);
    out.r_hi = f32(r.y & 0xFFFFFF00u) * ROTARY_TWO_M31;
    out.r_lo = (f32(r.y & 0xFFu) + f32(r.x) * ROTARY_TWO_M32) * ROTARY_TWO_M31;
    return out;
}

// (cos, sin) of the rotary angle f32(position) * inv_freq, as (x, y).
fn rotary_cos_sin(position: u32, inv_freq: f32) -> vec2<f32> {
    // One correctly rounded f32 product, as the models form it (f32(position) is exact for
    // positions below 2^24).
    let angle = f32(position) * inv_freq;
    let a = abs(angle);
    var red: RotaryReduced;
    if (a < ROTARY_QUARTER_PI) {
        red = RotaryReduced(0u, false, a, 0.0);
    } else {
        red = rotary_reduce(a);
    }
    // The polynomials at r_hi, then r_lo to first order, its square being lost in f32.
    let x = red.r_hi;
    let z = x * x;
    let sin_hi = x + x * z * (ROTARY_S3 + z * (ROTARY_S5 + z * (ROTARY_S7 + z * ROTARY_S9)));
    let cos_hi = 1.0 + z * (-0.5 + z * (ROTARY_C4 + z * (ROTARY_C6 + z * (ROTARY_C8 + z * ROTARY_C10))));
    let sin_r = sin_hi + red.r_lo * cos_hi;
    let cos_r = cos_hi - red.r_lo * sin_hi;
    // sin and cos of quadrant * pi/2 + s, s = +-r: quadrants 1 and 3 swap them, 2 and 3 negate.
    let s = select(sin_r, -sin_r, red.negative);
    let odd = (red.quadrant & 1u) != 0u;
    let half_turn = red.quadrant >= 2u;
    var c_out = select(cos_r, -s, odd);
    var s_out = select(s, cos_r, odd);
    c_out = select(c_out, -c_out, half_turn);
    s_out = select(s_out, -s_out, half_turn);
    // sin is odd: a negative angle (a negative inv_freq) negates it.
    s_out = select(s_out, -s_out, angle < 0.0);
    return vec2<f32>(c_out, s_out);
}
