// Bad input, exhaustively, in headless Chromium's WebGPU: every argument × every bad (or odd
// but valid) value × run/runWithSum must reject with the named error (or give the right
// result), never throw synchronously, and leave the instance working and freeable; exotic
// values in pages of their own, SharedArrayBuffer-backed arrays in a cross-origin isolated
// page. The harness page and its servers: support/page.mjs.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/bad-input.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { servers, harnessPage, inHarness } = pageSuite("webgpu-rmsnorm-bad-input-");

// ---------------------------------------------------------------------------------------
// Bad input, exhaustively
// ---------------------------------------------------------------------------------------

/**
 * Runs in the page. Builds the cross product of every argument × every bad (or odd but
 * valid) value, calls run() and runWithSum() with each on a fresh instance, and checks:
 * a Promise (no synchronous throw) that rejects with the expected name and a message that
 * starts with the argument's name, or resolves with the right values; after each, a good
 * call on the same instance is right; and at the end the instance can still be freed.
 * `only` keeps the cases whose label matches the regex source; `shared` adds
 * SharedArrayBuffer-backed values (cross-origin isolated pages only).
 */
async function badInputSweep({ only, exclude, shared }) {
  const h = await window.harness;
  const norm = await h.FusedRmsNorm.create();
  const other = await h.FusedRmsNorm.create();
  const ROWS = 3, HIDDEN = 5;
  const base = () => h.makeArgs({ rows: ROWS, hidden: HIDDEN, bias: true, beta: true, eps: 1e-5, seed: 3 });
  const ARRAYS = ["input", "residual", "gamma", "beta", "bias"];
  const OPTIONAL = new Set(["residual", "beta", "bias"]);
  const TE = "TypeError", SE = "ShapeError";

  const iframe = document.createElement("iframe");
  document.body.append(iframe);
  const Realm = iframe.contentWindow;

  // Per-array values: [label, (goodArray, field) => value, expectation]. An expectation is
  // { name, arg } for a rejection, "ok" for a correct result (the value standing in for the
  // good array), "absent" for a correct result as if the field were not given, or
  // { name, arg, orOk: true } where either is acceptable (an exotic object).
  const lengthArg = (field, len) =>
    field === "input" ? (len % HIDDEN !== 0 ? "input" : "residual") : field;
  const detachedBy = (how) => (a) => {
    const c = a.slice();
    if (how === "structuredClone") structuredClone(c.buffer, { transfer: [c.buffer] });
    else c.buffer.transfer();
    return c;
  };
  const arrayValues = [
    ["a plain Array", (a) => Array.from(a), (f) => ({ name: TE, arg: f })],
    ["a Float64Array", (a) => new Float64Array(a), (f) => ({ name: TE, arg: f })],
    ["an Int32Array", (a) => new Int32Array(a), (f) => ({ name: TE, arg: f })],
    ["a Uint8Array", (a) => new Uint8Array(a), (f) => ({ name: TE, arg: f })],
    ["a Uint32Array of the same bytes", (a) => new Uint32Array(a.buffer, a.byteOffset, a.length), (f) => ({ name: TE, arg: f })],
    ["a BigInt64Array", (a) => new BigInt64Array(a.length), (f) => ({ name: TE, arg: f })],
    // f16 bits (Uint16Array, Float16Array) are f16 data to a package that takes f16: then
    // an f16 input next to f32 arrays is a mismatch the message may pin on residual.
    ["a Uint16Array", (a) => new Uint16Array(a.length), (f) => ({ name: TE, arg: f === "input" ? ["input", "residual"] : f })],
    ...(typeof Float16Array === "function"
      ? [["a Float16Array", (a) => new Float16Array(a), (f) => ({ name: TE, arg: f === "input" ? ["input", "residual"] : f })]]
      : []),
    ["a DataView", (a) => new DataView(a.buffer), (f) => ({ name: TE, arg: f })],
    ["an ArrayBuffer", (a) => a.buffer, (f) => ({ name: TE, arg: f })],
    ["a string", () => "1,2,3,4,5", (f) => ({ name: TE, arg: f })],
    ["the empty string", () => "", (f) => ({ name: TE, arg: f })],
    ["null", () => null, (f) => ({ name: TE, arg: f })],
    ["undefined", () => undefined, (f) => (OPTIONAL.has(f) ? "absent" : { name: TE, arg: f })],
    ["the number 0", () => 0, (f) => ({ name: TE, arg: f })],
    ["the number 5", () => 5, (f) => ({ name: TE, arg: f })],
    ["NaN", () => NaN, (f) => ({ name: TE, arg: f })],
    ["true", () => true, (f) => ({ name: TE, arg: f })],
    ["false", () => false, (f) => ({ name: TE, arg: f })],
    ["a bigint", () => 5n, (f) => ({ name: TE, arg: f })],
    ["a symbol", () => Symbol("x"), (f) => ({ name: TE, arg: f })],
    ["a function", () => () => 1, (f) => ({ name: TE, arg: f })],
    ["an empty object", () => ({}), (f) => ({ name: TE, arg: f })],
    ["an array-like object", (a) => ({ length: a.length, 0: 1, 1: 2 }), (f) => ({ name: TE, arg: f })],
    ["a Date", () => new Date(0), (f) => ({ name: TE, arg: f })],
    ["an object with a null prototype", () => Object.create(null), (f) => ({ name: TE, arg: f })],
    ["an object whose constructor getter throws", () => ({ get constructor() { throw new Error("boom"); } }), (f) => ({ name: TE, arg: f })],
    // What JSON.parse gives for data with a "constructor" key.
    ["JSON with \"constructor\": null", () => JSON.parse('{"constructor": null, "length": 5}'), (f) => ({ name: TE, arg: f })],
    ["an object with constructor: undefined", () => ({ constructor: undefined }), (f) => ({ name: TE, arg: f })],
    ["an instance of a user class named GpuTensor", () => new (class GpuTensor { length = 5; })(), (f) => ({ name: TE, arg: f })],
    ["a Proxy of a Float32Array", (a) => new Proxy(a.slice(), {}), (f) => ({ name: TE, arg: f, orOk: true })],
    ["one element too many", (a) => new Float32Array(a.length + 1), (f, a) => ({ name: SE, arg: lengthArg(f, a.length + 1) })],
    ["one element too few", (a) => new Float32Array(a.length - 1), (f, a) => ({ name: SE, arg: lengthArg(f, a.length - 1) })],
    ["an empty Float32Array", () => new Float32Array(0), (f) => ({ name: SE, arg: lengthArg(f, 0) })],
    ["twice as long", (a) => new Float32Array(a.length * 2), (f, a) => ({ name: SE, arg: lengthArg(f, a.length * 2) })],
    ["detached by structuredClone(buf, {transfer})", detachedBy("structuredClone"), (f) => ({ name: TE, arg: f })],
    ["detached by ArrayBuffer.prototype.transfer()", detachedBy("transfer"), (f) => ({ name: TE, arg: f })],
    ["a view at a byteOffset into a bigger buffer", (a) => {
      const big = new Float32Array(a.length + 37).fill(1e30);
      const v = new Float32Array(big.buffer, 4 * 13, a.length);
      v.set(a);
      return v;
    }, () => "ok"],
    ["a subarray in the middle of a bigger array", (a) => {
      const big = new Float32Array(a.length + 8).fill(NaN);
      big.set(a, 3);
      return big.subarray(3, 3 + a.length);
    }, () => "ok"],
    ["a subclass of Float32Array", (a) => {
      class Tensor extends Float32Array {}
      return Tensor.from(a);
    }, () => "ok"],
    ["a Float32Array from another realm (iframe)", (a) => new Realm.Float32Array(a), () => "ok"],
    ["a length-tracking view on a resizable ArrayBuffer", (a) => {
      const v = new Float32Array(new ArrayBuffer(a.byteLength, { maxByteLength: a.byteLength * 4 }));
      v.set(a);
      return v;
    }, (f) => ({ name: TE, arg: f, orOk: true })],
    ["a fixed-length view on a resizable ArrayBuffer", (a) => {
      const v = new Float32Array(new ArrayBuffer(a.byteLength, { maxByteLength: a.byteLength * 4 }), 0, a.length);
      v.set(a);
      return v;
    }, (f) => ({ name: TE, arg: f, orOk: true })],
  ];
  if (typeof norm.upload === "function") {
    // GPU-resident tensors (README: another instance's is a TypeError, a freed one an InvalidStateError).
    arrayValues.push(
      ["a GpuTensor of this instance", (a) => norm.upload(a), () => "ok"],
      ["a GpuTensor one element too long", (a) => norm.upload(new Float32Array(a.length + 1)), (f, a) => ({ name: SE, arg: lengthArg(f, a.length + 1) })],
      ["a freed GpuTensor", (a) => { const t = norm.upload(a); t.free(); return t; }, (f) => ({ name: "InvalidStateError", arg: f })],
      ["a GpuTensor of another instance", (a) => other.upload(a), (f) => ({ name: TE, arg: f })],
    );
  }
  if (shared) {
    arrayValues.push(
      ["backed by a SharedArrayBuffer", (a) => {
        const v = new Float32Array(new SharedArrayBuffer(a.byteLength));
        v.set(a);
        return v;
      }, () => "ok"],
      ["a view at a byteOffset into a SharedArrayBuffer", (a) => {
        const v = new Float32Array(new SharedArrayBuffer(a.byteLength + 64), 20, a.length);
        v.set(a);
        return v;
      }, () => "ok"],
      ["a length-tracking view on a growable SharedArrayBuffer", (a) => {
        const v = new Float32Array(new SharedArrayBuffer(a.byteLength, { maxByteLength: a.byteLength * 4 }));
        v.set(a);
        return v;
      }, (f) => ({ name: TE, arg: f, orOk: true })],
    );
  }

  // A case: label, build() → the arguments, expect: { name, arg, orOk? } or "ok", and for a
  // call that may succeed, want() → plain arguments the result must match.
  const without = (field) => () => { const a = base(); delete a[field]; return a; };
  const cases = [];
  for (const field of ARRAYS) {
    for (const [what, make, expect] of arrayValues) {
      const e = expect(field, base()[field]);
      cases.push({
        label: `${field}: ${what}`,
        build: () => {
          const a = base();
          a[field] = make(a[field], field);
          return a;
        },
        expect: e === "absent" ? "ok" : e,
        want: e === "absent" ? without(field) : base,
      });
    }
    if (OPTIONAL.has(field))
      cases.push({ label: `${field}: left out`, build: without(field), expect: "ok", want: without(field) });
    else
      cases.push({ label: `${field}: left out`, build: () => { const a = base(); delete a[field]; return a; }, expect: { name: TE, arg: field } });
  }

  const hiddenValues = [
    ["the string \"5\"", "5", TE, "hidden"], ["null", null, TE, "hidden"], ["undefined", undefined, TE, "hidden"],
    ["true", true, TE, "hidden"], ["an object", {}, TE, "hidden"], ["[5]", [5], TE, "hidden"], ["5n", 5n, TE, "hidden"],
    ["new Number(5)", new Number(5), TE, "hidden"], ["a null-prototype object", Object.create(null), TE, "hidden"],
    ["a symbol", Symbol("h"), TE, "hidden"],
    ["0", 0, SE, "hidden"], ["-0", -0, SE, "hidden"], ["-1", -1, SE, "hidden"], ["-5", -5, SE, "hidden"],
    ["2.5", 2.5, SE, "hidden"], ["5 + 1e-9", 5 + 1e-9, SE, "hidden"], ["0.5", 0.5, SE, "hidden"],
    ["NaN", NaN, SE, "hidden"], ["Infinity", Infinity, SE, "hidden"], ["-Infinity", -Infinity, SE, "hidden"],
    ["2**32", 2 ** 32, SE, "hidden"], ["2**53", 2 ** 53, SE, "hidden"], ["1e300", 1e300, SE, "hidden"],
    ["Number.MAX_VALUE", Number.MAX_VALUE, SE, "hidden"],
    // Valid integers that do not fit the lengths: the length check names the array.
    ["4 (15 is not a multiple)", 4, SE, "input"], ["2**32 - 1", 2 ** 32 - 1, SE, "input"], ["2**31", 2 ** 31, SE, "input"],
    ["3 (gamma has 5)", 3, SE, "gamma"], ["1 (gamma has 5)", 1, SE, "gamma"], ["15 (gamma has 5)", 15, SE, "gamma"],
  ];
  for (const [what, value, name, arg] of hiddenValues)
    cases.push({ label: `hidden: ${what}`, build: () => ({ ...base(), hidden: value }), expect: { name, arg } });
  cases.push({ label: "hidden: left out", build: () => { const a = base(); delete a.hidden; return a; }, expect: { name: TE, arg: "hidden" } });

  const epsValues = [
    ["-1", -1, SE], ["-1e-30", -1e-30, SE], ["-Number.MIN_VALUE", -Number.MIN_VALUE, SE], ["NaN", NaN, SE],
    ["Infinity", Infinity, SE], ["-Infinity", -Infinity, SE], ["1e39 (Infinity in f32)", 1e39, SE],
    ["Number.MAX_VALUE", Number.MAX_VALUE, SE],
    ["the string \"1e-6\"", "1e-6", TE], ["null", null, TE], ["true", true, TE], ["an object", {}, TE],
    ["1n", 1n, TE], ["new Number(1e-6)", new Number(1e-6), TE], ["a null-prototype object", Object.create(null), TE],
  ];
  for (const [what, value, name] of epsValues)
    cases.push({ label: `eps: ${what}`, build: () => ({ ...base(), eps: value }), expect: { name, arg: "eps" } });
  for (const [what, value] of [["0", 0], ["-0", -0], ["undefined (the default)", undefined], ["1e-45 (subnormal in f32)", 1e-45], ["1e-50 (0 in f32)", 1e-50], ["3e38", 3e38], ["1", 1]])
    cases.push({ label: `eps: ${what} (valid)`, build: () => ({ ...base(), eps: value }), expect: "ok", want: () => ({ ...base(), eps: value ?? 1e-6 }) });

  const NONE = {}; // stands for calling with no argument at all
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const argsValues = [
    ["null", () => null], ["undefined", () => undefined], ["no argument at all", () => NONE], ["the number 5", () => 5],
    ["a string", () => "input"], ["true", () => true], ["a bigint", () => 1n], ["a symbol", () => Symbol("a")],
    ["an Array", () => []], ["an Array holding good args", () => [base()]], ["a function", () => () => base()],
    ["a Float32Array", () => new Float32Array(15)], ["a revoked Proxy", () => revoked.proxy],
  ];
  for (const [what, make] of argsValues)
    cases.push({ label: `args: ${what}`, build: make, expect: { name: TE, arg: "args" } });
  cases.push(
    { label: "args: an empty object", build: () => ({}), expect: { name: TE, arg: "input" } },
    { label: "args: a null-prototype object with no fields", build: () => Object.create(null), expect: { name: TE, arg: "input" } },
    { label: "args: an input getter that throws", build: () => { const a = base(); return Object.defineProperty(a, "input", { get() { throw new Error("boom"); } }); }, expect: { name: TE, arg: "input" } },
    { label: "args: a Proxy whose get trap throws", build: () => new Proxy(base(), { get() { throw new Error("boom"); } }), expect: { name: TE, arg: "input" } },
    // Odd but valid argument objects: they must work.
    // A misspelt or unknown field would silently leave its default in place: it is refused.
    { label: "args: extra unknown fields", build: () => ({ ...base(), outputs: new Float32Array(1), withSum: true, foo: { bar: 1 } }), expect: { name: TE, arg: "args.outputs" } },
    { label: "args: a misspelt field (Eps)", build: () => ({ ...base(), Eps: 1e-3 }), expect: { name: TE, arg: "args.Eps" } },
    { label: "args: a symbol-keyed extra field is not a field", build: () => ({ ...base(), [Symbol("s")]: 1 }), expect: "ok" },
    { label: "args: a null-prototype object with the fields", build: () => Object.assign(Object.create(null), base()), expect: "ok" },
    { label: "args: the fields as getters on a prototype", build: () => { const a = base(); class A { get input() { return a.input; } get residual() { return a.residual; } get gamma() { return a.gamma; } get beta() { return a.beta; } get bias() { return a.bias; } get hidden() { return a.hidden; } get eps() { return a.eps; } } return new A(); }, expect: "ok" },
    { label: "args: a frozen object", build: () => Object.freeze(base()), expect: "ok" },
    { label: "args: a Proxy of good args", build: () => new Proxy(base(), {}), expect: "ok" },
    { label: "args: an object from another realm", build: () => Object.assign(new Realm.Object(), base()), expect: "ok" },
    { label: "args: rows = 0 (empty input and residual)", build: () => ({ ...base(), input: new Float32Array(0), residual: new Float32Array(0) }), expect: "ok", want: () => ({ ...base(), input: new Float32Array(0), residual: new Float32Array(0) }) },
  );
  for (const c of cases) c.want ??= base;

  const selected = cases.filter((c) => (!only || new RegExp(only).test(c.label)) && !(exclude && new RegExp(exclude).test(c.label)));
  const failures = [];
  let calls = 0;
  for (const c of selected) {
    for (const method of ["run", "runWithSum"]) {
      const label = `${method}(${c.label})`;
      let args, promise;
      try {
        args = c.build();
      } catch (e) {
        failures.push(`${label}: building the case failed: ${e}`);
        continue;
      }
      const expectOk = c.expect === "ok";
      try {
        promise = args === NONE ? norm[method]() : norm[method](args);
      } catch (e) {
        failures.push(`${label} threw synchronously instead of rejecting: ${e?.name}: ${e?.message}`);
        continue;
      } finally {
        calls++;
      }
      if (!(promise instanceof Promise)) {
        failures.push(`${label} returned ${Object.prototype.toString.call(promise)}, not a Promise`);
        continue;
      }
      const r = await h.settle(promise);
      if (r.ok !== undefined || !r.err) {
        if (expectOk || c.expect.orOk) {
          const want = c.want();
          const rep = method === "run" ? h.check(want, r.ok) : h.check(want, r.ok?.output, r.ok?.sum);
          if (!rep.ok) failures.push(`${label} resolved with a wrong result: ${rep.problems.join("; ")}`);
        } else {
          failures.push(`${label} resolved, want ${c.expect.name} naming ${c.expect.arg}`);
        }
      } else if (expectOk) {
        failures.push(`${label} rejected (${r.err.name}: ${r.err.message}), want a correct result`);
      } else {
        const { name, arg } = c.expect;
        if (!r.err.isError) failures.push(`${label} rejected with a non-Error: ${r.err.message}`);
        else if (r.err.name !== name) failures.push(`${label}: ${r.err.name} (${r.err.message}), want ${name}`);
        else if (![arg].flat().some((a) => r.err.message.startsWith(`${a}:`)))
          failures.push(`${label}: message ${JSON.stringify(r.err.message)} does not start with "${[arg].flat().join(":\" or \"")}:"`);
      }
      // The instance keeps working.
      const g = h.makeArgs({ rows: 2, hidden: 7, bias: true, beta: true, seed: calls });
      const after = await h.settle(norm.run(g));
      const rep = after.err ? { ok: false, problems: [`${after.err.name}: ${after.err.message}`] } : h.check(g, after.ok);
      if (!rep.ok) failures.push(`after ${label}, a good call fails: ${rep.problems.join("; ")}`);
    }
  }
  // A method call that threw out of wasm midway could leave the instance borrowed: free()
  // would then throw ("recursive use of an object").
  let freed = "ok";
  try {
    norm.free();
  } catch (e) {
    freed = `${e?.name}: ${e?.message}`;
  }
  if (freed !== "ok") failures.push(`free() after the sweep threw: ${freed}`);
  other.free();
  iframe.remove();
  return { cases: selected.length, calls, failures };
}

// Cases checked in pages of their own (see below), not in the shared sweep.
const OWN_PAGE = [
  {
    title: "exotic values (proxies, revoked proxies, a null, undefined or throwing `constructor`) reject, never throw, and the instance stays freeable",
    pattern: "constructor getter throws|constructor\": null|constructor: undefined|Proxy of a Float32Array|revoked Proxy",
  },
  {
    title: "a Float32Array over a resizable ArrayBuffer (length-tracking or fixed) gives a correct result or rejects with a TypeError, never throws",
    pattern: "resizable ArrayBuffer",
  },
  {
    title: "a subclass of Float32Array is accepted and gives the correct result",
    pattern: "subclass of Float32Array",
  },
  {
    title: "a Float32Array from another realm (iframe) is accepted and gives the correct result",
    pattern: "another realm \\(iframe\\)",
  },
  {
    title: "an object of a user class named GpuTensor is a TypeError naming the argument, not taken for a freed GpuTensor",
    pattern: "user class named GpuTensor",
  },
  {
    title: "a Float32Array passed as args (run(input) by mistake) is a TypeError naming args",
    pattern: "args: a Float32Array$",
  },
];

test("bad input, exhaustively: argument × bad value × run/runWithSum rejects with the named error, then a good call works", { timeout: 120_000 }, async (t) => {
  const exclude = OWN_PAGE.map((k) => k.pattern).join("|") || undefined;
  const r = await inHarness(badInputSweep, { exclude, shared: false });
  t.diagnostic(`${r.cases} cases, ${r.calls} bad or odd calls, each followed by a good one`);
  assert.ok(r.cases > 250, `the cross product is too small: ${r.cases}`);
  assert.deepEqual(r.failures, []);
});

// Each in a page of its own: a synchronous throw out of wasm would leak wasm stack (see
// below), which must not weaken the page the other tests share.
for (const k of OWN_PAGE) {
  test(`bad input: ${k.title}`, async () => {
    const p = await harnessPage(servers.plain, { watch: [] });
    try {
      const r = await p.evaluate(badInputSweep, { only: k.pattern, shared: false });
      assert.ok(r.cases > 0);
      assert.deepEqual(r.failures, []);
    } finally {
      await p.context().close();
    }
  });
}

test("bad input: 2000 calls with an exotic input reject without a synchronous throw and leave the module working (wasm memory intact, new instances fine)", async (t) => {
  const p = await harnessPage(servers.plain, { watch: [] });
  try {
    const r = await p.evaluate(async () => {
      const h = await window.harness;
      const good = () => h.makeArgs({ rows: 3, hidden: 5, seed: 1 });
      const out = { threw: 0, rejected: 0 };
      for (let i = 0; i < 2000; i++) {
        try {
          await h.norm.run({ ...good(), input: { constructor: undefined } }).catch(() => out.rejected++);
        } catch {
          out.threw++;
        }
        if (i % 250 === 249) {
          const g = good();
          const r = await h.settle(Promise.resolve().then(() => h.norm.run(g)));
          if (r.err || !h.check(g, r.ok).ok) {
            out.brokenAfter = i + 1;
            out.error = r.err ? `${r.err.name}: ${r.err.message}` : "wrong result";
            break;
          }
        }
      }
      try {
        const n = await h.FusedRmsNorm.create();
        const g = good();
        out.freshInstance = h.check(g, await n.run(g)).ok ? "ok" : "wrong result";
      } catch (e) {
        out.freshInstance = `${e.name}: ${e.message}`;
      }
      return out;
    });
    t.diagnostic(JSON.stringify(r));
    assert.equal(r.brokenAfter, undefined, `the module broke after ${r.brokenAfter} bad calls: ${r.error}`);
    assert.equal(r.freshInstance, "ok");
    assert.equal(r.threw, 0, "bad calls threw synchronously");
  } finally {
    await p.context().close();
  }
});

test("SharedArrayBuffer-backed Float32Arrays (cross-origin isolated page) are accepted and correct", async (t) => {
  const watch = [];
  const p = await harnessPage(servers.isolated, { watch });
  try {
    const env = await p.evaluate(async () => {
      await window.harness;
      return { isolated: globalThis.crossOriginIsolated, sab: typeof SharedArrayBuffer };
    });
    assert.deepEqual(env, { isolated: true, sab: "function" }, "COOP/COEP make the page cross-origin isolated");
    const r = await p.evaluate(badInputSweep, { only: "SharedArrayBuffer|byteOffset", exclude: "growable", shared: true });
    t.diagnostic(`${r.cases} SharedArrayBuffer/byteOffset cases`);
    assert.ok(r.cases >= 15);
    assert.deepEqual(r.failures, []);
    // Every array shared at once, bigger shape, both methods.
    const all = await p.evaluate(async () => {
      const h = await window.harness;
      const a = h.makeArgs({ rows: 7, hidden: 1000, bias: true, beta: true, seed: 4 });
      for (const f of ["input", "residual", "gamma", "beta", "bias"]) {
        const v = new Float32Array(new SharedArrayBuffer(a[f].byteLength));
        v.set(a[f]);
        a[f] = v;
      }
      const y = h.check(a, await h.norm.run(a));
      const { output, sum } = await h.norm.runWithSum(a);
      return [y, h.check(a, output, sum)].flatMap((r) => r.problems);
    });
    assert.deepEqual(all, []);
    assert.deepEqual(watch, [], "console errors in the isolated page");
  } finally {
    await p.context().close();
  }
});

test("bad input: a Float32Array over a growable SharedArrayBuffer gives a correct result or rejects with a TypeError, never throws", async () => {
  const p = await harnessPage(servers.isolated, { watch: [] });
  try {
    const r = await p.evaluate(badInputSweep, { only: "growable SharedArrayBuffer", shared: true });
    assert.ok(r.cases > 0);
    assert.deepEqual(r.failures, []);
  } finally {
    await p.context().close();
  }
});
