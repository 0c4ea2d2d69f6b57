// The output preview of the demo and the worker page: the first values of the first rows of a
// result, each with its f64 reference as a tooltip.
import { referenceRow } from "../lib/reference.js";

const PREVIEW_ROWS = 4;
const PREVIEW_COLS = 8;

/** Into #output; `host` are the f32 arguments the reference is computed from. */
export function renderPreview(y, host, { rows, hidden, dtype = "f32" }) {
  const out = document.getElementById("output");
  if (rows === 0) {
    const type = dtype === "f16" ? "Uint16Array" : "Float32Array";
    out.innerHTML = `<p class="placeholder">rows = 0: the output is an empty ${type}.</p>`;
    return;
  }
  const shownRows = Math.min(rows, PREVIEW_ROWS);
  const shownCols = Math.min(hidden, PREVIEW_COLS);
  const table = document.createElement("table");
  table.className = "data";
  const head = table.createTHead().insertRow();
  const corner = document.createElement("th");
  corner.scope = "col";
  corner.textContent = "row \\ col";
  head.append(corner);
  for (let c = 0; c < shownCols; c++) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = String(c);
    head.append(th);
  }
  const body = table.createTBody();
  for (let r = 0; r < shownRows; r++) {
    const want = referenceRow(host, r).y;
    const tr = body.insertRow();
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = String(r);
    tr.append(th);
    for (let c = 0; c < shownCols; c++) {
      const td = tr.insertCell();
      td.textContent = y[r * hidden + c].toFixed(4);
      td.title = `reference ${want[c].toPrecision(9)}`;
    }
  }
  const caption = table.createCaption();
  const decoded = dtype === "f16" ? ", f16 bits decoded" : "";
  caption.textContent = `First ${shownCols} of ${hidden} values in the first ${shownRows} of ${rows} rows${decoded} (hover a value for its f64 reference).`;
  out.replaceChildren(table);
}
