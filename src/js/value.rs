//! Reading a caller's JavaScript values: a field, unknown keys with the field a typo meant,
//! how a value looks in an error message, and errors back into JavaScript `Error`s (what a
//! field should hold is decoded in `fields.rs`).
//!
//! Nothing here can throw into Rust: an exception unwinding through wasm frames skips
//! their cleanup (borrow flags, the shadow stack), and enough of them kill the module. Every
//! JavaScript operation on a caller's value goes through a `catch` import or `Reflect`.

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::call::error::Error;
use crate::support::number_text::number_text;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub fn is_array(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ArrayBuffer, js_name = isView)]
    pub fn is_view(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    fn own_keys(v: &JsValue) -> Result<js_sys::Array, JsValue>;
}

/// A misspelt field would otherwise be ignored and its default used without a word (`Eps`
/// for `eps`): every own key of `o` must be one of `known`. Inherited fields (getters on a
/// class) are the caller's own business and are not checked.
pub fn check_keys(o: &JsValue, what: &str, known: &'static [&'static str]) -> Result<(), Error> {
    let Ok(keys) = own_keys(o) else {
        return Ok(());
    };
    // Matched as JavaScript strings against a Set of the known names: reading every name
    // into Rust (a UTF-8 encode each) on every call cost more than the check is worth.
    let set = known_set(known);
    for key in keys
        .iter()
        .filter(|k| !set.has(k))
        .filter_map(|k| k.as_string())
    {
        if known.contains(&key.as_str()) {
            continue;
        }
        let near = known
            .iter()
            .map(|k| {
                (
                    edit_distance(&key.to_ascii_lowercase(), &k.to_ascii_lowercase()),
                    k,
                )
            })
            .min()
            .filter(|(d, _)| *d <= 2)
            .map(|(_, k)| format!(" (did you mean {k}?)"))
            .unwrap_or_default();
        let short: String = key.chars().take(40).collect();
        return Err(Error::Type(format!(
            "{what}.{short}: expected one of {}, got an unknown field{near}",
            known.join(", ")
        )));
    }
    Ok(())
}

thread_local! {
    static KNOWN_SETS: std::cell::RefCell<Vec<(usize, js_sys::Set)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `known` as a JavaScript Set, made once per list.
fn known_set(known: &'static [&'static str]) -> js_sys::Set {
    let id = known.as_ptr() as usize;
    KNOWN_SETS.with(|sets| {
        if let Some((_, s)) = sets.borrow().iter().find(|(k, _)| *k == id) {
            return s.clone();
        }
        let s = js_sys::Set::new(&JsValue::UNDEFINED);
        for k in known {
            s.add(&JsValue::from_str(k));
        }
        sets.borrow_mut().push((id, s.clone()));
        s
    })
}

/// Levenshtein distance, for suggesting the field a typo meant.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

pub fn get(obj: &JsValue, key: &'static str) -> JsValue {
    Reflect::get(obj, &field_name(key)).unwrap_or(JsValue::UNDEFINED)
}

thread_local! {
    static FIELD_NAMES: std::cell::RefCell<Vec<((usize, usize), JsValue)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `key` as a JavaScript string, made once. The same few field names are read on every
/// call: making each string from Rust (a UTF-8 decode) and then wasm-bindgen's interning
/// (two string hashes per read) were a large part of a decode-sized `encode` in a profile
/// on Dawn (docs/performance.md, "Dawn in Node").
/// Keys are `'static`, so the text's address identifies one.
fn field_name(key: &'static str) -> JsValue {
    let id = (key.as_ptr() as usize, key.len());
    FIELD_NAMES.with(|names| {
        if let Some((_, v)) = names.borrow().iter().find(|(k, _)| *k == id) {
            return v.clone();
        }
        let v = JsValue::from_str(key);
        names.borrow_mut().push((id, v.clone()));
        v
    })
}

pub fn to_js(e: Error) -> JsValue {
    // A wrong-typed argument is JavaScript's own TypeError, so `instanceof TypeError` holds.
    if let Error::Type(message) = &e {
        return js_sys::TypeError::new(message).into();
    }
    // Likewise a failed allocation is JavaScript's RangeError.
    if let Error::Range(message) = &e {
        return js_sys::RangeError::new(message).into();
    }
    let err = js_sys::Error::new(e.message());
    err.set_name(e.name());
    err.into()
}

/// How a value looks to a reader of an error message.
pub fn describe(v: &JsValue) -> String {
    if v.is_undefined() {
        return "undefined".into();
    }
    if v.is_null() {
        return "null".into();
    }
    if let Some(s) = v.as_string() {
        let short: String = s.chars().take(40).collect();
        return format!("the string {short:?}");
    }
    if let Some(n) = v.as_f64() {
        return format!("the number {}", number_text(n));
    }
    if let Some(b) = v.as_bool() {
        return format!("the boolean {b}");
    }
    match is_array(v) {
        Ok(true) => return "an Array".into(),
        Err(_) => return "a revoked Proxy".into(),
        Ok(false) => {}
    }
    if v.is_bigint() {
        return "a bigint".into();
    }
    if v.is_function() {
        return "a function".into();
    }
    let name = get(&get(v, "constructor"), "name")
        .as_string()
        .unwrap_or_default();
    if !name.is_empty() {
        let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) {
            "an"
        } else {
            "a"
        };
        return format!("{article} {name}");
    }
    "an object".into()
}

/// A plain object of `fields`, for results.
/// What a call resolves with, from its results: `y` alone (`run`), `{ output, sum }`
/// (`runWithSum`), `{ sum }` (a post-norm's sum alone), or `undefined` (in place).
pub fn results_value(y: Option<JsValue>, sum: Option<JsValue>) -> JsValue {
    match (y, sum) {
        (Some(y), Some(sum)) => object(&[("output", y), ("sum", sum)]),
        (Some(y), None) => y,
        (None, Some(sum)) => object(&[("sum", sum)]),
        (None, None) => JsValue::UNDEFINED,
    }
}

pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o.into()
}
