// The size sweep's chart: time per call against problem size on log-log axes, a series for each
// of the package's backends and one for the plain loop, with a text description for screen
// readers.
import { $ } from "./dom.js";
import { fmtCount, fmtDecade, fmtMs } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";

/** Every series the sweep can draw, in the legend's order; `key` is its field in a point. */
export const SERIES = [
  { key: "gpu", name: "WebGPU" },
  { key: "cpu", name: "CPU backend" },
  { key: "js", name: "JS loop" },
];

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * Axes fixed by the planned sizes, so points fill in left to right as they come.
 * points: [{ n, gpu, cpu, js }] with times in ms; `series`: those of SERIES measured.
 */
export function drawChart(sizes, points, series, emptyText = "Measuring…") {
  const svg = $("chart");
  const W = 960, H = 320, L = 64, R = 20, T = 26, B = 44;
  for (const el of [...svg.children]) if (el.tagName !== "title" && el.tagName !== "desc") el.remove();

  const lx0 = Math.log2(sizes[0]);
  const lx1 = Math.max(Math.log2(sizes.at(-1)), lx0 + 1);
  const x = (n) => L + ((Math.log2(n) - lx0) / (lx1 - lx0)) * (W - L - R);

  const times = points.flatMap((p) => series.map((s) => p[s.key])).filter((t) => t > 0);
  const ly0 = Math.floor(Math.log10(times.length ? Math.min(...times) : 0.01));
  const ly1 = Math.max(Math.ceil(Math.log10(times.length ? Math.max(...times) : 10)), ly0 + 1);
  const y = (ms) => T + (1 - (Math.log10(Math.max(ms, 10 ** ly0)) - ly0) / (ly1 - ly0)) * (H - T - B);

  const g = svgEl("g", {});
  for (let d = ly0; d <= ly1; d++) {
    g.append(svgEl("line", { class: "grid-line", x1: L, x2: W - R, y1: y(10 ** d), y2: y(10 ** d) }));
    g.append(svgEl("text", { x: L - 8, y: y(10 ** d) + 4, "text-anchor": "end" }, fmtDecade(d)));
  }
  const step = Math.ceil(sizes.length / 8);
  sizes.forEach((n, i) => {
    if (i % step) return;
    g.append(svgEl("line", { class: "grid-line", x1: x(n), x2: x(n), y1: T, y2: H - B }));
    g.append(svgEl("text", { x: x(n), y: H - B + 16, "text-anchor": "middle" }, fmtCount(n)));
  });
  g.append(svgEl("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  g.append(svgEl("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  g.append(svgEl("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle" }, "elements (rows × hidden)"));
  g.append(svgEl("text", { x: L, y: T - 12, "text-anchor": "start" }, "time per call (log scale)"));
  svg.append(g);

  if (!points.length) {
    svg.append(svgEl("text", { class: "empty", x: (L + W - R) / 2, y: (T + H - B) / 2, "text-anchor": "middle" }, emptyText));
  }
  for (const { key, name } of series) {
    const pts = points.map((p) => `${x(p.n).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
    svg.append(svgEl("polyline", { class: `series ${key}`, points: pts, "data-series": key }));
    for (const p of points) {
      const c = svgEl("circle", { class: key, cx: x(p.n).toFixed(1), cy: y(p[key]).toFixed(1), r: 3.5 });
      c.append(svgEl("title", {}, `${fmtCount(p.n)} elements: ${fmtMs(p[key])} (${name})`));
      svg.append(c);
    }
  }
  $("chart-desc").textContent = points.length
    ? points.map((p) => `${fmtCount(p.n)} elements: ${series.map((s) => `${s.name} ${fmtMs(p[s.key])}`).join(", ")}`).join("; ")
    : emptyText;
}
