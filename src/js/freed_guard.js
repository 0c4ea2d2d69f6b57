
// Appended to wasm-bindgen's glue by scripts/build.sh.
//
// After free() (or on an object made with `new` instead of `create`/`upload`) the glue
// would pass a null pointer to Rust, which throws a generic Error ("null pointer passed to
// rust"). The contract is one named error for every member of a dead object,
// InvalidStateError: a rejection from the Promise-returning methods, a throw from the
// synchronous ones and the getters. A second free() (a `using` block after an explicit
// free, say) does nothing. And `create` before `init()` has finished rejects the same way
// instead of throwing a TypeError from deep inside the glue.
function invalidState(message) {
  const e = new Error(message);
  e.name = "InvalidStateError";
  return e;
}

const ASYNC_MEMBERS = new Set(["run", "runWithSum", "timeDispatches", "gpuTime", "read", "prepare"]);

for (const Class of [FusedRmsNorm, GpuTensor]) {
  const proto = Class.prototype;
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name === "constructor" || name === "free" || name.startsWith("__")) continue;
    const d = Object.getOwnPropertyDescriptor(proto, name);
    const dead = () => invalidState(`${name}: expected a live ${Class.name}, got one that was freed (or never created)`);
    if (typeof d.value === "function") {
      const call = d.value;
      d.value = ASYNC_MEMBERS.has(name)
        ? function (...args) { return this?.__wbg_ptr ? call.apply(this, args) : Promise.reject(dead()); }
        : function (...args) { if (!this?.__wbg_ptr) throw dead(); return call.apply(this, args); };
    } else {
      const { get, set } = d;
      if (get) d.get = function () { if (!this?.__wbg_ptr) throw dead(); return get.call(this); };
      if (set) d.set = function (v) { if (!this?.__wbg_ptr) throw dead(); set.call(this, v); };
    }
    Object.defineProperty(proto, name, d);
  }
  const free = proto.free;
  proto.free = function () {
    if (this?.__wbg_ptr) free.call(this);
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
