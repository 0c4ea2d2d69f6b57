//! The rotary stage in the reference: each pair of a head's `y` turned in f64 by the angle
//! the models form, `f32(f32(position) · invFreq[k])` (one f32 product), its cos and sin in
//! f64 times the attention scaling (or the app's own cos and sin, `cosSin`). Only the angle
//! is rounded as the models round it; the rotation itself carries no f32 rounding.

use crate::call::rotary::Rotary;

/// Turns `y`, row `r` of a call of `rows × hidden` (`y` in f64, after `gamma` and `beta`),
/// where the call has a rotary stage.
pub(super) fn rotate(
    rotary: Option<&Rotary>,
    (rows, hidden): (usize, usize),
    r: usize,
    y: &mut [f64],
) {
    let Some(rotary) = rotary else {
        return;
    };
    let shape = rotary.shape(rows, hidden);
    let position = rotary.position(r, shape.heads);
    let turns = rotary.cos_sin(position, shape.rotary_dim);
    let scaling = rotary.attention_scaling as f64;
    for head in y.chunks_exact_mut(shape.head_size) {
        for (k, &(c, s)) in turns.iter().enumerate() {
            let (c, s) = (c * scaling, s * scaling);
            let (i, j) = shape.style.pair(k, shape.rotary_dim);
            let (a, b) = (head[i], head[j]);
            head[i] = a * c - b * s;
            head[j] = b * c + a * s;
        }
    }
}
