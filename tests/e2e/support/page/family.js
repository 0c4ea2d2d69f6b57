// The normalization family's test helpers, shared by the in-browser suites
// (tests/e2e/browsers/norm-family.test.mjs and others, as `window.lib.family`) and the Deno
// and Node suites (tests/e2e/runtimes/): the variants, their arguments in a dtype, the entry
// points, and the sweep that checks each result against the f64 reference.

/** The helpers over the shared www/lib/ modules (`reference.js`, `seeded.js`, `f16.js`, `app-gpu.js`). */
export function familyHelpers({ ref, seeded, f16, appGpu }) {
  // kind × residual × postGamma × gammaOffset; bias and beta ride along, each on in half.
  // Then a parallel block's input2 (no postGamma: a parallel block has no post-norm) with
  // each kind, with and without a residual.
  const VARIANTS = [];
  for (const kind of ["rms", "layer"])
    for (const residual of [true, false])
      for (const postGamma of [false, true])
        for (const gammaOffset of [0, 1]) {
          const i = VARIANTS.length;
          VARIANTS.push({ kind, residual, postGamma, gammaOffset, bias: i % 4 === 1 || i % 4 === 2, beta: i % 2 === 1 });
        }
  for (const kind of ["rms", "layer"])
    for (const residual of [true, false]) {
      const i = VARIANTS.length;
      VARIANTS.push({ kind, residual, postGamma: false, input2: true, gammaOffset: i % 3 === 0 ? 1 : 0, bias: i % 2 === 0, beta: kind === "layer" });
    }
  const label = (v) => [v.kind, v.residual ? "residual" : "no residual", v.postGamma && "postGamma", v.input2 && "input2", v.gammaOffset && "gammaOffset " + v.gammaOffset, v.bias && "bias", v.beta && "beta"].filter(Boolean).join(" + ");

  /** Variant v's f32 arguments: only the fields it has (kind always, to name it). */
  function caseOf(v, { rows = 3, hidden = 64, seed = 1 } = {}) {
    const a = seeded.caseArgs({ rows, hidden, bias: v.bias, beta: v.beta, seed: seed * 17 + VARIANTS.indexOf(v) });
    if (!v.residual) delete a.residual;
    if (v.postGamma) a.postGamma = seeded.filled(hidden, seeded.rng(seed + 99), -1.5, 1.5);
    if (v.input2) a.input2 = seeded.filled(rows * hidden, seeded.rng(seed + 101), -2, 2);
    if (v.gammaOffset) a.gammaOffset = v.gammaOffset;
    a.kind = v.kind;
    return a;
  }

  /** The call in dtype d: what the package gets, and the f32 values the reference takes. */
  function inDtype(a, d) {
    if (d !== "f16") return { call: a, host: a };
    const { bits, host } = f16.argsToF16(a);
    return { call: bits, host };
  }

  const S = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
  const typedOf = (d) => (d === "f16" ? Uint16Array : Float32Array);
  const zeros = (d, n) => new (typedOf(d))(n);
  const arrays = (call) => f16.ALL_ARRAY_KEYS.filter((k) => call[k]);
  const tensors = (n, call) => {
    const t = { ...call };
    for (const k of arrays(call)) t[k] = n.upload(call[k]);
    return t;
  };
  const free = (t, call) => arrays(call).forEach((k) => t[k].free());
  const submit = (device, record) => {
    const e = device.createCommandEncoder();
    record(e);
    device.queue.submit([e.finish()]);
  };

  // The caller's own arrays for the results: views 8 bytes into a larger buffer whose every
  // byte is BYTE, so that a write past either end shows; f16 results in a Float16Array where
  // `halves` asks and the runtime has one, else a Uint16Array.
  const BYTE = 0xa5;
  const hostType = (d, halves) => (d !== "f16" ? Float32Array : halves && typeof Float16Array !== "undefined" ? Float16Array : Uint16Array);
  const given = (T, len) => {
    const bytes = new Uint8Array(16 + len * T.BYTES_PER_ELEMENT).fill(BYTE);
    return { array: new T(bytes.buffer, 8, len), bytes };
  };
  const untouchedAround = ({ array, bytes }) => bytes.subarray(0, 8).every((b) => b === BYTE) && bytes.subarray(8 + array.byteLength).every((b) => b === BYTE);
  const bitsOf = (a) => (a instanceof Float32Array || a instanceof Uint16Array ? a : new Uint16Array(a.buffer, a.byteOffset, a.length));
  // run (or runWithSum, `withSum`) of `call` into the caller's arrays: the results, and the
  // problems of a call that resolved with other arrays than those given or wrote past them.
  // `only`: the one result ("output" or "sum") given an array, the other left fresh.
  async function into(n, call, o, { withSum = false, halves = false, len = call.input.length, only } = {}) {
    const y = only !== "sum" ? given(hostType(o.outputDtype ?? o.dtype, halves), len) : undefined;
    const v = withSum && only !== "output" ? given(hostType(o.dtype, halves), len) : undefined;
    const args = { ...call, ...o.extra, ...(y ? { output: y.array } : {}), ...(v ? { sum: v.array } : {}) };
    const r = withSum ? await n.runWithSum(args) : { output: await n.run(args) };
    const problems = [];
    for (const [name, g] of [["output", y], ["sum", v]]) {
      if (!g) continue;
      if (r[name] !== g.array) problems.push(name + ": resolved with another array than the one given");
      if (!untouchedAround(g)) problems.push(name + ": bytes around the array given were written");
    }
    return { output: y ? bitsOf(y.array) : r.output, sum: withSum ? (v ? bitsOf(v.array) : r.sum) : undefined, problems };
  }

  // Each entry point: (n, c, o) → { output, sum? } read back, o = { dtype, outputDtype, extra }
  // (extra: the outputDtype field, where the sweep gives one). "in place" writes y over the
  // data, so it runs only where the output's dtype is the data's.
  const ENTRIES = {
    run: async (n, c, o) => ({ output: await n.run({ ...c.call, ...o.extra }) }),
    runWithSum: async (n, c, o) => n.runWithSum({ ...c.call, ...o.extra }),
    "output gpu": async (n, c, o) => {
      const t = await n.run({ ...c.call, ...o.extra, output: "gpu" });
      const r = { output: await t.read(), tensorDtype: t.dtype };
      t.free();
      return r;
    },
    "runWithSum output gpu, tensor arguments": async (n, c, o) => {
      const t = tensors(n, c.call);
      const r = await n.runWithSum({ ...t, ...o.extra, output: "gpu" });
      const out = { output: await r.output.read(), sum: await r.sum.read(), tensorDtype: r.output.dtype };
      r.output.free(); r.sum.free(); free(t, c.call);
      return out;
    },
    "in place": async (n, c, o) => {
      const t = { ...c.call, input: n.upload(c.call.input) };
      if (c.call.residual) t.residual = n.upload(c.call.residual);
      const none = await n.run({ ...t, inPlace: true, ...o.extra });
      const out = { output: await t.input.read(), sum: t.residual && (await t.residual.read()), resolved: none };
      t.input.free(); t.residual?.free();
      return out;
    },
    "GPUBuffer arguments": async (n, c, o) => {
      const { bufferOf } = appGpu;
      const b = { ...c.call, dtype: o.dtype };
      for (const k of arrays(c.call)) b[k] = bufferOf(n.device, c.call[k], S());
      return { output: await n.run({ ...b, ...o.extra }) };
    },
    "encode into tensors": async (n, c, o) => {
      const t = tensors(n, c.call);
      const len = c.call.input.length;
      const output = n.upload(zeros(o.outputDtype ?? o.dtype, len)), sum = n.upload(zeros(o.dtype, len));
      submit(n.device, (e) => n.encode(e, { ...t, ...o.extra, output, sum }));
      const out = { output: await output.read(), sum: await sum.read() };
      [output, sum].forEach((x) => x.free()); free(t, c.call);
      return out;
    },
    "run into an array": (n, c, o) => into(n, c.call, o),
    "runWithSum into arrays": (n, c, o) => into(n, c.call, o, { withSum: true }),
    "runWithSum into Float16Arrays": (n, c, o) => into(n, c.call, o, { withSum: true, halves: true }),
    "runWithSum, output alone into an array": (n, c, o) => into(n, c.call, o, { withSum: true, only: "output" }),
    "runWithSum, sum alone into an array": (n, c, o) => into(n, c.call, o, { withSum: true, only: "sum" }),
    "runWithSum into arrays, tensor arguments": async (n, c, o) => {
      const t = tensors(n, c.call);
      const r = await into(n, t, o, { withSum: true });
      free(t, c.call);
      return r;
    },
    "run into an array, GPUBuffer arguments": async (n, c, o) => {
      const b = { ...c.call, dtype: o.dtype };
      for (const k of arrays(c.call)) b[k] = appGpu.bufferOf(n.device, c.call[k], S());
      const r = await into(n, b, o, { len: c.call.input.length });
      for (const k of arrays(c.call)) b[k].destroy();
      return r;
    },
    "encode in place": async (n, c, o) => {
      const t = tensors(n, c.call);
      submit(n.device, (e) => n.encode(e, { ...t, ...o.extra, inPlace: true }));
      const out = { output: await t.input.read(), sum: t.residual && (await t.residual.read()) };
      free(t, c.call);
      return out;
    },
    // A bound call (norm.bind) made once and used twice where that gives the same result.
    "bound run in place": async (n, c, o) => {
      const t = tensors(n, c.call);
      const bound = n.bind({ ...t, ...o.extra, inPlace: true });
      const none = await bound.run();
      const out = { output: await t.input.read(), sum: t.residual && (await t.residual.read()), resolved: none };
      bound.free(); free(t, c.call);
      return out;
    },
    "bound run into tensors, twice": async (n, c, o) => {
      const t = tensors(n, c.call);
      const len = c.call.input.length;
      const output = n.upload(zeros(o.outputDtype ?? o.dtype, len)), sum = n.upload(zeros(o.dtype, len));
      const bound = n.bind({ ...t, ...o.extra, output, sum });
      await bound.run();
      const none = await bound.run();
      const out = { output: await output.read(), sum: await sum.read(), resolved: none };
      bound.free(); [output, sum].forEach((x) => x.free()); free(t, c.call);
      return out;
    },
    "bound encode in place": async (n, c, o) => {
      const t = tensors(n, c.call);
      const bound = n.bind({ ...t, ...o.extra, inPlace: true });
      submit(n.device, (e) => bound.encode(e));
      const out = { output: await t.input.read(), sum: t.residual && (await t.residual.read()) };
      bound.free(); free(t, c.call);
      return out;
    },
    "bound encode into tensors, twice": async (n, c, o) => {
      const t = tensors(n, c.call);
      const len = c.call.input.length;
      const output = n.upload(zeros(o.outputDtype ?? o.dtype, len)), sum = n.upload(zeros(o.dtype, len));
      const bound = n.bind({ ...t, ...o.extra, output, sum });
      submit(n.device, (e) => { bound.encode(e); bound.encode(e); });
      const out = { output: await output.read(), sum: await sum.read() };
      bound.free(); [output, sum].forEach((x) => x.free()); free(t, c.call);
      return out;
    },
    "bound run, GPUBuffers in place": async (n, c, o) => {
      const { bufferOf, readBuffer } = appGpu;
      const b = { ...c.call, dtype: o.dtype };
      for (const k of arrays(c.call)) b[k] = bufferOf(n.device, c.call[k], S());
      const bound = n.bind({ ...b, ...o.extra, inPlace: true });
      const none = await bound.run();
      const T = typedOf(o.dtype);
      const out = { output: new T(await readBuffer(n.device, b.input)), sum: b.residual && new T(await readBuffer(n.device, b.residual)), resolved: none };
      bound.free();
      return out;
    },
  };
  const CPU_ENTRIES = ["run", "runWithSum", "output gpu", "runWithSum output gpu, tensor arguments", "in place", "bound run in place", "bound run into tensors, twice"];
  const INTO_ENTRIES = ["run into an array", "runWithSum into arrays", "runWithSum into Float16Arrays", "runWithSum, output alone into an array", "runWithSum, sum alone into an array", "runWithSum into arrays, tensor arguments"];
  const INTO_GPU_ENTRIES = ["run into an array, GPUBuffer arguments"];

  /**
   * Every variant × shape × entry point on n, with data of dtype and (if given) outputDtype:
   * each result against the reference, of the dtypes the call promises. Returns the failures
   * and how many results were checked.
   */
  async function sweep(n, { entries, dtype = "f32", outputDtype, variants = VARIANTS, shapes = [{}] }) {
    const failures = [];
    let checked = 0;
    for (const v of variants)
      for (const shape of shapes) {
        const c = inDtype(caseOf(v, shape), dtype);
        for (const name of entries) {
          const inPlace = name.includes("in place");
          if (inPlace && outputDtype && outputDtype !== dtype) continue;
          const outD = inPlace ? dtype : outputDtype ?? dtype;
          const what = label(v) + " " + (shape.rows ?? 3) + "x" + (shape.hidden ?? 64) + ", " + name + ", " + dtype + (outputDtype ? " → outputDtype " + outputDtype : "");
          try {
            const r = await ENTRIES[name](n, c, { dtype, outputDtype, extra: outputDtype ? { outputDtype } : {} });
            const problems = [];
            if (!(r.output instanceof typedOf(outD))) problems.push("output is " + r.output?.constructor?.name + ", want " + typedOf(outD).name);
            if (r.sum !== undefined && !(r.sum instanceof typedOf(dtype))) problems.push("sum is " + r.sum?.constructor?.name);
            if (r.tensorDtype !== undefined && r.tensorDtype !== outD) problems.push("the output tensor's dtype is " + r.tensorDtype);
            if ("resolved" in r && r.resolved !== undefined) problems.push("in place resolved with a value");
            if (inPlace && c.call.residual && r.sum === undefined) problems.push("no residual written in place");
            if (r.problems) problems.push(...r.problems);
            const rep = ref.compare(c.host, r.output, { sum: r.sum });
            if (!rep.ok) problems.push(...rep.problems);
            if (problems.length) failures.push(what + ": " + problems.join("; "));
            checked++;
          } catch (e) {
            failures.push(what + ": " + e?.name + ": " + e?.message);
          }
        }
      }
    return { failures, checked };
  }
  const BOUND_ENTRIES = Object.keys(ENTRIES).filter((e) => e.startsWith("bound "));
  return { VARIANTS, ENTRIES, CPU_ENTRIES, BOUND_ENTRIES, INTO_ENTRIES, INTO_GPU_ENTRIES, label, caseOf, inDtype, sweep, tensors, free, typedOf, zeros, submit };
}
