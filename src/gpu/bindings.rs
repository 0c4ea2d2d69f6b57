//! The kernel's binding table: the one list of its bindings, from which the bind group
//! layouts, the bind groups and the WGSL declarations (`wgsl_declarations`) are all
//! generated, so the three cannot drift apart.

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
    pub const POST_GAMMA: usize = 8;
}

/// The kernel's signature. Shapes: `input`, `residual`, `output`, `sum` are rows × width;
/// `gamma`, `beta`, `bias`, `post_gamma` are width (width = hidden / lanes, in elements of `S`).
pub const BINDINGS: [Binding; 9] = [
    Binding {
        index: slot::INPUT as u32,
        name: "input",
        role: Role::Input {
            written_in_place: true,
        },
        optional: false,
    },
    Binding {
        index: slot::RESIDUAL as u32,
        name: "residual",
        role: Role::Input {
            written_in_place: true,
        },
        optional: true,
    },
    Binding {
        index: slot::GAMMA as u32,
        name: "gamma",
        role: Role::Input {
            written_in_place: false,
        },
        optional: false,
    },
    Binding {
        index: slot::BETA as u32,
        name: "beta",
        role: Role::Input {
            written_in_place: false,
        },
        optional: true,
    },
    Binding {
        index: slot::BIAS as u32,
        name: "bias",
        role: Role::Input {
            written_in_place: false,
        },
        optional: true,
    },
    Binding {
        index: slot::OUTPUT as u32,
        name: "output",
        role: Role::Output,
        optional: false,
    },
    Binding {
        index: slot::SUM as u32,
        name: "sum",
        role: Role::Output,
        optional: true,
    },
    Binding {
        index: slot::PARAMS as u32,
        name: "params",
        role: Role::Params,
        optional: false,
    },
    Binding {
        index: slot::POST_GAMMA as u32,
        name: "post_gamma",
        role: Role::Input {
            written_in_place: false,
        },
        optional: true,
    },
];

/// The buffers of one dispatch, by binding index; `None` where an optional one is absent
/// (and for the outputs in place).
pub type Bound<'a> = [Option<&'a wgpu::Buffer>; BINDINGS.len()];

impl Binding {
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

/// The WGSL declarations of the bindings (element type `S`, uniform struct `Params`).
/// Read-only where possible: some drivers route read-only storage through a non-coherent
/// cache.
pub fn wgsl_declarations(in_place: bool) -> String {
    BINDINGS
        .iter()
        .filter(|b| b.present(in_place))
        .map(|b| {
            let (index, name) = (b.index, b.name);
            match b.kind(in_place) {
                Kind::Uniform => {
                    format!("@group(0) @binding({index}) var<uniform> {name}: Params;\n")
                }
                Kind::ReadOnlyStorage => {
                    format!("@group(0) @binding({index}) var<storage, read> {name}: array<S>;\n")
                }
                // `output` holds outputDtype's storage, `SO`.
                Kind::Storage if b.index as usize == slot::OUTPUT => format!(
                    "@group(0) @binding({index}) var<storage, read_write> {name}: array<SO>;\n"
                ),
                Kind::Storage => format!(
                    "@group(0) @binding({index}) var<storage, read_write> {name}: array<S>;\n"
                ),
            }
        })
        .collect()
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

    #[test]
    fn declarations_follow_the_table() {
        let out = wgsl_declarations(false);
        assert_eq!(out.lines().count(), 9);
        assert!(out.contains("@binding(0) var<storage, read> input"));
        assert!(out.contains("@binding(6) var<storage, read_write> sum"));
        let inp = wgsl_declarations(true);
        assert_eq!(inp.lines().count(), 7);
        assert!(inp.contains("@binding(1) var<storage, read_write> residual"));
        assert!(!inp.contains("output"));
    }
}
