// The Export panel: a stored run's export record (GET /api/runs/{id}/export: the run as the
// store keeps it, with `schema` and `schema_version`) shown as JSON text, to read, copy or
// save as a file. The JSON is text in a <pre>; the file is a Blob, never markup.

import { call, errorText } from "./api.js";
import { h, pretty } from "./dom.js";
import { scrollableRegion } from "./focus.js";

export async function exportPanel(id) {
  let record;
  try {
    record = await call("GET", `/runs/${encodeURIComponent(id)}/export`);
  } catch (err) {
    return h("p", { class: "banner error" },
      errorText(err, "The export could not be loaded."));
  }
  const text = pretty(record);
  const name = `toolwire-run-${String(record.id).replace(/[^0-9A-Za-z-]/g, "")}.json`;
  const save = h("button", { type: "button", class: "small primary", "data-testid": "download" },
    "Download");
  save.addEventListener("click", () => download(text, name));
  const copy = h("button", { type: "button", class: "small" }, "Copy");
  const note = h("span", { class: "muted" });
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      note.textContent = " Copied.";
    } catch {
      note.textContent = " Copying is not allowed here: select the text instead.";
    }
  });
  return h("section", { class: "export-panel", "data-testid": "export-panel" },
    h("div", { class: "row actions" },
      h("strong", {}, `Export · ${String(record.schema)} version ${String(record.schema_version)}`),
      save, copy, note),
    scrollableRegion(h("pre", { class: "block export-json" }, text), "Export JSON"));
}

// Save `text` as a file: an object URL on an anchor that never enters the page.
function download(text, name) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const anchor = document.createElement("a");
  anchor.href = url;
  anchor.download = name;
  anchor.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
