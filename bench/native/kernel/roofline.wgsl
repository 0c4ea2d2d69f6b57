// The bandwidth roofline for the fused kernel: out = a + b moves the same
// 12 bytes per element (two reads, one write) with no reduction, one vec4 per
// thread, so its time is what memory alone costs for a shape.

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> count: vec4<u32>;   // x: elements in vec4

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // The grid is folded into 2-D past 65535 workgroups, as the kernel's is.
    let i = (wg.x + wg.y * groups.x) * 256u + lid;
    if i < count.x {
        out[i] = a[i] + b[i];
    }
}
