// The detail pane: one step, in tabs. Tab contents are built when a tab is opened; the tab
// named `openTab` opens first when the step has one. The tabs follow the tabs pattern: one
// tab stop (the open tab), the left and right arrows, Home and End open the others, and each
// tab names the panel it controls.

import { renderArtifacts } from "./artifacts.js";
import { copyButton } from "./copy.js";
import { fill, h, ms, NOT_STORED, pretty } from "./dom.js";
import { jsonTree } from "./jsontree.js";
import { moveTo } from "./keys.js";
import { stepCost, stepTitle, titleParts } from "./steps.js";

let drawn = 0;  // tab boxes drawn so far: each gets ids of its own

// `steps` are the run's steps: where a value the run holds went is read from them.
export function renderDetail(container, step, openTab = null, steps = []) {
  container.replaceChildren();
  if (!step) {
    container.append(h("p", { class: "empty" }, "Select a step to see it here."));
    return;
  }
  container.append(header(step), tabs(tabsFor(step, steps), openTab));
}

function header(step) {
  const bits = [h("h3", { class: "detail-title" }, titleOf(step))];
  if (step.kind !== "tool" && step.kind !== "llm") bits[0].replaceChildren(...titleParts(step));
  if (step.kind !== "request") bits.push(h("span", { class: "step-time" }, ms(step.duration_ms)));
  if (step.kind === "tool") {
    const failed = step.tool_is_error === true;
    bits.push(h("span", { class: failed ? "badge error" : "badge ok" }, failed ? "error" : "ok"));
    const label = integrityBadge(step);
    if (label) bits.push(label);
  }
  if (step.content_withheld) {
    bits.push(h("span", { class: "badge muted" }, "content not stored"));
  }
  return h("div", { class: "detail-head" }, bits);
}

// The integrity label of what the call put in the model's context (see the containment docs):
// untrusted output may carry instructions someone else wrote.
function integrityBadge(step) {
  const label = step.tool_integrity;
  if (label !== "trusted" && label !== "untrusted") return null;
  return h("span", {
    class: label === "untrusted" ? "badge note integrity" : "badge muted integrity",
    title: label === "untrusted"
      ? "The model read this output as untrusted: words someone else chose"
      : "The model read this output as trusted",
  }, label);
}

function titleOf(step) {
  if (step.kind === "tool") return `Tool · ${String(step.tool_name ?? "")}`;
  if (step.kind === "llm") return "Model";
  return stepTitle(step);
}

function tabsFor(step, steps) {
  switch (step.kind) {
    case "tool":
      return toolTabs(step).concat(variablesTab(step, steps));
    case "llm":
      return modelTabs(step);
    case "request":
      return requestTabs(step);
    case "context_truncated":
      return [["Context", () => contextFacts(step)]];
    case "provider_failed":
      return [["Failure", () => facts(step, FAILURE_FACTS, "failure-facts")]];
    default:
      return [["Step", () => jsonTree(step, "block")]];
  }
}

function toolTabs(step) {
  if (step.content_withheld) {
    return [["Arguments", withheld], ["Result", withheld]].concat(metadataTab(step));
  }
  const list = [
    ["Arguments", () => pre(typeof step.tool_arguments === "string"
      ? step.tool_arguments : pretty(step.tool_arguments ?? {}))],
    ["Result", () => pre(step.tool_result ?? "", step.tool_is_error ? "error-text" : "")],
  ];
  if (Array.isArray(step.tool_artifacts) && step.tool_artifacts.length > 0) {
    list.push(["Artifacts", () => renderArtifacts(step.tool_artifacts)]);
  }
  return list.concat(metadataTab(step));
}

// Values the run held for the model (quarantined output, see the containment docs): those this
// call made, with their labels and the calls each went to, and those it received. A value is
// shown only where the step carries it (a level that keeps tool content), as text.
function variablesTab(step, steps) {
  const made = Array.isArray(step.tool_variables) ? step.tool_variables : [];
  const received = Array.isArray(step.tool_received) ? step.tool_received : [];
  if (!made.length && !received.length) return [];
  return [["Variables", () => variables(step, made, received, Array.isArray(steps) ? steps : [])]];
}

function variables(step, made, received, steps) {
  const values = new Map((Array.isArray(step.tool_held_values) ? step.tool_held_values : [])
    .filter((v) => v && typeof v.handle === "string").map((v) => [v.handle, v.value]));
  const origin = new Map();
  const went = new Map();
  for (const s of steps) {
    if (!s || s.kind !== "tool") continue;
    for (const v of Array.isArray(s.tool_variables) ? s.tool_variables : []) {
      if (v && typeof v.handle === "string") origin.set(v.handle, s);
    }
    for (const handle of Array.isArray(s.tool_received) ? s.tool_received : []) {
      if (!went.has(handle)) went.set(handle, []);
      went.get(handle).push(s);
    }
  }
  const call = (s) => `${String(s.tool_name ?? "")} (round ${String(s.round)})`;
  return h("div", { class: "stack", "data-testid": "variables" },
    made.length ? h("h4", {}, "Held from this result") : null,
    made.length ? h("ul", { class: "variables" }, made.map((v) => {
      const handle = String(v && v.handle);
      const to = went.get(handle) ?? [];
      const label = v && v.integrity === "trusted" ? "trusted" : "untrusted";
      return h("li", { class: "variable", "data-id": handle },
        h("code", { class: "variable-handle" }, handle),
        h("span", { class: label === "untrusted" ? "badge note integrity" : "badge muted integrity" },
          label),
        h("span", { class: "muted" }, ` ${String(v && v.chars)} characters · `
          + `${String(v && v.data_class)}${v && v.field ? ` · field ${String(v.field)}` : ""}`),
        h("p", { class: "variable-flow" }, to.length
          ? `Went to: ${to.map(call).join(", ")}` : "Not passed to any call."),
        values.has(handle)
          ? pre(typeof values.get(handle) === "string" ? values.get(handle)
            : pretty(values.get(handle)), "variable-value")
          : h("p", { class: "muted not-stored" }, `The value is ${NOT_STORED}.`));
    })) : null,
    received.length ? h("h4", {}, "Received by this call") : null,
    received.length ? h("ul", { class: "variables" }, received.map((handle) => {
      const from = origin.get(handle);
      return h("li", { class: "variable", "data-id": String(handle) },
        h("code", { class: "variable-handle" }, String(handle)),
        h("span", { class: "muted" }, from ? ` from ${call(from)}` : ""));
    })) : null);
}

function modelTabs(step) {
  const list = [["Content", () => modelContent(step)]];
  if (step.output !== undefined && step.output !== null) {
    // The answer's value, checked against the run's output schema: shown as a tree.
    list.push(["Output", () => h("div", { class: "stack", "data-testid": "model-output" },
      h("h4", {}, "Output (matches the schema)"), jsonTree(step.output, "block"))]);
  }
  if (typeof step.thinking === "string" && step.thinking) {
    list.push(["Thinking", () => pre(step.thinking)]);
  }
  if (step.raw !== undefined) list.push(["Raw", () => jsonTree(step.raw, "block")]);
  return list.concat(metadataTab(step));
}

function withheld() {
  return h("p", { class: "muted not-stored" }, `The content is ${NOT_STORED}.`);
}

function modelContent(step) {
  const calls = Array.isArray(step.requested_tool_calls) ? step.requested_tool_calls : [];
  return h("div", { class: "stack" },
    h("h4", {}, "Content"),
    step.content_withheld ? withheld()
      : pre(typeof step.content === "string" ? step.content : ""),
    calls.length ? h("h4", {}, "Requested calls") : null,
    calls.length ? h("ul", { class: "calls" }, calls.map((c) =>
      h("li", {}, h("code", { class: "call-name" }, String(c && c.name)),
        h("span", { class: "call-args" }, ` (${String(c && c.arguments)})`)))) : null,
    typeof step.refusal === "string" && step.refusal ? h("h4", {}, "Refusal") : null,
    typeof step.refusal === "string" && step.refusal
      ? pre(step.refusal, "refusal") : null,
    modelFacts(step));
}

// How the turn ended and what it cost: toolwire's word, the provider's, tokens by kind.
const MODEL_FACTS = [
  ["stop", "Stop"], ["finish_reason", "Finish reason"], ["prompt_tokens", "Prompt tokens"],
  ["completion_tokens", "Completion tokens"], ["total_tokens", "Total tokens"],
  ["cache_read_tokens", "Cache read tokens"], ["cache_write_tokens", "Cache write tokens"],
  ["reasoning_tokens", "Reasoning tokens"], ["provider", "Provider"],
  ["response_model", "Answered by"],
  ["response_id", "Response id"], ["output_problem", "Output schema"],
];

function modelFacts(step) {
  const rows = MODEL_FACTS.filter(([key]) => step[key] !== undefined && step[key] !== null)
    .map(([key, label]) => [key, label, String(step[key])]);
  if (step.tokens_estimated === true) {
    rows.push(["tokens_estimated", "Usage", "tokens unknown: the provider reported none; "
      + "the counts above are estimates"]);
  }
  rows.push(["cost", "Cost", stepCost(step)]);
  return h("dl", { class: "facts", "data-testid": "model-facts" }, rows.map(([key, label, value]) =>
    [h("dt", {}, label), h("dd", { "data-kind": key }, value)]));
}

// What left the conversation so that the request fits the model's window; numbers only.
const CONTEXT_FACTS = [
  ["dropped_exchanges", "Exchanges dropped"], ["dropped_messages", "Messages dropped"],
  ["tokens_before", "Tokens before (about)"], ["tokens_after", "Tokens after (about)"],
  ["context_window", "Context window"], ["reserved_tokens", "Kept for the answer"],
];

// A provider of a fallback chain that failed: which one, how, and which was asked next.
const FAILURE_FACTS = [
  ["provider", "Provider"], ["error_class", "Error"], ["error_status", "HTTP status"],
  ["error", "Message"], ["next_provider", "Asked next"],
];

function facts(step, known, testid) {
  const rows = known.filter(([key]) => step[key] !== undefined && step[key] !== null);
  return h("dl", { class: "facts", "data-testid": testid }, rows.map(([key, label]) =>
    [h("dt", {}, label), h("dd", { "data-kind": key }, String(step[key]))]));
}

function contextFacts(step) {
  const rows = CONTEXT_FACTS.filter(([key]) => step[key] !== undefined && step[key] !== null);
  return h("dl", { class: "facts", "data-testid": "context-facts" }, rows.map(([key, label]) =>
    [h("dt", {}, label), h("dd", { "data-kind": key }, String(step[key]))]));
}

function requestTabs(step) {
  const list = [
    ["Messages sent", () => messages(step.messages_sent)],
    ["Tools offered", () => pre((Array.isArray(step.tool_specs) ? step.tool_specs : []).join("\n"))],
  ];
  if (Array.isArray(step.refusals) && step.refusals.length) {
    list.push(["Refusals", () => refusals(step.refusals)]);
  }
  return list.concat(metadataTab(step));
}

// The conversation as this request sent it: each message in order, a tool's result in its
// place after the turn that asked for it, named by the call it answers.
function messages(list) {
  if (!Array.isArray(list)) {
    return h("p", { class: "muted not-stored" }, `The messages are ${NOT_STORED}.`);
  }
  const calls = callNames(list);
  return h("div", { class: "messages", "data-testid": "conversation" }, list.map((m) =>
    h("div", { class: `message role-${safeRole(m && m.role)}` },
      h("div", { class: "message-role" }, String(m && m.role),
        m && m.tool_call_id && calls.has(m.tool_call_id)
          ? ` · ${calls.get(m.tool_call_id)}` : "",
        m && m.tool_call_id ? ` · ${String(m.tool_call_id)}` : ""),
      typeof (m && m.content) === "string" ? pre(m.content)
        : m && m.content !== null && m.content !== undefined ? pre(pretty(m.content)) : null,
      Array.isArray(m && m.tool_calls) ? h("ul", { class: "calls" }, m.tool_calls.map((c) =>
        h("li", {}, `${String(c && c.name)} (${String(c && c.arguments)})`,
          c && c.id ? h("span", { class: "muted" }, ` · ${String(c.id)}`) : null))) : null)));
}

// The name of each call the conversation's turns asked for, by its id.
function callNames(list) {
  const names = new Map();
  for (const m of list) {
    for (const c of Array.isArray(m && m.tool_calls) ? m.tool_calls : []) {
      if (c && typeof c.id === "string") names.set(c.id, String(c.name));
    }
  }
  return names;
}

function safeRole(role) {
  return ["system", "user", "assistant", "tool"].includes(role) ? role : "other";
}

function refusals(list) {
  return h("ul", { class: "refusals" }, list.map((r) =>
    h("li", {}, h("code", {}, String(r && r.tool)), ` — ${String(r && r.reason)}`,
      r && r.detail ? `: ${String(r.detail)}` : "")));
}

// A stored step without its content keys still has counts and lengths: show them.
function metadataTab(step) {
  if (!step.content_withheld) return [];
  return [["Stored fields", () => jsonTree(step, "block")]];
}

function pre(text, extra = "") {
  return h("pre", { class: `block ${extra}`.trim() }, String(text));
}

// A tab that shows one text (a block, a JSON tree) has a button copying it.
function copyable(content, name) {
  if (!content.matches("pre, .json-tree")) return null;
  return h("div", { class: "copy-row" },
    copyButton(() => content.textContent, `Copy the ${name.toLowerCase()}`));
}

function tabs(list, openTab) {
  const box = `tabs-${(drawn += 1)}`;
  const bar = h("div", { class: "tabs", role: "tablist", "aria-label": "Step details" });
  const panel = h("div", { class: "tab-panel", role: "tabpanel", id: `${box}-panel`,
    tabindex: 0 });
  const open = (button, build) => {
    for (const b of buttons) {
      b.setAttribute("aria-selected", String(b === button));
      b.setAttribute("tabindex", b === button ? "0" : "-1");
    }
    panel.setAttribute("aria-labelledby", button.id);
    const content = build();
    fill(panel, copyable(content, button.textContent), content);
  };
  const buttons = list.map(([name, build], i) => {
    const button = h("button", { type: "button", class: "tab", role: "tab", "data-index": i,
      id: `${box}-tab-${i}`, "aria-controls": `${box}-panel`, "aria-selected": "false",
      tabindex: -1 }, name);
    button.addEventListener("click", () => open(button, build));
    return button;
  });
  bar.addEventListener("keydown", (e) => {
    const at = buttons.indexOf(e.target);
    const to = at < 0 ? null : moveTo(e.key, at, buttons.length, { across: true });
    if (to === null) return;
    e.preventDefault();
    buttons[to].click();
    buttons[to].focus();
  });
  bar.append(...buttons);
  const first = list.findIndex(([name]) => name === openTab);
  if (buttons.length) buttons[Math.max(first, 0)].click();
  return h("div", { class: "tabbox" }, bar, panel);
}
