// The command line of bench/dawn/bench.mjs and of bench/chrome's pages: the section, its
// --options, and the shapes they name.

export const DEFAULT_SHAPES = "1x896,1x4096,16x4096,128x4096,1000x4099,2048x4096,16384x4096,32768x896,70000x1024";

/**
 * `argv` (process.argv.slice(2)): the section, then `--name value` pairs. `opt` holds the
 * values as given; `num(name, fallback)` reads one as a number.
 */
export function parseArgs(argv) {
  const section = argv[0];
  const opt = Object.fromEntries(argv.slice(1).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1] ?? ""]] : acc), []));
  const num = (k, d) => (opt[k] === undefined ? d : Number(opt[k]));
  return { section, opt, num };
}

export function parseShapes(s) {
  return s.split(",").filter(Boolean).map((t) => {
    const [r, h] = t.toLowerCase().split("x").map(Number);
    if (!(r >= 1 && h >= 1)) throw new Error(`--shapes: bad shape ${t} (want ROWSxHIDDEN)`);
    return [r, h];
  });
}
