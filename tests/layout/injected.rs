//! The import check against each way of writing an import: each test adds one file that
//! imports a layer above its own to a copy of `src/`, and expects the check to name it.

use std::path::{Path, PathBuf};

use super::{import_faults, import_graph, rank, src};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// A fresh copy of `src/` named for `test`, with `code` as `src/<file>`.
fn tree_with(test: &str, file: &str, code: &str) -> PathBuf {
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("layout-{test}/src"));
    let _ = std::fs::remove_dir_all(&copy);
    copy_tree(&src(), &copy);
    std::fs::write(
        copy.join(file),
        format!("//! An injected import.\n{code}\n"),
    )
    .unwrap();
    copy
}

/// The check's faults for the tree with `code` in `src/call/injected.rs` (the layer `call`):
/// it must name that file importing from `gpu`.
fn refuses(test: &str, code: &str) {
    let copy = tree_with(test, "call/injected.rs", code);
    let faults = import_faults(&import_graph(&copy));
    let _ = std::fs::remove_dir_all(copy.parent().unwrap());
    let expected = format!("call::injected (rank {}) imports gpu", rank("call"));
    let found = faults
        .iter()
        .find(|f| f.starts_with(&expected) && f.ends_with(&format!("(rank {})", rank("gpu"))));
    assert!(
        found.is_some(),
        "{test}: expected a fault `{expected}…`, the check said:\n{}",
        faults.join("\n")
    );
}

#[test]
fn the_copy_of_the_tree_passes_as_it_is() {
    let copy = tree_with("unchanged", "call/injected.rs", "");
    let faults = import_faults(&import_graph(&copy));
    let _ = std::fs::remove_dir_all(copy.parent().unwrap());
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn a_grouped_import_is_read() {
    refuses(
        "grouped",
        "use crate::{support::clock, gpu::kernel::choose};",
    );
}

#[test]
fn a_grouped_import_over_several_lines_is_read() {
    refuses(
        "multi-line",
        "use crate::{\n    support::clock,\n    gpu::{\n        kernel,\n    },\n};",
    );
}

#[test]
fn a_nested_group_is_read() {
    refuses(
        "nested",
        "use crate::{support::{clock, fast_hash}, gpu::{kernel::{self, choose}}};",
    );
}

#[test]
fn super_super_is_read() {
    refuses("super-super", "use super::super::gpu::kernel;");
}

#[test]
fn a_self_path_is_read() {
    refuses("self", "use self::super::super::gpu::kernel;");
}

#[test]
fn a_name_re_exported_by_lib_rs_is_followed_to_its_module() {
    refuses("re-export", "use crate::GpuContext;");
}

#[test]
fn a_name_bound_by_a_use_is_followed() {
    refuses(
        "renamed",
        "use crate as root;\nuse root::gpu as device;\nfn f() { let _ = device::kernel::choose; }",
    );
}

#[test]
fn a_path_in_code_is_read() {
    refuses(
        "inline",
        "pub fn f() -> usize { std::mem::size_of::<crate::gpu::GpuContext>() }",
    );
}

#[test]
fn a_path_in_a_macro_is_read() {
    refuses(
        "macro",
        "pub fn f() -> String { format!(\"{:?}\", crate::gpu::kernel::choose as usize) }",
    );
}

#[test]
fn a_circle_inside_one_layer_is_refused() {
    // `call::plan` imports `call::shape`; the copy's `call::shape` imports it back.
    let graph = import_graph(&src());
    assert!(graph["call::plan"].contains("call::shape"), "{graph:?}");
    let text = std::fs::read_to_string(src().join("call/shape.rs")).unwrap();
    let copy = tree_with(
        "circle",
        "call/shape.rs",
        &format!("{text}\nuse crate::call::plan;"),
    );
    let faults = import_faults(&import_graph(&copy));
    let _ = std::fs::remove_dir_all(copy.parent().unwrap());
    assert!(
        faults
            .iter()
            .any(|f| f.starts_with("modules import each other in a circle: ")
                && f.contains("call::plan")
                && f.contains("call::shape")),
        "{}",
        faults.join("\n")
    );
}
