// The baseline the fused kernel replaces: the same operation with one thread
// per row, each walking its row alone. A first loop forms v, writes it to the
// output and sums its squares; a second loop reads the output back and applies
// the scale, gamma and beta. Scalar loads, and neighbouring threads touch
// addresses a whole row apart.

struct Shape {
    rows: u32,
    hidden: u32,
    eps: f32,
    has_bias: u32,
};

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> residual: array<f32>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read> beta: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
@group(0) @binding(6) var<uniform> shape: Shape;

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let row = id.x + id.y * groups.x * 64u;
    if row >= shape.rows {
        return;
    }
    let start = row * shape.hidden;
    var squares = 0.0;
    for (var i = 0u; i < shape.hidden; i++) {
        var v = input[start + i] + residual[start + i];
        if shape.has_bias != 0u {
            v += bias[i];
        }
        output[start + i] = v;
        squares += v * v;
    }
    let scale = inverseSqrt(squares / f32(shape.hidden) + shape.eps);
    for (var i = 0u; i < shape.hidden; i++) {
        output[start + i] = output[start + i] * scale * gamma[i] + beta[i];
    }
}
