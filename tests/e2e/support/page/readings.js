// In-page helpers of the suites that compare the package's two readings of an argument
// object (served at /test-lib by support/page.mjs, as `window.lib.readings`).

/**
 * The same fields on an object with a prototype of its own: the package reads such an object
 * field by field (its getters copied as getters), where a plain object takes the one-step path.
 */
export const fieldByField = (args) => Object.create({ inherited: 1 }, Object.getOwnPropertyDescriptors(args));

/**
 * What the package says it expects of an array argument (src/js/args.rs), where the call
 * needs one and where it may be left out: the start of the TypeError of any other value.
 */
export const EXPECTED_ARRAY = {
  required: "expected a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor or a GPUBuffer",
  optional: "expected a Float32Array (or Uint16Array/Float16Array for f16), a GpuTensor, a GPUBuffer or undefined",
};

/** The same elements, bit for bit (NaN equal to NaN, -0 unequal to 0). */
export const sameBits = (x, y) => x.length === y.length && x.every((v, i) => Object.is(v, y[i]));

/**
 * For each named bad argument object, given as `[errorName, args, message]` (`message` the
 * whole message, or a RegExp anchored on its distinctive part): `run` and `runWithSum`, each
 * on the object in one step and field by field, reject with that error name and message, the
 * same all four ways. Returns a line for each that does not.
 */
export async function rejectAlike(n, bad) {
  const failures = [];
  for (const [name, [want, args, message]] of Object.entries(bad)) {
    const got = [];
    for (const call of [(o) => n.run(o), (o) => n.runWithSum(o)]) {
      for (const o of [args, fieldByField(args)]) {
        let e;
        try {
          e = await call(o).then(() => "resolved", (x) => x);
        } catch (x) {
          e = `threw ${x?.name}`;
        }
        got.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
      }
    }
    if (new Set(got).size !== 1) failures.push(`${name}: run, runWithSum, one step and field by field differ: ${got.join(" | ")}`);
    const text = got[0].startsWith(`${want}: `) ? got[0].slice(want.length + 2) : undefined;
    const pinned = message instanceof RegExp ? message.test(text) : text === message;
    if (text === undefined || !pinned) failures.push(`${name}: want ${want}: ${message}, got ${got[0]}`);
  }
  return failures;
}
