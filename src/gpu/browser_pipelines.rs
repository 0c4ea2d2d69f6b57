//! The kernel's pipelines and bind groups made on the browser's WebGPU device directly
//! (wgpu 30 does not expose its own as WebGPU objects): layouts from the binding table,
//! pipelines by variant, bind groups by buffers. `encode` records with them into an app's
//! encoder (`encode.rs`), and the package's own calls whose results stay on the GPU submit
//! through them ([`BrowserPipelines::submit`], behind `recording.rs`'s `BrowserRecording`):
//! on the web that costs a decode step less than wgpu's path (docs/performance.md, "Dawn in
//! Node").

use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::call::error::Error;
use crate::gpu::kernel::bindings::{Bound, BINDINGS};
use crate::gpu::kernel::Variant;
use crate::gpu::pipelines::GroupKey as OwnGroupKey;
use crate::gpu::webgpu_raw::{self as raw, descriptor, RawDevice, RawQueue};
use crate::support::fast_hash::FastMap;

/// Bind groups kept before the cache starts over (as `pipelines::MAX_BIND_GROUPS`: an
/// engine binds the same few activations layer after layer).
const MAX_GROUPS: usize = 128;

/// What a bind group binds: in place or not, and each binding's buffer by the number
/// [`BrowserPipelines::id`] gave it.
type GroupKey = (bool, [u32; BINDINGS.len()]);

/// The buffers of a dispatch on the browser's WebGPU, by the binding table's slots: each
/// with the bytes bound, or whole.
pub(crate) type RawBound = [Option<(JsValue, Option<u64>)>; BINDINGS.len()];

/// The WebGPU objects `encode` and the package's own GPU-resident calls record with, for
/// one device (a `GpuContext` holds one).
pub struct BrowserPipelines {
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

impl BrowserPipelines {
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<BrowserPipelines, Error> {
        let (Some(device), Some(queue)) = (raw::device(device), raw::queue(queue)) else {
            return Err(Error::Type(
                "encode: expected a WebGPU device, got none".into(),
            ));
        };
        Ok(BrowserPipelines {
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
        variant: Variant,
        (bound, key): (Bound, Option<OwnGroupKey>),
        rows: u32,
        max_groups_per_dim: u32,
        creating: &dyn Fn(),
    ) -> Result<(), Error> {
        let group = match key.and_then(|k| self.own_groups.get(&k)) {
            Some(g) => g.clone(),
            None => {
                creating();
                let bound: RawBound = bound.map(|b| b.map(|b| (raw::buffer(b), None)));
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
        let (x, y) = variant.grid(rows, max_groups_per_dim);
        raw::submit_dispatch(&self.device, &self.queue, &pipeline, &group, x, y).map_err(|e| {
            Error::GpuDevice(format!(
                "the device refused the dispatch ({})",
                raw::message(&e)
            ))
        })
    }

    pub fn device(&self) -> &RawDevice {
        &self.device
    }

    pub fn queue(&self) -> &RawQueue {
        &self.queue
    }

    /// The variants compiled so far.
    pub fn variants(&self) -> impl Iterator<Item = Variant> + '_ {
        self.pipelines.keys().copied()
    }

    /// Compiles `variant` now (`prepare`).
    pub fn prepare(&mut self, variant: Variant) -> Result<(), Error> {
        self.pipeline(variant).map(|_| ())
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

    pub(super) fn pipeline(&mut self, variant: Variant) -> Result<JsValue, Error> {
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

    pub(super) fn group(&mut self, in_place: bool, bound: &RawBound) -> Result<JsValue, Error> {
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
    fn create_group(&mut self, in_place: bool, bound: &RawBound) -> Result<JsValue, Error> {
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

pub(super) fn device_refused(e: JsValue) -> Error {
    Error::GpuDevice(format!(
        "the device refused to create the kernel's objects ({})",
        raw::message(&e)
    ))
}
