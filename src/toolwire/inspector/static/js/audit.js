// The governance log: every gate decision that refused or changed something, newest first
// (a tool not offered, a call refused, a person's decision, a budget or the context window
// cutting a run off), filtered by time, gate, tool and reason. A row may stand for several
// decisions (the tools a run was not offered are one row per reason): its Count says how many.
// Every value is shown as text.

import { call, errorText } from "./api.js";
import { dataTable, h, runLink } from "./dom.js";

const COLUMNS = ["When", "Run", "Round", "Gate", "Reason", "Count", "Tool", "By", "Detail"];
const PAGE = 200;

export class AuditView {
  constructor(root) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.latest = 0;  // only the answer to the latest request is shown
    // Refresh is the form's submit button: its click and Enter in a field both submit.
    this.$("audit-filters").addEventListener("submit", (event) => {
      event.preventDefault();
      this.load();
    });
    // A gate chosen (by pointer or by the arrow keys) shows its decisions at once.
    this.$("audit-gate").addEventListener("change", () => this.load());
  }

  query() {
    const params = new URLSearchParams({ limit: String(PAGE) });
    for (const [name, id] of [["since", "audit-since"], ["gate", "audit-gate"],
      ["tool", "audit-tool"], ["reason", "audit-reason"]]) {
      const value = this.$(id).value.trim();
      if (value) params.set(name, value);
    }
    return params.toString();
  }

  // Shows the log for the filters as they are; the table's `data-query` names what it shows.
  async load() {
    const query = this.query();
    const request = ++this.latest;
    let note = "";
    let shown = [];
    try {
      const page = await call("GET", `/audit?${query}`);
      if (!page.stored) {
        note = "No store is configured, so no decision is kept. Start the server with --db URL.";
      }
      shown = [table(page.decisions)];
    } catch (err) {
      note = errorText(err, "Loading failed.");
    }
    if (request !== this.latest) return;
    this.$("audit-note").textContent = note;
    this.$("audit-table").replaceChildren(...shown);
    this.$("audit-table").dataset.query = query;
  }
}

function table(decisions) {
  if (!Array.isArray(decisions) || !decisions.length) {
    return h("p", { class: "muted" }, "No gate decision matches.");
  }
  const rows = decisions.map((d) => h("tr", { class: "audit-row", "data-testid": "audit-row" },
    h("td", { title: text(d.at) }, text(d.at).slice(0, 19).replace("T", " ")),
    h("td", { title: text(d.run_id) }, runLink(text(d.run_id), text(d.run_id).slice(0, 8))),
    h("td", {}, d.round === null || d.round === undefined ? "—" : text(d.round)),
    h("td", {}, text(d.gate)),
    h("td", {}, h("span", { class: "badge" }, text(d.reason))),
    h("td", { class: "audit-count" }, Number.isInteger(d.count) ? String(d.count) : "1"),
    h("td", {}, d.tool === null || d.tool === undefined ? "—" : text(d.tool)),
    h("td", {}, text(d.actor)),
    h("td", { class: "audit-detail" }, d.detail === null || d.detail === undefined
      ? "" : text(d.detail))));
  return dataTable("data audit-table", COLUMNS.map((c) => h("th", {}, c)), rows,
    "Gate decisions");
}

function text(value) {
  return value === null || value === undefined ? "" : String(value);
}
