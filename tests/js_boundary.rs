//! The JavaScript boundary's two tables, checked natively (the `js` module itself compiles
//! for wasm only; these files are pure data and compile here as they are):
//! - `src/js/keys.rs`, the fields of argument objects: each reader's list (and so its
//!   unknown-field message) as it is, a call's data the kernel's bindings, every field
//!   declared in the TypeScript types.
//! - `src/js/glue.rs`, what the package relies on in wasm-bindgen's generated glue: written
//!   for the wasm-bindgen that `Cargo.lock` pins, the same names in `freed_guard.js`, and
//!   present in the built `pkg/webgpu_rmsnorm.js` (`npm test` builds `pkg/` before `cargo
//!   test`; without it the test fails).

#[path = "../src/js/keys.rs"]
#[allow(dead_code, unused_imports, unused_macros)]
mod keys;

#[path = "../src/js/glue.rs"]
mod glue;

use std::path::Path;

use keys::{count, names, Key, Kind, Readers, CALL_KEYS, KERNEL_KEYS};
use webgpu_rmsnorm::call::options::Options;
use webgpu_rmsnorm::gpu::kernel::bindings::{Binding, Role, BINDINGS};

fn accepted(table: &[Key], reader: Readers) -> Vec<&'static str> {
    table
        .iter()
        .filter(|k| k.readers.has(reader))
        .map(|k| k.name)
        .collect()
}

#[test]
fn each_reader_accepts_the_keys_it_names_in_its_unknown_field_message() {
    // The lists the messages name ("expected one of ..."), in their order.
    let run = [
        "input",
        "residual",
        "input2",
        "gamma",
        "beta",
        "bias",
        "postGamma",
        "hidden",
        "eps",
        "kind",
        "gammaOffset",
        "outputDtype",
        "output",
        "inPlace",
        "dtype",
        "rows",
        "sum",
        "positions",
        "position",
        "invFreq",
        "theta",
        "rotaryDim",
        "rotaryStyle",
        "attentionScaling",
        "headSize",
        "heads",
        "gammaHeads",
        "passHeads",
        "cosSin",
    ];
    let encode = run.to_vec();
    let prepare = [
        "hidden",
        "bias",
        "beta",
        "sum",
        "dtype",
        "inPlace",
        "kind",
        "residual",
        "postGamma",
        "input2",
        "gamma",
        "gammaOffset",
        "outputDtype",
        "rotaryDim",
        "headSize",
        "rotaryStyle",
        "positions",
        "gammaHeads",
        "cosSinPositions",
    ];
    let mut source = prepare.to_vec();
    source.push("rows");
    assert_eq!(accepted(&CALL_KEYS, Readers::RUN), run);
    assert_eq!(accepted(&CALL_KEYS, Readers::ENCODE), encode);
    assert_eq!(accepted(&KERNEL_KEYS, Readers::PREPARE), prepare);
    assert_eq!(accepted(&KERNEL_KEYS, Readers::KERNEL_SOURCE), source);
    // Each row of the call's table is its key's: the slot `call.js` reads it into.
    for (i, key) in CALL_KEYS.iter().enumerate() {
        assert_eq!(key.call.map(|k| k as usize), Some(i), "{}", key.name);
        assert_eq!(key.call.map(|k| k.name()), Some(key.name));
    }
    // The const derivation the readers use gives the same lists.
    const N: usize = count(&CALL_KEYS, Readers::RUN);
    assert_eq!(names::<N>(&CALL_KEYS, Readers::RUN), run);
}

#[test]
fn a_calls_data_are_the_kernels_inputs_and_its_destinations_its_outputs() {
    let snake = |name: &str| {
        name.chars()
            .flat_map(|c| match c.is_ascii_uppercase() {
                true => vec!['_', c.to_ascii_lowercase()],
                false => vec![c],
            })
            .collect::<String>()
    };
    // Binding 8 is `post_gamma` or a parallel block's `input2` (`bindings::SHARED`); a rotary
    // stage's table there is no array of the call's (its positions are copied into it).
    let parallel = Options {
        input2: true,
        ..Options::default()
    };
    let names = |b: &Binding| [b.name_in(&Options::default()), b.name_in(&parallel)];
    for key in CALL_KEYS {
        let binding = BINDINGS
            .iter()
            .find(|b| names(b).contains(&snake(key.name).as_str()));
        match key.kind {
            Kind::Array => assert!(
                matches!(binding.map(|b| b.role), Some(Role::Input { .. })),
                "{}: an array of a call is an input binding of the kernel",
                key.name
            ),
            Kind::Destination => assert!(
                matches!(binding.map(|b| b.role), Some(Role::Output)),
                "{}: a destination of a call is an output binding of the kernel",
                key.name
            ),
            _ => assert!(binding.is_none(), "{}: a binding, but not data", key.name),
        }
    }
    // Every input the kernel binds is a field of a call.
    for b in BINDINGS
        .iter()
        .filter(|b| matches!(b.role, Role::Input { .. }))
    {
        assert!(
            names(b)
                .iter()
                .all(|&name| CALL_KEYS.iter().any(|k| snake(k.name) == name)),
            "binding {} is no field of a call",
            b.name
        );
    }
}

/// The text of the TypeScript declarations (`src/js/types/`).
fn declarations() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/js/types");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).expect("src/js/types/") {
        text += &std::fs::read_to_string(entry.unwrap().path()).unwrap();
    }
    text
}

#[test]
fn every_field_of_an_argument_object_is_declared_in_the_typescript_types() {
    let types = declarations();
    for key in CALL_KEYS.iter().chain(&KERNEL_KEYS) {
        let declared = [format!("{}?:", key.name), format!("{}:", key.name)];
        assert!(
            declared.iter().any(|d| types.contains(&format!(" {d}"))),
            "{}: accepted by a reader but declared in no type of src/js/types/",
            key.name
        );
    }
}

/// What to do when a check of the glue fails.
const RECHECK: &str = "read the generated pkg/webgpu_rmsnorm.js of the new wasm-bindgen for \
    every item src/js/glue.rs lists (the pointer field and its zeroing by free(), the \
    module's `wasm` binding before init(), the `__` prefix of the glue's own members, the \
    classes as module bindings with their members on the prototype), change src/js/glue.rs \
    and src/js/freed_guard.js where it differs, then set glue::WRITTEN_FOR";

#[test]
fn the_glue_was_written_for_the_wasm_bindgen_that_cargo_lock_pins() {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock"))
        .expect("Cargo.lock");
    let pinned = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"wasm-bindgen\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("wasm-bindgen in Cargo.lock");
    assert_eq!(
        pinned,
        glue::WRITTEN_FOR,
        "Cargo.lock pins wasm-bindgen {pinned}, but src/js/glue.rs was written for {}: {RECHECK}",
        glue::WRITTEN_FOR
    );
}

#[test]
fn the_freed_guard_uses_the_names_glue_rs_lists() {
    let guard = include_str!("../src/js/freed_guard.js");
    let constant = |name: &str| {
        guard
            .lines()
            .find_map(|l| l.strip_prefix(&format!("const {name} = ")))
            .map(|v| v.trim_end_matches(';').trim_matches('"').to_owned())
            .unwrap_or_else(|| panic!("freed_guard.js declares no {name}"))
    };
    assert_eq!(constant("GLUE_POINTER_FIELD"), glue::POINTER_FIELD);
    assert_eq!(constant("GLUE_INTERNAL_PREFIX"), glue::INTERNAL_PREFIX);
    assert!(guard.contains(&format!("{} === undefined", glue::EXPORTS_BINDING)));
    for class in glue::CLASSES {
        assert!(guard.contains(class), "freed_guard.js guards no {class}");
    }
    // Nothing else of the glue's by name: its other `__wbg` names are not relied on.
    let uses_wbg = guard
        .lines()
        .filter(|l| !l.starts_with("const GLUE_"))
        .any(|l| l.contains("__wbg"));
    assert!(
        !uses_wbg,
        "freed_guard.js names a __wbg field other than through GLUE_POINTER_FIELD"
    );
}

#[test]
fn a_built_glue_has_what_the_package_relies_on() {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("pkg/webgpu_rmsnorm.js");
    let js = std::fs::read_to_string(&built).unwrap_or_else(|e| {
        panic!(
            "pkg/webgpu_rmsnorm.js: {e}. This test reads the built package: \
             `bash scripts/build.sh` builds pkg/ (`npm test` builds it before `cargo test`)"
        )
    });
    let relied_on = [
        format!("this.{} = 0;", glue::POINTER_FIELD),
        format!("{}destroy_into_raw()", glue::INTERNAL_PREFIX),
    ];
    let classes = glue::CLASSES.map(|c| format!("class {c} {{"));
    for needle in relied_on.iter().chain(&classes) {
        assert!(
            js.contains(needle.as_str()),
            "pkg/webgpu_rmsnorm.js has no `{needle}`: {RECHECK}"
        );
    }
    // `let wasm;`, or `wasm` among other names of one `let`.
    let declares_exports = js.lines().any(|l| {
        l.strip_prefix("let ").is_some_and(|names| {
            names
                .trim_end_matches(';')
                .split(',')
                .any(|n| n.trim() == glue::EXPORTS_BINDING)
        })
    });
    assert!(
        declares_exports,
        "pkg/webgpu_rmsnorm.js declares no module-level `let {}`: {RECHECK}",
        glue::EXPORTS_BINDING
    );
}
