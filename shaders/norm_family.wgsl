// The normalization family beyond plain RMSNorm: LayerNorm, and the sandwich (a post-norm of
// the sublayer's output before the residual add), with or without a residual, bias, beta.
//
//   u = input + input2 + bias                          (input2: a parallel block's)
//   w = HAS_POST ? N(u) * (post_gamma + offset) : u
//   v = residual + w                                  (the `sum` output)
//   y = N(v) * (gamma + offset) + beta                (`output`, in its own storage SO)
//
// Without gamma (WRITE_Y false) a call is a post-norm's sum alone (OLMo 2): v is written
// and the second normalization is not made.
//
//   N_rms(x)   = x * inverseSqrt(mean(x^2) + eps)
//   N_layer(x) = (x - m) * inverseSqrt(mean((x - m)^2) + eps),  m = mean(x)
//
// A row is owned by ROW_T threads of a workgroup of WG (WG / ROW_T rows a workgroup for
// rows shorter than a workgroup: QK-norm's heads of 64 and 128, and rows up to 1024). Each
// thread keeps SLOTS columns of its row in registers (`cache`) through every reduction, so
// each input is read once and each output written once; the columns of a longer row are
// formed again from memory in each pass.
//
// LayerNorm never forms mean(x^2) - mean(x)^2, and does not center on a plain f32 mean
// either: for a row whose mean is 1e4 times its spread, that mean's own rounding is ~1e-3
// of the spread. A first reduction gives the plain f32 mean, which serves as the row's shift
// s; a second sums x - s, (x - s)^2 and the largest magnitude together: d = mean(x - s),
// var = mean((x - s)^2) - d^2, y = ((x - s) - d) * inverseSqrt(var + eps), every term the
// size of the row's spread (d is the f32 mean's rounding, so var does not cancel). A shift
// from the row's own values (its first vector, no reduction) would leave |d| about the
// spread, and x - s would round by 2^-24 of it on the elements near the mean of a row
// around 0: ~6e-8 of a unit normalized value, most of the 1e-7 that src/reference.rs allows
// there before d's own rounding.
// Where s is still far from the mean (|d| > CENTER deviations: a mean ~1e7 times the spread,
// where the f32 mean's rounding reaches it; at 1e6 times |d| is a few percent), or the
// squares overflow or underflow f32 (rows of ~1e20 and up, ~1e-19 and down), a row takes
// the exact path: two more reductions, the correction c, the mean of (x - s) - d, then the
// squares of ((x - s) - d) - c scaled by the power of two that brings the row's largest
// magnitude near 1. RMSNorm (s = d = c = 0) has one reduction, and the exact path only for
// the scaling. With one row a workgroup its totals are uniform values and the workgroup
// reduces the exact path's sums; with several, each row decides alone and each of its lanes
// sums them from memory (`row_totals`), since a workgroup-wide decision costs every row
// three barriers a normalization for the rare row that needs it. (A call whose every row
// takes it then reads each row once a lane in each exact pass: slower, not measured.)
//
// Barriers, the cost on a GPU: a reduction is one where short rows fold flat
// (`reduce_flat`); otherwise (`reduce`) 1 + log2(ROW_T) by the tree, or 2 with the fan-in,
// plus one opening it where several rows share the workgroup, plus the read of its total
// (one row a workgroup: workgroupUniformLoad, which compilers such as Tint lower to two
// barriers; else one more barrier with the fan-in). In place, rows that share a workgroup
// wait once more before their stores (see `main`).
//
// A pipeline's choices are constants (src/gpu/kernel/mod.rs writes them at `#constants`, from the
// variant's tiling in src/gpu/kernel/tiling/family.rs), beside those of `common.wgsl`:
//   WG, ROW_T       workgroup size, and threads a row (WG / ROW_T rows a workgroup)
//   SLOTS           columns of its row a thread keeps in registers
//   FAN             0: the pairwise tree; else the two-step fan-in (see `reduce`)
//   FLAT            rows fold their partials flat (`reduce_flat`)
//   UNIFORM_TOTALS  one row a workgroup, reduced by the fan-in or the tree: a row reads its
//                   totals as uniform values, and the workgroup reduces its exact path's sums;
//                   else each row decides alone (`row_totals`). It also decides the barriers
//                   that open a reduction and guard an in-place store.
//   PRELOAD         the weights are loaded with the row
//   EARLY_RESIDUAL  the sandwich loads its residual with the row
//   HAS_POST, LAYER the sandwich's post-norm; LayerNorm rather than RMSNorm
//   NORM_NONE     no normalization (y = v: a rotation alone), no reduction
//   ROT_*, HEAD_W   a rotary stage's style, positions, widths (`store_turned`)
// Where the choice is which function a call names, or how a value is read, it is an `#if`
// block: WGSL's uniformity analysis prunes no branch on a constant, so code that chose at run
// time would need uniform control flow where several rows a workgroup have none.

#include "common.wgsl"
#if HAS_ROTARY
#if !ROT_TABLE
#include "rotary_angle.wgsl"
#endif
#endif

const N_CACHE: u32 = max(SLOTS, 1u);
// The cached columns' weights, where PRELOAD loads them with the row.
const N_WEIGHTS: u32 = select(1u, N_CACHE, PRELOAD);
// The sandwich's residual's columns, where it is loaded with the row.
const N_RESIDUALS: u32 = select(1u, N_CACHE, EARLY_RESIDUAL);

// Per-thread partials: (sum, sum of squares, largest magnitude); two halves, taken in turn,
// where rows fold flat (`reduce_flat`).
const HALVES: u32 = select(1u, 2u, FLAT);
var<workgroup> partials: array<vec3<f32>, HALVES * WG>;
// The half of `partials` the next reduction writes: the same in every thread.
var<private> turn: u32 = 0u;

fn combine(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3(a.xy + b.xy, max(a.z, b.z));
}

// The row's total over its ROW_T threads (`t` the thread's place in its row), where short
// rows share a workgroup (FLAT: QK-norm's heads): each lane writes its partial, one barrier,
// then every lane folds its row's ROW_T partials itself, in one order, so that every lane of
// the row gets the same total (plain, not uniform, values: each row decides on its exact path
// alone). The halves of `partials` alternate, so a reduction never writes where a lane
// may still read the previous one's partials: before it writes a half again, every lane has
// passed the barrier of the reduction between, which it reached after its reads.
fn reduce_flat(lid: u32, t: u32, value: vec3<f32>) -> vec3<f32> {
    let half = turn * WG;
    turn ^= 1u;
    partials[half + lid] = value;
    workgroupBarrier();
    let first = half + lid - t;
    var a = partials[first];
    for (var k = 1u; k < ROW_T; k++) {
        a = combine(a, partials[first + k]);
    }
    return a;
}

// The row's total over its ROW_T threads (`t` the thread's place in its row), where rows do
// not fold flat. With several rows a workgroup, a barrier first: every lane has read the
// previous total before `partials` is written again. With one, that total was read by
// workgroupUniformLoad, whose value WGSL makes the same in every lane, so no lane's later
// write may reach another's read (Tint and naga lower it as barrier, load, barrier): it
// needs none, one barrier fewer in each reduction (docs/performance.md, "The family kernel's
// tiling"). FAN 0 is the pairwise tree (log2(ROW_T) barriers); else FAN lanes of the row
// each fold ROW_T / FAN partials and one lane folds those: the RMSNorm kernel's two-step
// fan-in, its trip counts constants so that a lane's reads are issued together. (Every lane
// folding the FAN partials itself, one barrier fewer, was slower: docs/performance.md,
// "Measured and not taken".)
fn reduce(lid: u32, t: u32, value: vec3<f32>) -> vec3<f32> {
    if !UNIFORM_TOTALS {
        workgroupBarrier();
    }
    partials[lid] = value;
    workgroupBarrier();
    if FAN == 0u {
        for (var stride = ROW_T / 2u; stride > 0u; stride >>= 1u) {
            if t < stride {
                partials[lid] = combine(partials[lid], partials[lid + stride]);
            }
            workgroupBarrier();
        }
    } else {
        if t < FAN {
            var a = partials[lid];
            for (var k = 1u; k < ROW_T / max(FAN, 1u); k++) {
                a = combine(a, partials[lid + k * FAN]);
            }
            partials[lid] = a;
        }
        workgroupBarrier();
        if t == 0u {
            var a = partials[lid];
            for (var k = 1u; k < FAN; k++) {
                a = combine(a, partials[lid + k]);
            }
            partials[lid] = a;
        }
        if !UNIFORM_TOTALS {
            // Several rows read their totals plainly, after the last fold.
            workgroupBarrier();
        }
    }
#if UNIFORM_TOTALS
    return workgroupUniformLoad(&partials[0]);
#else
    return partials[lid - t];
#endif
}

// How a row is normalized: (((x - s) - d) - c) * scale * post (RMSNorm: s = d = c = 0),
// scale a power of two.
struct Stat {
    s: f32,
    d: f32,
    c: f32,
    scale: f32,
    post: f32,
};

// |d| beyond this many deviations (sqrt(var + eps)) takes the exact path. On the plain path
// d's own rounding grows with mean(|x - s|) <= deviation + |d|, and var's cancellation with
// 1 + d^2 / var: at 1/16 both stay within a fourteenth of the exact path's.
const CENTER: f32 = 0.0625;

// The vector the first normalization reads, at column i: u with a post-norm, else v in the
// fused kernel's order (input + residual) + bias, so that `sum` matches it bit for bit; a
// parallel block's (input + input2) + residual, as GPT-J's and Phi's code add them.
fn first_at(base: u32, i: u32) -> V {
    var x = ld(input[base + i]);
#if HAS_INPUT2
    x += ld(input2[base + i]);
#endif
    if HAS_RESIDUAL && !HAS_POST {
        x += ld(residual[base + i]);
    }
    if HAS_BIAS {
        x += ld(bias[i]);
    }
    return x;
}

fn centered(x: V, s: Stat) -> V {
    if LAYER {
        return ((x - V(s.s)) - V(s.d)) - V(s.c);
    }
    return x;
}

fn normalized(x: V, s: Stat) -> V {
    return centered(x, s) * (s.scale * s.post);
}

// Where the call has a gamma a head (GAMMA_HEADS: Cohere's QK-norm, rows that are heads),
// this invocation's row's first weight; else 0.
var<private> gamma_row: u32 = 0u;

fn gamma_at(i: u32) -> V {
    if NORM_NONE {
        return V(1.0);
    }
    if !WRITE_Y {
        return V(0.0);
    }
    return ld(gamma[gamma_row + i]) + params.gamma_offset;
}

fn beta_at(i: u32) -> V {
    if HAS_BETA {
        return ld(beta[i]);
    }
    return V(0.0);
}

fn post_at(i: u32) -> V {
#if HAS_POST
    return ld(post_gamma[i]) + params.gamma_offset;
#else
    return V(0.0);
#endif
}

fn residual_at(base: u32, i: u32) -> V {
    if HAS_RESIDUAL {
        return ld(residual[base + i]);
    }
    return V(0.0);
}

// v from the post-norm's input u, `post` its post-norm weight and `r` the residual's column.
fn v_from_u(u: V, s: Stat, post: V, r: V) -> V {
    var v = normalized(u, s) * post;
    if HAS_RESIDUAL {
        v += r;
    }
    return v;
}

// Column i of the vector pass `which` normalizes: 0 the first, 1 the sandwich's v.
fn column(base: u32, i: u32, which: u32, s1: Stat) -> V {
    let x = first_at(base, i);
    if which == 1u {
        return v_from_u(x, s1, post_at(i), residual_at(base, i));
    }
    return x;
}

// What one column adds to a pass's partials: phase 0, the plain sum (LayerNorm's shift);
// phase 1, the sum of x - s (LayerNorm), of its squares and the largest magnitude of x;
// phase 2, the sum of (x - s) - d (the exact path's correction); phase 3, the scaled
// centered squares.
fn tally(acc: vec3<f32>, x: V, phase: u32, s: Stat) -> vec3<f32> {
    if phase == 0u {
        return vec3(acc.x + lane_sum(x), acc.yz);
    }
    if phase == 1u {
        let y = centered(x, s);
        return vec3(acc.x + select(0.0, lane_sum(y), LAYER), acc.y + square_sum(y),
                    max(acc.z, max_abs(x)));
    }
    if phase == 2u {
        return vec3(acc.x + lane_sum(centered(x, s)), acc.yz);
    }
    return vec3(acc.x + square_sum(centered(x, s) * s.scale), acc.yz);
}

// The totals of pass `phase` over the vector `which` of this row (`t` the thread's place in
// it), its cached columns in `cache`.
fn totals(lid: u32, t: u32, base: u32, width: u32, cache: ptr<function, array<V, N_CACHE>>,
          which: u32, s1: Stat, phase: u32, s: Stat) -> vec3<f32> {
    var acc = vec3(0.0);
    for (var k = 0u; k < N_CACHE; k++) {
        let i = t + k * ROW_T;
        if k < SLOTS && i < width {
            acc = tally(acc, (*cache)[k], phase, s);
        }
    }
    for (var i = t + SLOTS * ROW_T; i < width; i += ROW_T) {
        acc = tally(acc, column(base, i, which, s1), phase, s);
    }
#if FLAT
    return reduce_flat(lid, t, acc);
#else
    return reduce(lid, t, acc);
#endif
}

// The totals of pass `phase` over the whole row, each lane folding every column of its row
// from memory itself, in one order (so that the lanes of a row agree): the exact path of rows
// whose totals are not uniform values (several rows a workgroup). No barrier, so a row takes
// it alone; in place, the kernel waits once before its stores, which such a row's reads
// would otherwise race (see `main`). Its parameters are `totals`' (lid, t and cache unused),
// so that one call names either.
fn row_totals(lid: u32, t: u32, base: u32, width: u32, cache: ptr<function, array<V, N_CACHE>>,
              which: u32, s1: Stat, phase: u32, s: Stat) -> vec3<f32> {
    var acc = vec3(0.0);
    for (var i = 0u; i < width; i++) {
        acc = tally(acc, column(base, i, which, s1), phase, s);
    }
    return acc;
}

// The Stat of the vector `which` of this row.
fn stats(lid: u32, t: u32, base: u32, width: u32, cache: ptr<function, array<V, N_CACHE>>,
         which: u32, s1: Stat) -> Stat {
    var s = Stat(0.0, 0.0, 0.0, 1.0, 0.0);
    if NORM_NONE {
        s.post = 1.0;
        return s;
    }
    if LAYER {
        s.s = totals(lid, t, base, width, cache, which, s1, 0u, s).x / params.hidden;
    }
    let first = totals(lid, t, base, width, cache, which, s1, 1u, s);
    // From the totals alone: uniform with one row a workgroup.
    let d = first.x / params.hidden;
    let var_plain = max(first.y / params.hidden - d * d, 0.0);
    let rescale = needs_rescaling(first.y, first.z);
    let off_center = LAYER && d * d > CENTER * CENTER * (var_plain + params.eps);
    s.d = d;
    if !(rescale || off_center) {
        s.post = inverseSqrt(var_plain + params.eps);
        return s;
    }
    if LAYER {
#if UNIFORM_TOTALS
        s.c = totals(lid, t, base, width, cache, which, s1, 2u, s).x / params.hidden;
#else
        s.c = row_totals(lid, t, base, width, cache, which, s1, 2u, s).x / params.hidden;
#endif
    }
    // 2^k brings the largest magnitude near 1 (a NaN or Inf row keeps k = 0 and poisons
    // itself); LayerNorm's centered values are at most twice it.
    var k = 0;
    if is_finite(first.z) && first.z > 0.0 {
        k = rescale_exponent(first.z);
    }
    s.scale = ldexp(1.0, k);
#if UNIFORM_TOTALS
    let var_scaled = totals(lid, t, base, width, cache, which, s1, 3u, s).x / params.hidden;
#else
    let var_scaled = row_totals(lid, t, base, width, cache, which, s1, 3u, s).x / params.hidden;
#endif
    let eps_scaled = eps_rescaled(k);
    if is_finite(eps_scaled) {
        s.post = inverseSqrt(var_scaled + eps_scaled);
    } else {
        // eps dominates a spread this small by more than f32 can see.
        s.scale = 1.0;
        s.post = inverseSqrt(params.eps);
    }
    return s;
}

// `g` and `b` the column's weights (gamma with the offset, beta or 0).
fn store(base: u32, i: u32, v: V, s: Stat, g: V, b: V) {
    if WRITE_SUM {
        put_v(base + i, v);
    }
    if !WRITE_Y {
        return;
    }
    var y = normalized(v, s) * g;
    if HAS_BETA {
        y += b;
    }
    put_y(base + i, y);
}

#if HAS_ROTARY
// The rotary stage (RoPE), after gamma and beta: pair p of a head of a token at position
// `pos` turns by angle f32(f32(pos) * inv_freq[p]) (`rotary_angle.wgsl`), its cos and sin
// times the attention scaling: (a, b) <- (a*c - b*s, b*c + a*s). NeoX pairs value k of a head
// with k + ROT_HALF; interleaved pairs 2k with 2k + 1. The tiling gives a thread both values
// of each of its pairs (`rotary_threads` in src/gpu/kernel/tiling/family.rs): NeoX's partner
// of column i is i + ROT_HALF_W, ROT_HALF_W / ROW_T slots on; an interleaved pair is in one
// vector, or in columns i and i + 1 of a scalar row, which one thread owns.
//
// Constants: ROT_NEOX (else interleaved), ROT_EACH (positions from the table, from its word
// ROT_POSITIONS_AT on, else from params.rotary_start), ROT_TABLE (the app's cos and sin lead
// the table, else the inverse frequencies), ROT_DIM and ROT_HALF (scalars that turn, and
// pairs), ROT_HALF_W and ROT_W (the same in V), HEAD_W (a head in V).

// The position of the token of `row`, params.rotary_heads rows a token.
fn rotary_position(row: u32) -> u32 {
    let token = row / params.rotary_heads;
    if ROT_EACH {
        return rotary[ROT_POSITIONS_AT + token];
    }
    return params.rotary_start + token;
}

// (cos, sin) times the scaling of pair `p` at `pos`: from the app's table (a row of ROT_DIM a
// position, its cosines then its sines) or of the angle the models form.
fn turn_of(pos: u32, p: u32) -> vec2<f32> {
    let k = min(p, ROT_HALF - 1u);
#if ROT_TABLE
    let at = pos * ROT_DIM + k;
    let cos_sin = vec2(bitcast<f32>(rotary[at]), bitcast<f32>(rotary[at + ROT_HALF]));
#else
    let cos_sin = rotary_cos_sin(pos, bitcast<f32>(rotary[k]));
#endif
    return cos_sin * params.rotary_scaling;
}

struct Turn {
    c: V,
    s: V,
};

// The turn of the pairs whose first values are in column h of a head (NeoX).
fn neox_turn(pos: u32, h: u32) -> Turn {
#if VEC4
    let p = h * 4u;
    let a = turn_of(pos, p);
    let b = turn_of(pos, p + 1u);
    let c = turn_of(pos, p + 2u);
    let d = turn_of(pos, p + 3u);
    return Turn(V(a.x, b.x, c.x, d.x), V(a.y, b.y, c.y, d.y));
#else
    let a = turn_of(pos, h);
    return Turn(a.x, a.y);
#endif
}

// y of column i, from its v.
fn y_at(i: u32, v: V, s: Stat) -> V {
    var y = normalized(v, s) * gamma_at(i);
    if HAS_BETA {
        y += beta_at(i);
    }
    return y;
}

// v of column i, slot k of `cache` where it is held, else formed again from memory.
fn v_at(base: u32, i: u32, k: u32, cache: ptr<function, array<V, N_CACHE>>, s1: Stat) -> V {
    if k < SLOTS {
        return (*cache)[k];
    }
    return column(base, i, 0u, s1);
}

// Stores v and the turned y of the pair of columns i and j = i + the partner's distance.
fn store_pair(base: u32, i: u32, j: u32, vi: V, vj: V, s: Stat, turn: Turn) {
    if WRITE_SUM {
        put_v(base + i, vi);
        put_v(base + j, vj);
    }
    let a = y_at(i, vi, s);
    let b = y_at(j, vj, s);
    put_y(base + i, a * turn.c - b * turn.s);
    put_y(base + j, b * turn.c + a * turn.s);
}

// Column i of a head's interleaved pairs, at column h of its head, in a vector: (a0, b0,
// a1, b1) with pairs 2h and 2h + 1; a pair at or past ROT_HALF passes through.
fn turn_interleaved(y: V, h: u32, pos: u32) -> V {
#if VEC4
    let p = h * 2u;
    let a = turn_of(pos, p);
    let b = turn_of(pos, p + 1u);
    let c = V(a.x, a.x, b.x, b.x);
    let s = V(-a.y, a.y, -b.y, b.y);
    let turned = y * c + y.yxwz * s;
    return select(y, turned, vec4(p < ROT_HALF, p < ROT_HALF, p + 1u < ROT_HALF, p + 1u < ROT_HALF));
#else
    return y;
#endif
}

// NeoX: the tiling puts a thread's pairs at the same places of every head of its row (ROW_T
// divides ROT_HALF_W and HEAD_W), so their turns are formed once a row, for every head.
const N_TURNS: u32 = max(ROT_HALF_W / ROW_T, 1u);

// Whether the stage passes `row` as it is: the last params.rotary_pass of a token's rows.
fn passed(row: u32) -> bool {
    return row % params.rotary_heads >= params.rotary_heads - params.rotary_pass;
}

// Every column of this thread: v where it is written, y turned pair by pair; a head the
// stage passes (the last params.rotary_pass of a token's rows: a packed qkv row's v heads)
// as it is, which in place is where it already is.
fn store_turned(base: u32, row: u32, t: u32, width: u32, cache: ptr<function, array<V, N_CACHE>>,
                s: Stat, s1: Stat) {
    if passed(row) {
        for (var i = t; i < width && !IN_PLACE; i += ROW_T) {
            let v = v_at(base, i, (i - t) / ROW_T, cache, s1);
            if WRITE_SUM {
                put_v(base + i, v);
            }
            put_y(base + i, v);
        }
        return;
    }
    let pos = rotary_position(row);
    var turns: array<Turn, N_TURNS>;
    if ROT_NEOX && width > 0u {
        for (var k = 0u; k < N_TURNS; k++) {
            turns[k] = neox_turn(pos, t + k * ROW_T);
        }
    }
    // A pair's second column is stored with its first, by the same thread.
    let partner = select(1u, ROT_HALF_W, ROT_NEOX);
    let paired = ROT_NEOX || !VEC4;
    for (var i = t; i < width; i += ROW_T) {
        let k = (i - t) / ROW_T;
        let h = i % HEAD_W;
        let first = select(h % 2u == 0u, h < ROT_HALF_W, ROT_NEOX);
        if paired && h < ROT_W {
            if first {
                let j = i + partner;
                let vj = v_at(base, j, k + partner / ROW_T, cache, s1);
                var turn: Turn;
                if ROT_NEOX {
                    turn = turns[h / ROW_T];
                } else {
                    turn = select_turn(pos, h);
                }
                store_pair(base, i, j, v_at(base, i, k, cache, s1), vj, s, turn);
            }
            continue;
        }
        let v = v_at(base, i, k, cache, s1);
        if WRITE_SUM {
            put_v(base + i, v);
        }
        var y = y_at(i, v, s);
        if !paired {
            y = turn_interleaved(y, h, pos);
        }
        put_y(base + i, y);
    }
}

// The turn of an interleaved pair whose first value is column h of its head, in a scalar row:
// pair h / 2.
fn select_turn(pos: u32, h: u32) -> Turn {
    let a = turn_of(pos, h / 2u);
    return Turn(V(a.x), V(a.y));
}
#endif

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // More than 65535 workgroups fold into a 2-D grid (per-dimension dispatch limit).
    let first_row = (wg.x + wg.y * groups.x) * (WG / ROW_T);
    if first_row >= params.rows {
        return;
    }
    let t = lid % ROW_T;
    let row = first_row + lid / ROW_T;
    if GAMMA_HEADS {
        // A passed head has no gamma of its own: the last turned one's is read, and unused.
        let turned = params.rotary_heads - params.rotary_pass;
        gamma_row = min(row % params.rotary_heads, turned - 1u) * params.width;
    }
    // A row past the end still takes part in every barrier, over no columns.
    var width = select(0u, params.width, row < params.rows);
#if HAS_ROTARY
    // In place, a row the stage passes is neither read nor written: the same, over no columns.
    if IN_PLACE && passed(row) {
        width = 0u;
    }
#endif
    let base = row * params.width;
    var cache: array<V, N_CACHE>;
    // With PRELOAD the weights' loads are in flight with the row's, instead of a round trip
    // to memory after the reductions that a decode row would wait on (where it pays:
    // `FamilyTiling::choose`).
    var gammas: array<V, N_WEIGHTS>;
    var betas: array<V, N_WEIGHTS>;
    var posts: array<V, N_WEIGHTS>;
    // The sandwich's residual likewise (where it pays: `FamilyTiling::early_residual`).
    var residuals: array<V, N_RESIDUALS>;
    for (var k = 0u; k < N_CACHE; k++) {
        let i = t + k * ROW_T;
        if k < SLOTS && i < width {
            cache[k] = first_at(base, i);
            if EARLY_RESIDUAL {
                residuals[k] = residual_at(base, i);
            }
            if PRELOAD {
                gammas[k] = gamma_at(i);
                betas[k] = beta_at(i);
                posts[k] = post_at(i);
            }
        }
    }
    let s1 = stats(lid, t, base, width, &cache, 0u, Stat(0.0, 0.0, 0.0, 1.0, 0.0));
    var s = s1;
    if HAS_POST {
        for (var k = 0u; k < N_CACHE; k++) {
            let i = t + k * ROW_T;
            if k < SLOTS && i < width {
                var post: V;
                if PRELOAD {
                    post = posts[k];
                } else {
                    post = post_at(i);
                }
                var r: V;
                if EARLY_RESIDUAL {
                    r = residuals[k];
                } else {
                    r = residual_at(base, i);
                }
                cache[k] = v_from_u(cache[k], s1, post, r);
            }
        }
        if WRITE_Y {
            s = stats(lid, t, base, width, &cache, 1u, s1);
        }
    }
    // Every output is written here, after the last read of the row: in place, y goes over
    // input and v over residual, which the passes above read. Rows that take the exact path
    // on their own (`row_totals`) read their whole row after the last barrier, so in place
    // they are waited for here.
    if IN_PLACE && !UNIFORM_TOTALS {
        workgroupBarrier();
    }
#if HAS_ROTARY
    store_turned(base, row, t, width, &cache, s, s1);
#else
    for (var k = 0u; k < N_CACHE; k++) {
        let i = t + k * ROW_T;
        if k < SLOTS && i < width {
            if PRELOAD {
                store(base, i, cache[k], s, gammas[k], betas[k]);
            } else {
                store(base, i, cache[k], s, gamma_at(i), beta_at(i));
            }
        }
    }
    for (var i = t + SLOTS * ROW_T; i < width; i += ROW_T) {
        store(base, i, column(base, i, select(0u, 1u, HAS_POST), s1), s, gamma_at(i), beta_at(i));
    }
#endif
}
