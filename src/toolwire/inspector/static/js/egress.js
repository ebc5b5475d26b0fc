// The egress panel of a stored run: the bytes of tool output it sent each provider
// (GET /api/runs/{id}/egress), one row per provider, tool, data class and integrity label.
// "Wire" counts every tool result each request carried (every copy sent); "new" the results
// new to the conversation in each request. Every value reaches the page as text.

import { call, errorText } from "./api.js";
import { dataTable, h } from "./dom.js";

const COLUMNS = ["Provider", "Tool", "Data class", "Label", "New bytes", "Wire bytes"];

export async function egressPanel(id) {
  let ledger;
  try {
    ledger = await call("GET", `/runs/${encodeURIComponent(id)}/egress`);
  } catch (err) {
    return h("p", { class: "banner error" }, errorText(err, "The egress ledger could not be loaded."));
  }
  const lines = Array.isArray(ledger.lines) ? ledger.lines : [];
  const title = h("h4", {}, "Tool output sent to providers");
  if (!lines.length) {
    return h("section", { class: "egress", "data-testid": "egress" }, title,
      h("p", { class: "muted" }, "No tool output was sent."));
  }
  const rows = lines.map((line) => h("tr", {},
    ...["provider", "tool", "data_class", "label"].map((key) => h("td", {}, String(line[key] ?? "-"))),
    h("td", { class: "num" }, bytes(line.new_bytes)),
    h("td", { class: "num" }, bytes(line.wire_bytes))));
  const total = `${bytes(ledger.wire_bytes)} bytes on the wire, ${bytes(ledger.new_bytes)} new`;
  return h("section", { class: "egress", "data-testid": "egress" }, title,
    dataTable("data egress-table", COLUMNS.map((c) => h("th", {}, c)), rows,
      "Tool output sent", total));
}

function bytes(value) {
  return Number.isFinite(value) ? value.toLocaleString("en") : "?";
}
