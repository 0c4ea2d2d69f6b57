// The clock sampler in Node: nvidia-smi's line for clock.mjs, or null where there is no nvidia-smi (a machine without an NVIDIA driver).
import { execFile } from "node:child_process";
import { SMI_ARGS, SMI_ARGS_NEW } from "./clock.mjs";

/**
 * A sampler: each call runs nvidia-smi once (asynchronously, so that the GPU work the caller
 * submitted runs meanwhile) and resolves with its output, or null once nvidia-smi proved
 * absent or failing. Tries the old field name first, then the new one, and keeps what worked.
 */
export function smiSampler(bin = process.env.NVIDIA_SMI ?? "nvidia-smi") {
  let args = SMI_ARGS;
  let gone = false;
  const once = (a) =>
    new Promise((resolve) => execFile(bin, a, { timeout: 5000 }, (err, stdout, stderr) => resolve(err ? { err, text: `${stdout}${stderr}` } : { text: stdout })));
  return async () => {
    if (gone) return null;
    let r = await once(args);
    if (r.err && args === SMI_ARGS && /not a valid field|Invalid/i.test(r.text)) r = await once((args = SMI_ARGS_NEW));
    if (r.err) {
      gone = true; // ENOENT (no nvidia-smi) or a driver that does not answer: say so once, then "n/a"
      console.error(`  · nvidia-smi: ${r.err.code === "ENOENT" ? "not found" : r.text.trim() || r.err.message}; the SM clock is n/a`);
      return null;
    }
    return r.text;
  };
}
