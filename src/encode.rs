//! `norm.encode(encoder, args)`: the kernel recorded into the app's own `GPUCommandEncoder`,
//! and `norm.kernelSource(kernel)`: the kernel handed to engines that build their own
//! pipelines.
//!
//! An engine that records a whole forward pass into one encoder should not pay a submit and
//! an await per normalization. wgpu 30 does not expose its pipelines or bind groups as
//! WebGPU objects, so this path makes its own on `norm.device` (`webgpu_raw.rs`), from the
//! same WGSL (`Variant::wgsl`), the same binding table (`pipelines::BINDINGS`) and the same
//! checks (`Plan::encoded`) as every other call. Nothing is submitted or awaited here: the
//! GPU's verdict on the recorded work reaches the app through its own error scopes.
//!
//! The package's own calls whose results stay on the GPU (in place, `output: "gpu"`) are
//! dispatched through the same objects ([`Recorder::submit`]): on the web that costs a
//! decode step less than wgpu's path (docs/PERFORMANCE.md).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::Error;
use crate::fast_hash::FastMap;
use crate::gpu::GpuContext;
use crate::host::{Arg, JsArray};
use crate::kernel::{Params, Variant};
use crate::pipelines::{Bound, GroupKey as OwnGroupKey, BINDINGS};
use crate::plan::{Kernel, Outputs, Plan};
use crate::shape::Inputs;
use crate::webgpu_raw::{self as raw, descriptor, RawDevice, RawEncoder, RawQueue};

/// Bind groups kept before the cache starts over (as `pipelines::MAX_BIND_GROUPS`: an
/// engine binds the same few activations layer after layer).
const MAX_GROUPS: usize = 128;

/// What a bind group binds: in place or not, and each binding's buffer by the number
/// [`Recorder::id`] gave it.
type GroupKey = (bool, [u32; BINDINGS.len()]);

/// The WebGPU objects `encode` and the package's own GPU-resident calls record with, for
/// one device (a `GpuContext` holds one).
pub struct Recorder {
    device: RawDevice,
    queue: RawQueue,
    /// Bind group layout and pipeline layout, out of place and in place.
    layouts: [Option<(JsValue, JsValue)>; 2],
    pipelines: FastMap<Variant, JsValue>,
    groups: FastMap<GroupKey, JsValue>,
    /// The bind groups of the package's own calls, by the key wgpu's are cached by.
    own_groups: FastMap<OwnGroupKey, JsValue>,
    /// A number per buffer object: JavaScript objects cannot key a Rust map, and a
    /// `WeakMap` forgets buffers the app drops.
    ids: js_sys::WeakMap,
    next_id: u32,
}

impl Recorder {
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Recorder, Error> {
        let (Some(device), Some(queue)) = (raw::device(device), raw::queue(queue)) else {
            return Err(Error::Type(
                "encode: expected a WebGPU device, got none".into(),
            ));
        };
        Ok(Recorder {
            device,
            queue,
            layouts: [None, None],
            pipelines: FastMap::default(),
            groups: FastMap::default(),
            own_groups: FastMap::default(),
            ids: js_sys::WeakMap::new(),
            next_id: 1,
        })
    }

    /// Dispatches `variant` over the package's own buffers `bound` (stubs included, as
    /// `Pipelines::binding` gives them, keyed by `key`) for `rows` rows, and submits it.
    /// `creating` runs before any WebGPU object is made, so the call's error scopes cover it.
    pub fn submit(
        &mut self,
        ctx: &GpuContext,
        variant: Variant,
        (bound, key): (Bound, Option<OwnGroupKey>),
        rows: u32,
        creating: &dyn Fn(),
    ) -> Result<(), Error> {
        let group = match key.and_then(|k| self.own_groups.get(&k)) {
            Some(g) => g.clone(),
            None => {
                creating();
                let bound: [Option<(JsValue, Option<u64>)>; BINDINGS.len()] =
                    bound.map(|b| b.map(|b| (raw::buffer(b), None)));
                let group = self.create_group(variant.in_place, &bound)?;
                if let Some(k) = key {
                    if self.own_groups.len() >= MAX_GROUPS {
                        self.own_groups.clear();
                    }
                    self.own_groups.insert(k, group.clone());
                }
                group
            }
        };
        if !self.pipelines.contains_key(&variant) {
            creating();
        }
        let pipeline = self.pipeline(variant)?;
        let (x, y) = variant.grid(rows, ctx.caps().max_groups_per_dim);
        raw::submit_dispatch(&self.device, &self.queue, &pipeline, &group, x, y).map_err(|e| {
            Error::GpuDevice(format!(
                "the device refused the dispatch ({})",
                raw::message(&e)
            ))
        })
    }

    /// The variants compiled so far.
    pub fn variants(&self) -> impl Iterator<Item = Variant> + '_ {
        self.pipelines.keys().copied()
    }

    /// Compiles `variant` now (`prepare`).
    pub fn prepare(&mut self, variant: Variant) -> Result<(), Error> {
        self.pipeline(variant).map(|_| ())
    }

    /// Records the call `x → outputs` into `encoder` as one compute pass.
    pub fn record(
        &mut self,
        ctx: &GpuContext,
        encoder: &JsValue,
        x: &Inputs<Arg<JsArray>>,
        outputs: &Outputs<Arg<JsArray>>,
    ) -> Result<(), Error> {
        if brand(encoder).as_deref() != Some("GPUCommandEncoder") {
            return Err(Error::Type(format!(
                "encoder: expected a GPUCommandEncoder of norm.device, got {}",
                crate::js_value::describe(encoder)
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
        });
        let row_bytes = plan.dtype.copy_bytes(plan.shape.hidden);
        let all_bytes = plan.dtype.copy_bytes(plan.shape.len());
        let mut bound: [Option<(JsValue, Option<u64>)>; BINDINGS.len()] = Default::default();
        let mut set = |slot: usize, a: Option<&Arg<JsArray>>, bytes: u64| {
            if let Some(a) = a {
                bound[slot] = Some((handle(a), Some(bytes)));
            }
        };
        use crate::pipelines::slot;
        set(slot::INPUT, Some(&x.input), all_bytes);
        set(slot::RESIDUAL, Some(&x.residual), all_bytes);
        set(slot::GAMMA, Some(&x.gamma), row_bytes);
        set(slot::BETA, x.beta.as_ref(), row_bytes);
        set(slot::BIAS, x.bias.as_ref(), row_bytes);
        if let Outputs::To { output, sum } = outputs {
            set(slot::OUTPUT, Some(output), all_bytes);
            set(slot::SUM, sum.as_ref(), all_bytes);
        }
        bound[slot::PARAMS] = Some((raw::buffer(&params), Some(Params::SIZE as u64)));
        for b in BINDINGS.iter().filter(|b| b.present(in_place)) {
            let i = b.index as usize;
            if bound[i].is_none() {
                bound[i] = Some((raw::buffer(ctx.stub(b.role)), Some(16)));
            }
        }
        let pipeline = self.pipeline(variant)?;
        let group = self.group(in_place, &bound)?;
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

    /// The layouts of the in-place or the out-of-place kernel, from the binding table.
    fn layouts(&mut self, in_place: bool) -> Result<(JsValue, JsValue), Error> {
        if let Some(l) = &self.layouts[usize::from(in_place)] {
            return Ok(l.clone());
        }
        let entries: Array = BINDINGS
            .iter()
            .filter(|b| b.present(in_place))
            .map(|b| {
                let buffer = descriptor(&[("type", b.kind(in_place).webgpu_name().into())]);
                JsValue::from(descriptor(&[
                    ("binding", b.index.into()),
                    // GPUShaderStage.COMPUTE
                    ("visibility", 4.into()),
                    ("buffer", buffer.into()),
                ]))
            })
            .collect();
        let group_layout = self
            .device
            .create_bind_group_layout(&descriptor(&[("entries", entries.into())]))
            .map_err(device_refused)?;
        let layouts = Array::of1(&group_layout);
        let pipeline_layout = self
            .device
            .create_pipeline_layout(&descriptor(&[("bindGroupLayouts", layouts.into())]))
            .map_err(device_refused)?;
        let l = (group_layout, pipeline_layout);
        self.layouts[usize::from(in_place)] = Some(l.clone());
        Ok(l)
    }

    fn pipeline(&mut self, variant: Variant) -> Result<JsValue, Error> {
        if let Some(p) = self.pipelines.get(&variant) {
            return Ok(p.clone());
        }
        let (_, layout) = self.layouts(variant.in_place)?;
        let label: JsValue = variant.label().into();
        let module = self
            .device
            .create_shader_module(&descriptor(&[
                ("label", label.clone()),
                ("code", variant.wgsl().into()),
            ]))
            .map_err(device_refused)?;
        let compute = descriptor(&[("module", module), ("entryPoint", "main".into())]);
        let pipeline = self
            .device
            .create_compute_pipeline(&descriptor(&[
                ("label", label),
                ("layout", layout),
                ("compute", compute.into()),
            ]))
            .map_err(device_refused)?;
        self.pipelines.insert(variant, pipeline.clone());
        Ok(pipeline)
    }

    fn group(
        &mut self,
        in_place: bool,
        bound: &[Option<(JsValue, Option<u64>)>; BINDINGS.len()],
    ) -> Result<JsValue, Error> {
        let mut key = [0u32; BINDINGS.len()];
        for (k, b) in key.iter_mut().zip(bound) {
            if let Some((buffer, _)) = b {
                *k = self.id(buffer);
            }
        }
        // Sizes follow from the buffers and the shape; the shape is in `params`, a buffer
        // of its own per shape, so the key holds them too.
        let key = (in_place, key);
        if let Some(g) = self.groups.get(&key) {
            return Ok(g.clone());
        }
        let group = self.create_group(in_place, bound)?;
        if self.groups.len() >= MAX_GROUPS {
            self.groups.clear();
        }
        self.groups.insert(key, group.clone());
        Ok(group)
    }

    /// A bind group of `bound`: each buffer whole, or its first `size` bytes.
    fn create_group(
        &mut self,
        in_place: bool,
        bound: &[Option<(JsValue, Option<u64>)>; BINDINGS.len()],
    ) -> Result<JsValue, Error> {
        let (group_layout, _) = self.layouts(in_place)?;
        let entries: Array = bound
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.as_ref().map(|(buffer, size)| {
                    // An app's buffer is bound by the bytes the call uses, not whole: it may
                    // be larger than one binding may be, and a tensor's is padded.
                    let resource = match size {
                        Some(size) => descriptor(&[
                            ("buffer", buffer.clone()),
                            ("size", (*size as f64).into()),
                        ]),
                        None => descriptor(&[("buffer", buffer.clone())]),
                    };
                    JsValue::from(descriptor(&[
                        ("binding", (i as u32).into()),
                        ("resource", resource.into()),
                    ]))
                })
            })
            .collect();
        let group = self
            .device
            .create_bind_group(&descriptor(&[
                ("layout", group_layout),
                ("entries", entries.into()),
            ]))
            .map_err(device_refused)?;
        Ok(group)
    }

    fn id(&mut self, buffer: &JsValue) -> u32 {
        let Some(object) = buffer.dyn_ref::<Object>() else {
            return 0;
        };
        if let Some(id) = self.ids.get(object).as_f64() {
            return id as u32;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.ids.set(object, &id.into());
        id
    }
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
        None => Variant {
            split: 1,
            ..kernel.variant(ctx.caps(), 1)
        },
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
    let field = |name: &str, offset: u32, ty: &str| {
        JsValue::from(descriptor(&[
            ("name", name.into()),
            ("offset", offset.into()),
            ("type", ty.into()),
        ]))
    };
    let params = descriptor(&[
        ("size", (Params::SIZE as u32).into()),
        (
            "fields",
            Array::of4(
                &field("rows", 0, "u32"),
                &field("width", 4, "u32"),
                &field("hidden", 8, "f32"),
                &field("eps", 12, "f32"),
            )
            .into(),
        ),
    ]);
    let mut fields = vec![
        ("code", JsValue::from(variant.wgsl())),
        ("entryPoint", "main".into()),
        ("bindings", bindings.into()),
        ("params", params.into()),
        ("lanes", variant.lanes.into()),
        ("workgroupsPerRow", variant.split_in().into()),
        ("workgroupSize", variant.workgroup.into()),
        (
            "storage",
            match variant.storage {
                crate::kernel::Storage::F32 => "f32",
                crate::kernel::Storage::F16 => "f16",
                crate::kernel::Storage::F16Packed => "f16-packed",
            }
            .into(),
        ),
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

fn device_refused(e: JsValue) -> Error {
    Error::GpuDevice(format!(
        "the device refused to create the kernel's objects ({})",
        raw::message(&e)
    ))
}
