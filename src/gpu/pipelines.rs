//! The kernel's compiled pipelines and bind groups, built from the binding table
//! (`bindings.rs`) and cached by variant and by buffers.

use std::cell::RefCell;

use crate::gpu::kernel::bindings::{Binding, Bound, Kind, BINDINGS};
use crate::gpu::kernel::Variant;
use crate::support::fast_hash::FastMap;

struct Layout {
    bind_group: wgpu::BindGroupLayout,
    pipeline: wgpu::PipelineLayout,
}

impl Layout {
    fn new(device: &wgpu::Device, in_place: bool) -> Layout {
        let entries: Vec<_> = BINDINGS
            .iter()
            .filter(|b| b.present(in_place))
            .map(|b| b.layout_entry(in_place))
            .collect();
        let label = if in_place {
            "fused_rms_norm in place"
        } else {
            "fused_rms_norm"
        };
        let bind_group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        });
        let pipeline = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&bind_group)],
            immediate_size: 0,
        });
        Layout {
            bind_group,
            pipeline,
        }
    }
}

/// Bind groups kept for reuse before the cache starts over: an app binds the same few sets
/// of buffers (its tensors, the pool's buffers of its few shapes) over and over.
const MAX_BIND_GROUPS: usize = 128;

/// What a bind group binds: in place or not, and each binding's buffer (stubs included), by
/// identity.
pub(crate) type GroupKey = (bool, [Identity; BINDINGS.len()]);

/// A buffer's identity as wgpu hashes it: on the web backend a counter never reused, natively
/// an id with its epoch. Taken through `Hash` because cloning a buffer to key a map with it
/// is a call into JavaScript on the web, several per call; `None` if wgpu ever hashes more
/// than this holds (then nothing is cached).
pub(crate) type Identity = Option<[u8; 32]>;

#[derive(Default)]
struct Capture {
    bytes: [u8; 32],
    len: usize,
    overflow: bool,
}

impl std::hash::Hasher for Capture {
    fn write(&mut self, bytes: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) => dst.copy_from_slice(bytes),
            None => self.overflow = true,
        }
        self.len += bytes.len();
    }

    fn finish(&self) -> u64 {
        0
    }
}

fn identity(buffer: &wgpu::Buffer) -> Identity {
    use std::hash::Hash;
    let mut c = Capture::default();
    buffer.hash(&mut c);
    (!c.overflow).then_some(c.bytes)
}

/// A device's layouts and its pipelines, compiled on first use and cached by variant.
pub struct Pipelines {
    out_of_place: Layout,
    in_place: Layout,
    cache: RefCell<FastMap<Variant, wgpu::ComputePipeline>>,
    /// Creating a bind group is one of the larger costs of a small call in the browser (a
    /// descriptor of eight entries crosses into the GPU process); the same buffers get the
    /// same group.
    groups: RefCell<FastMap<GroupKey, wgpu::BindGroup>>,
    /// Bound in place of an absent optional input.
    stub_in: wgpu::Buffer,
    /// The same for the `sum` output; a buffer cannot be bound read-only and writable in
    /// one dispatch, so the two stubs cannot be one.
    stub_out: wgpu::Buffer,
}

impl Pipelines {
    pub fn new(device: &wgpu::Device) -> Pipelines {
        let stub = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        Pipelines {
            out_of_place: Layout::new(device, false),
            in_place: Layout::new(device, true),
            cache: RefCell::new(FastMap::default()),
            groups: RefCell::new(FastMap::default()),
            stub_in: stub("absent input"),
            stub_out: stub("absent output"),
        }
    }

    /// Bound in place of an absent optional binding of `role`.
    /// The stub bound for an absent optional binding `b`: one buffer for those the kernel
    /// writes (`sum` out of place, `residual` in place) and another for those it reads,
    /// since WebGPU refuses a buffer bound twice where one binding writes it.
    pub fn stub(&self, b: &Binding, in_place: bool) -> &wgpu::Buffer {
        if b.kind(in_place) == Kind::Storage {
            &self.stub_out
        } else {
            &self.stub_in
        }
    }

    fn layout(&self, in_place: bool) -> &Layout {
        if in_place {
            &self.in_place
        } else {
            &self.out_of_place
        }
    }

    /// The pipeline for `variant`, compiled on first use.
    /// The pipeline for `variant`, compiled on first use (`creating` runs first then).
    pub fn get(
        &self,
        device: &wgpu::Device,
        variant: Variant,
        creating: &dyn Fn(),
    ) -> wgpu::ComputePipeline {
        if let Some(p) = self.cache.borrow().get(&variant) {
            return p.clone();
        }
        creating();
        let label = variant.label();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(variant.wgsl().into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&self.layout(variant.in_place).pipeline),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        self.cache.borrow_mut().insert(variant, pipeline.clone());
        pipeline
    }

    /// The variants compiled so far.
    pub fn variants(&self) -> Vec<Variant> {
        self.cache.borrow().keys().copied().collect()
    }

    /// Binds one dispatch's buffers: a cached group where the same buffers were bound before.
    /// The buffers a dispatch binds (stubs for the absent optional ones), and the key its
    /// bind group is cached by (`None`: not cacheable).
    pub(crate) fn binding<'s>(
        &'s self,
        in_place: bool,
        bound: &Bound<'s>,
    ) -> (Bound<'s>, Option<GroupKey>) {
        let mut buffers: Bound = [None; BINDINGS.len()];
        let mut ids: [Identity; BINDINGS.len()] = [None; BINDINGS.len()];
        for b in BINDINGS.iter().filter(|b| b.present(in_place)) {
            let buffer = bound[b.index as usize].unwrap_or(self.stub(b, in_place));
            buffers[b.index as usize] = Some(buffer);
            ids[b.index as usize] = identity(buffer);
        }
        let cacheable = buffers
            .iter()
            .zip(&ids)
            .all(|(b, id)| b.is_none() || id.is_some());
        (buffers, cacheable.then_some((in_place, ids)))
    }

    pub fn bind(
        &self,
        device: &wgpu::Device,
        in_place: bool,
        bound: &Bound,
        creating: &dyn Fn(),
    ) -> wgpu::BindGroup {
        let (buffers, key) = self.binding(in_place, bound);
        if let Some(group) = key.and_then(|k| self.groups.borrow().get(&k).cloned()) {
            return group;
        }
        creating();
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.as_ref().map(|b| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: b.as_entire_binding(),
                })
            })
            .collect();
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fused_rms_norm"),
            layout: &self.layout(in_place).bind_group,
            entries: &entries,
        });
        let Some(key) = key else {
            return group;
        };
        let mut groups = self.groups.borrow_mut();
        if groups.len() >= MAX_BIND_GROUPS {
            // The buffers of old groups are usually gone: start over rather than track ages.
            groups.clear();
        }
        groups.insert(key, group.clone());
        group
    }
}
