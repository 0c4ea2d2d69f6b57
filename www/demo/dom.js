// The page's element lookup and its status line: the one place that says what the page is
// doing, and where every error, the library's or the page's own, is shown by name.

export const $ = (id) => document.getElementById(id);

export function setStatus(state, text) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = text;
}

export function showError(e) {
  const s = $("status");
  s.dataset.state = "error";
  s.replaceChildren();
  const name = document.createElement("strong");
  name.className = "err-name";
  name.textContent = e?.name ?? "Error";
  s.append(name, `: ${e?.message ?? String(e)}`);
}

/** An error of the page's own checks, named like the library's so that it reads the same. */
export function pageError(name, message) {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** Resolves after the next paint, so that a label or a progress bar shows before busy work. */
export const nextFrame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

/**
 * A data table in its scrolling box: the table's `id`, a header row of `columns` (a column's
 * class by its text in `classes`), and the body to fill. Append `box` to the page.
 */
export function dataTable(id, columns, classes = {}) {
  const box = document.createElement("div");
  box.className = "table-box";
  const table = document.createElement("table");
  table.className = "data";
  table.id = id;
  const head = table.createTHead().insertRow();
  for (const text of columns) {
    const th = document.createElement("th");
    th.scope = "col";
    if (classes[text]) th.className = classes[text];
    th.textContent = text;
    head.append(th);
  }
  box.append(table);
  return { box, table, body: table.createTBody() };
}
