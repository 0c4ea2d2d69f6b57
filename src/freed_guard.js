
// Appended to wasm-bindgen's glue by scripts/build.sh. After free() the glue would pass a
// null pointer to Rust, which throws synchronously; the contract is a GpuDeviceError
// rejection, so the Promise-returning methods check the handle first, and a second free()
// (a `using` block after an explicit free, say) does nothing.
{
  const free = FusedRmsNorm.prototype.free;
  FusedRmsNorm.prototype.free = function () {
    if (this.__wbg_ptr) free.call(this);
  };
  if (Symbol.dispose) FusedRmsNorm.prototype[Symbol.dispose] = FusedRmsNorm.prototype.free;
}
for (const name of ["run", "runWithSum", "timeDispatches"]) {
  const call = FusedRmsNorm.prototype[name];
  Object.defineProperty(FusedRmsNorm.prototype, name, {
    configurable: true,
    writable: true,
    value: function (...args) {
      if (!this.__wbg_ptr) {
        const e = new Error(`${name}: expected a live FusedRmsNorm, got one that was freed`);
        e.name = "GpuDeviceError";
        return Promise.reject(e);
      }
      return call.apply(this, args);
    },
  });
}
