// End to end in a third browser: WebKit, Safari's engine (JavaScriptCore runs its JS and
// wasm), as WebKitGTK's MiniBrowser. Debian's build has no WebGPU, so the package runs on its
// CPU backend, as it does in Safari before 26. The tests are no-webgpu-suite.mjs's (the packed
// package in a consumer page, against the f64 reference; the demo page and the worker example),
// as in firefox.test.mjs. Needs `bash scripts/build.sh` first, and webkit2gtk-driver and xvfb
// (`bash scripts/setup.sh` installs them): where they are missing the tests fail, never skip.
//
//   node --test --test-reporter=spec tests/e2e/browsers/webkit.test.mjs
import { noWebGpuSuite } from "../support/no-webgpu-suite.mjs";
import { launchWebKit } from "../support/webkit.mjs";

// A WebKit user agent, Safari's token and not Chrome's (Chromium's says AppleWebKit too).
const userAgent = /^(?!.*\b(?:Chrome|Chromium|HeadlessChrome)\/).*\bAppleWebKit\/[\d.]+.*\bSafari\/[\d.]+/;

noWebGpuSuite({ name: "WebKit", short: "WebKit", userAgent, launch: launchWebKit });
