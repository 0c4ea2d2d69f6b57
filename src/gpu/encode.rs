//! `norm.encode(encoder, args)`: the kernel recorded into the app's own `GPUCommandEncoder`,
//! and `norm.kernelSource(kernel)`: the kernel handed to engines that build their own
//! pipelines.
//!
//! An engine that records a whole forward pass into one encoder should not pay a submit and
//! an await per normalization. wgpu 30 does not expose its pipelines or bind groups as
//! WebGPU objects, so this path makes its own on `norm.device` (`webgpu_raw.rs`), from the
//! same WGSL (`Variant::wgsl`), the same binding table (`bindings::BINDINGS`) and the same
//! checks (`Plan::encoded`) as every other call. Nothing is submitted or awaited here: the
//! GPU's verdict on the recorded work reaches the app through its own error scopes.
//!
//! The package's own calls whose results stay on the GPU (in place, `output: "gpu"`) are
//! dispatched through the same objects (`recorder.rs`).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::call::error::Error;
use crate::call::host::Arg;
use crate::call::plan::{Kernel, Plan};
use crate::call::shape::Inputs;
use crate::call::shape::Outputs;
use crate::gpu::bindings::BINDINGS;
use crate::gpu::params::Params;
use crate::gpu::recorder::Recorder;
use crate::gpu::webgpu_raw::{self as raw, descriptor, RawEncoder};
use crate::gpu::GpuContext;
use crate::js::array::JsArray;

/// Records the call `x → outputs` into `encoder` as one compute pass.
pub fn record(
    recorder: &mut Recorder,
    ctx: &GpuContext,
    encoder: &JsValue,
    x: &Inputs<Arg<JsArray>>,
    outputs: &Outputs<Arg<JsArray>>,
) -> Result<(), Error> {
    if brand(encoder).as_deref() != Some("GPUCommandEncoder") {
        return Err(Error::Type(format!(
            "encoder: expected a GPUCommandEncoder of norm.device, got {}",
            crate::js::value::describe(encoder)
        )));
    }
    let plan = Plan::encoded(x, outputs, ctx.caps(), ctx.id())?;
    ctx.dev.check_live()?;
    if plan.shape.is_empty() {
        return Ok(());
    }
    let variant = plan.variant;
    let in_place = matches!(outputs, Outputs::InPlace);
    let rows = plan.shape.rows as u32;
    let params = ctx.uniform(Params {
        rows,
        width: plan.shape.hidden as u32 / variant.lanes,
        hidden: plan.shape.hidden as f32,
        eps: x.eps,
        gamma_offset: x.norm.gamma_offset,
    });
    let row_bytes = plan.dtype.copy_bytes(plan.shape.hidden);
    let all_bytes = plan.dtype.copy_bytes(plan.shape.len());
    let mut bound: [Option<(JsValue, Option<u64>)>; BINDINGS.len()] = Default::default();
    let mut set = |slot: usize, a: Option<&Arg<JsArray>>, bytes: u64| {
        if let Some(a) = a {
            bound[slot] = Some((handle(a), Some(bytes)));
        }
    };
    use crate::gpu::bindings::slot;
    set(slot::INPUT, Some(&x.input), all_bytes);
    set(slot::RESIDUAL, x.residual.as_ref(), all_bytes);
    set(slot::GAMMA, Some(&x.gamma), row_bytes);
    set(slot::BETA, x.beta.as_ref(), row_bytes);
    set(slot::BIAS, x.bias.as_ref(), row_bytes);
    set(slot::POST_GAMMA, x.post_gamma.as_ref(), row_bytes);
    if let Outputs::To { output, sum } = outputs {
        set(
            slot::OUTPUT,
            Some(output),
            plan.out_dtype.copy_bytes(plan.shape.len()),
        );
        set(slot::SUM, sum.as_ref(), all_bytes);
    }
    bound[slot::PARAMS] = Some((raw::buffer(&params), Some(Params::SIZE as u64)));
    for b in BINDINGS.iter().filter(|b| b.present(in_place)) {
        let i = b.index as usize;
        if bound[i].is_none() {
            bound[i] = Some((raw::buffer(ctx.stub(b, in_place)), Some(16)));
        }
    }
    let pipeline = recorder.pipeline(variant)?;
    let group = recorder.group(in_place, &bound)?;
    let (gx, gy) = variant.grid(rows, ctx.caps().max_groups_per_dim);
    let encoder: &RawEncoder = encoder.unchecked_ref();
    let refused = |e: JsValue| {
        Error::Type(format!(
            "encoder: expected a GPUCommandEncoder that is still recording, got one WebGPU refused ({})",
            raw::message(&e)
        ))
    };
    let pass = encoder.begin_compute_pass().map_err(refused)?;
    pass.set_pipeline(&pipeline).map_err(refused)?;
    pass.set_bind_group(0, &group).map_err(refused)?;
    pass.dispatch_workgroups(gx, gy, 1).map_err(refused)?;
    pass.end().map_err(refused)
}

/// The kernel `kernel` compiles to on `ctx`'s device, described for an engine's own
/// pipeline: WGSL, entry point, bindings (from the binding table), the uniform block, and
/// the workgroup grid for `rows` where given.
pub fn source(ctx: &GpuContext, kernel: &Kernel, rows: Option<u32>) -> Result<JsValue, Error> {
    kernel.check()?;
    // Without `rows`, the decode-sized tiling with one workgroup a row, so that an engine
    // dispatching a workgroup a row (as `kernelSource` asked before rows could be split)
    // still covers every column for any number of rows.
    let variant = match rows {
        Some(r) => kernel.variant(ctx.caps(), r as usize),
        None => kernel.variant(ctx.caps(), 1).whole_rows(),
    };
    let bindings: Array = BINDINGS
        .iter()
        .filter(|b| b.present(variant.in_place))
        .map(|b| {
            JsValue::from(descriptor(&[
                ("binding", b.index.into()),
                ("name", b.name.into()),
                ("type", b.kind(variant.in_place).webgpu_name().into()),
                ("optional", b.optional.into()),
            ]))
        })
        .collect();
    let fields: Array = Params::FIELDS
        .iter()
        .map(|&(name, offset, ty)| {
            JsValue::from(descriptor(&[
                ("name", name.into()),
                ("offset", offset.into()),
                ("type", ty.into()),
            ]))
        })
        .collect();
    let params = descriptor(&[
        ("size", (Params::SIZE as u32).into()),
        ("fields", fields.into()),
    ]);
    let mut fields = vec![
        ("code", JsValue::from(variant.wgsl())),
        ("entryPoint", "main".into()),
        ("bindings", bindings.into()),
        ("params", params.into()),
        ("lanes", variant.lanes.into()),
        ("workgroupsPerRow", variant.workgroups_per_row().into()),
        ("rowsPerWorkgroup", variant.rows_per_group().into()),
        ("workgroupSize", variant.workgroup().into()),
        ("storage", variant.storage.name().into()),
        ("outputStorage", variant.out_storage.name().into()),
    ];
    if let Some(rows) = rows {
        let (x, y) = variant.grid(rows, ctx.caps().max_groups_per_dim);
        fields.push((
            "workgroups",
            Array::of3(&x.into(), &y.into(), &1.into()).into(),
        ));
    }
    let o = descriptor(&fields);
    Ok(Object::freeze(&o).into())
}

/// The buffer behind an argument: the app's own, or a tensor's.
fn handle(a: &Arg<JsArray>) -> JsValue {
    match a {
        Arg::Buffer(b) => b.handle().clone(),
        Arg::Gpu(t) => t.buffer().map_or(JsValue::UNDEFINED, raw::buffer),
        // `parse_encode` takes GPU data only.
        Arg::Host(_) => JsValue::UNDEFINED,
    }
}

/// A WebIDL object's interface name.
fn brand(v: &JsValue) -> Option<String> {
    if !v.is_object() {
        return None;
    }
    Reflect::get(v, &js_sys::Symbol::to_string_tag().into())
        .ok()
        .and_then(|t| t.as_string())
}
