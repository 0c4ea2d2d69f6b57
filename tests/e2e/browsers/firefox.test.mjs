// End to end in a second browser: Firefox ESR, which has no WebGPU, so the package runs on its
// CPU backend. The tests are no-webgpu-suite.mjs's (the packed package in a consumer page,
// against the f64 reference; the demo page and the worker example), as in webkit.test.mjs.
// Needs `bash scripts/build.sh` first, and firefox-esr (`bash scripts/setup.sh` installs it):
// where it is missing the tests fail, never skip.
//
//   node --test --test-reporter=spec tests/e2e/browsers/firefox.test.mjs
import { firefoxBrowser } from "../support/firefox.mjs";
import { noWebGpuSuite } from "../support/no-webgpu-suite.mjs";

noWebGpuSuite({ name: "Firefox ESR", short: "Firefox", userAgent: /\bFirefox\/\d+/, launch: firefoxBrowser });
