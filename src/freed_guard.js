
// Appended to wasm-bindgen's glue by scripts/build.sh. After free() the glue would pass a
// null pointer to Rust, which throws synchronously; the contract is a GpuDeviceError
// rejection, so the Promise-returning methods check the handle first, and a second free()
// (a `using` block after an explicit free, say) does nothing.
for (const [Class, methods] of [
  [FusedRmsNorm, ["run", "runWithSum", "timeDispatches", "gpuTime"]],
  [GpuTensor, ["read"]],
]) {
  for (const name of methods) {
    const call = Class.prototype[name];
    Object.defineProperty(Class.prototype, name, {
      configurable: true,
      writable: true,
      value: function (...args) {
        if (!this.__wbg_ptr) {
          const e = new Error(`${name}: expected a live ${Class.name}, got one that was freed`);
          e.name = "GpuDeviceError";
          return Promise.reject(e);
        }
        return call.apply(this, args);
      },
    });
  }
  const free = Class.prototype.free;
  Class.prototype.free = function () {
    if (this.__wbg_ptr) free.call(this);
  };
  if (Symbol.dispose) Class.prototype[Symbol.dispose] = Class.prototype.free;
}
