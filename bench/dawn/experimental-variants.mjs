// Kernel variants the crate does not build, as sweep variants: reads the JSON that
// `cargo run --release --example bench -- --emit-wgsl IN --shapes ...` writes and writes OUT
// with, beside each variant, the same kernel changed one way (issue 12; docs/PERFORMANCE.md):
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
//   --split 2,4   each row is spread over that many workgroups (a SPLIT constant the sweep
//                 multiplies the grid by). Every one of them reads the whole row for the sum
//                 of squares, with no communication between workgroups, but loads gamma and
//                 beta and writes only its share of the cached columns: a decode row's loads
//                 and stores then come from several SMs' memory paths instead of one. Only
//                 for variants whose cache holds the whole row (exact=1).
//   --reduce      the fan-in reduction with loops of a constant trip count (lane l folds
//                 l + k FAN for k = 1 .. WG / FAN - 1), so that a compiler can issue a lane's
//                 workgroup loads together instead of one per iteration of a loop whose end
//                 depends on the lane: `fanU`. Same partials in the same order, same bits.
//   --floor       not a kernel: the reduction replaced by one barrier and lane 0's partial
//                 (results are wrong; the sweep skips its check, `nocheck`). What a
//                 one-workgroup-per-row design costs with no reduction at all: a bound on what
//                 any reduction could win.
//
//   node bench/dawn/experimental-variants.mjs --subgroups IN.json OUT.json
//   DAWN_SUBGROUPS=1 BENCH_DAWN_ARGS="--wgsl OUT.json ..." bash scripts/bench-dawn.sh run sweep
//
// The package's device does not ask for `subgroups` (wgpu 30 cannot; see docs/PERFORMANCE.md):
// DAWN_SUBGROUPS=1 makes the bench's tap ask for it. These variants are measured, not shipped.
import { readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const mode = args[0];
const rowCounts = ["--rows", "--split"].includes(mode) ? args.splice(1, 1)[0].split(",").map(Number) : [];
const [input, output] = args.slice(1);
if (!["--subgroups", "--rows", "--split", "--reduce", "--floor"].includes(mode) || !input || !output || rowCounts.some((r) => !(r >= 2))) {
  console.error("usage: node bench/dawn/experimental-variants.mjs (--subgroups | --rows 2,4 | --split 2,4 | --reduce | --floor) IN.json OUT.json");
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
const ROW_HEAD = `    // More than 65535 rows fold into a 2-D grid (per-dimension dispatch limit).
    let row = wg.x + wg.y * groups.x;
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

const ROW_ID = "    let row = wg.x + wg.y * groups.x;\n";
const RESCALED_WRITES = "    if scale != 1.0 {\n        for (var i = lid; i < width; i += WG) {\n";

function split(v) {
  if (!/exact=1/.test(v.knobs)) return [];
  const fill = v.code.indexOf("fn fill(");
  const end = v.code.indexOf("\n}\n", v.code.indexOf("fn drain(", fill)) + 3;
  if (fill < 0 || end < 3 || !v.code.includes(ROW_ID) || !v.code.includes(RESCALED_WRITES)) {
    throw new Error(`${v.knobs}: the kernel's cache or entry point changed; update this script`);
  }
  // Loads of v stay for every slot (the whole row's sum); gamma, beta and every store only
  // for the slots this workgroup owns.
  const cache = v.code.slice(fill, end)
    .replace(/\{ let i = lid \+ (\d+)u \* WG; if EXACT \|\| i < width \{ (\(\*c\)\.s\d+) = fetch\(base, i\);/g,
      "{ let i = lid + $1u * WG; if EXACT || i < width { $2 = fetch_own(base, i, owns($1u));")
    .replace(/\{ let i = lid \+ (\d+)u \* WG; if (EXACT \|\| i < width|IN_PLACE && \(EXACT \|\| i < width\)) \{ (?!\(\*c\)\.s\d+ = fetch_own)/g,
      "{ let i = lid + $1u * WG; if owns($1u) && ($2) { ");
  return rowCounts.map((k) => ({
    name: `split=${k}`,
    code: v.code.slice(0, fill) + `const SPLIT: u32 = ${k}u;
var<private> own_part: u32;
fn owns(slot: u32) -> bool { return slot * SPLIT / SLOTS == own_part; }
fn fetch_own(base: u32, i: u32, own: bool) -> Slot {
    var s: Slot;
    s.v = load_v(base, i);
    if PRELOAD && own {
        s.g = ld(gamma[i]);
        if HAS_BETA {
            s.b = ld(beta[i]);
        }
    }
    return s;
}
` + cache + v.code.slice(end)
      .replace(ROW_ID, "    let part_id = wg.x + wg.y * groups.x;\n    own_part = part_id % SPLIT;\n    let row = part_id / SPLIT;\n")
      .replace(RESCALED_WRITES, RESCALED_WRITES + "            if !owns(i / WG) {\n                continue;\n            }\n"),
  }));
}

function reduce(v) {
  const start = v.code.indexOf("fn reduce_workgroup");
  const end = v.code.indexOf("\n}\n", start) + 3;
  if (start < 0 || end < 3 || !/fan=[1-9]/.test(v.knobs)) return [];
  return [{
    name: "fanU",
    code: v.code.slice(0, start) + `fn reduce_workgroup(lid: u32, value: vec2<f32>) -> vec2<f32> {
    partials[lid] = value;
    workgroupBarrier();
    if lid < FAN {
        var a = partials[lid];
        for (var k = 1u; k < WG / FAN; k++) {
            a = combine(a, partials[lid + k * FAN]);
        }
        partials[lid] = a;
    }
    workgroupBarrier();
    if lid == 0u {
        var a = partials[0];
        for (var k = 1u; k < FAN; k++) {
            a = combine(a, partials[k]);
        }
        partials[0] = a;
    }
    return workgroupUniformLoad(&partials[0]);
}
` + v.code.slice(end),
  }];
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

const MODES = { "--subgroups": subgroups, "--rows": manyRows, "--split": split, "--reduce": reduce, "--floor": floor };
const out = [];
for (const v of JSON.parse(readFileSync(input, "utf8"))) {
  out.push(v);
  for (const { name, code, nocheck } of MODES[mode](v)) {
    out.push({ ...v, code, knobs: `${v.knobs} ${name}`, chosen: false, ...(nocheck ? { nocheck } : {}) });
  }
}
writeFileSync(output, JSON.stringify(out));
console.log(`wrote ${out.length} variants to ${output}`);
