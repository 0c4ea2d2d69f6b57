// The case matrix of the suites of the packed package (package.test.mjs in Chromium on
// WebGPU, no-webgpu-suite.mjs in Firefox and WebKit on the CPU backend): hidden × rows × bias
// × beta × eps, eps undefined meaning the default. The widths include ones the CPU backend's
// SIMD lanes split unevenly (1, 5, 4099) and zero rows.
export const CASES = [];
for (const hidden of [1, 4, 5, 768, 4099])
  for (const rows of [0, 1, 3])
    for (const bias of [false, true])
      for (const beta of [false, true])
        for (const eps of [0, 1e-6, 1e-2, undefined]) CASES.push({ rows, hidden, bias, beta, eps });
