//! The kernels' binding table: the one list of their bindings, from which the bind group
//! layouts and the bind groups are generated. `shaders/common.wgsl` declares the same
//! bindings, and a test checks that it agrees with the table.

use crate::call::options::Options;

/// What a binding carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read by the kernel; written too in place (`input` receives `y`, `residual` `v`).
    Input { written_in_place: bool },
    /// Written by the kernel; absent in place.
    Output,
    /// The `Params` uniform block.
    Params,
}

#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub index: u32,
    pub name: &'static str,
    pub role: Role,
    /// May be absent from a call; a stub buffer is bound then (WebGPU has no null binding).
    pub optional: bool,
}

/// Binding indices, by name.
pub mod slot {
    pub const INPUT: usize = 0;
    pub const RESIDUAL: usize = 1;
    pub const GAMMA: usize = 2;
    pub const BETA: usize = 3;
    pub const BIAS: usize = 4;
    pub const OUTPUT: usize = 5;
    pub const SUM: usize = 6;
    pub const PARAMS: usize = 7;
    /// `post_gamma`, or `input2` in a kernel of a parallel block ([`super::SHARED`]).
    pub const POST_GAMMA: usize = 8;
    pub const INPUT2: usize = 8;
    /// A rotary stage's table ([`super::ROTARY_TABLE`]).
    pub const ROTARY: usize = 8;
}

/// The binding that carries `post_gamma` in the sandwich's kernels and `input2` (rows ×
/// width) in a parallel block's: a call has at most one of them (`Kernel::check`), and so the
/// kernels keep to eight storage bindings, the most WebGPU's default limits allow.
pub const SHARED: (usize, &str) = (slot::INPUT2, "input2");

/// Binding 8's name where it holds a rotary stage's table: `u32` words, the inverse
/// frequencies' bits and then each token's position (`Rotary::table`).
pub const ROTARY_TABLE: &str = "rotary";

/// The kernel's signature. Shapes: `input`, `residual`, `output`, `sum` (and `input2`) are
/// rows × width; `gamma`, `beta`, `bias`, `post_gamma` are width (width = hidden / lanes, in
/// elements of `S`).
pub const BINDINGS: [Binding; 9] = [
    required(slot::INPUT, "input", READ_WRITTEN_IN_PLACE),
    optional(slot::RESIDUAL, "residual", READ_WRITTEN_IN_PLACE),
    // Absent from a post-norm's sum alone, as `output` is.
    optional(slot::GAMMA, "gamma", READ),
    optional(slot::BETA, "beta", READ),
    optional(slot::BIAS, "bias", READ),
    optional(slot::OUTPUT, "output", Role::Output),
    optional(slot::SUM, "sum", Role::Output),
    required(slot::PARAMS, "params", Role::Params),
    optional(slot::POST_GAMMA, "post_gamma", READ),
];

/// An input the kernel only reads.
const READ: Role = Role::Input {
    written_in_place: false,
};
/// An input the in-place kernel writes its result over.
const READ_WRITTEN_IN_PLACE: Role = Role::Input {
    written_in_place: true,
};

/// A binding every call passes.
const fn required(index: usize, name: &'static str, role: Role) -> Binding {
    Binding {
        index: index as u32,
        name,
        role,
        optional: false,
    }
}

/// A binding a call may leave out.
const fn optional(index: usize, name: &'static str, role: Role) -> Binding {
    Binding {
        optional: true,
        ..required(index, name, role)
    }
}

/// The buffers of one dispatch, by binding index; `None` where an optional one is absent
/// (and for the outputs in place).
pub type Bound<'a> = [Option<&'a wgpu::Buffer>; BINDINGS.len()];

impl Binding {
    /// The binding's name in a kernel of `options`: binding 8 carries a parallel block's
    /// second input or a rotary stage's table where the call has one ([`SHARED`]).
    pub fn name_in(&self, options: &Options) -> &'static str {
        match self.index as usize {
            i if i == SHARED.0 && options.input2 => SHARED.1,
            i if i == SHARED.0 && options.rotary.is_some() => ROTARY_TABLE,
            _ => self.name,
        }
    }

    /// Whether the binding exists in the in-place or the out-of-place kernel.
    pub fn present(&self, in_place: bool) -> bool {
        !(in_place && self.role == Role::Output)
    }

    /// How the binding is bound in the in-place or the out-of-place kernel.
    pub fn kind(&self, in_place: bool) -> Kind {
        match self.role {
            Role::Params => Kind::Uniform,
            Role::Input { written_in_place } if !(in_place && written_in_place) => {
                Kind::ReadOnlyStorage
            }
            Role::Input { .. } | Role::Output => Kind::Storage,
        }
    }

    pub(crate) fn layout_entry(&self, in_place: bool) -> wgpu::BindGroupLayoutEntry {
        wgpu::BindGroupLayoutEntry {
            binding: self.index,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match self.kind(in_place) {
                    Kind::Uniform => wgpu::BufferBindingType::Uniform,
                    Kind::ReadOnlyStorage => wgpu::BufferBindingType::Storage { read_only: true },
                    Kind::Storage => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }
    }
}

/// A binding's type in a bind group layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Uniform,
    ReadOnlyStorage,
    Storage,
}

impl Kind {
    /// WebGPU's `GPUBufferBindingType`.
    pub fn webgpu_name(self) -> &'static str {
        match self {
            Kind::Uniform => "uniform",
            Kind::ReadOnlyStorage => "read-only-storage",
            Kind::Storage => "storage",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_positions_and_names_unique() {
        for (i, b) in BINDINGS.iter().enumerate() {
            assert_eq!(b.index as usize, i);
        }
    }

    /// The WGSL of both kernels, in place and not, declares each binding of the table that is
    /// present, at its index, with its name and access, and no other.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_wgsl_declares_the_table() {
        use crate::call::device::Caps;
        use crate::call::dtype::Dtype;
        use crate::call::options::Options;
        use crate::call::plan::Kernel;
        use crate::call::rotary::{RotaryKernel, RotaryStyle};
        use crate::call::shape::NormKind;
        use naga::{AddressSpace, StorageAccess};
        let caps = Caps {
            max_binding: 1 << 30,
            max_groups_per_dim: 65535,
            max_workgroup: 256,
            shader_f16: true,
            timestamps: false,
            cpu_tiling: false,
        };
        let rotary = Some(RotaryKernel {
            style: RotaryStyle::NeoX,
            rotary_dim: 128,
            head_size: 128,
            each: true,
            gamma_heads: true,
            table_positions: 0,
        });
        for (kind, input2, rotary) in [
            (NormKind::Rms, false, None),
            (NormKind::Layer, false, None),
            (NormKind::Layer, true, None),
            (NormKind::Rms, false, rotary),
        ] {
            for in_place in [false, true] {
                let kernel = Kernel {
                    hidden: 4096,
                    options: Options {
                        kind,
                        input2,
                        rotary,
                        ..Options::default()
                    },
                    dtype: Dtype::F32,
                    out_dtype: Dtype::F32,
                    in_place,
                };
                let v = kernel.variant(&caps, 1);
                let module = crate::gpu::kernel::tests::validate(&v).unwrap();
                let mut declared: Vec<(u32, String, Kind)> = module
                    .global_variables
                    .iter()
                    .filter_map(|(_, g)| {
                        let kind = match g.space {
                            AddressSpace::Uniform => Kind::Uniform,
                            AddressSpace::Storage { access } if access == StorageAccess::LOAD => {
                                Kind::ReadOnlyStorage
                            }
                            AddressSpace::Storage { .. } => Kind::Storage,
                            _ => return None,
                        };
                        let binding = g.binding.as_ref().expect("a bound global");
                        assert_eq!(binding.group, 0);
                        Some((binding.binding, g.name.clone().unwrap_or_default(), kind))
                    })
                    .collect();
                declared.sort_by_key(|d| d.0);
                let table: Vec<(u32, String, Kind)> = BINDINGS
                    .iter()
                    .filter(|b| b.present(in_place))
                    .map(|b| {
                        (
                            b.index,
                            b.name_in(&kernel.options).to_string(),
                            b.kind(in_place),
                        )
                    })
                    .collect();
                assert_eq!(declared, table, "{}", v.label());
            }
        }
    }
}
