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
//! dispatched through the same objects (`browser_pipelines.rs`).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::call::error::Error;
use crate::call::host::{Arg, HostArray};
use crate::call::numbers::Len;
use crate::call::plan::{Kernel, Plan};
use crate::call::shape::Inputs;
use crate::call::shape::Outputs;
use crate::gpu::browser_pipelines::{BrowserPipelines, RawBound};
use crate::gpu::kernel::bindings::{slot, BINDINGS};
use crate::gpu::kernel::params::Params;
use crate::gpu::submit::call_params;
use crate::gpu::tensor_buffer::TensorBuffer;
use crate::gpu::webgpu_raw::{self as raw, descriptor, RawDevice, RawEncoder};
use crate::gpu::GpuContext;

/// Records the call `x → outputs` into `encoder` (an app's, its brand checked where the
/// arguments are read) as one compute pass.
pub fn record<H: HostArray>(
    pipelines: &mut BrowserPipelines,
    ctx: &GpuContext,
    encoder: &RawEncoder,
    x: &Inputs<Arg<H>>,
    outputs: &Outputs<Arg<H>>,
) -> Result<(), Error> {
    match dispatch(pipelines, ctx, x, outputs)? {
        Some(d) => d.record(encoder.as_ref()),
        None => Ok(()),
    }
}

/// The call `x → outputs` checked and made ready to record: its pipeline, its bind group
/// (made on first use of its buffers, then cached) and its grid; `None` for a call without
/// rows, which records nothing.
pub fn dispatch<H: HostArray>(
    pipelines: &mut BrowserPipelines,
    ctx: &GpuContext,
    x: &Inputs<Arg<H>>,
    outputs: &Outputs<Arg<H>>,
) -> Result<Option<Dispatch>, Error> {
    let plan = Plan::encoded(x, outputs, ctx.caps(), ctx.id())?;
    ctx.dev.check_live()?;
    if plan.shape().is_empty() {
        return Ok(None);
    }
    let in_place = matches!(outputs, Outputs::InPlace);
    let (bound, params, table) = bind(ctx, &plan, x, outputs, in_place);
    let variant = ctx.variant(&plan);
    let pipeline = pipelines.pipeline(variant)?;
    let group = pipelines.group(in_place, &bound)?;
    let (gx, gy) = variant.grid(plan.shape().rows as u32, ctx.caps().max_groups_per_dim);
    let objects = descriptor(&[
        ("pipeline", pipeline),
        ("group", group),
        ("x", gx.into()),
        ("y", gy.into()),
        ("device", JsValue::from(pipelines.device())),
        ("queue", JsValue::from(pipelines.queue())),
        ("copy", positions_copy(&plan, x, table.as_ref())),
    ]);
    Ok(Some(Dispatch {
        objects,
        _kept: [params].into_iter().chain(table).collect(),
    }))
}

/// One call's dispatch on the browser's WebGPU, made once and recorded or submitted as often
/// as an app likes: its WebGPU objects in one JavaScript object, so that each use is one
/// crossing into JavaScript (`webgpu_raw::record_dispatch`).
pub struct Dispatch {
    /// `{ pipeline, group, x, y, device, queue, copy }` (`webgpu_raw::record_dispatch`).
    objects: Object,
    /// The uniform block and the rotary table its bind group binds, held as long as the
    /// dispatch: the context's caches of both may let them go.
    _kept: Vec<wgpu::Buffer>,
}

impl Dispatch {
    /// Records the dispatch into `encoder` as one compute pass.
    pub fn record(&self, encoder: &JsValue) -> Result<(), Error> {
        raw::record_dispatch(encoder, &self.objects).map_err(|e| refused_encoder(&e))
    }

    /// Records the dispatch into `encoder` where it is a direct instance of the runtime's
    /// `GPUCommandEncoder`, as every encoder a device makes is; `false`, recording nothing,
    /// for anything else (which [`record`](Self::record) takes after a full check).
    pub fn record_on_encoder(&self, encoder: &JsValue) -> Result<bool, Error> {
        raw::record_on_encoder(encoder, &self.objects).map_err(|e| refused_encoder(&e))
    }

    /// Records the dispatch into a command encoder of its own and submits it; resolves with
    /// `undefined`.
    pub fn submit(&self) -> Result<js_sys::Promise, Error> {
        raw::submit_objects(&self.objects).map_err(|e| {
            Error::GpuDevice(format!(
                "the device refused the dispatch ({})",
                raw::message(&e)
            ))
        })
    }

    /// Submits as [`submit`](Self::submit) does, inside a validation error scope, and resolves
    /// with the message of what the scope caught, if anything: a `GPUBuffer` the app destroyed
    /// is known only once the GPU process has looked.
    pub fn submit_scoped(&self) -> Result<raw::ScopeFound, Error> {
        let device: RawDevice = Reflect::get(&self.objects, &"device".into())
            .unwrap_or_default()
            .unchecked_into();
        let ((), found) = raw::scoped(&device, || raw::submit_objects(&self.objects).map(|_| ()))
            .map_err(|e| {
            Error::GpuDevice(format!(
                "the device refused the dispatch ({})",
                raw::message(&e)
            ))
        })?;
        Ok(found)
    }
}

/// The app's buffers and tensors `x → outputs` binds, each by the bytes the call uses, the
/// uniform block, a rotary stage's table, and stubs for the absent optional bindings; with
/// the package's own buffers that it binds: the uniform block and the table.
fn bind<H: HostArray>(
    ctx: &GpuContext,
    plan: &Plan,
    x: &Inputs<Arg<H>>,
    outputs: &Outputs<Arg<H>>,
    in_place: bool,
) -> (RawBound, wgpu::Buffer, Option<wgpu::Buffer>) {
    let params = ctx.uniform(call_params(x, plan, plan.shape().rows));
    let table = x
        .rotary
        .as_ref()
        .map(|r| ctx.rotary_table(r, plan.shape().rows, plan.shape().hidden));
    let row_bytes = plan.kernel.dtype.copy_bytes(plan.shape().hidden);
    let all_bytes = plan.kernel.dtype.copy_bytes(plan.shape().len());
    let mut bound = RawBound::default();
    let mut set = |slot: usize, a: Option<&Arg<H>>, bytes: u64| {
        if let Some(a) = a {
            bound[slot] = Some((handle(a), Some(bytes)));
        }
    };
    set(slot::INPUT, Some(&x.input), all_bytes);
    set(slot::RESIDUAL, x.residual.as_ref(), all_bytes);
    let gamma_bytes = x
        .gamma
        .as_ref()
        .map(|g| plan.kernel.dtype.copy_bytes(g.len()));
    set(
        slot::GAMMA,
        x.gamma.as_ref(),
        gamma_bytes.unwrap_or(row_bytes),
    );
    set(slot::BETA, x.beta.as_ref(), row_bytes);
    set(slot::BIAS, x.bias.as_ref(), row_bytes);
    set(slot::POST_GAMMA, x.post_gamma.as_ref(), row_bytes);
    set(slot::INPUT2, x.input2.as_ref(), all_bytes);
    if let Outputs::To { output, sum } = outputs {
        let output_bytes = plan.kernel.out_dtype.copy_bytes(plan.shape().len());
        set(slot::OUTPUT, output.as_ref(), output_bytes);
        set(slot::SUM, sum.as_ref(), all_bytes);
    }
    bound[slot::PARAMS] = Some((raw::buffer(&params), Some(Params::SIZE as u64)));
    if let Some(t) = &table {
        bound[slot::ROTARY] = Some((raw::buffer(t), Some(t.size())));
    }
    for b in BINDINGS.iter().filter(|b| b.present(in_place)) {
        let i = b.index as usize;
        if bound[i].is_none() {
            bound[i] = Some((raw::buffer(ctx.stub(b, in_place)), Some(16)));
        }
    }
    (bound, params, table)
}

/// Where a rotary stage's positions are an app's buffer, the copy of them into the stage's
/// `table` that each recording makes first (`{ src, dst, to, size }`); null otherwise. The
/// table is kept by the context and may be shared by dispatches alike: each copy is
/// followed by its own kernel in the same command buffer, before any other copy into it.
fn positions_copy<H>(plan: &Plan, x: &Inputs<Arg<H>>, table: Option<&wgpu::Buffer>) -> JsValue {
    let (rows, hidden) = (plan.shape().rows, plan.shape().hidden);
    let (Some(rotary), Some(table)) = (&x.rotary, table) else {
        return JsValue::NULL;
    };
    let rotary_dim = rotary.kernel(hidden).rotary_dim as usize;
    let Some((app, tokens, to)) = rotary.buffer_positions(rows, rotary_dim) else {
        return JsValue::NULL;
    };
    descriptor(&[
        ("src", app.gpu_handle().cloned().unwrap_or_default()),
        ("dst", raw::buffer(table)),
        ("to", (to as f64).into()),
        ("size", ((tokens * 4) as f64).into()),
    ])
    .into()
}

/// The kernel `kernel` compiles to on `ctx`'s device, described for an engine's own
/// pipeline: WGSL, entry point, bindings (from the binding table), the uniform block, and
/// the workgroup grid for `rows` where given.
pub fn source(ctx: &GpuContext, kernel: &Kernel, rows: Option<u32>) -> Result<JsValue, Error> {
    kernel.check()?;
    // Without `rows`, the decode-sized tiling with one workgroup a row: an engine that sizes
    // its grid itself dispatches a workgroup a row (`workgroupsPerRow` is 1), and every
    // column is still covered for any number of rows.
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
                ("name", b.name_in(&kernel.options).into()),
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

fn refused_encoder(e: &JsValue) -> Error {
    Error::Type(format!(
        "encoder: expected a GPUCommandEncoder that is still recording, got one WebGPU refused ({})",
        raw::message(e)
    ))
}

/// The buffer behind an argument: the app's own, or a tensor's.
fn handle<H>(a: &Arg<H>) -> JsValue {
    match a {
        Arg::Buffer(b) => b.gpu_handle().cloned().unwrap_or_default(),
        Arg::Gpu(t) => t.buffer().map_or(JsValue::UNDEFINED, raw::buffer),
        // `parse_encode` takes GPU data only.
        Arg::Host(_) => JsValue::UNDEFINED,
    }
}
