// Subgroup reductions as sweep variants (issue 12 point 2): reads the JSON that
// `cargo run --release --example bench -- --emit-wgsl IN --shapes ...` writes and writes OUT
// with, beside each variant, two whose workgroup reduction uses WGSL subgroup builtins:
//   sgA  every lane stores its partial; after one barrier lane l folds partials l, l + s,
//        l + 2s, ... (s = subgroup size), then subgroupAdd/subgroupMax across the subgroup.
//        Correct whatever the mapping of lanes to subgroups.
//   sgB  subgroupAdd/subgroupMax first; each subgroup's first lane stores its total at
//        lid / s (assumes subgroups are runs of consecutive local indices); lane 0 folds those.
// Both hand the row's total to every lane through workgroupUniformLoad, as the tree does.
//
//   node bench/dawn/subgroup-variants.mjs IN.json OUT.json
//   DAWN_SUBGROUPS=1 BENCH_DAWN_ARGS="--wgsl OUT.json ..." bash scripts/bench-dawn.sh run sweep
//
// The package's device does not ask for `subgroups` (wgpu 30 cannot; see docs/PERFORMANCE.md):
// DAWN_SUBGROUPS=1 makes the bench's tap ask for it. These variants are measured, not shipped.
import { readFileSync, writeFileSync } from "node:fs";

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node bench/dawn/subgroup-variants.mjs IN.json OUT.json");
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

const out = [];
for (const v of JSON.parse(readFileSync(input, "utf8"))) {
  out.push(v);
  const start = v.code.indexOf("fn reduce_workgroup");
  const end = v.code.indexOf("\n}\n", start) + 3;
  if (start < 0 || end < 3 || !v.code.includes(SIGNATURE)) throw new Error(`${v.knobs}: the kernel's reduction or entry point changed; update this script`);
  for (const [name, reduce] of Object.entries(REDUCE)) {
    const code = "enable subgroups;\n" + v.code.slice(0, start) +
      "var<private> sg_lane: u32;\nvar<private> sg_size: u32;\nvar<workgroup> sg_total: vec2<f32>;\n" +
      reduce + v.code.slice(end).replace(SIGNATURE, WITH_SUBGROUPS);
    out.push({ ...v, code, knobs: `${v.knobs} ${name}`, chosen: false });
  }
}
writeFileSync(output, JSON.stringify(out));
console.log(`wrote ${out.length} variants (${out.length / 3} of each: as emitted, sgA, sgB) to ${output}`);
