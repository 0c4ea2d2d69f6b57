//! A rotary stage's frequencies: the model's inverse frequencies, `theta`, or the app's own
//! cos and sin; their checks, the words a GPU kernel reads of them, and the cos and sin of a
//! pair at a position, as the models form them.

use std::rc::Rc;

use crate::call::error::Error;
use crate::support::number_text::number_text;

/// Where a stage's angles come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Frequencies {
    /// The model's own (`invFreq`), as its rotary module computes them: the only way to match
    /// a model exactly (scaled RoPE included).
    Inverse(Rc<[f32]>),
    /// `1 / θ^(2k/rotaryDim)` in f64 rounded to f32: a convenience. Models compute it in f32,
    /// which differs by an ulp in a third of the entries.
    Theta(f64),
    /// The app's own cos and sin (`cosSin`): a row a position of `rotaryDim` values, its
    /// `rotaryDim / 2` cosines then its sines (vLLM's and FlashInfer's `cos_sin_cache`).
    Table(Rc<[f32]>),
}

impl Frequencies {
    /// Checks the frequencies against a stage of `rotary_dim`, naming the field.
    pub fn check(&self, rotary_dim: usize) -> Result<(), Error> {
        match self {
            Frequencies::Theta(theta) if !(theta.is_finite() && *theta > 0.0) => {
                Err(shape(format!(
                    "theta: expected a finite number > 0, got {}",
                    number_text(*theta)
                )))
            }
            Frequencies::Theta(_) => Ok(()),
            Frequencies::Inverse(f) if f.len() != rotary_dim / 2 => Err(shape(format!(
                "invFreq: expected length {} (rotaryDim / 2), got {}",
                rotary_dim / 2,
                f.len()
            ))),
            Frequencies::Table(t) if t.is_empty() || !t.len().is_multiple_of(rotary_dim) => {
                Err(shape(format!(
                    "cosSin: expected a length that is a multiple of rotaryDim ({rotary_dim}: \
                     a row a position), got {}",
                    t.len()
                )))
            }
            Frequencies::Inverse(f) => finite("invFreq", f),
            Frequencies::Table(t) => finite("cosSin", t),
        }
    }

    /// The positions the app's table holds; 0 where the angles are formed.
    pub fn table_positions(&self, rotary_dim: usize) -> usize {
        match self {
            Frequencies::Table(t) => t.len() / rotary_dim.max(1),
            _ => 0,
        }
    }

    /// How many words a GPU kernel reads of them ([`Frequencies::words`]).
    pub fn word_count(&self, rotary_dim: usize) -> usize {
        match self {
            Frequencies::Table(t) => t.len(),
            _ => rotary_dim / 2,
        }
    }

    /// What a GPU kernel reads of them, as bits: the app's cos and sin, or the inverse
    /// frequencies.
    pub fn words(&self, rotary_dim: usize) -> Vec<u32> {
        let floats = match self {
            Frequencies::Table(t) => t.clone(),
            _ => self.inv_freq(rotary_dim),
        };
        floats.iter().map(|f| f.to_bits()).collect()
    }

    /// The inverse frequencies of a stage of `rotary_dim` (`words` and `cos_sin` read the
    /// app's table before they ask).
    fn inv_freq(&self, rotary_dim: usize) -> Rc<[f32]> {
        match self {
            Frequencies::Inverse(f) => f.clone(),
            Frequencies::Theta(theta) => inv_freq_of_theta(*theta, rotary_dim).into(),
            Frequencies::Table(_) => Rc::from([]),
        }
    }

    /// `(cos, sin)` of each pair at `position`, before the scaling, of a checked stage of
    /// `rotary_dim`: the app's, or those of the angle the models form.
    pub fn cos_sin(&self, position: u32, rotary_dim: usize) -> Vec<(f64, f64)> {
        let half = rotary_dim / 2;
        match self {
            Frequencies::Table(t) => {
                let row = &t[position as usize * rotary_dim..][..rotary_dim];
                (0..half)
                    .map(|k| (row[k].into(), row[half + k].into()))
                    .collect()
            }
            _ => (self.inv_freq(rotary_dim).iter())
                .map(|&f| angle_cos_sin(position, f))
                .collect(),
        }
    }
}

/// `(cos, sin)` in f64 of the angle `f32(position) * inv_freq`, the f32 product rounded once,
/// as the models' rotary embeddings form it. f64's `cos` and `sin` reduce their argument
/// exactly, and an f32 angle is exactly an f64.
pub fn angle_cos_sin(position: u32, inv_freq: f32) -> (f64, f64) {
    let angle = f64::from(position as f32 * inv_freq);
    (angle.cos(), angle.sin())
}

/// Refuses a table's first number that is not finite, by the field's name.
fn finite(name: &str, values: &[f32]) -> Result<(), Error> {
    match values.iter().position(|f| !f.is_finite()) {
        Some(i) => Err(shape(format!(
            "{name}: expected finite numbers, got {} at {i}",
            number_text(values[i].into())
        ))),
        None => Ok(()),
    }
}

/// `1 / θ^(2k/d)` for `k < d/2`, in f64 rounded once to f32. Not what the models compute
/// (in f32, through torch's `pow`): an ulp off in a third of the entries, which moves an
/// angle at position 131071 by up to 7.8e-3 rad; exact results need the model's `invFreq`.
pub fn inv_freq_of_theta(theta: f64, rotary_dim: usize) -> Vec<f32> {
    (0..rotary_dim / 2)
        .map(|k| (1.0 / theta.powf((2 * k) as f64 / rotary_dim as f64)) as f32)
        .collect()
}

fn shape(message: String) -> Error {
    Error::Shape(message)
}
