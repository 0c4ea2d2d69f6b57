//! `create`'s options, and the kernels `prepare` compiles and `kernelSource` describes, read
//! from JavaScript (through `value.rs`, which lets nothing throw into Rust).

use wasm_bindgen::prelude::*;

use crate::backend::Choice;
use crate::call::checks::{gamma_offset_from_number, hidden_from_number, rows_from_number};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::options::Options;
use crate::call::plan::Kernel;
use crate::instance::Settings;
use crate::js::fields::{described, Field};
use crate::js::keys::{keys_of, Readers, KERNEL_KEYS};
use crate::js::rotary_args::rotary_kernel;
use crate::js::value::{check_keys, describe, get, is_array};

const OPTIONS_KEYS: [&str; 4] = [
    "backend",
    "powerPreference",
    "shaderF16",
    "acceptFallbackAdapter",
];
static PREPARE_KEYS: &[&str] = keys_of!(KERNEL_KEYS, Readers::PREPARE);
static SOURCE_KEYS: &[&str] = keys_of!(KERNEL_KEYS, Readers::KERNEL_SOURCE);

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
    list.iter().map(|k| parse_kernel(k, PREPARE_KEYS)).collect()
}

/// `kernelSource`'s argument: a kernel as `prepare` takes it, and `rows` to size the grid for.
pub fn parse_source(v: &JsValue) -> Result<(Kernel, Option<u32>), Error> {
    let kernel = parse_kernel(v, SOURCE_KEYS)?;
    let rows = described(v, "rows", Field::optional_number)?;
    let rows = rows.map(rows_from_number).transpose()?.map(|r| r as u32);
    Ok((kernel, rows))
}

fn parse_kernel(o: &JsValue, keys: &'static [&'static str]) -> Result<Kernel, Error> {
    if !o.is_object() || o.is_function() {
        return Err(Error::Type(format!(
            "kernels: expected {{ hidden, bias?, beta?, sum?, dtype?, inPlace?, kind?, residual?, gamma?, postGamma?, input2?, gammaOffset?, outputDtype?, rotaryDim?, headSize?, rotaryStyle?, positions?, gammaHeads? }}, got {}",
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
    let flag = |name| described(o, name, |f| f.flag(false));
    let flag_or_true = |name| described(o, name, |f| f.flag(true));
    let dtype = described(o, "dtype", Field::dtype)?.unwrap_or(Dtype::F32);
    let in_place = flag("inPlace")?;
    let residual = flag_or_true("residual")?;
    let output = flag_or_true("gamma")?;
    // A uniform; the kernel only knows whether there is one.
    let gamma_offset = described(o, "gammaOffset", Field::optional_number)?;
    let gamma_offset = gamma_offset.map_or(Ok(0.0), gamma_offset_from_number)? != 0.0;
    let out_dtype = described(o, "outputDtype", Field::dtype)?;
    if !output && out_dtype.is_some() {
        return Err(Error::Type(
            "outputDtype: expected undefined without gamma (the call computes the sum alone)"
                .into(),
        ));
    }
    let out_dtype = out_dtype.unwrap_or(dtype);
    if in_place && out_dtype != dtype {
        return Err(Error::Type(format!(
            "outputDtype: expected {} (the data's) in place, where y is written over input, got {}",
            dtype.name(),
            out_dtype.name()
        )));
    }
    let kernel = Kernel {
        hidden: hidden_from_number(hidden)?,
        options: Options {
            bias: flag("bias")?,
            beta: flag("beta")?,
            // In place always writes v (into residual, when there is one).
            sum: flag("sum")? || (in_place && residual),
            residual,
            post_gamma: flag("postGamma")?,
            input2: flag("input2")?,
            output,
            kind: described(o, "kind", Field::kind)?,
            gamma_offset,
            rotary: rotary_kernel(o, hidden)?,
        },
        dtype,
        out_dtype,
        in_place,
    };
    kernel.check()?;
    Ok(kernel)
}

/// `create`'s options: the device's settings, and the backend asked for.
pub fn settings(options: Option<&JsValue>) -> Result<(Settings, Choice), Error> {
    let mut settings = Settings::default();
    let Some(o) = options.filter(|o| !o.is_undefined() && !o.is_null()) else {
        return Ok((settings, Choice::default()));
    };
    if !o.is_object() {
        return Err(Error::Type(format!(
            "options: expected an object {{ backend?, powerPreference?, shaderF16?, acceptFallbackAdapter? }} or undefined, got {}",
            describe(o)
        )));
    }
    check_keys(o, "options", &OPTIONS_KEYS)?;
    let choice = choice(o)?;
    settings.power = power(o)?;
    settings.shader_f16 = optional_flag(o, "shaderF16")?.unwrap_or(true);
    Ok((settings, choice))
}

/// `options.backend`, and for `"auto"`, `options.acceptFallbackAdapter`.
fn choice(o: &JsValue) -> Result<Choice, Error> {
    let accept_fallback = optional_flag(o, "acceptFallbackAdapter")?.unwrap_or(false);
    let b = get(o, "backend");
    match b.as_string().as_deref() {
        _ if b.is_undefined() => Ok(Choice::default()),
        Some("webgpu") => Ok(Choice::WebGpu),
        Some("cpu") => Ok(Choice::Cpu),
        Some("auto") => Ok(Choice::Auto { accept_fallback }),
        _ => Err(Error::Type(format!(
            "options.backend: expected \"webgpu\", \"cpu\" or \"auto\", got {}",
            describe(&b)
        ))),
    }
}

/// `options.powerPreference`.
fn power(o: &JsValue) -> Result<wgpu::PowerPreference, Error> {
    let p = get(o, "powerPreference");
    match p.as_string().as_deref() {
        _ if p.is_undefined() => Ok(wgpu::PowerPreference::default()),
        Some("low-power") => Ok(wgpu::PowerPreference::LowPower),
        Some("high-performance") => Ok(wgpu::PowerPreference::HighPerformance),
        _ => Err(Error::Type(format!(
            "options.powerPreference: expected \"low-power\" or \"high-performance\", got {}",
            describe(&p)
        ))),
    }
}

/// A boolean option, `None` where it is undefined.
fn optional_flag(o: &JsValue, key: &'static str) -> Result<Option<bool>, Error> {
    let f = get(o, key);
    match f.as_bool() {
        _ if f.is_undefined() => Ok(None),
        Some(on) => Ok(Some(on)),
        None => Err(Error::Type(format!(
            "options.{key}: expected a boolean or undefined, got {}",
            describe(&f)
        ))),
    }
}
