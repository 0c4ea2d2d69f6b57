//! The two packages hold what they need and nothing else: the crate (`cargo package`) its
//! sources, shaders, build script, manifest, licences and README; the npm tarball (`npm
//! pack`) the files that `package.json`'s `files` names, built into `pkg/` by
//! `bash scripts/build.sh`.
//! Neither may carry `node_modules/`, the tests, the benchmarks or anything else of the
//! repository that happens to sit beside them.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// What the crate holds, by top-level path: a folder (`src/`) or a file of the root.
const CRATE_ROOTS: &[&str] = &[
    "src/",
    "shaders/",
    "build.rs",
    "Cargo.toml",
    "README.md",
    "LICENSE-MIT",
    "LICENSE-APACHE",
];

/// What `cargo package` itself adds: the manifest as written, the lockfile, and where in
/// version control the package came from.
const CARGO_ADDS: &[&str] = &["Cargo.toml.orig", "Cargo.lock", ".cargo_vcs_info.json"];

/// The files of the repository's root that the npm tarball holds; the rest is under `pkg/`.
const NPM_ROOT_FILES: &[&str] = &[
    "package.json",
    "README.md",
    "CHANGELOG.md",
    "LICENSE-MIT",
    "LICENSE-APACHE",
];

/// The repository's root, where both packages are made.
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Each file under `dir`, as a path from the crate's root with `/` between its parts.
fn files_under(dir: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            let rel = path.strip_prefix(Path::new(ROOT)).unwrap();
            out.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// `program args` in the crate's root; its standard output, or a failure with its error.
fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(Path::new(ROOT))
        .output()
        .unwrap_or_else(|e| panic!("{program} {}: {e}", args.join(" ")));
    assert!(
        out.status.success(),
        "{program} {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The strings of a flat JSON string array, `["a", "b/"]`, at the start of `text`.
fn string_array(text: &str) -> Vec<String> {
    let body = text.trim_start().strip_prefix('[').unwrap();
    let body = &body[..body.find(']').unwrap()];
    body.split(',')
        .map(|s| s.trim().trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Each value of `"key": "value"` in a JSON text (paths hold no quotes or escapes).
fn string_values(text: &str, key: &str) -> BTreeSet<String> {
    let needle = format!("\"{key}\":");
    text.match_indices(&needle)
        .map(|(at, _)| {
            let value = text[at + needle.len()..].trim_start();
            let value = value.strip_prefix('"').unwrap();
            value[..value.find('"').unwrap()].to_owned()
        })
        .collect()
}

#[test]
fn the_crate_holds_its_sources_shaders_licences_and_readme_only() {
    let listed: BTreeSet<String> = output(
        "cargo",
        &["package", "--list", "--allow-dirty", "--offline"],
    )
    .lines()
    .map(str::to_owned)
    .collect();
    let outside: Vec<&String> = listed
        .iter()
        .filter(|f| {
            !CARGO_ADDS.contains(&f.as_str())
                && !CRATE_ROOTS
                    .iter()
                    .any(|r| f.as_str() == *r || r.ends_with('/') && f.starts_with(r))
        })
        .collect();
    assert!(
        outside.is_empty(),
        "the crate holds files outside {CRATE_ROOTS:?} (Cargo.toml's include):\n{outside:#?}"
    );
    let mut wanted = BTreeSet::new();
    files_under(&Path::new(ROOT).join("src"), &mut wanted);
    files_under(&Path::new(ROOT).join("shaders"), &mut wanted);
    wanted.extend(["build.rs", "README.md", "LICENSE-MIT", "LICENSE-APACHE"].map(String::from));
    assert!(wanted.contains("src/lib.rs") && wanted.iter().any(|f| f.ends_with(".wgsl")));
    let missing: Vec<&String> = wanted.difference(&listed).collect();
    assert!(missing.is_empty(), "the crate lacks:\n{missing:#?}");
}

#[test]
fn the_npm_tarball_holds_what_package_json_names_only() {
    let built = Path::new(ROOT).join("pkg/webgpu_rmsnorm_bg.wasm");
    assert!(
        built.exists(),
        "no pkg/webgpu_rmsnorm_bg.wasm: the npm tarball is checked against a built package; \
         `bash scripts/build.sh` builds pkg/ (`npm test` builds it before `cargo test`)"
    );
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("package.json")).unwrap();
    let files = string_array(&manifest[manifest.find("\"files\":").unwrap() + 8..]);
    let mut wanted = BTreeSet::from(["package.json".to_owned()]);
    for entry in &files {
        if entry.ends_with('/') {
            let before = wanted.len();
            files_under(&Path::new(ROOT).join(entry), &mut wanted);
            assert!(
                wanted.len() > before,
                "package.json names {entry}, which is empty"
            );
        } else {
            assert!(
                Path::new(ROOT).join(entry).is_file(),
                "package.json names {entry}: no such file"
            );
            wanted.insert(entry.clone());
        }
    }
    let listed = string_values(&output("npm", &["pack", "--dry-run", "--json"]), "path");
    let stray: Vec<&String> = listed
        .iter()
        .filter(|f| !f.starts_with("pkg/") && !NPM_ROOT_FILES.contains(&f.as_str()))
        .collect();
    assert!(
        stray.is_empty(),
        "files in the tarball outside pkg/ and {NPM_ROOT_FILES:?}: {stray:#?}"
    );
    assert_eq!(
        listed, wanted,
        "the tarball's files (left) are not those package.json's `files` names (right)"
    );
}
