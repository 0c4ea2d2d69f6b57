//! The rotary stage's defaults and checks.

use super::*;

fn rotary(positions: Positions) -> Rotary {
    Rotary::new(positions, &[1.0; 4])
}

#[test]
fn defaults_rotate_whole_rows_one_a_token() {
    let r = rotary(Positions::Each(vec![0, 1, 2].into()));
    let s = r.check(3, 8).unwrap();
    assert_eq!((s.head_size, s.rotary_dim, s.heads), (8, 8, 1));
    let heads = Rotary {
        head_size: Some(4),
        rotary_dim: Some(2),
        frequencies: Frequencies::Theta(1e4),
        ..rotary(Positions::Each(vec![7, 9].into()))
    };
    assert_eq!(heads.check(6, 8).unwrap().heads, 3);
    assert_eq!(heads.position(5, 3), 9);
    assert_eq!(heads.from_row(3, 6).position(0, 3), 9);
    assert_eq!(heads.from_row(3, 6).shape(3, 8).heads, 3);
    assert_eq!(rotary(Positions::From(10)).position(2, 1), 12);
}

/// A stage with each bad value, and the argument its error names first.
fn bad_stages() -> Vec<(Rotary, &'static str)> {
    let each = |p: Vec<u32>| rotary(Positions::Each(p.into()));
    let one = |change: fn(&mut Rotary)| {
        let mut r = each(vec![0]);
        change(&mut r);
        r
    };
    vec![
        (one(|r| r.head_size = Some(3)), "headSize:"),
        (one(|r| r.rotary_dim = Some(3)), "rotaryDim:"),
        (one(|r| r.rotary_dim = Some(10)), "rotaryDim:"),
        (one(|r| r.attention_scaling = 0.0), "attentionScaling:"),
        (one(|r| r.attention_scaling = f32::NAN), "attentionScaling:"),
        (one(|r| r.frequencies = Frequencies::Theta(-1.0)), "theta:"),
        (
            one(|r| r.frequencies = Frequencies::Inverse(vec![1.0; 3].into())),
            "invFreq:",
        ),
        (
            one(|r| r.frequencies = Frequencies::Inverse(vec![f32::NAN; 4].into())),
            "invFreq:",
        ),
        (each(vec![0, 1, 2]), "positions:"),
        (
            Rotary {
                heads: Some(2),
                ..each(vec![0, 1, 2])
            },
            "positions:",
        ),
        (one(|r| r.heads = Some(0)), "heads:"),
        (
            Rotary {
                heads: Some(3),
                ..rotary(Positions::From(0))
            },
            "heads:",
        ),
        (rotary(Positions::From(u32::MAX - 1)), "position:"),
        (one(|r| r.frequencies = table(12)), "cosSin:"),
        (one(|r| r.frequencies = table(0)), "cosSin:"),
        (
            one(|r| r.frequencies = Frequencies::Table(vec![f32::NAN; 8].into())),
            "cosSin:",
        ),
        (
            Rotary {
                frequencies: table(16),
                ..each(vec![5])
            },
            "positions:",
        ),
        (
            Rotary {
                frequencies: table(32),
                ..rotary(Positions::From(1))
            },
            "positions:",
        ),
    ]
}

/// The app's cos and sin: `len` numbers, a row of 8 a position.
fn table(len: usize) -> Frequencies {
    Frequencies::Table((0..len).map(|i| i as f32 / 64.0).collect())
}

#[test]
fn every_bad_value_is_named() {
    let each = |p: Vec<u32>| rotary(Positions::Each(p.into()));
    for (r, name) in bad_stages() {
        let e = r.check(4, 8).unwrap_err();
        assert_eq!(e.name(), "ShapeError", "{e}");
        assert!(e.message().starts_with(name), "{name}: {e}");
    }
    assert!(rotary(Positions::From(u32::MAX - 3)).check(4, 8).is_ok());
    // The table's last row is the last position of four tokens from 0.
    let held = Rotary {
        frequencies: table(32),
        ..rotary(Positions::From(0))
    };
    assert_eq!(held.check(4, 8).unwrap().rotary_dim, 8);
    assert_eq!(held.cos_sin(3, 8)[1], (25.0 / 64.0, 29.0 / 64.0));
    assert!(each(vec![]).check(0, 8).is_ok());
}

#[test]
fn theta_gives_the_usual_frequencies() {
    let f = inv_freq_of_theta(10_000.0, 8);
    assert_eq!(f, vec![1.0, 0.1, 0.01, 0.001]);
}

/// A gamma a head: as `gammaHeads` says, else as the length says; a buffer is sized to one
/// only where the call says so.
#[test]
fn a_gamma_a_head_is_what_the_call_or_its_length_says() {
    use super::gamma::gamma_fits;
    let message = |r: Result<(), Error>| r.unwrap_err().to_string();
    // Rows of 8, four heads a token: a gamma a head holds 32.
    for (len, said) in [(8, None), (32, None), (32, Some(true)), (8, Some(false))] {
        assert!(
            gamma_fits(Some(len), 8, Some(32), said).is_ok(),
            "{len} {said:?}"
        );
    }
    let refused = [
        (
            16,
            None,
            "gamma: expected length 8 (hidden) or 32 (a gamma a head; in a GPUBuffer, with gammaHeads: true), got 16",
        ),
        (
            8,
            Some(true),
            "gamma: expected length 32 (heads × hidden, with gammaHeads), got 8",
        ),
        (
            32,
            Some(false),
            "gamma: expected length 8 (hidden, with gammaHeads false), got 32",
        ),
    ];
    for (len, said, text) in refused {
        assert!(message(gamma_fits(Some(len), 8, Some(32), said)).ends_with(text));
    }
    // One head a token: heads × hidden is hidden.
    let one = gamma_fits(Some(16), 8, Some(8), None);
    assert!(message(one).ends_with("expected length 8 (hidden), got 16"));
    // No gamma (a rotation alone, a post-norm's sum alone): no weight a head to hold.
    assert!(gamma_fits(None, 8, Some(32), None).is_ok());
    let none = gamma_fits(None, 8, Some(32), Some(true));
    assert!(
        message(none).ends_with("gammaHeads: expected false or undefined on a call without gamma")
    );
    let heads = |said| Rotary {
        heads: Some(4),
        gamma_heads: said,
        ..rotary(Positions::From(0))
    };
    assert_eq!(heads(Some(true)).said_gamma_len(8, 8), Some(32));
    assert_eq!(heads(None).said_gamma_len(8, 8), None);
    assert_eq!(heads(Some(false)).said_gamma_len(8, 8), None);
    // A stage that does not check sizes nothing.
    assert_eq!(heads(Some(true)).said_gamma_len(6, 8), None);
}

/// An app's buffer, as the checks see one: a handle they only compare.
struct Handle;

impl crate::call::host::BufferHandle for Handle {
    fn same(&self, _: &dyn crate::call::host::BufferHandle) -> bool {
        false
    }
}

#[test]
fn positions_in_a_buffer_need_heads_and_a_word_a_token() {
    use crate::call::dtype::Dtype;
    use crate::call::host::AppBuffer;
    // A buffer of 5 words, read as f32's four bytes each.
    let stage = |heads| Rotary {
        heads,
        ..rotary(Positions::Buffer(AppBuffer::new(Handle, 20, Dtype::F32)))
    };
    let message = |r: Result<RotaryShape, Error>| r.unwrap_err().to_string();
    assert!(message(stage(None).check(8, 8)).contains(
        "heads: expected the rows a token with positions in a GPUBuffer (its size does not tell \
         the tokens), got undefined"
    ));
    assert!(message(stage(Some(3)).check(8, 8))
        .contains("heads: expected a divisor of the rows (8), got 3"));
    assert!(message(stage(Some(1)).check(6, 8)).contains(
        "positions: expected a GPUBuffer of at least 24 bytes (a 32-bit position for each of 6 \
         tokens), got 20"
    ));
    // Four tokens of two heads: their four words go after the four inverse frequencies'
    // (rotaryDim 8), read as a position a token is.
    let s = stage(Some(2));
    assert_eq!(s.check(8, 8).unwrap().heads, 2);
    assert!(s.kernel(8).each);
    let (_, tokens, to) = s.buffer_positions(8, 8).unwrap();
    assert_eq!((tokens, to), (4, 16));
    assert_eq!(s.table(8, 8), [[1f32.to_bits(); 4], [0; 4]].concat());
    assert_eq!(s.start(), 0);
}

#[test]
fn passed_heads_are_fewer_than_a_tokens_and_hold_the_input() {
    let stage = |pass| Rotary {
        heads: Some(4),
        pass_heads: Some(pass),
        ..rotary(Positions::From(0))
    };
    assert_eq!(stage(1).check(8, 8).unwrap().turned, 3);
    assert_eq!(stage(0).check(8, 8).unwrap().turned, 4);
    let e = stage(4).check(8, 8).unwrap_err().to_string();
    assert!(
        e.contains("passHeads: expected fewer than the heads a token (4), got 4"),
        "{e}"
    );
    assert!(stage(1).check_passing(false, false).is_ok());
    assert!(stage(0).check_passing(true, true).is_ok());
    let e = stage(1).check_passing(false, true).unwrap_err().to_string();
    assert!(
        e.contains("passHeads: expected 0 or undefined with bias"),
        "{e}"
    );
}
