// The package's entry point: everything wasm-bindgen's module exports, and its `init()`.
export * from "./webgpu_rmsnorm.js";
export { default } from "./webgpu_rmsnorm.js";
