// The fused kernel's row cache (`fused_rms_norm.wgsl` includes it): each thread keeps SLOTS
// columns of its row, the columns lid + k * WG for k < SLOTS, in registers between the
// reduction and the write, so that they are read from memory once.
//
// A struct of named fields rather than an array walked by a loop: no access has an index to
// compute, so the cache stays in registers whatever the driver's loop unroller does (the
// array measured far slower: docs/performance.md, "Tiling of the RMSNorm kernel"). It lists the
// most slots a variant has (MAX_CACHED_SCALARS in src/gpu/kernel/tiling/: 64 of f32), each behind
// `SLOTS > k`, a constant every compiler folds, so that a variant's code touches its SLOTS
// fields and no other. The slots past the next power of two at least SLOTS are left out
// (SLOTS_OVER_4 .. SLOTS_OVER_32), so that a compiler that inlines before it folds has little
// dead code to drop.
//
// Each phase runs over every slot before the next starts, so that a thread's loads are in
// flight together without relying on the compiler to hoist them out of their bounds checks.
// Slots past the end of the row stay zero and add nothing to the sums.

const_assert SLOTS <= 64u;

struct Cache {
    s0: Slot, s1: Slot, s2: Slot, s3: Slot,
#if SLOTS_OVER_4
    s4: Slot, s5: Slot, s6: Slot, s7: Slot,
#endif
#if SLOTS_OVER_8
    s8: Slot, s9: Slot, s10: Slot, s11: Slot, s12: Slot, s13: Slot, s14: Slot, s15: Slot,
#endif
#if SLOTS_OVER_16
    s16: Slot, s17: Slot, s18: Slot, s19: Slot, s20: Slot, s21: Slot, s22: Slot, s23: Slot,
    s24: Slot, s25: Slot, s26: Slot, s27: Slot, s28: Slot, s29: Slot, s30: Slot, s31: Slot,
#endif
#if SLOTS_OVER_32
    s32: Slot, s33: Slot, s34: Slot, s35: Slot, s36: Slot, s37: Slot, s38: Slot, s39: Slot,
    s40: Slot, s41: Slot, s42: Slot, s43: Slot, s44: Slot, s45: Slot, s46: Slot, s47: Slot,
    s48: Slot, s49: Slot, s50: Slot, s51: Slot, s52: Slot, s53: Slot, s54: Slot, s55: Slot,
    s56: Slot, s57: Slot, s58: Slot, s59: Slot, s60: Slot, s61: Slot, s62: Slot, s63: Slot,
#endif
};

// The phases of `each_slot`.
const FETCH: u32 = 0u;      // v (and with PRELOAD gamma and beta) from memory
const TALLY: u32 = 1u;      // v into the sums
const PUT_V: u32 = 2u;      // v to `sum`, or in place to `residual`
const AFFINE: u32 = 3u;     // gamma and beta, where PRELOAD did not load them
const STORE: u32 = 4u;      // y

// Where a thread is in its row: the row's first element, the thread's first column, the
// row's width, the factor y takes, and its sums so far (`fill`'s TALLY adds to them).
struct Walk {
    base: u32,
    lid: u32,
    width: u32,
    post: f32,
    acc: vec2<f32>,
};

// What `phase` does to cached column k (`s`, column lid + k * WG).
fn slot_step(phase: u32, k: u32, s: Slot, at: ptr<function, Walk>) -> Slot {
    let i = (*at).lid + k * WG;
    let inside = EXACT || i < (*at).width;
    var t = s;
    if phase == FETCH {
        if inside {
            t = fetch((*at).base, i, owns(k));
        }
    } else if phase == TALLY {
        (*at).acc = tallied((*at).acc, s.v);
    } else if owns(k) && inside {
        if phase == PUT_V {
            put_v((*at).base + i, s.v);
        } else if phase == AFFINE {
            t = with_affine(i, s);
        } else {
            store_y((*at).base, i, s, (*at).post);
        }
    }
    return t;
}

// `phase` over every cached slot, in order.
fn each_slot(c: ptr<function, Cache>, phase: u32, walk: Walk) -> Walk {
    var at = walk;
    if SLOTS > 0u { (*c).s0 = slot_step(phase, 0u, (*c).s0, &at); }
    if SLOTS > 1u { (*c).s1 = slot_step(phase, 1u, (*c).s1, &at); }
    if SLOTS > 2u { (*c).s2 = slot_step(phase, 2u, (*c).s2, &at); }
    if SLOTS > 3u { (*c).s3 = slot_step(phase, 3u, (*c).s3, &at); }
#if SLOTS_OVER_4
    if SLOTS > 4u { (*c).s4 = slot_step(phase, 4u, (*c).s4, &at); }
    if SLOTS > 5u { (*c).s5 = slot_step(phase, 5u, (*c).s5, &at); }
    if SLOTS > 6u { (*c).s6 = slot_step(phase, 6u, (*c).s6, &at); }
    if SLOTS > 7u { (*c).s7 = slot_step(phase, 7u, (*c).s7, &at); }
#endif
#if SLOTS_OVER_8
    if SLOTS > 8u { (*c).s8 = slot_step(phase, 8u, (*c).s8, &at); }
    if SLOTS > 9u { (*c).s9 = slot_step(phase, 9u, (*c).s9, &at); }
    if SLOTS > 10u { (*c).s10 = slot_step(phase, 10u, (*c).s10, &at); }
    if SLOTS > 11u { (*c).s11 = slot_step(phase, 11u, (*c).s11, &at); }
    if SLOTS > 12u { (*c).s12 = slot_step(phase, 12u, (*c).s12, &at); }
    if SLOTS > 13u { (*c).s13 = slot_step(phase, 13u, (*c).s13, &at); }
    if SLOTS > 14u { (*c).s14 = slot_step(phase, 14u, (*c).s14, &at); }
    if SLOTS > 15u { (*c).s15 = slot_step(phase, 15u, (*c).s15, &at); }
#endif
#if SLOTS_OVER_16
    if SLOTS > 16u { (*c).s16 = slot_step(phase, 16u, (*c).s16, &at); }
    if SLOTS > 17u { (*c).s17 = slot_step(phase, 17u, (*c).s17, &at); }
    if SLOTS > 18u { (*c).s18 = slot_step(phase, 18u, (*c).s18, &at); }
    if SLOTS > 19u { (*c).s19 = slot_step(phase, 19u, (*c).s19, &at); }
    if SLOTS > 20u { (*c).s20 = slot_step(phase, 20u, (*c).s20, &at); }
    if SLOTS > 21u { (*c).s21 = slot_step(phase, 21u, (*c).s21, &at); }
    if SLOTS > 22u { (*c).s22 = slot_step(phase, 22u, (*c).s22, &at); }
    if SLOTS > 23u { (*c).s23 = slot_step(phase, 23u, (*c).s23, &at); }
    if SLOTS > 24u { (*c).s24 = slot_step(phase, 24u, (*c).s24, &at); }
    if SLOTS > 25u { (*c).s25 = slot_step(phase, 25u, (*c).s25, &at); }
    if SLOTS > 26u { (*c).s26 = slot_step(phase, 26u, (*c).s26, &at); }
    if SLOTS > 27u { (*c).s27 = slot_step(phase, 27u, (*c).s27, &at); }
    if SLOTS > 28u { (*c).s28 = slot_step(phase, 28u, (*c).s28, &at); }
    if SLOTS > 29u { (*c).s29 = slot_step(phase, 29u, (*c).s29, &at); }
    if SLOTS > 30u { (*c).s30 = slot_step(phase, 30u, (*c).s30, &at); }
    if SLOTS > 31u { (*c).s31 = slot_step(phase, 31u, (*c).s31, &at); }
#endif
#if SLOTS_OVER_32
    if SLOTS > 32u { (*c).s32 = slot_step(phase, 32u, (*c).s32, &at); }
    if SLOTS > 33u { (*c).s33 = slot_step(phase, 33u, (*c).s33, &at); }
    if SLOTS > 34u { (*c).s34 = slot_step(phase, 34u, (*c).s34, &at); }
    if SLOTS > 35u { (*c).s35 = slot_step(phase, 35u, (*c).s35, &at); }
    if SLOTS > 36u { (*c).s36 = slot_step(phase, 36u, (*c).s36, &at); }
    if SLOTS > 37u { (*c).s37 = slot_step(phase, 37u, (*c).s37, &at); }
    if SLOTS > 38u { (*c).s38 = slot_step(phase, 38u, (*c).s38, &at); }
    if SLOTS > 39u { (*c).s39 = slot_step(phase, 39u, (*c).s39, &at); }
    if SLOTS > 40u { (*c).s40 = slot_step(phase, 40u, (*c).s40, &at); }
    if SLOTS > 41u { (*c).s41 = slot_step(phase, 41u, (*c).s41, &at); }
    if SLOTS > 42u { (*c).s42 = slot_step(phase, 42u, (*c).s42, &at); }
    if SLOTS > 43u { (*c).s43 = slot_step(phase, 43u, (*c).s43, &at); }
    if SLOTS > 44u { (*c).s44 = slot_step(phase, 44u, (*c).s44, &at); }
    if SLOTS > 45u { (*c).s45 = slot_step(phase, 45u, (*c).s45, &at); }
    if SLOTS > 46u { (*c).s46 = slot_step(phase, 46u, (*c).s46, &at); }
    if SLOTS > 47u { (*c).s47 = slot_step(phase, 47u, (*c).s47, &at); }
    if SLOTS > 48u { (*c).s48 = slot_step(phase, 48u, (*c).s48, &at); }
    if SLOTS > 49u { (*c).s49 = slot_step(phase, 49u, (*c).s49, &at); }
    if SLOTS > 50u { (*c).s50 = slot_step(phase, 50u, (*c).s50, &at); }
    if SLOTS > 51u { (*c).s51 = slot_step(phase, 51u, (*c).s51, &at); }
    if SLOTS > 52u { (*c).s52 = slot_step(phase, 52u, (*c).s52, &at); }
    if SLOTS > 53u { (*c).s53 = slot_step(phase, 53u, (*c).s53, &at); }
    if SLOTS > 54u { (*c).s54 = slot_step(phase, 54u, (*c).s54, &at); }
    if SLOTS > 55u { (*c).s55 = slot_step(phase, 55u, (*c).s55, &at); }
    if SLOTS > 56u { (*c).s56 = slot_step(phase, 56u, (*c).s56, &at); }
    if SLOTS > 57u { (*c).s57 = slot_step(phase, 57u, (*c).s57, &at); }
    if SLOTS > 58u { (*c).s58 = slot_step(phase, 58u, (*c).s58, &at); }
    if SLOTS > 59u { (*c).s59 = slot_step(phase, 59u, (*c).s59, &at); }
    if SLOTS > 60u { (*c).s60 = slot_step(phase, 60u, (*c).s60, &at); }
    if SLOTS > 61u { (*c).s61 = slot_step(phase, 61u, (*c).s61, &at); }
    if SLOTS > 62u { (*c).s62 = slot_step(phase, 62u, (*c).s62, &at); }
    if SLOTS > 63u { (*c).s63 = slot_step(phase, 63u, (*c).s63, &at); }
#endif
    return at;
}

// Phase 1's cached columns: loaded, summed into `acc`, and v written where it has no later
// turn (in place, v waits for phase 2).
fn fill(c: ptr<function, Cache>, base: u32, lid: u32, width: u32, acc: ptr<function, vec2<f32>>) {
    let walk = Walk(base, lid, width, 0.0, *acc);
    _ = each_slot(c, FETCH, walk);
    *acc = each_slot(c, TALLY, walk).acc;
    if WRITE_SUM && !IN_PLACE {
        _ = each_slot(c, PUT_V, walk);
    }
}

// Phase 2's cached columns: in place v, then y = v * post * gamma + beta.
fn drain(c: ptr<function, Cache>, base: u32, lid: u32, width: u32, post: f32) {
    let walk = Walk(base, lid, width, post, vec2(0.0));
    if IN_PLACE {
        _ = each_slot(c, PUT_V, walk);
    }
    _ = each_slot(c, AFFINE, walk);
    _ = each_slot(c, STORE, walk);
}
