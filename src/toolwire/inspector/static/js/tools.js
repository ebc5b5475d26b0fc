// The Tools view: effective state and why, toggles for tools and groups, and a direct call
// of one tool (through the same gate and seam as a model's call).

import { call, errorText } from "./api.js";
import { renderArtifacts } from "./artifacts.js";
import { fill, h, pretty } from "./dom.js";
import { keepFocus } from "./focus.js";
import { readFields, schemaFields } from "./schemaform.js";

// A docstring's reStructuredText inline markup as plain text: ``code`` and `text` lose their
// backticks, :role:`text <target>` keeps its text, :role:`name` its name.
export function plainText(text) {
  return String(text ?? "")
    .replace(/:[\w.+-]+(?::[\w.+-]+)?:`([^`<]*?)\s*(?:<[^`>]*>)?`/g, "$1")
    .replace(/``([^`]+)``/g, "$1")
    .replace(/`([^`]+)`_{0,2}/g, "$1");
}

export class ToolsView {
  constructor(root, onChange) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.onChange = onChange;
    this.panel = this.$("invoke-panel");  // moves under the row of the tool being called
    this.$("tools-refresh").addEventListener("click", () => this.load());
  }

  async load() {
    try {
      this.render(await call("GET", "/tools"));
    } catch (err) {
      this.$("tools-list").replaceChildren(h("p", { class: "banner error" },
        errorText(err, "Loading the tools failed.")));
    }
  }

  render(list) {
    this.onChange(list);
    const sections = list.groups.map((g) => h("section", { class: "group-card" },
      h("header", { class: "group-head" },
        h("h3", {}, g.name),
        h("span", { class: g.enabled ? "badge ok" : "badge error" }, g.enabled ? "on" : "off"),
        this.toggles(`/groups/${encodeURIComponent(g.name)}`, g.enabled, g.overridden)),
      h("table", { class: "data tools-table" }, h("tbody", {},
        list.tools.filter((t) => t.group === g.name).map((t) => this.row(t))))));
    this.$("tools-list").after(this.panel);  // out of the rows being replaced
    const box = this.$("tools-list");
    keepFocus(box, () => box.replaceChildren(...sections));  // a toggle pressed keeps the focus
  }

  row(tool) {
    const open = h("button", { type: "button", class: "small" }, "Call…");
    const row = h("tr", { "data-kind": "tool-row" },
      h("td", { class: "col-name" }, h("code", {}, tool.name),
        tool.requires_admin ? h("span", { class: "badge muted" }, "admin") : null,
        typeof tool.server === "string"
          ? h("span", { class: "badge muted server", title: "MCP server" }, `MCP: ${tool.server}`)
          : null),
      h("td", { class: "col-description muted" }, plainText(tool.description)),
      h("td", { class: "col-state" }, h("span", { class: tool.enabled ? "badge ok" : "badge error" },
        tool.enabled ? "enabled" : "disabled"), " ", h("span", { class: "muted" }, tool.why)),
      h("td", { class: "actions col-actions" },
        this.toggles(`/tools/${encodeURIComponent(tool.name)}`, tool.tool_enabled, tool.overridden),
        open));
    open.addEventListener("click", () => this.invokeForm(tool, row));
    return row;
  }

  toggles(path, enabled, overridden) {
    const button = (label, value, active) => {
      const b = h("button", { type: "button", class: active ? "small active" : "small",
        "aria-pressed": active ? "true" : "false" }, label);
      b.addEventListener("click", () => this.set(path, value));
      return b;
    };
    return h("span", { class: "toggles" },
      button("Enable", true, overridden && enabled),
      button("Disable", false, overridden && !enabled),
      button("Default", null, !overridden));
  }

  async set(path, enabled) {
    try {
      this.render(await call("PUT", path, { enabled }));
    } catch (err) {
      fill(this.panel, h("p", { class: "banner error" },
        errorText(err, "The change failed.")));
    }
  }

  // The direct call form opens under the tool's row, scrolled into view, its first field
  // focused; fields come from the tool's schema, with raw JSON as the fallback.
  invokeForm(tool, row) {
    const panel = this.panel;
    const fields = schemaFields(tool.parameters);
    const form = h("div", { class: "schema-fields" }, fields.map((f) => f.element));
    const args = h("textarea", { rows: 4, class: "mono raw-arguments", "aria-label": "Arguments (JSON)",
      hidden: fields.length > 0 }, "{}");
    const raw = h("input", { type: "checkbox", class: "raw-toggle", checked: fields.length === 0 });
    raw.addEventListener("change", () => {
      if (raw.checked) {
        const read = readFields(fields);
        if (!read.error) args.value = pretty(read.values);
      }
      form.hidden = raw.checked;
      args.hidden = !raw.checked;
    });
    const go = h("button", { type: "button", class: "primary" }, "Call tool");
    const out = h("div", { class: "invoke-out" });
    go.addEventListener("click", () => {
      const read = raw.checked ? parseArguments(args.value) : readFields(fields);
      if (read.error) fill(out, h("p", { class: "banner error" }, read.error));
      else this.invoke(tool.name, read.values, out);
    });
    fill(panel, h("h3", {}, `Call ${tool.name} directly`),
      h("p", { class: "muted" }, "Runs through the same gate and bounds as a model's call."),
      form, fields.length ? h("label", { class: "check" }, raw, "Raw JSON") : null, args,
      h("div", { class: "row actions" }, go), out);
    const holder = h("tr", { class: "invoke-row" }, h("td", { colspan: 4 }, panel));
    this.$("tools-list").querySelector("tr.invoke-row")?.remove();
    row.after(holder);
    holder.scrollIntoView({ block: "nearest" });
    (form.querySelector("input, select, textarea") ?? (raw.checked ? args : go)).focus();
  }

  async invoke(name, argumentsValue, out) {
    try {
      const r = await call("POST", `/tools/${encodeURIComponent(name)}/invoke`, { arguments: argumentsValue });
      fill(out,
        r.refused ? h("p", { class: "banner error" }, `Refused: ${r.refused.reason}`,
          r.refused.detail ? ` (${r.refused.detail})` : "") : null,
        typeof r.content === "string"
          ? h("pre", { class: r.is_error ? "block error-text" : "block" }, r.content) : null,
        Array.isArray(r.artifacts) && r.artifacts.length ? renderArtifacts(r.artifacts) : null);
    } catch (err) {
      fill(out, h("p", { class: "banner error" },
        errorText(err, "The call failed.")));
    }
  }
}

function parseArguments(text) {
  try {
    const values = JSON.parse(text || "{}");
    if (values && typeof values === "object" && !Array.isArray(values)) return { values };
  } catch {
    // fall through: not JSON
  }
  return { error: "The arguments are not a JSON object." };
}
