// nvidia-smi in Node, for bench/shared/clock.mjs's sampler: run once with the given arguments (absent or failing on a machine without an NVIDIA driver).
import { execFile } from "node:child_process";

/**
 * A runner for `smiSampler`: `args` → Promise of { ok, text }, running `bin` asynchronously
 * (so that the GPU work the caller submitted runs meanwhile); `text` is its output, or why it
 * failed ("not found" where there is no such binary).
 */
export function runSmi(bin = process.env.NVIDIA_SMI ?? "nvidia-smi") {
  return (args) =>
    new Promise((resolve) =>
      execFile(bin, args, { timeout: 5000 }, (err, stdout, stderr) =>
        resolve(err ? { ok: false, text: err.code === "ENOENT" ? "not found" : `${stdout}${stderr}`.trim() || err.message } : { ok: true, text: stdout }),
      ),
    );
}
