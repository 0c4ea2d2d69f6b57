//! JavaScript values into Rust: a call's arguments, `create`'s options, a timing call's
//! `repeat`, and errors back into JavaScript `Error`s.
//!
//! Checks that cannot throw into Rust: an exception unwinding through wasm frames skips
//! their cleanup (borrow flags, the shadow stack), and enough of them kill the module. Every
//! JavaScript operation on a caller's value goes through a `catch` import or `Reflect`.
//! Only the JavaScript types are checked here; the values (lengths, `hidden`, `eps`,
//! `repeat`) are checked once, in `shape.rs`, for every entry point.

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::app_buffer::AppBuffer;
use crate::backend::Choice;
use crate::dtype::Dtype;
use crate::error::Error;
use crate::host::{Arg, JsArray};
use crate::instance::Settings;
use crate::js_tensor::tensor_arg;
use crate::kernel::Options;
use crate::shape::{
    eps_from_number, fit_buffers, hidden_from_number, repeat_from_number, rows_from_number, Inputs,
    Kernel, Outputs, Request,
};

/// One call's arguments as the driver takes them.
pub type Args = Inputs<Arg<JsArray>>;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn is_array(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ArrayBuffer, js_name = isView)]
    fn is_view(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Reflect, js_name = getPrototypeOf)]
    pub fn prototype_of(v: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    fn own_keys(v: &JsValue) -> Result<js_sys::Array, JsValue>;
}

/// The fields of a call's argument object, and of `create`'s options.
const ARGS_KEYS: [&str; 11] = [
    "input", "residual", "gamma", "beta", "bias", "hidden", "eps", "output", "inPlace", "dtype",
    "rows",
];
/// `encode`'s: `output` and `sum` are where the results go.
const ENCODE_KEYS: [&str; 12] = [
    "input", "residual", "gamma", "beta", "bias", "hidden", "eps", "output", "sum", "inPlace",
    "dtype", "rows",
];
const OPTIONS_KEYS: [&str; 3] = ["backend", "powerPreference", "shaderF16"];
const UPLOAD_OPTIONS_KEYS: [&str; 1] = ["dtype"];
const PREPARE_KEYS: [&str; 6] = ["hidden", "bias", "beta", "sum", "dtype", "inPlace"];
const SOURCE_KEYS: [&str; 7] = ["hidden", "bias", "beta", "sum", "dtype", "inPlace", "rows"];

/// A misspelt field would otherwise be ignored and its default used without a word (`Eps`
/// for `eps`): every own key of `o` must be one of `known`. Inherited fields (getters on a
/// class) are the caller's own business and are not checked.
fn check_keys(o: &JsValue, what: &str, known: &'static [&'static str]) -> Result<(), Error> {
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
            .map(|k| (edit_distance(&key.to_lowercase(), &k.to_lowercase()), k))
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
/// (two string hashes per read) were 17 % of a decode-sized `encode` in a profile on Dawn.
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
        return format!("the number {n}");
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

/// Where a call takes its arrays from, and what it does with the app's `GPUBuffer`s.
#[derive(Clone, Copy)]
struct Sources {
    /// Typed arrays are welcome (`run`), or only GPU data is (`encode`).
    host: bool,
    /// The `GPUBufferUsage` bits a `GPUBuffer` argument needs, and their names.
    usage: (u32, &'static str),
    /// What a `GPUBuffer` holds (a buffer has no element type of its own).
    dtype: Dtype,
}

/// `GPUBufferUsage.COPY_SRC`: `run` copies an app's buffer into one of its own.
const COPY_SRC: (u32, &str) = (0x4, "COPY_SRC");
/// `GPUBufferUsage.STORAGE`: `encode` binds an app's buffer as it is.
const STORAGE: (u32, &str) = (0x80, "STORAGE");

/// A typed array, a `GpuTensor` or a `GPUBuffer` argument; `None` when optional and absent.
fn array_arg(
    args: &JsValue,
    name: &'static str,
    required: bool,
    from: Sources,
) -> Result<Option<Arg<JsArray>>, Error> {
    let v = get(args, name);
    if v.is_undefined() && !required {
        return Ok(None);
    }
    // A transferred (detached) buffer would read as length 0: it gets its own message.
    match JsArray::from_value(&v) {
        Ok(Some(a)) if from.host => return Ok(Some(Arg::Host(a))),
        Ok(Some(_)) => {
            return Err(Error::Type(format!(
                "{name}: expected a GPUBuffer or a GpuTensor (encode records GPU work only: \
                 upload host data first), got {}",
                describe(&v)
            )))
        }
        Ok(None) => {}
        Err(expected) => return Err(Error::Type(format!("{name}: expected {expected}"))),
    }
    if let Some(t) = tensor_arg(&v, name)? {
        return Ok(Some(Arg::Gpu(t)));
    }
    if let Some(b) = gpu_buffer_arg(&v, name, from)? {
        return Ok(Some(Arg::Buffer(b)));
    }
    let expected = match (from.host, required) {
        (true, true) => {
            "a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor or a GPUBuffer"
        }
        (true, false) => {
            "a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor, a GPUBuffer or undefined"
        }
        (false, true) => "a GPUBuffer or a GpuTensor",
        (false, false) => "a GPUBuffer, a GpuTensor or undefined",
    };
    Err(Error::Type(format!(
        "{name}: expected {expected}, got {}",
        describe(&v)
    )))
}

/// An app's `GPUBuffer`, recognised by its brand (`Symbol.toStringTag`, which WebIDL
/// interfaces carry); a look-alike gets past this and is refused by WebGPU itself.
fn gpu_buffer_arg(v: &JsValue, name: &str, from: Sources) -> Result<Option<AppBuffer>, Error> {
    if !v.is_object() {
        return Ok(None);
    }
    let tag = Reflect::get(v, &js_sys::Symbol::to_string_tag().into()).unwrap_or_default();
    if tag.as_string().as_deref() != Some("GPUBuffer") {
        return Ok(None);
    }
    let number = |k: &'static str| get(v, k).as_f64().unwrap_or(0.0);
    let (size, usage) = (number("size"), number("usage") as u32);
    let (bits, flag) = from.usage;
    if usage & bits == 0 {
        return Err(Error::Type(format!(
            "{name}: expected a GPUBuffer with GPUBufferUsage.{flag}, got one without it"
        )));
    }
    if size % from.dtype.bytes() as f64 != 0.0 {
        return Err(Error::Shape(format!(
            "{name}: expected a GPUBuffer of whole {} elements, got {size} bytes",
            from.dtype.name()
        )));
    }
    Ok(Some(AppBuffer::new(v.clone(), size as u64, from.dtype)))
}

/// `upload`'s data: a typed array of either dtype, matching `options.dtype` if given.
pub fn upload_arg(data: &JsValue, options: Option<&JsValue>) -> Result<JsArray, Error> {
    let a = match JsArray::from_value(data) {
        Ok(Some(a)) => a,
        Ok(None) => {
            return Err(Error::Type(format!(
                "data: expected a Float32Array (f32) or a Uint16Array/Float16Array (f16), got {}",
                describe(data)
            )))
        }
        Err(expected) => return Err(Error::Type(format!("data: expected {expected}"))),
    };
    let options = options.cloned().unwrap_or(JsValue::UNDEFINED);
    if !(options.is_undefined() || options.is_null() || options.is_object()) {
        return Err(Error::Type(format!(
            "options: expected an object {{ dtype? }} or undefined, got {}",
            describe(&options)
        )));
    }
    // A getter that throws (or a revoked Proxy) is refused, not read as "no dtype".
    let dtype = if options.is_object() {
        check_keys(&options, "options", &UPLOAD_OPTIONS_KEYS)?;
        Reflect::get(&options, &JsValue::from_str("dtype")).map_err(|_| {
            Error::Type("options.dtype: expected a readable field, got one that throws".into())
        })?
    } else {
        JsValue::UNDEFINED
    };
    let wanted = match dtype.as_string().as_deref() {
        _ if dtype.is_undefined() => a.dtype,
        Some("f32") => Dtype::F32,
        Some("f16") => Dtype::F16,
        _ => {
            return Err(Error::Type(format!(
                "options.dtype: expected \"f32\" or \"f16\", got {}",
                describe(&dtype)
            )))
        }
    };
    if wanted != a.dtype {
        return Err(Error::Type(format!(
            "data: expected {} for dtype \"{}\", got {}",
            if wanted == Dtype::F32 {
                "a Float32Array"
            } else {
                "a Uint16Array or Float16Array"
            },
            wanted.name(),
            describe(data)
        )));
    }
    Ok(a)
}

/// The call's inputs, and what it asks for (`sum` is the method's: `runWithSum`).
pub fn parse_args(args: &JsValue, sum: bool) -> Result<(Args, Request), Error> {
    if let Some(parsed) = crate::js_tensor_call::parse(args, sum) {
        return parsed;
    }
    let from = Sources {
        host: true,
        usage: COPY_SRC,
        dtype: Dtype::F32,
    };
    let mut x = parse_inputs(args, &ARGS_KEYS, from)?;
    fit_buffers(&mut x, None, rows_field(args)?)?;
    let o = get(args, "output");
    let request = match o.as_string().as_deref() {
        _ if o.is_undefined() => Request::host(sum),
        Some("array") => Request::host(sum),
        Some("gpu") => Request::to_gpu(sum),
        _ => {
            return Err(Error::Type(format!(
                "output: expected \"array\", \"gpu\" or undefined, got {}",
                describe(&o)
            )));
        }
    };
    if !flag(args, "inPlace")? {
        return Ok((x, request));
    }
    if !o.is_undefined() {
        return Err(Error::Type(format!(
            "output: expected undefined with inPlace: true (the results overwrite input and residual), got {}",
            describe(&o)
        )));
    }
    Ok((x, Request::in_place()))
}

/// `encode`'s arguments: the inputs (GPU data only), and where the results go.
pub fn parse_encode(args: &JsValue) -> Result<(Args, Outputs<Arg<JsArray>>), Error> {
    let from = Sources {
        host: false,
        usage: STORAGE,
        dtype: Dtype::F32,
    };
    let mut x = parse_inputs(args, &ENCODE_KEYS, from)?;
    let output = array_arg(args, "output", false, from)?;
    let sum = array_arg(args, "sum", false, from)?;
    let mut outputs = match (flag(args, "inPlace")?, output) {
        (true, None) if sum.is_none() => Outputs::InPlace,
        (true, _) => {
            return Err(Error::Type(
                "output: expected no output or sum with inPlace: true (the results overwrite input and residual)".into(),
            ))
        }
        (false, Some(output)) => Outputs::To { output, sum },
        (false, None) => {
            return Err(Error::Type(
                "output: expected a GPUBuffer or a GpuTensor for the result (or inPlace: true), got undefined".into(),
            ))
        }
    };
    fit_buffers(&mut x, Some(&mut outputs), rows_field(args)?)?;
    Ok((x, outputs))
}

/// The optional `rows` of a call whose `GPUBuffer`s hold more than its rows.
fn rows_field(args: &JsValue) -> Result<Option<usize>, Error> {
    let r = get(args, "rows");
    if r.is_undefined() {
        return Ok(None);
    }
    let Some(rows) = r.as_f64() else {
        return Err(Error::Type(format!(
            "rows: expected a number or undefined, got {}",
            describe(&r)
        )));
    };
    rows_from_number(rows).map(Some)
}

/// The arrays, `hidden` and `eps` of a call's argument object. `GPUBuffer`s hold `args.dtype`.
fn parse_inputs(
    args: &JsValue,
    keys: &'static [&'static str],
    mut from: Sources,
) -> Result<Args, Error> {
    if !args.is_object()
        || args.is_function()
        || is_array(args).unwrap_or(true)
        || is_view(args).unwrap_or(true)
    {
        return Err(Error::Type(format!(
            "args: expected an object {{ input, residual, gamma, hidden, beta?, bias?, eps? }}, got {}",
            describe(args)
        )));
    }
    check_keys(args, "args", keys)?;
    from.dtype = dtype_field(args, "dtype")?.unwrap_or(Dtype::F32);
    let required = |name| {
        array_arg(args, name, true, from)?.ok_or_else(|| Error::Type(format!("{name}: missing")))
    };
    let input = required("input")?;
    let residual = required("residual")?;
    let gamma = required("gamma")?;
    let beta = array_arg(args, "beta", false, from)?;
    let bias = array_arg(args, "bias", false, from)?;
    let h = get(args, "hidden");
    let Some(hidden) = h.as_f64() else {
        return Err(Error::Type(format!(
            "hidden: expected a number (an integer >= 1), got {}",
            describe(&h)
        )));
    };
    let hidden = hidden_from_number(hidden)?;
    let e = get(args, "eps");
    let eps = if e.is_undefined() {
        crate::shape::DEFAULT_EPS
    } else {
        let Some(eps) = e.as_f64() else {
            return Err(Error::Type(format!(
                "eps: expected a number or undefined, got {}",
                describe(&e)
            )));
        };
        eps_from_number(eps)?
    };
    Ok(Inputs {
        input,
        residual,
        gamma,
        beta,
        bias,
        hidden,
        eps,
    })
}

/// An optional boolean field.
fn flag(o: &JsValue, name: &'static str) -> Result<bool, Error> {
    let f = get(o, name);
    match f.as_bool() {
        _ if f.is_undefined() => Ok(false),
        Some(on) => Ok(on),
        None => Err(Error::Type(format!(
            "{name}: expected a boolean or undefined, got {}",
            describe(&f)
        ))),
    }
}

/// An optional `"f32" | "f16"` field.
fn dtype_field(o: &JsValue, name: &'static str) -> Result<Option<Dtype>, Error> {
    let d = get(o, name);
    match d.as_string().as_deref() {
        _ if d.is_undefined() => Ok(None),
        Some("f32") => Ok(Some(Dtype::F32)),
        Some("f16") => Ok(Some(Dtype::F16)),
        _ => Err(Error::Type(format!(
            "{name}: expected \"f32\" or \"f16\", got {}",
            describe(&d)
        ))),
    }
}

/// A timing call's arguments: the call's, with results read back, and `repeat`.
pub fn parse_timed(
    args: &JsValue,
    repeat: &JsValue,
    timed: bool,
) -> Result<(Args, Request), Error> {
    let (x, request) = parse_args(args, false)?;
    if request.to != crate::shape::Destination::Host {
        return Err(Error::Type(
            "output: expected \"array\" or undefined in a timing call (its results are read back)"
                .into(),
        ));
    }
    let Some(r) = repeat.as_f64() else {
        return Err(Error::Type(format!(
            "repeat: expected a number (an integer from 1 to {}), got {}",
            crate::shape::MAX_REPEAT,
            describe(repeat)
        )));
    };
    Ok((x, Request::repeated(repeat_from_number(r)?, timed)))
}

/// `prepare`'s argument: one `{ hidden, bias?, beta?, sum?, dtype?, inPlace? }` or an array
/// of them.
pub fn parse_kernels(v: &JsValue) -> Result<Vec<Kernel>, Error> {
    let list: Vec<JsValue> = match is_array(v) {
        Ok(true) => js_sys::Array::from(v).iter().collect(),
        Ok(false) => vec![v.clone()],
        Err(_) => {
            return Err(Error::Type(
                "kernels: expected an object or an array, got a revoked Proxy".into(),
            ))
        }
    };
    list.iter()
        .map(|k| parse_kernel(k, &PREPARE_KEYS))
        .collect()
}

/// `kernelSource`'s argument: a kernel as `prepare` takes it, and `rows` to size the grid for.
pub fn parse_source(v: &JsValue) -> Result<(Kernel, Option<u32>), Error> {
    let kernel = parse_kernel(v, &SOURCE_KEYS)?;
    let rows = rows_field(v)?.map(|r| r as u32);
    Ok((kernel, rows))
}

fn parse_kernel(o: &JsValue, keys: &'static [&'static str]) -> Result<Kernel, Error> {
    if !o.is_object() || o.is_function() {
        return Err(Error::Type(format!(
            "kernels: expected {{ hidden, bias?, beta?, sum?, dtype?, inPlace? }}, got {}",
            describe(o)
        )));
    }
    check_keys(o, "kernels", keys)?;
    let h = get(o, "hidden");
    let Some(hidden) = h.as_f64() else {
        return Err(Error::Type(format!(
            "hidden: expected a number (an integer >= 1), got {}",
            describe(&h)
        )));
    };
    let flag = |name| flag(o, name);
    let dtype = dtype_field(o, "dtype")?.unwrap_or(Dtype::F32);
    let in_place = flag("inPlace")?;
    Ok(Kernel {
        hidden: hidden_from_number(hidden)?,
        options: Options {
            bias: flag("bias")?,
            beta: flag("beta")?,
            // In place always writes v (into residual).
            sum: flag("sum")? || in_place,
        },
        dtype,
        in_place,
    })
}

/// `create`'s options: the device's settings, and the backend asked for.
pub fn settings(options: Option<&JsValue>) -> Result<(Settings, Choice), Error> {
    let mut settings = Settings::default();
    let Some(o) = options.filter(|o| !o.is_undefined() && !o.is_null()) else {
        return Ok((settings, Choice::default()));
    };
    if !o.is_object() {
        return Err(Error::Type(format!(
            "options: expected an object {{ backend?, powerPreference?, shaderF16? }} or undefined, got {}",
            describe(o)
        )));
    }
    check_keys(o, "options", &OPTIONS_KEYS)?;
    let b = get(o, "backend");
    let choice = match b.as_string().as_deref() {
        _ if b.is_undefined() => Choice::default(),
        Some("webgpu") => Choice::WebGpu,
        Some("cpu") => Choice::Cpu,
        Some("auto") => Choice::Auto,
        _ => {
            return Err(Error::Type(format!(
                "options.backend: expected \"webgpu\", \"cpu\" or \"auto\", got {}",
                describe(&b)
            )))
        }
    };
    let p = get(o, "powerPreference");
    settings.power = match p.as_string().as_deref() {
        _ if p.is_undefined() => wgpu::PowerPreference::default(),
        Some("low-power") => wgpu::PowerPreference::LowPower,
        Some("high-performance") => wgpu::PowerPreference::HighPerformance,
        _ => {
            return Err(Error::Type(format!(
                "options.powerPreference: expected \"low-power\" or \"high-performance\", got {}",
                describe(&p)
            )))
        }
    };
    let f = get(o, "shaderF16");
    settings.shader_f16 = match f.as_bool() {
        _ if f.is_undefined() => true,
        Some(on) => on,
        None => {
            return Err(Error::Type(format!(
                "options.shaderF16: expected a boolean or undefined, got {}",
                describe(&f)
            )));
        }
    };
    Ok((settings, choice))
}

/// A plain object of `fields`, for results.
pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o.into()
}
