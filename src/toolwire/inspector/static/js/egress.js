// The egress panel: the bytes of tool output a run sent each provider, one row per provider,
// tool, data class and integrity label. "Wire" counts every tool result each request carried
// (every copy sent); "new" the results new to the conversation in each request. A stored run's
// comes from GET /api/runs/{id}/egress; a live run's is summed from its stream's `egress` lines
// (LiveLedger), in the store's order, so that the run opened later shows the same table. Every
// value reaches the page as text.

import { call, errorText } from "./api.js";
import { dataTable, h } from "./dom.js";

const COLUMNS = ["Provider", "Tool", "Data class", "Label", "New bytes", "Wire bytes"];
const GROUPS = ["provider", "tool", "data_class", "label"];

export async function egressPanel(id) {
  let ledger;
  try {
    ledger = await egressOf(id);
  } catch (err) {
    return h("p", { class: "banner error" }, errorText(err, "The egress ledger could not be loaded."));
  }
  return egressTable(ledger);
}

export function egressOf(id) {
  return call("GET", `/runs/${encodeURIComponent(id)}/egress`);
}

// The panel of a ledger: `{lines: [{provider, tool, data_class, label, new_bytes,
// wire_bytes}], new_bytes, wire_bytes}`. It folds under its title (a keyboard's tab stop:
// Enter or Space folds and unfolds it); `open` says whether it starts unfolded.
export function egressTable(ledger, open = true) {
  const lines = Array.isArray(ledger.lines) ? ledger.lines : [];
  const title = h("summary", {}, h("h4", { class: "egress-title" }, "Tool output sent to providers"));
  const panel = (...body) => {
    const box = h("details", { class: "egress", "data-testid": "egress" }, title, ...body);
    box.open = open;
    return box;
  };
  if (!lines.length) return panel(h("p", { class: "muted" }, "No tool output was sent."));
  const rows = lines.map((line) => h("tr", {},
    ...GROUPS.map((key) => h("td", {}, String(line[key] ?? "-"))),
    h("td", { class: "num" }, bytes(line.new_bytes)),
    h("td", { class: "num" }, bytes(line.wire_bytes))));
  const total = `${bytes(ledger.wire_bytes)} bytes on the wire, ${bytes(ledger.new_bytes)} new`;
  return panel(dataTable("data egress-table", COLUMNS.map((c) => h("th", {}, c)), rows,
    "Tool output sent", total));
}

// A live run's ledger, summed from its stream's `egress` lines as they come (a line costs its
// rows; the table is built only when it is drawn).
export class LiveLedger {
  constructor() {
    this.sums = new Map();  // provider, tool, data class and label -> their line
  }

  // Start from a stored ledger (a run resumed from its stored view).
  seed(ledger) {
    for (const line of Array.isArray(ledger?.lines) ? ledger.lines : []) this.count(line);
  }

  add(event) {
    if (!Array.isArray(event.lines)) return;
    for (const line of event.lines) this.count({ ...line, provider: event.provider });
  }

  count(line) {
    const fields = GROUPS.map((key) => String(line[key] ?? "-"));
    const key = fields.join("\u0000");
    let sum = this.sums.get(key);
    if (!sum) {
      sum = Object.fromEntries(GROUPS.map((g, i) => [g, fields[i]]));
      sum.new_bytes = 0;
      sum.wire_bytes = 0;
      this.sums.set(key, sum);
    }
    sum.new_bytes += Number.isFinite(line.new_bytes) ? line.new_bytes : 0;
    sum.wire_bytes += Number.isFinite(line.wire_bytes) ? line.wire_bytes : 0;
  }

  // The ledger as GET /api/runs/{id}/egress answers it: most bytes first, then by name.
  ledger() {
    const lines = [...this.sums.values()].sort((a, b) => b.wire_bytes - a.wire_bytes
      || GROUPS.reduce((order, key) => order || compare(a[key], b[key]), 0));
    return { lines, new_bytes: lines.reduce((n, l) => n + l.new_bytes, 0),
      wire_bytes: lines.reduce((n, l) => n + l.wire_bytes, 0) };
  }
}

function compare(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function bytes(value) {
  return Number.isFinite(value) ? value.toLocaleString("en") : "?";
}
