
// Appended to wasm-bindgen's glue by scripts/build.sh.
//
// After free() (or on an object made with `new` instead of `create`/`upload`) the glue
// would pass a null pointer to Rust, which throws a generic Error ("null pointer passed to
// rust"). The contract is one named error for every member of a dead object,
// InvalidStateError: a rejection from the Promise-returning methods, a throw from the
// synchronous ones and the getters. A second free() (a `using` block after an explicit
// free, say) does nothing. And `create` before `init()` has finished rejects the same way
// instead of throwing a TypeError from deep inside the glue.
//
// What this relies on in wasm-bindgen's generated glue (besides the classes and `wasm`, the
// glue's bindings it names) is listed, with why, in src/js/glue.rs, under the same names;
// tests/js_boundary.rs checks that they agree.
const GLUE_POINTER_FIELD = "__wbg_ptr";
const GLUE_INTERNAL_PREFIX = "__";

function invalidState(message) {
  const e = new Error(message);
  e.name = "InvalidStateError";
  return e;
}

const ASYNC_MEMBERS = new Set(["run", "runWithSum", "timeDispatches", "gpuTime", "read", "prepare"]);

for (const Class of [FusedRmsNorm, GpuTensor, BoundNorm]) {
  const proto = Class.prototype;
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name === "constructor" || name === "free" || name.startsWith(GLUE_INTERNAL_PREFIX)) continue;
    const d = Object.getOwnPropertyDescriptor(proto, name);
    const dead = () => invalidState(`${name}: expected a live ${Class.name}, got one that was freed (or never created)`);
    if (typeof d.value === "function") {
      const call = d.value;
      d.value = ASYNC_MEMBERS.has(name)
        ? function (...args) { return this?.[GLUE_POINTER_FIELD] ? call.apply(this, args) : Promise.reject(dead()); }
        : function (...args) { if (!this?.[GLUE_POINTER_FIELD]) throw dead(); return call.apply(this, args); };
    } else {
      const { get, set } = d;
      if (get) d.get = function () { if (!this?.[GLUE_POINTER_FIELD]) throw dead(); return get.call(this); };
      if (set) d.set = function (v) { if (!this?.[GLUE_POINTER_FIELD]) throw dead(); set.call(this, v); };
    }
    Object.defineProperty(proto, name, d);
  }
  const free = proto.free;
  proto.free = function () {
    if (this?.[GLUE_POINTER_FIELD]) free.call(this);
  };
  if (Symbol.dispose) proto[Symbol.dispose] = proto.free;
}

{
  const create = FusedRmsNorm.create;
  FusedRmsNorm.create = function (...args) {
    if (wasm === undefined) {
      return Promise.reject(invalidState("create: expected the module to be initialized first: call `await init()` (the default export) before FusedRmsNorm.create()"));
    }
    return create.apply(this, args);
  };
}
