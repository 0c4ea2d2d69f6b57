// Writes the ONNX models the browser benchmark feeds to onnxruntime-web: a chain of K
// com.microsoft SkipSimplifiedLayerNormalization nodes, each node's output the next node's
// input and all sharing one skip, so that the slope of session time over K is the cost of
// one node with everything else (session overhead, transfers) cancelling out.
//
// The protobuf is written by hand: the handful of ModelProto fields needed here do not
// justify a Python toolchain or a protobuf dependency at bench time.

const WIRE_VARINT = 0;
const WIRE_LEN = 2;
const WIRE_I32 = 5;
export const FLOAT = 1; // TensorProto.DataType.FLOAT and AttributeProto.AttributeType.FLOAT
const utf8 = new TextEncoder();

export class Writer {
  constructor() {
    this.parts = [];
  }
  varint(n) {
    // BigInt keeps 64-bit fields (dims, ir_version) exact past 2^31.
    let v = BigInt(n);
    const out = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v) byte |= 0x80;
      out.push(byte);
    } while (v);
    this.parts.push(Uint8Array.from(out));
    return this;
  }
  tag(field, wire) {
    return this.varint((field << 3) | wire);
  }
  int(field, n) {
    return this.tag(field, WIRE_VARINT).varint(n);
  }
  bytes(field, data) {
    this.tag(field, WIRE_LEN).varint(data.length);
    this.parts.push(data);
    return this;
  }
  string(field, s) {
    return this.bytes(field, utf8.encode(s));
  }
  message(field, writer) {
    return this.bytes(field, writer.finish());
  }
  float(field, x) {
    this.tag(field, WIRE_I32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, x, true);
    this.parts.push(b);
    return this;
  }
  finish() {
    const n = this.parts.reduce((s, p) => s + p.length, 0);
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

function tensorType(dims) {
  const shape = new Writer();
  for (const d of dims) shape.message(1, new Writer().int(1, d)); // Dimension.dim_value
  const tensor = new Writer().int(1, FLOAT).message(2, shape); // elem_type, shape
  return new Writer().message(1, tensor); // TypeProto.tensor_type
}

export function valueInfo(name, dims) {
  return new Writer().string(1, name).message(2, tensorType(dims));
}

export function initializer(name, values) {
  const raw = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const t = new Writer();
  t.int(1, values.length); // dims
  t.int(2, FLOAT); // data_type
  t.string(8, name);
  t.bytes(9, raw.slice()); // raw_data: little-endian f32, as the format requires
  return t;
}

/**
 * One com.microsoft SkipSimplifiedLayerNormalization node: `inputs` (input, skip, gamma[,
 * bias]) and `outputs` by name ("" for an output not produced).
 */
export function skipNormNode({ name, inputs, outputs, eps }) {
  const node = new Writer();
  for (const x of inputs) node.string(1, x);
  for (const y of outputs) node.string(2, y);
  node.string(3, name);
  node.string(4, "SkipSimplifiedLayerNormalization");
  node.message(5, new Writer().string(1, "epsilon").float(2, eps).int(20, FLOAT));
  node.string(7, "com.microsoft");
  return node;
}

/** A ModelProto around `graph`, with the opsets the nodes above need. */
export function modelBytes(graph, producer) {
  const model = new Writer();
  model.int(1, 8); // ir_version 8 (ONNX 1.10+): every 1.30 runtime reads it
  model.string(2, producer);
  model.message(7, graph);
  model.message(8, new Writer().string(1, "").int(2, 17));
  model.message(8, new Writer().string(1, "com.microsoft").int(2, 1));
  return model.finish();
}

/**
 * Model bytes for `k` chained SkipSimplifiedLayerNormalization nodes on [1, rows, hidden]
 * float32, graph inputs `input` and `skip`, graph output `output`, gamma and bias baked in as
 * initializers (as a real transformer's weights would be).
 */
export function skipSimplifiedLayerNormChain({ rows, hidden, k, eps, gamma, bias }) {
  if (gamma.length !== hidden || bias.length !== hidden) throw new Error("gamma/bias length != hidden");
  const dims = [1, rows, hidden];
  const graph = new Writer();
  for (let i = 0; i < k; i++) {
    const inputs = [i === 0 ? "input" : `h${i}`, "skip", "gamma", "bias"];
    const outputs = [i === k - 1 ? "output" : `h${i + 1}`];
    graph.message(1, skipNormNode({ name: `norm${i}`, inputs, outputs, eps }));
  }
  graph.string(2, `skip_simplified_layer_norm_x${k}`);
  graph.message(5, initializer("gamma", gamma));
  graph.message(5, initializer("bias", bias));
  graph.message(11, valueInfo("input", dims));
  graph.message(11, valueInfo("skip", dims));
  graph.message(12, valueInfo("output", dims));
  return modelBytes(graph, "webgpu-rmsnorm bench");
}
