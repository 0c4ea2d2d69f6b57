//! `shaders/rotary_angle.wgsl` on Vulkan (lavapipe on a CPU machine): `rotary_cos_sin` against
//! the f64 cos and sin of the f32 angle, within 2^-22, over the positions and inverse
//! frequencies models use; the same algorithm in Rust over more of them; and why the
//! reduction is needed: WGSL's built-in `cos` and `sin` miss that bar at large positions, and
//! a wrong bit of 2/pi is caught.
#![cfg(not(target_arch = "wasm32"))]

use wgpu::util::DeviceExt;

mod common;
use common::Rng;

/// The file under test, as `#include` would insert it.
const SOURCE: &str = include_str!("../shaders/rotary_angle.wgsl");

/// The largest absolute error allowed in cos or sin: 2^-22, two ulps of values just below 1.
const BAR: f64 = 1.0 / (1u32 << 22) as f64;

/// The positions: the first few hundred, each side of the powers of two models reach, the
/// last below 2^24, and random ones, uniform and spread over every magnitude.
fn positions(rng: &mut Rng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..=300).collect();
    for centre in [4096u32, 32768, 65536, 131072, 1 << 20, 1 << 22] {
        p.extend(centre - 8..centre + 8);
    }
    p.extend((1 << 24) - 32..1 << 24);
    for _ in 0..600 {
        p.push(rng.below(1 << 24) as u32);
    }
    for _ in 0..200 {
        let bits = rng.below(25);
        p.push(rng.below(1 << bits) as u32);
    }
    p
}

/// The inverse frequencies: `1 / theta^(2i/d)` in f32 as the models' rotary classes compute
/// them, as they are and scaled down (linear scaling by 4 and 8), and random ones from 1e-9 to
/// 4, spread over every magnitude and uniform.
fn inv_freqs(rng: &mut Rng) -> Vec<f32> {
    let mut f = vec![1e-9, 1.0, 4.0];
    for theta in [1e4f32, 5e5, 1e6] {
        for d in [64u32, 128, 256] {
            for i in (0..d).step_by(2) {
                let inv = 1.0 / theta.powf(i as f32 / d as f32);
                f.extend([inv, inv / 4.0, inv / 8.0]);
            }
        }
    }
    let (lo, hi) = (1e-9f64.ln(), 4f64.ln());
    for _ in 0..400 {
        let u = rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
        f.push((lo + u * (hi - lo)).exp() as f32);
    }
    for _ in 0..100 {
        f.push(2.0 * (rng.unit() + 1.0));
    }
    f
}

/// Every (position, inverse frequency) pair of the two lists, as two columns.
fn pairs(seed: u64) -> (Vec<u32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let (p, f) = (positions(&mut rng), inv_freqs(&mut rng));
    let pos = p.iter().flat_map(|&p| f.iter().map(move |_| p)).collect();
    let inv = p.iter().flat_map(|_| f.iter().copied()).collect();
    (pos, inv)
}

/// The worst error seen, and where.
#[derive(Default, Debug)]
struct Worst {
    error: f64,
    what: String,
}

/// The worst absolute error of `got` (cos, sin for each pair) against the f64 cos and sin of
/// the f32 angle.
fn worst(pos: &[u32], inv: &[f32], got: impl Fn(usize) -> (f32, f32)) -> Worst {
    let mut w = Worst::default();
    for i in 0..pos.len() {
        let angle = pos[i] as f32 * inv[i];
        let (c, s) = got(i);
        let (want_c, want_s) = (f64::from(angle).cos(), f64::from(angle).sin());
        let error = (f64::from(c) - want_c)
            .abs()
            .max((f64::from(s) - want_s).abs());
        // A NaN (a broken kernel's) is the worst of all.
        if error.is_nan() || error > w.error {
            w = Worst {
                error,
                what: format!(
                    "position {} inv_freq {:e} angle {angle}: got ({c}, {s}), want ({want_c}, {want_s})",
                    pos[i], inv[i]
                ),
            };
        }
    }
    w
}

/// A device on the first Vulkan adapter, which panics on any validation error.
fn device() -> (wgpu::Device, wgpu::Queue) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("a Vulkan adapter (lavapipe: apt-get install mesa-vulkan-drivers)");
    pollster::block_on(adapter.request_device(&Default::default())).expect("a device")
}

/// Runs `body`, WGSL that sets `out[i]` from `position` and `inv_freq`, over every pair,
/// after the text of `library`; returns each pair's `out[i]` (x, y) and `angle` (z), the
/// f32 product the shader formed, for checking that it is the one the reference rounds.
fn run(library: &str, body: &str, pos: &[u32], inv: &[f32]) -> Vec<[f32; 4]> {
    let (device, queue) = device();
    let groups = pos.len().div_ceil(64) as u32;
    let (nx, ny) = (groups.min(65535), groups.div_ceil(65535));
    let source = format!(
        "{library}
@group(0) @binding(0) var<storage, read> positions: array<u32>;
@group(0) @binding(1) var<storage, read> inv_freqs: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    let i = id.x + id.y * {row}u;
    if (i >= arrayLength(&positions)) {{ return; }}
    let position = positions[i];
    let inv_freq = inv_freqs[i];
    let angle = f32(position) * inv_freq;
    {body}
}}",
        row = nx * 64
    );
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let storage = |bytes: Vec<u8>| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &bytes,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let positions = storage(pos.iter().flat_map(|p| p.to_le_bytes()).collect());
    let inv_freqs = storage(inv.iter().flat_map(|f| f.to_le_bytes()).collect());
    let size = pos.len() as u64 * 16;
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let out = buffer(wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC);
    let read = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[&positions, &inv_freqs, &out]
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect::<Vec<_>>(),
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(nx, ny, 1);
    }
    encoder.copy_buffer_to_buffer(&out, 0, &read, 0, size);
    queue.submit([encoder.finish()]);
    read.map_async(wgpu::MapMode::Read, .., |r| r.expect("mapped"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the GPU finishes");
    let bytes = read.get_mapped_range(..).expect("a mapped range");
    bytes
        .chunks_exact(16)
        .map(|v| {
            std::array::from_fn(|k| f32::from_le_bytes(v[4 * k..4 * k + 4].try_into().unwrap()))
        })
        .collect()
}

/// `rotary_cos_sin` over every pair, with the angle it is of.
fn rotary(library: &str, pos: &[u32], inv: &[f32]) -> Vec<[f32; 4]> {
    let body = "out[i] = vec4<f32>(rotary_cos_sin(position, inv_freq), angle, 0.0);";
    run(library, body, pos, inv)
}

#[test]
fn the_file_is_valid_wgsl_without_extensions() {
    let module = naga::front::wgsl::parse_str(SOURCE)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(SOURCE)));
    naga::valid::Validator::new(Default::default(), naga::valid::Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(SOURCE)));
    assert!(!SOURCE.lines().any(|l| l.trim_start().starts_with("enable")));
    // `#include` takes every line as it is: no line may look like a directive.
    assert!(!SOURCE.lines().any(|l| l.trim_start().starts_with('#')));
}

#[test]
fn rotary_cos_sin_is_within_2_22_of_the_exact_values() {
    let (pos, inv) = pairs(1);
    let out = rotary(SOURCE, &pos, &inv);
    // The shader's angle is the f32 product the reference takes the cos and sin of.
    let differ = (0..pos.len())
        .filter(|&i| out[i][2].to_bits() != (pos[i] as f32 * inv[i]).to_bits())
        .count();
    assert_eq!(differ, 0, "angles that differ from the f32 product");
    let w = worst(&pos, &inv, |i| (out[i][0], out[i][1]));
    println!(
        "rotary_cos_sin over {} pairs: worst error {:e} ({:.3} of 2^-22) at {}",
        pos.len(),
        w.error,
        w.error / BAR,
        w.what
    );
    assert!(w.error <= BAR, "{w:?}");
    // Which roundings this adapter's compiler chose: how many results have the bits of the
    // Rust steps with each `a * b + c` rounded twice, and with each one an fma.
    for fused in [false, true] {
        let same = (0..pos.len())
            .filter(|&i| {
                let (c, s) = mirror::cos_sin(pos[i], inv[i], fused);
                (c.to_bits(), s.to_bits()) == (out[i][0].to_bits(), out[i][1].to_bits())
            })
            .count();
        println!(
            "the same bits as in Rust with fused {fused}: {same} of {}",
            pos.len()
        );
    }
}

#[test]
fn a_wrong_bit_of_two_over_pi_fails_the_bar() {
    // Bit 16 of the second word weighs 2^-48: at angles near 2^26 (position 2^24, inv_freq 4)
    // it moves the reduced angle by 2^-22 of a quadrant (3.7e-7), past the bar.
    let broken = SOURCE.replace("0x4E441529u", "0x4E451529u");
    assert_ne!(broken, SOURCE);
    let (pos, inv) = pairs(2);
    let out = rotary(&broken, &pos, &inv);
    let w = worst(&pos, &inv, |i| (out[i][0], out[i][1]));
    println!(
        "with a wrong bit of 2/pi: worst error {:e} at {}",
        w.error, w.what
    );
    assert!(w.error > BAR, "{w:?}");
}

#[test]
fn builtin_cos_and_sin_miss_the_bar_at_large_positions() {
    let (pos, inv) = pairs(3);
    let (pos, inv): (Vec<u32>, Vec<f32>) =
        pos.iter().zip(&inv).filter(|(&p, _)| p >= 1 << 20).unzip();
    let body = "out[i] = vec4<f32>(cos(angle), sin(angle), angle, 0.0);";
    let out = run("", body, &pos, &inv);
    let w = worst(&pos, &inv, |i| (out[i][0], out[i][1]));
    println!(
        "built-in cos/sin at positions >= 2^20 over {} pairs: worst error {:e} ({:.3e} of 2^-22) at {}",
        pos.len(),
        w.error,
        w.error / BAR,
        w.what
    );
    assert!(
        w.error > BAR,
        "this adapter's built-ins meet the bar here: {w:?}"
    );
}

/// The WGSL's steps in Rust, f32 and u32 only, line for line; `fused` contracts every
/// `a * b + c` into one rounding, as a compiler may.
mod mirror {
    const TWO_OVER_PI: [u32; 3] = [0xA2F9_836E, 0x4E44_1529, 0xFC27_57D1];
    const HALF_PI_Q31: u32 = 0xC90F_DAA2;
    const TWO_M31: f32 = 1.0 / (1u64 << 31) as f32;
    const TWO_M32: f32 = 1.0 / (1u64 << 32) as f32;
    const S: [f32; 4] = [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362880.0];
    const C: [f32; 4] = [1.0 / 24.0, -1.0 / 720.0, 1.0 / 40320.0, -1.0 / 3628800.0];

    fn mul_wide(a: u32, b: u32) -> (u32, u32) {
        let (al, ah, bl, bh) = (a & 0xFFFF, a >> 16, b & 0xFFFF, b >> 16);
        let (ll, lh, hl) = (al * bl, al * bh, ah * bl);
        let mid = (ll >> 16) + (lh & 0xFFFF) + (hl & 0xFFFF);
        let lo = (ll & 0xFFFF) | (mid << 16);
        let hi = ah * bh + (lh >> 16) + (hl >> 16) + (mid >> 16);
        (lo, hi)
    }

    fn funnel(lo: u32, hi: u32, b: u32) -> u32 {
        (lo >> b) | ((hi << 1) << (31 - b))
    }

    /// (quadrant, negative, r_hi, r_lo).
    fn reduce(a: f32, madd: impl Fn(f32, f32, f32) -> f32) -> (u32, bool, f32, f32) {
        let bits = a.to_bits();
        let m = (bits & 0x7F_FFFF) | 0x80_0000;
        let e = (bits >> 23).clamp(126, 184);
        let w0 = mul_wide(m, TWO_OVER_PI[2]);
        let w1 = mul_wide(m, TWO_OVER_PI[1]);
        let w2 = mul_wide(m, TWO_OVER_PI[0]);
        let p0 = w0.0;
        let p1 = w0.1.wrapping_add(w1.0);
        let carry1 = u32::from(p1 < w1.0);
        let s2 = w1.1.wrapping_add(w2.0);
        let carry2 = u32::from(s2 < w2.0);
        let p2 = s2.wrapping_add(carry1);
        let carry3 = u32::from(p2 < carry1);
        let p3 = w2.1 + carry2 + carry3;
        let t = 184 - e;
        let (q0, q1, q2) = if t >= 32 { (p1, p2, p3) } else { (p0, p1, p2) };
        let b = t & 31;
        let (lo, hi) = (funnel(q0, q1, b), funnel(q1, q2, b));
        let quadrant = ((hi >> 30) + ((hi >> 29) & 1)) & 3;
        let f = (hi << 2) | (lo >> 30);
        let negative = (f >> 31) != 0;
        let magnitude = if negative { 0u32.wrapping_sub(f) } else { f };
        let r = mul_wide(magnitude, HALF_PI_Q31);
        let r_hi = (r.1 & 0xFFFF_FF00) as f32 * TWO_M31;
        let r_lo = madd(r.0 as f32, TWO_M32, (r.1 & 0xFF) as f32) * TWO_M31;
        (quadrant, negative, r_hi, r_lo)
    }

    pub fn cos_sin(position: u32, inv_freq: f32, fused: bool) -> (f32, f32) {
        let madd = |a: f32, b: f32, c: f32| if fused { a.mul_add(b, c) } else { a * b + c };
        let angle = position as f32 * inv_freq;
        let a = angle.abs();
        let (quadrant, negative, x, r_lo) = if a < std::f32::consts::FRAC_PI_4 {
            (0, false, a, 0.0)
        } else {
            reduce(a, madd)
        };
        let z = x * x;
        let sin_poly = madd(z, madd(z, madd(z, S[3], S[2]), S[1]), S[0]);
        let sin_hi = madd(x * z, sin_poly, x);
        let cos_poly = madd(z, madd(z, madd(z, madd(z, C[3], C[2]), C[1]), C[0]), -0.5);
        let cos_hi = madd(z, cos_poly, 1.0);
        let sin_r = madd(r_lo, cos_hi, sin_hi);
        let cos_r = madd(-r_lo, sin_hi, cos_hi);
        let s = if negative { -sin_r } else { sin_r };
        let (mut c, mut s) = if quadrant & 1 != 0 {
            (-s, cos_r)
        } else {
            (cos_r, s)
        };
        if quadrant >= 2 {
            (c, s) = (-c, -s);
        }
        (c, if angle < 0.0 { -s } else { s })
    }
}

#[test]
fn the_algorithm_in_rust_holds_over_more_pairs_with_or_without_fma() {
    let (pos, inv) = pairs(4);
    // Every position below 2^24 that is a multiple of 7, at the largest inverse frequencies.
    let every: Vec<u32> = (0..1 << 24).step_by(7).collect();
    for fused in [false, true] {
        let w = worst(&pos, &inv, |i| mirror::cos_sin(pos[i], inv[i], fused));
        println!(
            "in Rust (fused {fused}) over {} pairs: worst error {:e} at {}",
            pos.len(),
            w.error,
            w.what
        );
        assert!(w.error <= BAR, "{w:?}");
        for f in [1.0f32, 4.0, 2.718_281_7] {
            let inv = vec![f; every.len()];
            let w = worst(&every, &inv, |i| mirror::cos_sin(every[i], f, fused));
            println!("in Rust (fused {fused}) at every seventh position, inv_freq {f}: worst error {:e} at {}", w.error, w.what);
            assert!(w.error <= BAR, "{w:?}");
        }
    }
}
