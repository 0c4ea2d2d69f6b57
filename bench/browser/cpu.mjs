// The CPU section of `npm run bench` (bench.mjs runs it in its page; the in-page half
// is cpu-page.mjs): the package with `backend: "cpu"` writing into an output array it
// keeps against a plain JavaScript loop doing the same, and returning a fresh array against
// onnxruntime-web's WebAssembly EP running the same SkipSimplifiedLayerNormalization; the
// package with `backend: "webgpu"` (read back into a fresh array and into a kept one) and
// `"auto"`, end to end per call. Prints a table and the targets the CPU backend is held to,
// writes bench-out/cpu.json.

// A decode row, prefill and batch sizes at width 4096, and a wide batch at width 1024.
const DEFAULT_SHAPES = "1x4096,16x4096,128x4096,1024x4096,4096x1024";

// The ways an app calls, in the table's order, with their column names; then the
// diagnostics of where the CPU backend's time goes (cpu-page.mjs), in a table of their own.
const WAYS = [
  ["cpu", "cpu → kept"],
  ["js", "JS loop → kept"],
  ["cpuFresh", "cpu fresh"],
  ["ortWasm", "ORT wasm"],
  ["webgpu", "webgpu fresh"],
  ["webgpuInto", "webgpu → kept"],
  ["auto", "auto"],
];
const DIAGNOSTICS = [
  ["cpuResident", "cpu resident"],
  ["cpuKernel", "cpu kernel"],
  ["cpuCopyIn", "cpu copy in"],
  ["cpuCopyOut", "cpu copy out"],
  ["copyFloor", "copy floor"],
  ["resultFloor", "result floor"],
];
const label = Object.fromEntries([...WAYS, ...DIAGNOSTICS]);

// Three significant digits without exponents: the times span 0.005 to 200 ms.
const ms = (x) => (Number.isFinite(x) ? x.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x) || 1)))) : String(x));
const ratio = (a, b) => (a > 0 && b > 0 ? (a / b).toFixed(2) : "n/a");
const shapeName = (r) => `${r.rows}×${r.hidden}`;
const median = (r, way) => r.ms?.[way]?.median;
const medianOf = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function markdown(head, rows) {
  return [head, head.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

const column = (r, way) => (r.ms[way] ? ms(r.ms[way].median) : "n/a");

function table(results) {
  const head = ["shape", ...WAYS.map(([, l]) => `${l} ms`), "cpu/JS (kept)", "cpu/ORT wasm (fresh)", "webgpu kept/fresh", "webgpu/auto"];
  const rows = results.map((r) =>
    r.error
      ? [shapeName(r), "failed", ...head.slice(2).map(() => "")]
      : [
          shapeName(r),
          ...WAYS.map(([way]) => column(r, way)),
          ratio(median(r, "cpu"), median(r, "js")),
          ratio(median(r, "cpuFresh"), median(r, "ortWasm")),
          ratio(median(r, "webgpuInto"), median(r, "webgpu")),
          ratio(median(r, "webgpu"), median(r, "auto")),
        ],
  );
  return markdown(head, rows);
}

// Where a CPU-backend call's time goes: copies of the arrays into wasm memory and of the
// result out (cpu − resident, and the copies timed alone), the rest of a call (resident −
// kernel: argument checks, the result's allocation, the Promise), the kernel; and the least
// the copies cost a wasm library (cpu-page.mjs says how each is measured).
function breakdown(results) {
  const head = ["shape", "cpu ms", "kernel", "rest of the call", "cpu − resident", "copy in + out", "copy floor", "result floor", "kernel share"];
  const rows = results
    .filter((r) => !r.error)
    .map((r) => {
      const m = (w) => median(r, w);
      return [
        shapeName(r),
        ms(m("cpu")),
        ms(m("cpuKernel")),
        ms(m("cpuResident") - m("cpuKernel")),
        ms(m("cpu") - m("cpuResident")),
        `${ms(m("cpuCopyIn"))} + ${ms(m("cpuCopyOut"))}`,
        ms(m("copyFloor")),
        ms(m("resultFloor")),
        `${((m("cpuKernel") / m("cpu")) * 100).toFixed(0)} %`,
      ];
    });
  return markdown(head, rows);
}

// The targets, each { target, met, detail } from the medians of this run.
function targets(results, setup) {
  const ok = results.filter((r) => !r.error);
  const slowerThan = (other, way = "cpu") => {
    const over = ok.filter((r) => !(median(r, way) <= median(r, other)));
    // The ratio of medians; in parentheses that of the fastest batches, which other
    // processes on the cores can only have slowed.
    const ratios = ok
      .map((r) => `${shapeName(r)} ${ratio(median(r, way), median(r, other))} (${ratio(r.ms[way].min, r.ms[other].min)})`)
      .join(", ");
    return { met: ok.length === results.length && over.length === 0, detail: ratios };
  };
  // The median of the ratios of `way` to `other` taken round by round: both sampled in the
  // same round, under the same load (on a busy machine the ratio of medians wanders with it).
  const paired = (other, way = "cpu") => {
    const per = ok.map((r) => ({ r, x: medianOf(r.ms[way].rounds.map((t, i) => t / r.ms[other].rounds[i])) }));
    return {
      met: ok.length === results.length && per.every((p) => p.x <= 1),
      detail: per.map(({ r, x }) => `${shapeName(r)} ${x.toFixed(2)} (medians ${ratio(median(r, way), median(r, other))}, fastest ${ratio(r.ms[way].min, r.ms[other].min)})`).join(", "),
    };
  };
  const one = ok.find((r) => r.rows === 1 && r.hidden === 4096);
  const speedup = one?.ms.webgpu && median(one, "webgpu") / median(one, "auto");
  // The bar against ORT (0.8×); beside each ratio, the same with the fresh result's floor
  // taken from both times (both libraries return a fresh array: what the ratio is where
  // first touching new pages costs little).
  const ort = ok.map((r) => {
    const [cpu, other, result] = ["cpuFresh", "ortWasm", "resultFloor"].map((w) => median(r, w));
    return { r, within: cpu <= 0.8 * other, detail: `${shapeName(r)} ${ratio(cpu, other)} (${ratio(cpu - result, other - result)})` };
  });
  const gpu = ok.filter((r) => r.ms.webgpuInto);
  return [
    { target: "cpu into a kept array ≤ 1.0× the JS loop into a kept array at every shape (median of per-round ratios)", ...paired("js") },
    {
      target: "cpu fresh ≤ 0.8× ORT wasm at every shape (in parentheses: both less the result floor)",
      met: ok.length === results.length && ort.every((o) => o.within),
      detail: ort.map((o) => o.detail).join(", "),
    },
    { target: "cpu fresh no slower than ORT wasm at every shape", ...slowerThan("ortWasm", "cpuFresh") },
    gpu.length
      ? { target: "webgpu read back into a kept array no slower than into a fresh one at every shape (median of per-round ratios)", ...paired("webgpu", "webgpuInto") }
      : { target: "webgpu read back into a kept array no slower than into a fresh one", met: false, detail: `not measured (webgpu: ${setup.backends.webgpu})` },
    {
      target: "auto ≥ 20× faster than webgpu at 1×4096",
      met: speedup >= 20,
      detail: speedup ? `${speedup.toFixed(0)}× (${(one.ms.webgpu.min / one.ms.auto.min).toFixed(0)}×)` : `not measured (webgpu: ${setup.backends.webgpu})`,
    },
    { target: 'auto resolves to "cpu" here', met: setup.backends.auto === "cpu", detail: setup.backends.auto },
  ];
}

/**
 * Runs the section on an opened bench (driver.mjs's openBench, page bench.html or cpu.html): setup, every
 * shape, the table and targets on stdout, bench-out/cpu.json.
 */
export async function cpuSection(bench, opt) {
  const shapes = (opt["cpu-shapes"] ?? DEFAULT_SHAPES)
    .split(",")
    .map((s) => s.split("x").map(Number))
    .map(([rows, hidden]) => ({ rows, hidden }));
  const budgetMs = Number(opt["budget-ms"] ?? 4000);
  // WebKit's performance.now() ticks in whole milliseconds where the page is not
  // cross-origin isolated: its batches are made long enough for a tick to be 2 % of one.
  const batchMs = Number(opt["batch-ms"] ?? (bench.env.crossOriginIsolated || opt.browser !== "webkit" ? 10 : 50));

  const setup = await bench.measure("cpuSetup", {}, "CPU section setup");
  if (setup.error) return;
  console.log(`\nCPU section: backends ${JSON.stringify(setup.backends)}; onnxruntime-web wasm ${setup.ortWasm.versions.web}, numThreads ${setup.ortWasm.numThreads}`);
  console.log(`ms per call: batches of calls taking ~${batchMs} ms, all ways in a random order each round; medians; budget ${budgetMs} ms per shape\n`);

  const results = [];
  for (const s of shapes) {
    const t0 = Date.now();
    const r = await bench.measure("cpuShape", { ...s, budgetMs, batchMs }, shapeName(s));
    results.push(r.error ? { ...s, error: r.error } : r);
    if (r.error) continue;
    const failed = Object.entries(r.checks).filter(([, c]) => !c.ok);
    for (const [way, c] of failed) console.error(`${shapeName(s)}: ${label[way]} FAILED the f64 reference check: ${c.problems.join("; ")}`);
    if (failed.length) process.exitCode = 1;
    const { js, ...strict } = r.checks;
    const maxRel = Math.max(...Object.values(strict).map((c) => c.maxRel));
    console.log(
      `${shapeName(s)}: ` + [...WAYS, ...DIAGNOSTICS].filter(([w]) => r.ms[w]).map(([w, l]) => `${l} ${ms(r.ms[w].median)} (min ${ms(r.ms[w].min)}, ×${r.callsPerBatch[w]})`).join(", ") +
        `; n=${r.ms.cpu.n}; max rel err ${maxRel.toExponential(1)}, JS loop max abs err ${js.maxAbs.toExponential(1)}  [${((Date.now() - t0) / 1000).toFixed(0)} s]`,
    );
  }

  console.log(`\n${table(results)}\n\nWhere the CPU backend's time goes (ms per call, medians; differences of medians are estimates):\n\n${breakdown(results)}\n`);
  const met = targets(results, setup);
  console.log("Targets (ratios of medians, or the median of per-round ratios where said; of the fastest batches in parentheses):");
  for (const t of met) console.log(`${t.met ? "met    " : "NOT met"}  ${t.target}: ${t.detail}`);
  const command = ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" ");
  await bench.finish("cpu.json", { command, budgetMs, batchMs, setup, targets: met }, results);
}
