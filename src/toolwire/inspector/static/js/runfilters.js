// The stored runs' filter bar: a search over the kept text and one control per filter of
// GET /api/runs. Choices come from GET /api/facets (the values the store holds); every value
// a person types goes to the server as a query parameter, never into markup.

import { call } from "./api.js";
import { fill, h } from "./dom.js";
import { keepFocus } from "./focus.js";

const ERRORS = [["", "any"], ["true", "with errors"], ["false", "without errors"]];
const LEVELS = ["none", "metadata", "redacted", "full"];
// Every status a stored run can have (toolwire.lifecycle.RunStatus), whether or not one has it.
const STATUSES = ["queued", "running", "awaiting_approval", "awaiting_input", "completed",
  "dry_run", "refused", "failed", "cancelled", "interrupted"];

export class RunFilters {
  // `form` is the (empty) filter form; `changed()` is called whenever a filter changes.
  constructor(form, changed) {
    this.form = form;
    this.changed = changed;
    this.facets = null;
    this.draw();
    form.addEventListener("submit", (e) => { e.preventDefault(); changed(); });
    form.addEventListener("change", () => changed());
  }

  async loadChoices() {
    try {
      this.facets = await call("GET", "/facets");
    } catch {
      this.facets = null;  // the filters still work, with typed values
    }
    const kept = this.values();
    keepFocus(this.form, () => {  // a field being typed in keeps the focus, and its text
      this.draw();
      this.restore(kept);
    });
  }

  draw() {
    const f = this.facets ?? {};
    const choice = (name, label, values) => h("label", { class: "field tiny" }, label,
      h("select", { name, id: `runs-${name}` }, h("option", { value: "" }, "any"),
        (values ?? []).map((v) => h("option", { value: String(v) }, String(v)))));
    fill(this.form,
      h("label", { class: "field search" }, "Search the kept text",
        h("input", { type: "search", name: "q", id: "runs-q", placeholder: "words…",
          "aria-keyshortcuts": "/" })),
      choice("status", "Status", [...new Set([...STATUSES, ...(f.statuses ?? [])])]),
      choice("provider", "Provider", f.providers),
      choice("model", "Model", f.models),
      choice("tool", "Tool used", f.tools),
      h("label", { class: "field tiny" }, "Errors", h("select", { name: "has_error",
        id: "runs-has_error" }, ERRORS.map(([v, t]) => h("option", { value: v }, t)))),
      choice("privacy_level", "Privacy", f.privacy_levels ?? LEVELS),
      h("label", { class: "field tiny" }, "From",
        h("input", { type: "date", name: "since", id: "runs-since" })),
      h("label", { class: "field tiny" }, "Before",
        h("input", { type: "date", name: "until", id: "runs-until" })),
      h("button", { type: "submit", class: "small" }, "Search"));
  }

  values() {
    return Object.fromEntries([...this.form.elements].filter((e) => e.name)
      .map((e) => [e.name, e.value]));
  }

  restore(values) {
    for (const [name, value] of Object.entries(values)) {
      const field = this.form.elements.namedItem(name);
      if (!field) continue;
      if (field.tagName === "SELECT" && value
        && ![...field.options].some((o) => o.value === value)) {
        field.append(h("option", { value }, value));
      }
      field.value = value;
    }
  }

  // The filters as query parameters of GET /api/runs.
  params() {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(this.values())) {
      if (value.trim()) query.set(name, value.trim());
    }
    return query;
  }
}
