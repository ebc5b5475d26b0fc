// The Tools view: effective state and why, toggles for tools and groups, and a direct call
// of one tool (through the same gate and seam as a model's call).

import { ApiError, call } from "./api.js";
import { renderArtifacts } from "./artifacts.js";
import { h } from "./dom.js";

export class ToolsView {
  constructor(root, onChange) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.onChange = onChange;
    this.$("tools-refresh").addEventListener("click", () => this.load());
  }

  async load() {
    try {
      this.render(await call("GET", "/tools"));
    } catch (err) {
      this.$("tools-list").replaceChildren(h("p", { class: "banner error" },
        err instanceof ApiError ? err.message : "Loading the tools failed."));
    }
  }

  render(list) {
    this.onChange(list);
    const sections = list.groups.map((g) => h("section", { class: "group-card" },
      h("header", { class: "group-head" },
        h("h3", {}, g.name),
        h("span", { class: g.enabled ? "badge ok" : "badge error" }, g.enabled ? "on" : "off"),
        this.toggles(`/groups/${encodeURIComponent(g.name)}`, g.enabled, g.overridden)),
      h("table", { class: "data" }, h("tbody", {},
        list.tools.filter((t) => t.group === g.name).map((t) => this.row(t))))));
    this.$("tools-list").replaceChildren(...sections);
  }

  row(tool) {
    const open = h("button", { type: "button", class: "small" }, "Call…");
    open.addEventListener("click", () => this.invokeForm(tool));
    return h("tr", { "data-kind": "tool-row" },
      h("td", {}, h("code", {}, tool.name), tool.requires_admin ? h("span", { class: "badge muted" }, "admin") : null),
      h("td", { class: "muted" }, tool.description),
      h("td", {}, h("span", { class: tool.enabled ? "badge ok" : "badge error" },
        tool.enabled ? "enabled" : "disabled"), " ", h("span", { class: "muted" }, tool.why)),
      h("td", { class: "actions" },
        this.toggles(`/tools/${encodeURIComponent(tool.name)}`, tool.tool_enabled, tool.overridden),
        open));
  }

  toggles(path, enabled, overridden) {
    const button = (label, value, active) => {
      const b = h("button", { type: "button", class: active ? "small active" : "small" }, label);
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
      this.$("invoke-panel").replaceChildren(h("p", { class: "banner error" },
        err instanceof ApiError ? err.message : "The change failed."));
    }
  }

  invokeForm(tool) {
    const args = h("textarea", { rows: 4, class: "mono", "aria-label": "Arguments (JSON)" }, "{}");
    const go = h("button", { type: "button", class: "primary" }, "Call tool");
    const out = h("div", { class: "invoke-out" });
    go.addEventListener("click", () => this.invoke(tool.name, args.value, out));
    this.$("invoke-panel").replaceChildren(h("h3", {}, `Call ${tool.name} directly`),
      h("p", { class: "muted" }, "Runs through the same gate and bounds as a model's call."),
      args, h("div", { class: "row actions" }, go), out);
  }

  async invoke(name, text, out) {
    let argumentsValue;
    try {
      argumentsValue = JSON.parse(text || "{}");
    } catch {
      out.replaceChildren(h("p", { class: "banner error" }, "The arguments are not valid JSON."));
      return;
    }
    try {
      const r = await call("POST", `/tools/${encodeURIComponent(name)}/invoke`, { arguments: argumentsValue });
      out.replaceChildren(
        r.refused ? h("p", { class: "banner error" }, `Refused: ${r.refused.reason}`,
          r.refused.detail ? ` (${r.refused.detail})` : "") : null,
        r.content === null ? null : h("pre", { class: r.is_error ? "block error-text" : "block" }, r.content),
        r.artifacts.length ? renderArtifacts(r.artifacts) : null);
    } catch (err) {
      out.replaceChildren(h("p", { class: "banner error" },
        err instanceof ApiError ? err.message : "The call failed."));
    }
  }
}
