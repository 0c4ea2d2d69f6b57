// In-page helpers of the suites that hand the package the same call as a plain object and as
// an object with a prototype of its own, whose fields the one reader (src/js/call.js) must
// read alike (served at /test-lib by support/page.mjs, as `window.lib.readings`).

/**
 * The same fields on an object with a prototype of its own (its getters copied as getters,
 * and a field inherited beside them).
 */
export const withPrototype = (args) => Object.create({ inherited: 1 }, Object.getOwnPropertyDescriptors(args));

/**
 * What the package says it expects of an array argument (src/js/args.rs), where the call
 * needs one and where it may be left out: the start of the TypeError of any other value.
 */
export const EXPECTED_ARRAY = {
  required: "expected a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor or a GPUBuffer",
  optional: "expected a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor, a GPUBuffer or undefined",
};

/**
 * The bad values a call's object can hold whatever its arrays are, for rejectAlike: `base` a
 * good call of hidden 64 (gamma of 64 elements), its arrays typed arrays or tensors. The
 * messages are src/js/args.rs's and src/call/checks.rs's.
 */
export const badValues = (base) => ({
  "eps -1": ["ShapeError", { ...base, eps: -1 }, "eps: expected a finite number >= 0, got -1"],
  "eps NaN": ["ShapeError", { ...base, eps: NaN }, "eps: expected a finite number >= 0, got NaN"],
  "eps a string": ["TypeError", { ...base, eps: "1e-5" }, 'eps: expected a number or undefined, got the string "1e-5"'],
  "hidden 0": ["ShapeError", { ...base, hidden: 0 }, "hidden: expected an integer from 1 to 4294967295, got 0"],
  "hidden 2.5": ["ShapeError", { ...base, hidden: 2.5 }, "hidden: expected an integer from 1 to 4294967295, got 2.5"],
  "hidden 48": ["ShapeError", { ...base, hidden: 48 }, "gamma: expected length 48 (hidden), got 64"],
  "hidden a string": ["TypeError", { ...base, hidden: "64" }, 'hidden: expected a number (an integer >= 1), got the string "64"'],
  "inPlace a string": ["TypeError", { ...base, inPlace: "yes" }, 'inPlace: expected a boolean or undefined, got the string "yes"'],
  "output gpux": ["TypeError", { ...base, output: "gpux" }, 'output: expected "array", "gpu", a typed array for the result or undefined, got the string "gpux"'],
  "a misspelt Eps": ["TypeError", { ...base, Eps: 1e-5 }, /^args\.Eps: expected one of input, .*, got an unknown field \(did you mean eps\?\)$/],
  "beta null": ["TypeError", { ...base, beta: null }, `beta: ${EXPECTED_ARRAY.optional}, got null`],
  "no gamma": ["TypeError", { ...base, gamma: undefined }, `gamma: ${EXPECTED_ARRAY.required}, got undefined`],
});

/** The same elements, bit for bit (NaN equal to NaN, -0 unequal to 0). */
/** Records with `record(encoder)` into a new encoder of `n.device` and submits it. */
export const submitter = (n) => (record) => {
  const e = n.device.createCommandEncoder();
  record(e);
  n.device.queue.submit([e.finish()]);
};

export const sameBits = (x, y) => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));

/**
 * For each named bad argument object, given as `[errorName, args, message]` (`message` the
 * whole message, or a RegExp anchored on its distinctive part): `run` and `runWithSum`, each
 * on the object in a plain object and one with a prototype, reject with that error name and message, the
 * same all four ways. Returns a line for each that does not.
 */
export async function rejectAlike(n, bad) {
  const failures = [];
  for (const [name, [want, args, message]] of Object.entries(bad)) {
    const got = [];
    for (const call of [(o) => n.run(o), (o) => n.runWithSum(o)]) {
      for (const o of [args, withPrototype(args)]) {
        let e;
        try {
          e = await call(o).then(() => "resolved", (x) => x);
        } catch (x) {
          e = `threw ${x?.name}`;
        }
        got.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
      }
    }
    if (new Set(got).size !== 1) failures.push(`${name}: run, runWithSum, a plain object and one with a prototype differ: ${got.join(" | ")}`);
    const text = got[0].startsWith(`${want}: `) ? got[0].slice(want.length + 2) : undefined;
    const pinned = message instanceof RegExp ? message.test(text) : text === message;
    if (text === undefined || !pinned) failures.push(`${name}: want ${want}: ${message}, got ${got[0]}`);
  }
  return failures;
}
