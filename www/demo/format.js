// Numbers as the page shows them.

export function fmtMs(ms) {
  if (!Number.isFinite(ms)) return "—";
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 0.1) return `${ms.toFixed(2)} ms`;
  return `${(ms * 1000).toFixed(1)} µs`;
}

export function fmtCount(n) {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n / (1 << 20)}M`;
  if (n >= 1 << 10 && n % (1 << 10) === 0) return `${n / (1 << 10)}K`;
  return String(n);
}

/** A power of ten of milliseconds as an axis label: 100 ms, 1 ms, 10 µs. */
export function fmtDecade(d) {
  if (d >= 3) return `${10 ** (d - 3)} s`;
  if (d >= 0) return `${10 ** d} ms`;
  if (d >= -3) return `${Math.round(10 ** (d + 3))} µs`;
  return `${Math.round(10 ** (d + 6))} ns`;
}

/** Small numbers stay readable and `parseFloat` reads them back (tests rely on that). */
export function fmtErr(x) {
  return x === 0 ? "0" : x.toExponential(2);
}
