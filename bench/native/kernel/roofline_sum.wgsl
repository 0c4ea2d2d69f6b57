// The roofline for the kernel with the `sum` output: out = a + b and out2 = a - b
// read two arrays and write two, as that kernel does (y and v), with no
// reduction. Writes cost the memory more than reads, so a kernel that writes
// half of what it moves is measured against one that does the same.
// Alike on purpose to roofline.wgsl (the same kernel with a second output):
// each baseline stays a whole shader, as it is run.

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out2: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> count: vec4<u32>;   // x: elements in vec4

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.x + wg.y * groups.x) * 256u + lid;
    if i < count.x {
        let x = a[i];
        let y = b[i];
        out[i] = x + y;
        out2[i] = x - y;
    }
}
