//! The CPU reference every test compares against: the contract's formula in f64, for every
//! kind of normalization (RMSNorm, LayerNorm), with or without a residual, a post-norm
//! (the sandwich) and a gamma offset.
//!
//! `v` is formed in f32, in the kernel's order `((input + input2) + residual) + bias`
//! (`input2`: a parallel block's second sublayer output), because `v` is
//! itself an f32 output (`sum`); everything after it (means, squares, inverse square root,
//! scale and shift) is f64, so the reference carries no f32 rounding of its own. With a
//! post-norm, `v = residual + w` is `w` in f64 rounded once to f32. A rotary stage turns `y`
//! in f64 by the angle the models form (`rotary.rs`).

mod compare;
mod formula;
mod rotary;

pub use compare::{same_sum, subnormal_size, worst_error, worst_error_at, worst_relative};
pub use formula::{chain, from_sum, norm_family, norm_family_flushed, GenericInputs, Inputs};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_row() {
        // v = [3, 4] → mean square 12.5 → y = v / sqrt(12.5) * gamma + beta.
        let x = Inputs {
            beta: Some(&[0.0, 1.0]),
            bias: Some(&[1.0, 1.0]),
            eps: 0.0,
            ..Inputs::plain(&[1.0, 2.0], &[1.0, 1.0], &[2.0, 0.5], 2)
        };
        let (y, v) = norm_family(&x);
        assert_eq!(v, vec![3.0, 4.0]);
        let r = 12.5f64.sqrt();
        assert!((y[0] - 3.0 / r * 2.0).abs() < 1e-15);
        assert!((y[1] - (4.0 / r * 0.5 + 1.0)).abs() < 1e-15);
    }

    #[test]
    fn scale_invariance_holds_in_f64() {
        let base = [0.5f32, -1.25, 2.0, 0.75];
        let gamma = [1.0f32; 4];
        let run = |k: f32| {
            let input: Vec<f32> = base.iter().map(|b| b * k).collect();
            let zero = [0.0f32; 4];
            norm_family(&Inputs {
                eps: 0.0,
                ..Inputs::plain(&input, &zero, &gamma, 4)
            })
            .0
        };
        let one = run(1.0);
        for k in [1e30f32, 1e-30] {
            for (a, b) in run(k).iter().zip(&one) {
                assert!((a - b).abs() < 1e-6, "{k}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn nan_poisons_only_its_row() {
        let input = [f32::NAN, 1.0, 1.0, 2.0];
        let zero = [0.0f32; 4];
        let (y, _) = norm_family(&Inputs::plain(&input, &zero, &[1.0, 1.0], 2));
        assert!(y[0].is_nan() && y[1].is_nan());
        assert!(y[2].is_finite() && y[3].is_finite());
    }

    #[test]
    fn worst_error_flags_a_wrong_value() {
        let x = Inputs {
            eps: 0.0,
            ..Inputs::plain(&[1.0, 2.0], &[0.0, 0.0], &[1.0, 1.0], 2)
        };
        let (want, _) = norm_family(&x);
        let good: Vec<f32> = want.iter().map(|&w| w as f32).collect();
        assert!(worst_error(&good, &want, &x, 1e-5) <= 1.0);
        let bad = [good[0] * 1.001, good[1]];
        assert!(worst_error(&bad, &want, &x, 1e-5) > 1.0);
        assert!(worst_error(&[f32::NAN, good[1]], &want, &x, 1e-5).is_infinite());
    }

    /// The row that failed on an H200: a subnormal residual flushed on load changes the whole
    /// row's normalization; that result is accepted, a wrong one still is not.
    #[test]
    fn a_flushed_subnormal_input_is_accepted_for_the_whole_row_and_nothing_else() {
        let input = [-1.9e-37f32, 1.9e-37, 6.9e-37, -4.9e-37];
        let residual = [0.0f32, 0.0, 0.0, 8.96e-39];
        let x = Inputs {
            eps: 0.0,
            ..Inputs::plain(&input, &residual, &[0.7, -1.2, 0.4, 0.9], 4)
        };
        let (want, _) = norm_family(&x);
        let flushed = Inputs {
            residual: Some(&[0.0; 4]),
            ..x.clone()
        };
        let (as_gpu, _) = norm_family(&flushed);
        let got: Vec<f32> = as_gpu.iter().map(|&w| w as f32).collect();
        assert!(worst_error(&got, &want, &x, 1e-5) <= 1.0);
        let wrong: Vec<f32> = got.iter().map(|g| g * 1.001).collect();
        assert!(worst_error(&wrong, &want, &x, 1e-5) > 1.0);
    }
}
