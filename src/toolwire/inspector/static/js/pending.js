// The pending panel: what a waiting run waits on (its calls and their previews, the input a
// tool asks for, or its next request held at an egress limit) and the operator's answer. Every string from the server is text, never markup.
//
// `decide(body)` sends the decision and resolves to null once the resumed run streams, or to a
// message when it was refused before anything ran; the panel then shows it and stays usable.

import { h } from "./dom.js";
import { readFields, schemaFields } from "./schemaform.js";
import { LEGEND, previewLine } from "./whitespace.js";

const CHANGED = "What the calls marked changed were previewed on was changed after the decision, "
  + "so nothing ran. Their previews are fresh: read them and decide again.";

export function pendingPanel(pause, decide) {
  const message = h("p", { class: "banner error pending-error", role: "alert", hidden: true });
  const body = pause.status === "awaiting_input"
    ? inputForm(pause, decide, message)
    : approvalForm(pause, decide, message);
  const title = pause.status === "awaiting_input" ? "Input needed" : "Approval needed";
  return h("section", { class: "pending-panel", "data-status": String(pause.status),
    "aria-label": title, tabindex: -1 }, h("h3", {}, title), body, message);
}

// What a screen reader is told at once when a run starts waiting: for what, and for whom.
export function pendingNews(pause) {
  if (pause.status === "awaiting_input") {
    return `Input needed: tool ${String(pause.input_tool ?? "")} asks for it in the panel.`;
  }
  if (pause.kind === "egress") {
    return "Approval needed to pass an egress limit: approve or deny it in the panel.";
  }
  const calls = Array.isArray(pause.calls) ? pause.calls.map((c) => String(c && c.name)) : [];
  return `Approval needed for ${calls.join(", ") || "a call"}: approve or deny it in the panel.`;
}

function show(message, text) {
  message.hidden = !text;
  message.textContent = text ?? "";
}

async function send(decide, body, buttons, message) {
  for (const button of buttons) button.disabled = true;
  show(message, null);
  let refused;
  try {
    refused = await decide(body);
  } catch {
    refused = "The decision could not be sent.";
  }
  for (const button of buttons) button.disabled = false;
  show(message, refused);
}

// The pending calls, each with its preview (whitespace visible), and the legend when needed.
function callsList(pause) {
  const calls = Array.isArray(pause.calls) ? pause.calls : [];
  const previews = Array.isArray(pause.previews) ? pause.previews : [];
  const changed = new Set(Array.isArray(pause.changed) ? pause.changed.map(String) : []);
  const refused = new Map((Array.isArray(pause.refused) ? pause.refused : [])
    .filter((r) => r && Number.isInteger(r.index)).map((r) => [r.index, String(r.reason)]));
  let marked = false;
  const list = h("ol", { class: "pending-calls" }, calls.map((call, index) => {
    const preview = previews.find((p) => p && p.index === index);
    const lines = preview && Array.isArray(preview.lines) ? preview.lines
      : [String(call && call.arguments)];
    const shown = lines.map(previewLine);
    marked = marked || shown.some((line) => line.marked);
    return h("li", { class: "pending-call", "data-index": index },
      h("code", { class: "call-name" }, String(call && call.name)),
      preview && preview.failed ? h("span", { class: "badge error" }, "no preview") : null,
      changed.has(String(call && call.id)) ? h("span", { class: "badge changed" }, "changed")
        : null,
      preview && preview.checked
        ? h("span", { class: "badge muted" }, "re-checked before it runs") : null,
      heldReason(preview),
      refusedNote(refused.get(index)),
      h("pre", { class: "block preview" }, shown.map((line) => line.node)));
  }));
  return [
    changed.size ? h("p", { class: "banner replay pending-changed", role: "status" }, CHANGED)
      : null,
    list,
    marked ? h("p", { class: "ws-legend muted" }, LEGEND) : null,
  ];
}

// Why the run's containment holds this call for a person: untrusted output (or data above what
// the call may receive) was in the model's context when it planned the call.
function heldReason(preview) {
  if (!preview || typeof preview.held !== "string" || !preview.held) return null;
  return h("p", { class: "pending-held" },
    h("span", { class: "badge note" }, "held"), ` ${preview.held}`);
}

// A call the run's containment refused when it was planned: it never runs, whatever is decided.
function refusedNote(reason) {
  if (reason === undefined) return null;
  return h("p", { class: "pending-refused" },
    h("span", { class: "badge error" }, "refused"), ` ${reason}: it does not run`);
}

// Not a turn: the run's next request, held before it would pass an egress limit (counts only).
function egressFacts(egress) {
  const facts = egress && typeof egress === "object" ? egress : {};
  const limits = Array.isArray(facts.limits) ? facts.limits : [];
  const bytes = (n) => `${Number(n ?? 0).toLocaleString("en")} bytes`;
  return h("div", { class: "pending-egress" },
    h("p", {}, "The next request to ", h("code", {}, String(facts.provider ?? "")),
      ` would send ${bytes(facts.request_bytes)} of tool output.`),
    h("ul", { class: "pending-limits" }, limits.map((limit) => h("li", {},
      `${limit && limit.scope === "workspace" ? "The workspace's" : "The run's"} limit: `
      + `${bytes(limit && limit.limit)}, ${bytes(limit && limit.counted)} sent so far.`))),
    h("p", { class: "muted" }, "Approving sends it, and the run may send one more limit's "
      + "worth before it asks again; denying ends the run."));
}

function approvalForm(pause, decide, message) {
  const reason = h("input", { class: "decision-reason", name: "reason",
    placeholder: "optional", "aria-label": "Reason" });
  const approve = h("button", { type: "button", class: "primary approve" }, "Approve");
  const deny = h("button", { type: "button", class: "danger deny" }, "Deny");
  const answer = (action) => {
    const body = { action, digest: String(pause.digest) };
    if (reason.value.trim()) body.reason = reason.value.trim();
    send(decide, body, [approve, deny], message);
  };
  approve.addEventListener("click", () => answer("approve"));
  deny.addEventListener("click", () => answer("deny"));
  const held = pause.kind === "egress" ? egressFacts(pause.egress) : callsList(pause);
  return h("div", { class: "stack" }, held,
    h("div", { class: "row actions" }, h("label", { class: "field" }, "Reason", reason),
      approve, deny));
}

function inputForm(pause, decide, message) {
  const fields = schemaFields(pause.input_schema);
  const submit = h("button", { type: "submit", class: "primary" }, "Send");
  const form = h("form", { class: "input-form" },
    h("p", { class: "muted" }, "Tool ", h("code", {}, String(pause.input_tool ?? "")),
      " asks for:"),
    fields.map((f) => f.element), h("div", { class: "row actions" }, submit));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const { values, error } = readFields(fields);
    if (error) return show(message, error);
    send(decide, { action: "input", digest: String(pause.digest), values }, [submit], message);
  });
  return h("div", { class: "stack" }, form);
}
