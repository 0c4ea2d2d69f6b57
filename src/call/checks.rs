//! The checks of single values: a number from JavaScript (`hidden`, `rows`, `eps`,
//! `gammaOffset`, `repeat`) and a size against the device's limits. [`crate::call::shape`]
//! applies them to a whole call, the facade's argument readers to JavaScript numbers, and the
//! drivers' `upload` (`instance.rs`, `gpu/resident.rs`, `cpu/driver.rs`) to the size of an
//! upload.

use crate::call::device::Caps;
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::support::number_text::number_text;

/// The most dispatches one timing call records. A repeat count is work recorded
/// synchronously and run in one submission: unbounded, `timeDispatches(args, -1)` would
/// record 2³² dispatches and hang the page. 10,000 covers any slope measurement, the demo's
/// and the benchmarks' included.
pub const MAX_REPEAT: u32 = 10_000;

/// Rows of `hidden` one storage binding of `max_binding` bytes holds.
pub(crate) fn rows_per_binding(hidden: usize, max_binding: u64) -> Result<usize, Error> {
    let row_bytes = hidden as u64 * 4;
    if row_bytes > max_binding {
        return Err(Error::Shape(format!(
            "hidden: expected a row this device can bind (at most {} f32, its \
             maxStorageBufferBindingSize is {} bytes), got {hidden}",
            max_binding / 4,
            max_binding
        )));
    }
    Ok((max_binding / row_bytes) as usize)
}

/// An upload of `len` elements must fit one storage binding.
pub fn check_upload(len: usize, dtype: Dtype, caps: &Caps) -> Result<(), Error> {
    if (len * dtype.bytes()) as u64 > caps.max_binding {
        return Err(Error::Shape(format!(
            "data: expected at most {} elements (this device's maxStorageBufferBindingSize is {} bytes), got {len}",
            caps.max_binding / dtype.bytes() as u64,
            caps.max_binding
        )));
    }
    Ok(())
}

/// A repeat count from Rust; the same check as JavaScript's.
pub(crate) fn check_repeat(repeat: u32) -> Result<(), Error> {
    repeat_from_number(repeat.into()).map(drop)
}

/// `eps` where a call gives none.
pub const DEFAULT_EPS: f32 = 1e-6;

/// What a number a call gives must be, and how a message says so: one rule for each kind of
/// number, whichever argument it is.
#[derive(Clone, Copy)]
pub enum Rule {
    /// An integer from the first to the second (`hidden`, `rows`, a count, a position).
    Integer(u32, u32),
    /// A finite number that stays finite in f32, `>= 0` where it says so (`eps`,
    /// `gammaOffset`: Gemma's 1).
    Finite { non_negative: bool },
}

pub const HIDDEN: Rule = Rule::Integer(1, u32::MAX);
pub const ROWS: Rule = Rule::Integer(0, u32::MAX);
pub const COUNT: Rule = Rule::Integer(1, u32::MAX);
pub const POSITION: Rule = Rule::Integer(0, u32::MAX);
/// A count that may be none (`passHeads`).
pub const SOME: Rule = Rule::Integer(0, u32::MAX);
pub const REPEAT: Rule = Rule::Integer(1, MAX_REPEAT);
pub const EPS: Rule = Rule::Finite { non_negative: true };
pub const GAMMA_OFFSET: Rule = Rule::Finite {
    non_negative: false,
};

impl Rule {
    fn holds(self, x: f64) -> bool {
        match self {
            Rule::Integer(lo, hi) => x.fract() == 0.0 && x >= lo.into() && x <= hi.into(),
            Rule::Finite { non_negative } => {
                x.is_finite() && x.abs() <= f32::MAX as f64 && (x >= 0.0 || !non_negative)
            }
        }
    }

    fn expected(self) -> String {
        match self {
            Rule::Integer(lo, hi) => format!("an integer from {lo} to {hi}"),
            Rule::Finite { non_negative: true } => "a finite number >= 0".into(),
            Rule::Finite { .. } => "a finite number".into(),
        }
    }

    /// `x`, the argument `name`, where it keeps the rule; else a `ShapeError` naming both.
    pub fn check(self, name: &str, x: f64) -> Result<f64, Error> {
        if self.holds(x) {
            return Ok(x);
        }
        Err(Error::Shape(format!(
            "{name}: expected {}, got {}",
            self.expected(),
            number_text(x)
        )))
    }
}

/// `hidden` as JavaScript passes it: any number. Non-numbers are the caller's `TypeError`.
pub fn hidden_from_number(hidden: f64) -> Result<usize, Error> {
    HIDDEN.check("hidden", hidden).map(|h| h as usize)
}

/// `rows` as JavaScript passes it (where a `GPUBuffer` input holds more than the call's rows).
pub fn rows_from_number(rows: f64) -> Result<usize, Error> {
    ROWS.check("rows", rows).map(|r| r as usize)
}

/// `eps` as JavaScript passes it; it must also be finite once rounded to f32.
pub fn eps_from_number(eps: f64) -> Result<f32, Error> {
    EPS.check("eps", eps).map(|e| e as f32)
}

/// `gammaOffset` as JavaScript passes it: any number that stays finite in f32.
pub fn gamma_offset_from_number(offset: f64) -> Result<f32, Error> {
    GAMMA_OFFSET.check("gammaOffset", offset).map(|o| o as f32)
}

/// A timing call's `repeat` as JavaScript passes it, checked before anything is recorded.
pub fn repeat_from_number(repeat: f64) -> Result<u32, Error> {
    REPEAT.check("repeat", repeat).map(|r| r as u32)
}

/// A call's numbers as JavaScript gave them, their types read and their values not yet
/// checked (`None`: not given).
#[derive(Clone, Copy, Default)]
pub struct GivenNumbers {
    pub gamma_offset: Option<f64>,
    pub hidden: f64,
    pub eps: Option<f64>,
    pub rotary: RotaryNumbers,
    /// A rotary stage's heads a token that pass as they are (`passHeads`: a packed qkv
    /// row's v heads; 0 passes none).
    pub pass_heads: Option<f64>,
    pub rows: Option<f64>,
}

/// The rotary stage's numbers: the first position of consecutive tokens, and its counts.
#[derive(Clone, Copy, Default)]
pub struct RotaryNumbers {
    pub position: Option<f64>,
    pub rotary_dim: Option<f64>,
    pub head_size: Option<f64>,
    pub heads: Option<f64>,
}

impl GivenNumbers {
    /// Each number by its rule, in the order the messages name them.
    pub fn check(&self) -> Result<(), Error> {
        let given = [
            ("gammaOffset", self.gamma_offset, GAMMA_OFFSET),
            ("hidden", Some(self.hidden), HIDDEN),
            ("eps", self.eps, EPS),
            ("position", self.rotary.position, POSITION),
            ("rotaryDim", self.rotary.rotary_dim, COUNT),
            ("headSize", self.rotary.head_size, COUNT),
            ("heads", self.rotary.heads, COUNT),
            ("passHeads", self.pass_heads, SOME),
            ("rows", self.rows, ROWS),
        ];
        for (name, x, rule) in given {
            if let Some(x) = x {
                rule.check(name, x)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_number_keeps_its_rule_and_a_refusal_names_it() {
        let given = GivenNumbers {
            hidden: 4.0,
            ..GivenNumbers::default()
        };
        assert_eq!(given.check(), Ok(()));
        let (from_1, from_0) = (HIDDEN.expected(), ROWS.expected());
        type Spoil = fn(&mut GivenNumbers);
        let bad: [(&str, Spoil, String); 8] = [
            (
                "gammaOffset",
                |g| g.gamma_offset = Some(f64::NAN),
                "a finite number".into(),
            ),
            ("hidden", |g| g.hidden = 0.5, from_1.clone()),
            (
                "eps",
                |g| g.eps = Some(-1e-9),
                "a finite number >= 0".into(),
            ),
            (
                "position",
                |g| g.rotary.position = Some(-1.0),
                from_0.clone(),
            ),
            (
                "rotaryDim",
                |g| g.rotary.rotary_dim = Some(0.0),
                from_1.clone(),
            ),
            (
                "headSize",
                |g| g.rotary.head_size = Some(1e10),
                from_1.clone(),
            ),
            ("heads", |g| g.rotary.heads = Some(2.5), from_1),
            ("rows", |g| g.rows = Some(f64::INFINITY), from_0),
        ];
        assert_eq!(HIDDEN.expected(), "an integer from 1 to 4294967295");
        for (name, spoil, expected) in bad {
            let mut g = given;
            spoil(&mut g);
            let e = g.check().unwrap_err();
            assert_eq!(e.name(), "ShapeError");
            let head = format!("{name}: expected {expected}, got ");
            assert!(e.message().starts_with(&head), "{e}");
        }
        // The first refused in the messages' order is the one named.
        let mut g = given;
        (g.eps, g.rows) = (Some(f64::NAN), Some(-1.0));
        assert!(g.check().unwrap_err().message().starts_with("eps:"));
        // Finite in f64 but not in f32 is refused too.
        assert!(EPS.check("eps", 1e39).is_err() && GAMMA_OFFSET.check("g", -1e39).is_err());
        assert_eq!(GAMMA_OFFSET.check("g", -1.0), Ok(-1.0));
    }

    #[test]
    fn repeat_is_bounded_before_anything_is_recorded() {
        for bad in [
            0.0,
            -1.0,
            1.5,
            f64::NAN,
            f64::INFINITY,
            1e12,
            (MAX_REPEAT + 1) as f64,
        ] {
            let e = repeat_from_number(bad).unwrap_err();
            assert_eq!(e.name(), "ShapeError");
            assert!(e.message().starts_with("repeat:"), "{e}");
        }
        assert_eq!(repeat_from_number(1.0), Ok(1));
        assert_eq!(repeat_from_number(MAX_REPEAT as f64), Ok(MAX_REPEAT));
        assert!(check_repeat(0).is_err() && check_repeat(MAX_REPEAT + 1).is_err());
    }
}
