// The package's entry point: wasm-bindgen's module as generated, with an `init()` that also
// finds the `.wasm` beside it where `fetch` cannot read a `file:` URL (Node). Browsers, workers,
// bundlers and Deno load it exactly as wasm-bindgen's own `init()` does.
import initWasm from "./webgpu_rmsnorm.js";

export * from "./webgpu_rmsnorm.js";

/** Loads and instantiates the module; with no argument, the `.wasm` that ships beside this file. */
export default async function init(moduleOrPath) {
  return initWasm(moduleOrPath ?? (await wasmFromDisk()));
}

/** In Node, the `.wasm` read from disk; elsewhere undefined (wasm-bindgen fetches it). */
async function wasmFromDisk() {
  const url = new URL("webgpu_rmsnorm_bg.wasm", import.meta.url);
  const node = typeof process === "object" && process?.versions?.node && typeof Deno === "undefined";
  if (url.protocol !== "file:" || !node) return undefined;
  // Named at run time, so that no bundler tries to resolve a Node module for a browser.
  const fs = process.getBuiltinModule?.("node:fs/promises") ?? (await import(/* @vite-ignore */ ["node", "fs/promises"].join(":")));
  return { module_or_path: await fs.readFile(url) };
}
