//! The kernels' unit tests: every variant's WGSL through the preprocessor and naga, the
//! tilings' invariants, and the binding table against the WGSL's declarations.

use super::*;
use crate::call::device::Caps;
use crate::call::dtype::Dtype;
use crate::call::plan::Kernel;
use crate::gpu::kernel::tiling::{balanced_fan, lanes, max_slots, FEW_ROWS, MAX_CACHED_SCALARS};

fn caps(max_workgroup: u32, shader_f16: bool, cpu_tiling: bool) -> Caps {
    Caps {
        max_binding: 1 << 30,
        max_groups_per_dim: 65535,
        max_workgroup,
        shader_f16,
        timestamps: false,
        cpu_tiling,
    }
}

/// Parses and validates `v`'s WGSL with naga, granted only the capabilities its storages
/// need.
pub(crate) fn validate(v: &Variant) -> Result<naga::Module, String> {
    use naga::valid::Capabilities;
    let src = v.wgsl();
    let module = naga::front::wgsl::parse_str(&src)
        .map_err(|e| format!("{}: {}", v.label(), e.emit_to_string(&src)))?;
    let needs = |s: Storage| match s {
        Storage::F32 => Capabilities::empty(),
        Storage::F16 => Capabilities::SHADER_FLOAT16,
        // WebGPU core has (un)pack2x16float; naga calls it a capability.
        Storage::F16Packed => Capabilities::SHADER_FLOAT16_IN_FLOAT32,
    };
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        needs(v.storage) | needs(v.out_storage),
    )
    .validate(&module)
    .map_err(|e| format!("{}: {e:?}", v.label()))?;
    Ok(module)
}

#[test]
fn grid_covers_every_row_within_limits() {
    for rows in [1u32, 7, 65535, 65536, 70000, 1 << 20, 4_000_000] {
        let (x, y) = grid(rows, 65535);
        assert!(x <= 65535 && y <= 65535, "{rows}: {x}x{y}");
        assert!(x as u64 * y as u64 >= rows as u64, "{rows}: {x}x{y}");
        assert!(
            (x as u64) * (y as u64 - 1) < rows as u64,
            "{rows}: a whole idle grid row"
        );
    }
}

/// The fan-in's loops fold `WG / FAN` partials per lane: every partial only if FAN
/// divides the workgroup.
#[test]
fn fan_in_divides_the_workgroup() {
    for workgroup in [1u32, 2, 32, 128, 512, 1024] {
        for fan in 0..=workgroup + 3 {
            let f = fan_in(fan, workgroup);
            assert!(
                f == 0 || (f <= workgroup && workgroup % f == 0),
                "wg {workgroup} fan {fan}: {f}"
            );
            assert_eq!(f == 0, fan == 0);
        }
    }
}

/// A fused variant of `hidden` with `options` and `tiling`, in f32.
fn fused(hidden: u32, options: Options, tiling: FusedTiling) -> Variant {
    Variant {
        options,
        storage: Storage::F32,
        out_storage: Storage::F32,
        in_place: false,
        lanes: lanes(hidden),
        tiling: Tiling::Fused(tiling),
    }
}

/// Every knob the benchmark sweeps must give WGSL that naga accepts, in every option set,
/// up to the most slots the row cache lists.
#[test]
fn every_knob_combination_validates() {
    for hidden in [4099u32, 4096] {
        for workgroup in [1u32, 2, 64, 256, 1024] {
            for slots in [0u32, 1, 3, max_slots(lanes(hidden))] {
                // 3 and 6: a fan that is not a power of two (rounded down, see fan_in).
                for fan in [0u32, balanced_fan(workgroup), workgroup, 3, 6] {
                    for bits in 0..16u8 {
                        let tiling = FusedTiling {
                            workgroup,
                            slots,
                            fan,
                            preload: bits & 8 != 0,
                            exact: slots == 3,
                            split: 1,
                        };
                        let v = fused(hidden, Options::with_flags(bits), tiling);
                        validate(&v).unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            }
        }
    }
}

/// The row cache lists `MAX_CACHED_SCALARS` slots, and a variant that asked for more would
/// fail to compile rather than lose columns.
#[test]
fn the_row_cache_lists_the_most_slots_a_thread_keeps() {
    let tiling = |slots| FusedTiling {
        workgroup: 64,
        slots,
        fan: 0,
        preload: false,
        exact: false,
        split: 1,
    };
    let most = MAX_CACHED_SCALARS;
    let src = fused(4099, Options::default(), tiling(most)).wgsl();
    assert!(src.contains(&format!("s{}: Slot,", most - 1)));
    assert!(!src.contains(&format!("s{most}: Slot,")));
    assert!(validate(&fused(4099, Options::default(), tiling(most))).is_ok());
    assert!(validate(&fused(4099, Options::default(), tiling(most + 1))).is_err());
}

/// The family kernel's tilings (rows a workgroup, tree or fan-in, a CPU adapter's) in every
/// storage and output dtype and option, through naga: lavapipe compiles only what runs.
#[test]
fn family_tilings_validate_in_every_storage() {
    use crate::gpu::kernel::tiling::family::FamilyTiling;
    use Storage::{F16Packed, F16, F32};
    let stores = [
        (F32, F32),
        (F32, F16),
        (F32, F16Packed),
        (F16, F16),
        (F16Packed, F16Packed),
    ];
    for hidden in [7u32, 64, 128, 768, 4096, 20000] {
        // f16 data and outputs need whole vec4s (a call's plan rejects others).
        let stores = &stores[..if hidden % 4 == 0 { 5 } else { 1 }];
        for bits in 0..=255u8 {
            let options = Options {
                residual: bits & 8 != 0,
                post_gamma: bits & 16 != 0,
                kind: [NormKind::Rms, NormKind::Layer][usize::from(bits & 32 != 0)],
                gamma_offset: bits & 64 != 0,
                ..Options::with_flags(bits)
            };
            for (i, &(storage, out_storage)) in stores.iter().enumerate() {
                let in_place = storage == out_storage && bits & 1 == 0;
                let kernel = Kernel {
                    hidden: hidden as usize,
                    options,
                    dtype: Dtype::F32,
                    out_dtype: Dtype::F32,
                    in_place,
                };
                let chosen = FamilyTiling::choose(&kernel, &caps(256, true, i % 2 == 1), 1);
                let v = Variant {
                    options,
                    storage,
                    out_storage,
                    in_place,
                    lanes: lanes(hidden),
                    tiling: Tiling::Family(FamilyTiling {
                        preload: bits & 128 != 0,
                        ..chosen
                    }),
                };
                validate(&v).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

/// The browser's tiling in every storage, in place or not, with every option, through
/// naga (the native suite runs it on lavapipe in f32).
#[test]
fn web_tilings_validate_in_every_storage() {
    for hidden in [4usize, 768, 896, 1024, 4096, 8192, 16384] {
        for bits in 0..8u8 {
            for (dtype, shader_f16) in [(Dtype::F32, true), (Dtype::F16, true), (Dtype::F16, false)]
            {
                for in_place in [false, true] {
                    let kernel = Kernel {
                        hidden,
                        options: Options::with_flags(bits),
                        dtype,
                        out_dtype: dtype,
                        in_place,
                    };
                    for rows in [1, FEW_ROWS + 1] {
                        let v = kernel.variant_on(&caps(256, shader_f16, false), rows, true);
                        validate(&v).unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            }
        }
    }
}
