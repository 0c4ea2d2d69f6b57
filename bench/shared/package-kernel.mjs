// The package's own kernels, captured as it compiles them: the WGSL it dispatches for a shape and option set.
import { constantsOf, randomFloats } from "./raw.mjs";

/**
 * The WGSL of the kernel the package dispatches for `rows`×`hidden` with `o` (bias, beta, sum,
 * inPlace): makes one such call with the tap tracking the pipelines it sets, and takes the
 * source that pipeline was compiled from. `data` ({ x, r }) supplies the rows × hidden inputs.
 */
export async function packageKernel(ctx, rows, hidden, o, data) {
  const key = `${rows}x${hidden}/bias=${!!o.bias}/beta=${!!o.beta}/sum=${!!o.sum && !o.inPlace}/inPlace=${!!o.inPlace}`;
  ctx.kernels ??= new Map();
  if (ctx.kernels.has(key)) return ctx.kernels.get(key);
  const { norm, seen } = ctx;
  const n = rows * hidden;
  const v = (len, seed) => randomFloats(len, seed);
  const x = data?.x ?? v(n, 1), r = data?.r ?? v(n, 2);
  const args = { gamma: v(hidden, 3), hidden, ...(o.beta ? { beta: v(hidden, 4) } : {}), ...(o.bias ? { bias: v(hidden, 5) } : {}) };
  let used = [];
  seen.tracking = new Set();
  try {
    if (o.inPlace) {
      const tx = norm.upload(x), tr = norm.upload(r);
      await norm.run({ ...args, input: tx, residual: tr, inPlace: true });
      tx.free();
      tr.free();
    } else if (o.sum) {
      const res = await norm.runWithSum({ ...args, input: x, residual: r, output: "gpu" });
      res.output.free();
      res.sum.free();
    } else {
      (await norm.run({ ...args, input: x, residual: r, output: "gpu" })).free();
    }
  } finally {
    used = [...seen.tracking];
    seen.tracking = null;
  }
  const codes = [...new Set(used.map((p) => seen.pipelineCode.get(p)))];
  if (codes.length !== 1 || !codes[0]) {
    throw new Error(`${key}: the package set ${used.length} compute pipeline(s) from ${codes.filter(Boolean).length} known WGSL source(s) in one call; expected exactly one (has its call path changed?)`);
  }
  const code = codes[0];
  const c = constantsOf(code);
  const want = { HAS_BIAS: !!o.bias, HAS_BETA: !!o.beta, WRITE_SUM: !!o.sum || !!o.inPlace, IN_PLACE: !!o.inPlace };
  for (const [k, w] of Object.entries(want)) {
    if (c[k] !== undefined && c[k] !== w) throw new Error(`captured kernel for ${key} has ${k} = ${c[k]}, expected ${w}`);
  }
  // `groups(rows)`: the workgroups a dispatch of `rows` rows needs, SPLIT of them a row.
  const split = c.SPLIT ?? 1;
  const k = {
    code, constants: c, lanes: c.lanes ?? (hidden % 4 === 0 ? 4 : 1), groups: (rows) => rows * split,
    label: `package ${key} wg=${c.WG} slots=${c.SLOTS}${split > 1 ? ` split=${split}` : ""}`,
  };
  ctx.kernels.set(key, k);
  return k;
}
