//! The imports of `src/`, read with a Rust parser: every path a module names, in a `use`
//! (grouped, nested, over several lines, through `crate::`, `super::` or `self::`) or in its
//! code (a path such as `crate::gpu::kernel::choose(…)`, in an expression, a type or a macro's
//! tokens), resolved to the module that defines what it names. A name re-exported by a
//! `use` (`lib.rs`'s `pub use gpu::GpuContext`, a folder's `pub use context::GpuContext`) is
//! followed to where it comes from, so `crate::GpuContext` is an import of `gpu::context`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::Visit;

/// How many re-exports a resolution follows before it gives up (a `use` in a circle).
const MAX_HOPS: usize = 32;

/// What a module scope (a file, or an inline `mod` in one) holds: its `use` bindings by name
/// (each path as written, relative to the scope), its globs, and the names it defines.
#[derive(Default)]
struct Scope {
    bindings: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    items: BTreeSet<String>,
}

/// Every scope of the crate by its path (`""` for `lib.rs`), and every path named in each
/// file: (the file's module, the scope it is written in, the path as written).
#[derive(Default)]
pub struct Crate {
    files: BTreeSet<String>,
    scopes: BTreeMap<String, Scope>,
    named: Vec<(String, String, Vec<String>)>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `call::shape` for `src/call/shape.rs`, `gpu` for `src/gpu/mod.rs`, `` for `lib.rs`.
pub fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// Every module of the tree at `src` by name, with its text.
pub fn sources(src: &Path) -> BTreeMap<String, String> {
    let mut files = vec![];
    rust_files(src, &mut files);
    files
        .iter()
        .map(|f| (module_of(src, f), std::fs::read_to_string(f).unwrap()))
        .collect()
}

fn join(path: &[String]) -> String {
    path.join("::")
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "test")
    })
}

/// Walks one file, filling `Crate` for the scope it is in.
struct Walk<'a> {
    krate: &'a mut Crate,
    file: String,
    scope: Vec<String>,
}

impl Walk<'_> {
    fn scope(&mut self) -> &mut Scope {
        self.krate.scopes.entry(join(&self.scope)).or_default()
    }

    fn name(&mut self, path: Vec<String>) {
        let entry = (self.file.clone(), join(&self.scope), path);
        self.krate.named.push(entry);
    }

    /// Each leaf of a `use` tree, with the path before it (`prefix`).
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        let leaf = |prefix: &[String], last: &syn::Ident| {
            let mut path = prefix.to_vec();
            if last != "self" {
                path.push(last.to_string());
            }
            path
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let path = leaf(prefix, &n.ident);
                let name = path.last().cloned().unwrap_or_default();
                self.scope().bindings.insert(name, path.clone());
                self.name(path);
            }
            syn::UseTree::Rename(r) => {
                let path = leaf(prefix, &r.ident);
                if r.rename != "_" {
                    self.scope()
                        .bindings
                        .insert(r.rename.to_string(), path.clone());
                }
                self.name(path);
            }
            syn::UseTree::Glob(_) => {
                self.scope().globs.push(prefix.clone());
                self.name(prefix.clone());
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }
}

/// Every `a::b::c` chain of identifiers in a macro's tokens (`$crate` read as `crate`).
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    fn end(chain: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if chain.len() > 1 {
            out.push(chain.clone());
        }
        chain.clear();
    }
    let mut chain: Vec<String> = vec![];
    // The colons since the chain's last identifier: two continue it, anything else ends it.
    let mut colons = 0;
    for tree in tokens {
        match tree {
            TokenTree::Ident(i) => {
                if colons != 2 {
                    end(&mut chain, out);
                }
                chain.push(i.to_string());
                colons = 0;
            }
            TokenTree::Punct(p) if p.as_char() == ':' => {
                let joint = colons == 0 && p.spacing() == Spacing::Joint;
                colons = if joint || colons == 1 { colons + 1 } else { 3 };
            }
            TokenTree::Group(g) => {
                end(&mut chain, out);
                colons = 0;
                token_paths(g.stream(), out);
            }
            _ => {
                end(&mut chain, out);
                colons = 0;
            }
        }
    }
    end(&mut chain, out);
}

impl<'ast> Visit<'ast> for Walk<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let (attrs, ident) = match item {
            syn::Item::Const(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Enum(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Fn(i) => (&i.attrs, Some(&i.sig.ident)),
            syn::Item::Macro(i) => (&i.attrs, i.ident.as_ref()),
            syn::Item::Mod(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Static(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Struct(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Trait(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Type(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Union(i) => (&i.attrs, Some(&i.ident)),
            syn::Item::Impl(i) => (&i.attrs, None),
            syn::Item::Use(i) => (&i.attrs, None),
            _ => return syn::visit::visit_item(self, item),
        };
        // A module's unit tests (`#[cfg(test)] mod tests { use super::*; … }`) are not
        // among its imports.
        if is_cfg_test(attrs) {
            return;
        }
        if let Some(ident) = ident {
            self.scope().items.insert(ident.to_string());
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_none() {
            return;
        }
        self.scope.push(m.ident.to_string());
        self.scope();
        syn::visit::visit_item_mod(self, m);
        self.scope.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_none() {
            self.use_tree(&mut vec![], &u.tree);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.name(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let mut paths = vec![];
        token_paths(mac.tokens.clone(), &mut paths);
        for path in paths {
            self.name(path);
        }
        syn::visit::visit_macro(self, mac);
    }
}

impl Crate {
    /// Parses every file of `texts` (module name to its text).
    pub fn parse(texts: &BTreeMap<String, String>) -> Crate {
        let mut krate = Crate::default();
        for (module, text) in texts {
            let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{module}: {e}"));
            let scope: Vec<String> = module
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            krate.files.insert(module.clone());
            let mut walk = Walk {
                krate: &mut krate,
                file: module.clone(),
                scope,
            };
            walk.scope();
            walk.visit_file(&file);
        }
        krate
    }

    /// `path`, written in `scope`, from the crate's root; `None` where it leaves the crate
    /// (`std::…`, `wgpu::…`) or names a local (`T::Output`, a variable).
    fn absolute(&self, scope: &str, path: &[String], hops: usize) -> Option<Vec<String>> {
        let mut base: Vec<String> = scope
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let mut rest = path;
        if matches!(rest.first().map(String::as_str), Some("crate")) {
            base.clear();
            rest = &rest[1..];
        } else if matches!(rest.first().map(String::as_str), Some("self" | "super")) {
            if rest[0] == "self" {
                rest = &rest[1..];
            }
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        } else {
            let first = rest.first()?;
            let mut child = base.clone();
            child.push(first.clone());
            if !self.scopes.contains_key(&join(&child)) {
                let bound = self.scopes.get(scope)?.bindings.get(first)?;
                if hops >= MAX_HOPS || bound.first() == Some(first) && bound.len() == 1 {
                    return None;
                }
                let mut whole = self.absolute(scope, bound, hops + 1)?;
                whole.extend_from_slice(&rest[1..]);
                return Some(whole);
            }
        }
        base.extend_from_slice(rest);
        Some(base)
    }

    /// The scope that defines what `path` (from the root) names, following re-exports.
    fn defining_scope(&self, path: &[String], hops: usize) -> String {
        let depth = (0..=path.len())
            .rev()
            .find(|&n| self.scopes.contains_key(&join(&path[..n])))
            .unwrap_or(0);
        let scope = join(&path[..depth]);
        let Some(name) = path.get(depth).filter(|_| hops < MAX_HOPS) else {
            return scope;
        };
        let here = &self.scopes[&scope];
        let follow = |target: Vec<String>| {
            let mut whole = target;
            whole.extend_from_slice(&path[depth + 1..]);
            self.defining_scope(&whole, hops + 1)
        };
        if let Some(bound) = here.bindings.get(name) {
            if let Some(target) = self.absolute(&scope, bound, hops) {
                return follow(target);
            }
        } else if !here.items.contains(name) {
            for glob in &here.globs {
                let Some(target) = self.absolute(&scope, glob, hops) else {
                    continue;
                };
                let from = self.defining_scope(&target, hops + 1);
                let there = &self.scopes[&from];
                if there.items.contains(name) || there.bindings.contains_key(name) {
                    let mut whole: Vec<String> = from.split("::").map(str::to_owned).collect();
                    whole.retain(|s| !s.is_empty());
                    whole.push(name.clone());
                    return follow(whole);
                }
            }
        }
        scope
    }

    /// The file module that a scope is in (`support::clock` for `support::clock::web`).
    fn file_of(&self, scope: &str) -> String {
        let mut parts: Vec<&str> = scope.split("::").filter(|s| !s.is_empty()).collect();
        while !self.files.contains(&parts.join("::")) {
            parts.pop();
        }
        parts.join("::")
    }

    /// Each file module with the file modules it imports (never itself nor `lib.rs`).
    pub fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph: BTreeMap<String, BTreeSet<String>> = self
            .files
            .iter()
            .map(|f| (f.clone(), BTreeSet::new()))
            .collect();
        for (file, scope, path) in &self.named {
            let Some(target) = self.absolute(scope, path, 0) else {
                continue;
            };
            let module = self.file_of(&self.defining_scope(&target, 0));
            if &module != file && !module.is_empty() {
                graph.get_mut(file).unwrap().insert(module);
            }
        }
        graph
    }
}
