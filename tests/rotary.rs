//! The rotary stage after the norm (RoPE), natively: the CPU backend and the GPU's kernel
//! (Vulkan on lavapipe) against the f64 reference at positions 0, 1, consecutive runs, 4095, 32767 and 2^20, NeoX and
//! interleaved, partial rotary, heads narrower than the row, theta and attention scaling, f16
//! output, in place; every bad value refused by name; and both against what Hugging Face
//! transformers' own model code computes (`tests/fixtures/rotary/`).
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use webgpu_rmsnorm::call::host::Arg;
use webgpu_rmsnorm::call::rotary::{Frequencies, Positions, Rotary, RotaryStyle};
use webgpu_rmsnorm::call::shape::{Norm, NormKind};
use webgpu_rmsnorm::cpu::driver::CpuContext;
use webgpu_rmsnorm::reference::{norm_family, worst_error, Inputs};
use webgpu_rmsnorm::{Error, GpuContext, Request};

mod common;
#[path = "rotary/json.rs"]
mod json;

use common::Rng;
use json::Json;

/// Relative tolerance against the f64 reference: of the row's scale (`worst_error`).
const RTOL: f64 = 1e-5;

/// `y` of a call on the CPU backend, read back.
fn cpu(x: &Inputs) -> Result<Vec<f32>, Error> {
    let done = CpuContext::default().submit(x, Request::host(false))?;
    Ok(done.host.and_then(|o| o.y).expect("y read back"))
}

thread_local! {
    static GPU: GpuContext = pollster::block_on(GpuContext::new(wgpu::PowerPreference::HighPerformance))
        .expect("a Vulkan adapter (lavapipe: apt-get install mesa-vulkan-drivers)");
}

/// `y` of a call on the GPU, read back.
fn gpu(x: &Inputs) -> Result<Vec<f32>, Error> {
    GPU.with(|ctx| pollster::block_on(ctx.run(x, false)))
        .map(|out| out.y.expect("y read back"))
}

/// A rotation of `heads` rows a token of `hidden`, each row of heads of `head_size`.
struct Shape {
    tokens: usize,
    heads: usize,
    hidden: usize,
    head_size: usize,
    rotary_dim: usize,
}

impl Shape {
    /// Rows that are heads (QK-norm): `heads` rows a token, each a head of `hidden`.
    fn heads(tokens: usize, heads: usize, hidden: usize, rotary_dim: usize) -> Shape {
        Shape {
            tokens,
            heads,
            hidden,
            head_size: hidden,
            rotary_dim,
        }
    }
}

fn rotary(s: &Shape, positions: Positions, rng: &mut Rng) -> Rotary {
    let inv_freq: Vec<f32> = (0..s.rotary_dim / 2)
        .map(|k| 10_000f32.powf(-2.0 * k as f32 / s.rotary_dim as f32) * (1.0 + rng.unit() / 8.0))
        .collect();
    Rotary {
        rotary_dim: Some(s.rotary_dim),
        head_size: Some(s.head_size),
        ..Rotary::new(positions, &inv_freq)
    }
}

/// Four rows of 8 ones and a gamma of ones: a call whose checks are what is tested.
fn ones() -> (Vec<f32>, Vec<f32>) {
    (vec![1.0; 4 * 8], vec![1.0; 8])
}

/// Runs `x` on both backends and holds each to the reference; returns the worst error.
fn check(x: &Inputs, what: &str) -> f64 {
    let (want, _) = norm_family(x);
    let mut worst = 0.0f64;
    for (backend, run) in [("cpu", cpu as fn(&Inputs) -> _), ("gpu", gpu)] {
        let got = run(x).unwrap_or_else(|e| panic!("{what} on {backend}: {e}"));
        let w = worst_error(&got, &want, x, RTOL);
        assert!(w <= 1.0, "{what} on {backend}: {w} of the tolerance");
        worst = worst.max(w);
    }
    worst
}

#[test]
fn both_backends_turn_y_as_the_reference_does_at_every_position() {
    let mut rng = Rng(44);
    let shapes = [
        // QK-norm: rows are heads (Qwen3, Gemma 3).
        Shape {
            tokens: 5,
            heads: 4,
            hidden: 64,
            head_size: 64,
            rotary_dim: 64,
        },
        // OLMo 2: a token's heads normalized as one row, turned head by head.
        Shape {
            tokens: 3,
            heads: 1,
            hidden: 256,
            head_size: 64,
            rotary_dim: 64,
        },
        // Partial rotary (Phi: 32 of 80).
        Shape {
            tokens: 4,
            heads: 2,
            hidden: 80,
            head_size: 80,
            rotary_dim: 32,
        },
        // A quarter of heads of 80 (StableLM): pairs five vectors apart, read a scalar at a
        // time on the GPU, two heads a row.
        Shape {
            tokens: 3,
            heads: 1,
            hidden: 160,
            head_size: 80,
            rotary_dim: 20,
        },
        Shape {
            tokens: 2,
            heads: 2,
            hidden: 256,
            head_size: 128,
            rotary_dim: 128,
        },
    ];
    let starts = [0u32, 1, 4093, 32_765, 1 << 20, (1 << 24) - 2, 3_000_000_000];
    let mut worst = 0.0f64;
    for s in &shapes {
        let rows = s.tokens * s.heads;
        let input = rng.vec(rows * s.hidden, 2.0);
        let residual = rng.vec(rows * s.hidden, 1.0);
        let gamma = rng.vec(s.hidden, 1.5);
        let beta = rng.vec(s.hidden, 0.5);
        for &start in &starts {
            for style in [RotaryStyle::NeoX, RotaryStyle::Interleaved] {
                let each: Vec<u32> = (0..s.tokens as u32).map(|t| start + 7 * t).collect();
                for positions in [Positions::From(start), Positions::Each(each.into())] {
                    let r = Rotary {
                        style,
                        heads: (s.heads > 1 && rng.below(2) == 0).then_some(s.heads),
                        attention_scaling: if rng.below(2) == 0 { 1.0 } else { 1.1386 },
                        ..rotary(s, positions.clone(), &mut rng)
                    };
                    let r = match &positions {
                        // One start position: rows a token said, else one row a token.
                        Positions::From(_) => Rotary {
                            heads: Some(s.heads),
                            ..r
                        },
                        _ => r,
                    };
                    let base = Inputs::without_residual(&input[..], &gamma[..], s.hidden);
                    let what = format!(
                        "{}x{} of {}, {style:?} at {positions:?}",
                        s.tokens, s.heads, s.hidden
                    );
                    let x = Inputs {
                        rotary: Some(r.clone()),
                        ..base.clone()
                    };
                    worst = worst.max(check(&x, &what));
                    let layer = Inputs {
                        residual: Some(&residual[..]),
                        beta: Some(&beta[..]),
                        norm: Norm {
                            kind: NormKind::Layer,
                            gamma_offset: 1.0,
                            output_dtype: None,
                        },
                        rotary: Some(r),
                        ..base
                    };
                    worst = worst.max(check(&layer, &format!("{what}, LayerNorm")));
                }
            }
        }
    }
    eprintln!("worst error: {worst:.3} of the tolerance");
}

/// Cohere's QK-norm: a gamma a head (`[heads, hidden]`), row r taking head r mod heads's;
/// each weight differs, so a kernel that read one gamma for every head fails.
#[test]
fn a_gamma_a_head_scales_each_row_by_its_heads_weight() {
    let mut rng = Rng(47);
    let shapes = [
        (5, 4, 64, 64),
        (2, 2, 256, 128),
        (4, 2, 80, 32),
        (3, 3, 12, 12),
    ];
    let mut worst = 0.0f64;
    for (tokens, heads, hidden, rotary_dim) in shapes {
        let rows = tokens * heads;
        let input = rng.vec(rows * hidden, 2.0);
        let gamma = rng.vec(heads * hidden, 1.5);
        let beta = rng.vec(hidden, 0.5);
        let s = Shape::heads(tokens, heads, hidden, rotary_dim);
        for (style, kind) in [
            (RotaryStyle::Interleaved, NormKind::Layer),
            (RotaryStyle::NeoX, NormKind::Rms),
        ] {
            let each: Vec<u32> = (0..tokens as u32).map(|t| 4093 + 3 * t).collect();
            for positions in [Positions::Each(each.into()), Positions::From(32_765)] {
                let r = Rotary {
                    style,
                    heads: Some(heads),
                    ..rotary(&s, positions.clone(), &mut rng)
                };
                let x = Inputs {
                    beta: (kind == NormKind::Layer).then_some(&beta[..]),
                    norm: Norm {
                        kind,
                        ..Norm::default()
                    },
                    rotary: Some(r),
                    ..Inputs::without_residual(&input[..], &gamma[..], hidden)
                };
                let what =
                    format!("{tokens}x{heads} of {hidden}, {style:?} {kind:?} at {positions:?}");
                worst = worst.max(check(&x, &what));
            }
        }
    }
    eprintln!("worst error: {worst:.3} of the tolerance");
    // Beside rows that are not heads, or of another length, gamma is refused by name.
    let (input, _) = ones();
    let gamma = [1.0; 3 * 8];
    let r = Rotary {
        heads: Some(2),
        ..Rotary::new(Positions::From(0), &[1.0; 4])
    };
    let x = Inputs {
        rotary: Some(r.clone()),
        ..Inputs::without_residual(&input[..], &gamma[..], 8)
    };
    for run in [cpu as fn(&Inputs) -> _, gpu] {
        let e = run(&x).unwrap_err();
        assert_eq!(e.name(), "ShapeError");
        assert_eq!(
            e.message(),
            "gamma: expected length 8 (hidden) or 16 (a gamma a head; in a GPUBuffer, with gammaHeads: true), got 24"
        );
        let alone = Inputs {
            rotary: None,
            ..x.clone()
        };
        let e = run(&alone).unwrap_err();
        assert_eq!(e.message(), "gamma: expected length 8 (hidden), got 24");
    }
}

#[test]
fn theta_is_the_frequencies_it_names_and_nothing_else_moves() {
    let mut rng = Rng(45);
    let (rows, hidden) = (6, 64);
    let input = rng.vec(rows * hidden, 1.0);
    let gamma = rng.vec(hidden, 1.0);
    let base = Inputs::without_residual(&input[..], &gamma[..], hidden);
    let theta = Rotary {
        frequencies: Frequencies::Theta(1e6),
        ..Rotary::new(Positions::From(100), &[])
    };
    let table = webgpu_rmsnorm::call::rotary::inv_freq_of_theta(1e6, hidden);
    let by_table = Rotary::new(Positions::From(100), &table);
    let a = cpu(&Inputs {
        rotary: Some(theta.clone()),
        ..base.clone()
    })
    .unwrap();
    let b = cpu(&Inputs {
        rotary: Some(by_table),
        ..base.clone()
    })
    .unwrap();
    assert_eq!(a, b);
    check(
        &Inputs {
            rotary: Some(theta),
            ..base.clone()
        },
        "theta",
    );
    // At position 0 the rotation is the identity: y as without it, bit for bit.
    let zero = Rotary::new(Positions::Each(vec![0; rows].into()), &table);
    let plain = cpu(&base).unwrap();
    assert_eq!(
        cpu(&Inputs {
            rotary: Some(zero),
            ..base
        })
        .unwrap(),
        plain
    );
}

#[test]
fn in_place_and_to_tensors_turn_y_alike() {
    let mut rng = Rng(46);
    let (tokens, heads, hidden) = (3, 4, 64);
    let input = rng.vec(tokens * heads * hidden, 1.0);
    let residual = rng.vec(tokens * heads * hidden, 1.0);
    let gamma = rng.vec(hidden, 1.0);
    let s = Shape::heads(tokens, heads, hidden, hidden);
    let r = rotary(&s, Positions::Each(vec![5, 6, 9].into()), &mut rng);
    let x = Inputs {
        rotary: Some(r),
        ..Inputs::plain(&input[..], &residual[..], &gamma[..], hidden)
    };
    let want = cpu(&x).unwrap();
    let ctx = CpuContext::default();
    let on = |a: &[f32]| ctx.upload(&a).unwrap();
    let (yt, vt) = (on(&input), on(&residual));
    let in_place = webgpu_rmsnorm::Inputs {
        input: Arg::<&[f32]>::Gpu(yt.clone()),
        residual: Some(Arg::Gpu(vt)),
        input2: None,
        gamma: Some(Arg::Host(&gamma[..])),
        beta: None,
        bias: None,
        post_gamma: None,
        hidden,
        eps: x.eps,
        norm: x.norm,
        rotary: x.rotary.clone(),
    };
    ctx.submit(&in_place, Request::in_place()).unwrap();
    let read = ctx.read(&yt).unwrap().host.and_then(|o| o.y).unwrap();
    assert_eq!(read, want, "in place, bit for bit");
    // The GPU's in-place kernel against its own into-new-buffers one, and the sum beside.
    GPU.with(|ctx| {
        let want = pollster::block_on(ctx.run(&x, true)).expect("run");
        let up = |a: &[f32]| Arg::Gpu(ctx.upload(&a).expect("upload"));
        let on_gpu = x.map(|a| up(a));
        pollster::block_on(ctx.submit_in_place(&on_gpu).expect("in place").finish())
            .expect("in place");
        let read = |a: &Arg<&[f32]>| match a {
            Arg::Gpu(t) => pollster::block_on(ctx.read_tensor(t).expect("read").read())
                .expect("read")
                .y
                .expect("a tensor's values"),
            _ => unreachable!("uploaded"),
        };
        assert_eq!(
            read(&on_gpu.input),
            want.y.unwrap(),
            "gpu in place, bit for bit"
        );
        let residual = on_gpu.residual.as_ref().expect("a residual");
        assert_eq!(read(residual), want.sum.unwrap(), "gpu in place: the sum");
    });
}

#[test]
fn every_bad_rotary_value_is_refused_by_name_and_nothing_is_computed() {
    let (input, gamma) = ones();
    let base = Inputs::without_residual(&input[..], &gamma[..], gamma.len());
    let ok = Rotary::new(Positions::Each(vec![0, 1, 2, 3].into()), &[1.0; 4]);
    let cases = [
        (
            Rotary {
                positions: Positions::Each(vec![0, 1, 2].into()),
                ..ok.clone()
            },
            "positions:",
        ),
        (
            Rotary {
                rotary_dim: Some(5),
                ..ok.clone()
            },
            "rotaryDim:",
        ),
        (
            Rotary {
                head_size: Some(3),
                ..ok.clone()
            },
            "headSize:",
        ),
        (
            Rotary {
                attention_scaling: -1.0,
                ..ok.clone()
            },
            "attentionScaling:",
        ),
        (
            Rotary {
                frequencies: Frequencies::Theta(f64::INFINITY),
                ..ok.clone()
            },
            "theta:",
        ),
        (
            Rotary {
                frequencies: Frequencies::Inverse(vec![1.0; 2].into()),
                ..ok.clone()
            },
            "invFreq:",
        ),
    ];
    for (r, name) in cases {
        let e = cpu(&Inputs {
            rotary: Some(r),
            ..base.clone()
        })
        .unwrap_err();
        assert_eq!(e.name(), "ShapeError", "{e}");
        assert!(e.message().starts_with(name), "{name}: {e}");
    }
    assert!(cpu(&Inputs {
        rotary: Some(ok),
        ..base
    })
    .is_ok());
}

/// A bad value gets the same error from the GPU as from the CPU backend, nothing is computed,
/// and the context works after; a stage beside `postGamma` or `input2` (which share its
/// binding) is refused by both.
#[test]
fn the_gpu_refuses_what_the_cpu_refuses_with_the_same_words() {
    let (input, gamma) = ones();
    let base = Inputs::without_residual(&input[..], &gamma[..], gamma.len());
    let ok = Rotary::new(Positions::From(3), &[1.0; 4]);
    let bad = Rotary {
        rotary_dim: Some(5),
        ..ok.clone()
    };
    let with = |r: &Rotary| Inputs {
        rotary: Some(r.clone()),
        ..base.clone()
    };
    assert_eq!(gpu(&with(&bad)).unwrap_err(), cpu(&with(&bad)).unwrap_err());
    let sandwich = Inputs {
        post_gamma: Some(&gamma[..]),
        residual: Some(&input[..]),
        ..with(&ok)
    };
    for e in [gpu(&sandwich).unwrap_err(), cpu(&sandwich).unwrap_err()] {
        assert_eq!(e.name(), "TypeError");
        assert!(
            e.message()
                .starts_with("positions: expected undefined with postGamma"),
            "{e}"
        );
    }
    check(&with(&ok), "after the refusals");
    assert!(gpu(&base).is_ok(), "the context works after");
}

/// One projection of a fixture run, normalized and turned as the model's config says.
struct Projection<'a> {
    config: &'a Json,
    fixture: &'a Json,
    /// `"q"` or `"k"`.
    name: &'a str,
    heads: usize,
}

impl Projection<'_> {
    /// The projection's one call: its heads a row each, or the whole projection a row (OLMo 2).
    fn run(&self, run: &Json, on: &dyn Fn(&Inputs) -> Vec<f32>) -> Vec<f32> {
        let norm = self.config.get("norm");
        let head_dim = self.config.get("head_dim").f64() as usize;
        let width = self.heads * head_dim;
        let projected = run.get(&format!("{}_proj", self.name)).floats();
        let positions: Vec<u32> = run
            .get("positions")
            .list()
            .iter()
            .map(|p| p.f64() as u32)
            .collect();
        let style = match self.config.get("style").text() {
            "neox" => RotaryStyle::NeoX,
            _ => RotaryStyle::Interleaved,
        };
        let rotary = Rotary {
            style,
            rotary_dim: Some(self.config.get("rotary_dim").f64() as usize),
            head_size: Some(head_dim),
            attention_scaling: self.fixture.get("attention_scaling").f64() as f32,
            ..Rotary::new(
                Positions::Each(positions.into()),
                &self.fixture.get("inv_freq").floats(),
            )
        };
        if norm.is_null() {
            // No QK-norm (Llama, GPT-J): the rotation alone, of each token's heads as a row.
            let x = Inputs {
                gamma: None,
                norm: Norm {
                    kind: NormKind::None,
                    ..Norm::default()
                },
                rotary: Some(rotary.clone()),
                ..Inputs::without_residual(&projected[..], &projected[..width], width)
            };
            return on(&x);
        }
        let weight = self
            .fixture
            .get(&format!("{}_norm_weight", self.name))
            .floats();
        let bias_key = format!("{}_norm_bias", self.name);
        let bias = matches!(norm.get("bias"), Json::Bool(true))
            .then(|| self.fixture.get(&bias_key).floats());
        let kind = match norm.get("kind").text() {
            "rms" => NormKind::Rms,
            _ => NormKind::Layer,
        };
        let options = Norm {
            kind,
            gamma_offset: norm.get("gamma_offset").f32(),
            output_dtype: None,
        };
        let eps = norm.get("eps").f32();
        let call = |input: &[f32], gamma: &[f32], hidden: usize| {
            let x = Inputs {
                beta: bias.as_deref(),
                eps,
                norm: options,
                rotary: Some(rotary.clone()),
                ..Inputs::without_residual(input, gamma, hidden)
            };
            on(&x)
        };
        match norm.get("over").text() {
            // The whole projection a row, turned head by head (OLMo 2).
            "projection" => call(&projected, &weight, width),
            // A head a row, one weight for every head or (Cohere's `[heads, head_dim]`) a
            // weight a head, row r taking head r mod heads's.
            _ => call(&projected, &weight, head_dim),
        }
    }
}

/// Every fixture: both backends and the reference against transformers' q and k, each value
/// within 1e-5 of its head's largest (the fixtures' own f64 check agrees to 3e-7); Llama 3
/// and GPT-J rotate without a norm (`kind: "none"`).
#[test]
fn both_backends_match_transformers_qk_norm_and_rope_and_rope_alone() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rotary");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let fixture = Json::parse(&std::fs::read_to_string(&path).unwrap());
        let config = fixture.get("config");
        let case = path.file_stem().unwrap().to_string_lossy().into_owned();
        let head_dim = config.get("head_dim").f64() as usize;
        for (name, heads) in [("q", "q_heads"), ("k", "kv_heads")] {
            let p = Projection {
                config,
                fixture: &fixture,
                name,
                heads: config.get(heads).f64() as usize,
            };
            for run in fixture.get("runs").list() {
                let want = run.get(name).floats();
                let reference = |x: &Inputs| -> Vec<f32> {
                    norm_family(x).0.iter().map(|&y| y as f32).collect()
                };
                let on_cpu = |x: &Inputs| -> Vec<f32> { cpu(x).unwrap() };
                let on_gpu = |x: &Inputs| -> Vec<f32> { gpu(x).unwrap() };
                for (backend, got) in [
                    ("cpu", p.run(run, &on_cpu)),
                    ("gpu", p.run(run, &on_gpu)),
                    ("reference", p.run(run, &reference)),
                ] {
                    let what = format!("{case} {name} {} on {backend}", run.get("name").text());
                    assert_close_per_head(&got, &want, head_dim, &what);
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 9 * 2 * 4,
        "{checked} runs checked: a fixture missing?"
    );
}

/// Each value within 1e-5 of the largest magnitude of its head in `want`.
fn assert_close_per_head(got: &[f32], want: &[f32], head_dim: usize, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (h, (g, w)) in got.chunks(head_dim).zip(want.chunks(head_dim)).enumerate() {
        let scale = w.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
        for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
            let err = (a as f64 - b as f64).abs();
            assert!(
                err <= 1e-5 * scale + 1e-30,
                "{what}: head {h} value {i}: {a} vs {b} ({:.2e} of the head's scale)",
                err / scale
            );
        }
    }
}

/// `kind: "none"` is the rotation alone: `y` is the sum turned, bit for bit as a norm-free
/// formula on the CPU, within the reference on both backends; it takes none of a norm's
/// weights, and needs a rotary stage.
#[test]
fn kind_none_turns_the_sum_and_refuses_a_norms_weights() {
    let mut rng = Rng(47);
    let (tokens, hidden) = (5, 128);
    let input = rng.vec(tokens * hidden, 2.0);
    let residual = rng.vec(tokens * hidden, 1.0);
    let gamma = rng.vec(hidden, 1.0);
    let s = Shape {
        tokens,
        heads: 1,
        hidden,
        head_size: 64,
        rotary_dim: 32,
    };
    let none = Norm {
        kind: NormKind::None,
        ..Norm::default()
    };
    let r = rotary(&s, Positions::From(32_765), &mut rng);
    for residual in [None, Some(&residual[..])] {
        let x = Inputs {
            gamma: None,
            residual,
            norm: none,
            rotary: Some(r.clone()),
            ..Inputs::without_residual(&input[..], &gamma[..], hidden)
        };
        check(&x, &format!("kind none, residual {}", residual.is_some()));
    }
    let base = Inputs {
        gamma: None,
        norm: none,
        rotary: Some(r.clone()),
        ..Inputs::without_residual(&input[..], &gamma[..], hidden)
    };
    let refused = [
        (
            Inputs {
                gamma: Some(&gamma[..]),
                ..base.clone()
            },
            "gamma: expected undefined with kind \"none\"",
        ),
        (
            Inputs {
                beta: Some(&gamma[..]),
                ..base.clone()
            },
            "beta: expected undefined (kind \"none\"",
        ),
        (
            Inputs {
                rotary: None,
                ..base.clone()
            },
            "positions: missing (kind \"none\"",
        ),
        (
            Inputs {
                norm: Norm {
                    gamma_offset: 1.0,
                    ..none
                },
                ..base.clone()
            },
            "gammaOffset: expected 0 or undefined (kind \"none\"",
        ),
    ];
    for (x, message) in refused {
        for e in [cpu(&x).unwrap_err(), gpu(&x).unwrap_err()] {
            assert_eq!(e.name(), "TypeError", "{e}");
            assert!(e.message().starts_with(message), "{message}: {e}");
        }
    }
}

#[test]
fn a_packed_qkv_row_turns_its_q_and_k_heads_and_passes_its_v_heads() {
    // Each token: 3 q heads, 1 k head (a gamma each), then 2 v heads passed as they are.
    let mut rng = Rng(61);
    let (tokens, heads, pass, hidden) = (3, 6, 2, 32);
    let input = rng.vec(tokens * heads * hidden, 1.0);
    let gamma = rng.vec((heads - pass) * hidden, 1.0);
    let stage = Rotary {
        heads: Some(heads),
        pass_heads: Some(pass),
        frequencies: Frequencies::Theta(1e6),
        ..Rotary::new(Positions::Each(vec![5, 4095, 1 << 20].into()), &[])
    };
    let x = Inputs {
        rotary: Some(stage),
        ..Inputs::without_residual(&input[..], &gamma[..], hidden)
    };
    check(&x, "a packed qkv row");
    for (backend, run) in [("cpu", cpu as fn(&Inputs) -> _), ("gpu", gpu)] {
        let y = run(&x).unwrap();
        for row in (0..tokens * heads).filter(|r| r % heads >= heads - pass) {
            let at = row * hidden..(row + 1) * hidden;
            assert_eq!(y[at.clone()], input[at], "{backend}: v head, row {row}");
        }
    }
    // In place on the GPU, where the v rows are neither read nor written: bit for bit as above.
    GPU.with(|ctx| {
        let want = gpu(&x).unwrap();
        let t = ctx.upload(&input).expect("upload");
        let on_gpu = webgpu_rmsnorm::Inputs {
            input: Arg::Gpu(t.clone()),
            ..x.map(|a: &&[f32]| Arg::Host(*a))
        };
        pollster::block_on(ctx.submit_in_place(&on_gpu).expect("in place").finish())
            .expect("in place");
        let got = pollster::block_on(ctx.read_tensor(&t).expect("read").read()).expect("read");
        assert_eq!(got.y.expect("values"), want, "gpu in place, bit for bit");
    });
}

#[test]
fn the_apps_cos_and_sin_turn_y_on_both_backends() {
    // Rows of cos and sin that no angle gives, so that a kernel forming angles instead fails;
    // positions from the table's first row to its last, NeoX and interleaved, partial rotary.
    let mut rng = Rng(71);
    let (tokens, heads, hidden, dim, held) = (3, 2, 64, 32, 40);
    let input = rng.vec(tokens * heads * hidden, 1.0);
    let gamma = rng.vec(hidden, 1.0);
    let table: Vec<f32> = rng.vec(held * dim, 1.0);
    for (positions, style) in [
        (Positions::Each(vec![39, 0, 17].into()), RotaryStyle::NeoX),
        (Positions::From(37), RotaryStyle::NeoX),
        (
            Positions::Each(vec![1, 2, 39].into()),
            RotaryStyle::Interleaved,
        ),
    ] {
        let stage = Rotary {
            heads: Some(heads),
            rotary_dim: Some(dim),
            style,
            attention_scaling: 0.75,
            frequencies: Frequencies::Table(table.clone().into()),
            ..Rotary::new(positions, &[])
        };
        let x = Inputs {
            rotary: Some(stage),
            ..Inputs::without_residual(&input[..], &gamma[..], hidden)
        };
        check(&x, &format!("cosSin, {style:?}"));
    }
    // A table of the angles' own cos and sin, rounded to f32, turns as invFreq does: on the
    // CPU bit for bit.
    let s = Shape::heads(tokens, heads, hidden, dim);
    let by_angle = rotary(&s, Positions::Each(vec![3, 0, 39].into()), &mut rng);
    let mut own = Vec::with_capacity(held * dim);
    for p in 0..held as u32 {
        let turns = by_angle.cos_sin(p, dim);
        own.extend(turns.iter().map(|&(c, _)| c as f32));
        own.extend(turns.iter().map(|&(_, s)| s as f32));
    }
    let with = |frequencies| Inputs {
        rotary: Some(Rotary {
            heads: Some(heads),
            frequencies,
            ..by_angle.clone()
        }),
        ..Inputs::without_residual(&input[..], &gamma[..], hidden)
    };
    let (angles, tabled) = (
        with(by_angle.frequencies.clone()),
        with(Frequencies::Table(own.into())),
    );
    assert_eq!(
        cpu(&angles).unwrap(),
        cpu(&tabled).unwrap(),
        "cpu: cosSin of the angles"
    );
    check(&tabled, "cosSin of the angles");
}
