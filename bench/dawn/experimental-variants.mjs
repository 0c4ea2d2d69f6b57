// A program of its own: kernel variants the crate does not build, added to a sweep's JSON list.
// It reads the JSON that `cargo run --release --example bench -- --emit-wgsl IN --shapes ...`
// writes and writes OUT with, beside each variant, the same kernel changed one way
// (docs/performance.md, "Measured and not taken"):
//
//   --subgroups   the workgroup reduction through WGSL subgroup builtins, two ways:
//     sgA  every lane stores its partial; after one barrier lane l folds partials l, l + s,
//          l + 2s, ... (s = subgroup size), then subgroupAdd/subgroupMax across the subgroup.
//          Correct whatever the mapping of lanes to subgroups.
//     sgB  subgroupAdd/subgroupMax first; each subgroup's first lane stores its total at
//          lid / s (assumes subgroups are runs of consecutive local indices); lane 0 folds those.
//     Both hand the row's total to every lane through workgroupUniformLoad, as the tree does.
//   --rows 2,4    each workgroup normalizes that many consecutive rows, one after the other
//                 (a ROWS constant the sweep divides the grid by).
//   (Rows spread over several workgroups, measured here as `--split` before the kernel had
//   them, are the kernel's SPLIT now: `bench --emit-wgsl FILE --set split=2 --shapes ...`.)
//   --floor       not a kernel: the reduction replaced by one barrier and lane 0's partial
//                 (results are wrong; the sweep skips its check, `nocheck`). What a
//                 one-workgroup-per-row design costs with no reduction at all: a bound on what
//                 any reduction could win.
//
//   node bench/dawn/experimental-variants.mjs --subgroups IN.json OUT.json
//   DAWN_SUBGROUPS=1 BENCH_DAWN_ARGS="--wgsl OUT.json ..." bash scripts/bench-dawn.sh run sweep
//
// The package's device does not ask for `subgroups` (wgpu 30 cannot; docs/performance.md):
// DAWN_SUBGROUPS=1 makes the bench's tap ask for it. These variants are measured, not shipped.
import { readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const mode = args[0];
const rowCounts = mode === "--rows" ? args.splice(1, 1)[0].split(",").map(Number) : [];
const [input, output] = args.slice(1);
if (!["--subgroups", "--rows", "--floor"].includes(mode) || !input || !output || rowCounts.some((r) => !(r >= 2))) {
  console.error("usage: node bench/dawn/experimental-variants.mjs (--subgroups | --rows 2,4 | --floor) IN.json OUT.json");
  process.exit(64);
}

const REDUCE = {
  sgA: `fn reduce_workgroup(lid: u32, value: vec2<f32>) -> vec2<f32> {
    partials[lid] = value;
    workgroupBarrier();
    var a = vec2(0.0);
    for (var j = sg_lane; j < WG; j += sg_size) {
        a = combine(a, partials[j]);
    }
    let t = vec2(subgroupAdd(a.x), subgroupMax(a.y));
    if lid == 0u {
        sg_total = t;
    }
    return workgroupUniformLoad(&sg_total);
}
`,
  sgB: `fn reduce_workgroup(lid: u32, value: vec2<f32>) -> vec2<f32> {
    let s = vec2(subgroupAdd(value.x), subgroupMax(value.y));
    if sg_lane == 0u {
        partials[lid / sg_size] = s;
    }
    workgroupBarrier();
    if lid == 0u {
        var a = partials[0];
        for (var j = 1u; j < WG / sg_size; j++) {
            a = combine(a, partials[j]);
        }
        sg_total = a;
    }
    return workgroupUniformLoad(&sg_total);
}
`,
};
const SIGNATURE = "    @builtin(local_invocation_index) lid: u32,\n) {";
const WITH_SUBGROUPS = `    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane_in: u32,
    @builtin(subgroup_size) sg_size_in: u32,
) {
    sg_lane = sg_lane_in;
    sg_size = sg_size_in;`;

// The entry point's head up to the row's early exit; what follows is one row's work.
const ROW_HEAD = `    // More than 65535 workgroups fold into a 2-D grid (per-dimension dispatch limit).
    let group = wg.x + wg.y * groups.x;
    let row = group / SPLIT;
    part = group % SPLIT;
    if row >= params.rows {
        return;
    }
`;

function subgroups(v) {
  const start = v.code.indexOf("fn reduce_workgroup");
  const end = v.code.indexOf("\n}\n", start) + 3;
  if (start < 0 || end < 3 || !v.code.includes(SIGNATURE)) throw new Error(`${v.knobs}: the kernel's reduction or entry point changed; update this script`);
  return Object.entries(REDUCE).map(([name, reduce]) => ({
    name,
    code: "enable subgroups;\n" + v.code.slice(0, start) +
      "var<private> sg_lane: u32;\nvar<private> sg_size: u32;\nvar<workgroup> sg_total: vec2<f32>;\n" +
      reduce + v.code.slice(end).replace(SIGNATURE, WITH_SUBGROUPS),
  }));
}

function manyRows(v) {
  // Each workgroup takes whole rows here; a split kernel's parts would need their own ids.
  if (!/^const SPLIT: u32 = 1u;$/m.test(v.code)) throw new Error(`${v.knobs}: --rows needs a kernel with SPLIT 1`);
  const entry = v.code.indexOf("@compute @workgroup_size(WG)");
  const head = v.code.indexOf(ROW_HEAD, entry);
  if (entry < 0 || head < 0) throw new Error(`${v.knobs}: the kernel's entry point changed; update this script`);
  const body = v.code.slice(head + ROW_HEAD.length);
  return rowCounts.map((r) => ({
    name: `rows=${r}`,
    code: `${v.code.slice(0, entry)}const ROWS: u32 = ${r}u;
fn one_row(row: u32, lid: u32) {
${body}
@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let first = (wg.x + wg.y * groups.x) * ROWS;
    for (var k = 0u; k < ROWS; k++) {
        if first + k >= params.rows {
            return;
        }
        one_row(first + k, lid);
        // Every lane has read the row's total from partials before the next row writes it.
        workgroupBarrier();
    }
}
`,
  }));
}

function floor(v) {
  const start = v.code.indexOf("fn reduce_workgroup");
  const end = v.code.indexOf("\n}\n", start) + 3;
  if (start < 0 || end < 3) throw new Error(`${v.knobs}: the kernel's reduction changed; update this script`);
  return [{
    name: "floor",
    nocheck: true,
    code: v.code.slice(0, start) +
      "fn reduce_workgroup(lid: u32, value: vec2<f32>) -> vec2<f32> {\n    partials[lid] = value;\n    return workgroupUniformLoad(&partials[0]);\n}\n" +
      v.code.slice(end),
  }];
}

const MODES = { "--subgroups": subgroups, "--rows": manyRows, "--floor": floor };
const out = [];
for (const v of JSON.parse(readFileSync(input, "utf8"))) {
  out.push(v);
  for (const { name, code, nocheck } of MODES[mode](v)) {
    out.push({ ...v, code, knobs: `${v.knobs} ${name}`, chosen: false, ...(nocheck ? { nocheck } : {}) });
  }
}
writeFileSync(output, JSON.stringify(out));
console.log(`wrote ${out.length} variants to ${output}`);
