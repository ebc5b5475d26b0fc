// A question an MCP server asks while one of its tools is called: the server's message, its
// form, and the person's answer (accept with the form's values, decline, or cancel). The
// server's words (message, titles, descriptions, choices) are untrusted: text only, never
// markup. `answer(body)` sends the answer and resolves to null once it was taken, or to the
// server's refusal (a value that does not fit the form), which the panel shows.

import { h } from "./dom.js";

export function questionPanel(ask, answer) {
  const message = h("p", { class: "banner error pending-error", role: "alert", hidden: true });
  const fields = (Array.isArray(ask.fields) ? ask.fields : []).map(field);
  const accept = h("button", { type: "submit", class: "primary" }, "Accept");
  const decline = h("button", { type: "button" }, "Decline");
  const cancel = h("button", { type: "button" }, "Cancel");
  const buttons = [accept, decline, cancel];
  const form = h("form", { class: "input-form question-form" },
    h("p", { class: "muted" }, "Server ", h("code", {}, String(ask.server ?? "")),
      " asks, during tool ", h("code", {}, String(ask.tool ?? "")), ":"),
    h("p", { class: "question-message" }, String(ask.message ?? "")),
    ask.expires_at ? h("p", { class: "muted question-until" },
      `The run waits for an answer until ${String(ask.expires_at)}.`) : null,
    fields.map((f) => f.element),
    h("div", { class: "row actions" }, accept, decline, cancel));
  const send = async (body) => {
    for (const button of buttons) button.disabled = true;
    message.hidden = true;
    const refused = await answer(body);
    for (const button of buttons) button.disabled = false;
    message.hidden = !refused;
    message.textContent = refused ?? "";
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const values = {};
    for (const f of fields) {
      const value = f.read();
      if (value !== undefined) values[f.name] = value;
    }
    send({ action: "accept", values });
  });
  decline.addEventListener("click", () => send({ action: "decline" }));
  cancel.addEventListener("click", () => send({ action: "cancel" }));
  return h("section", { class: "pending-panel question-panel", "data-status": "question",
    "data-id": String(ask.id ?? ""), "aria-label": "Question from a server", tabindex: -1 },
  h("h3", {}, "Input needed"), form, message);
}

export function questionNews(ask) {
  return `Input needed: server ${String(ask.server ?? "")} asks a question in the panel.`;
}

// One field of the form: { name, element, read() -> value or undefined (left to its default) }.
function field(spec) {
  const name = String(spec.name ?? "");
  const label = typeof spec.title === "string" && spec.title ? spec.title : name;
  const hint = typeof spec.description === "string" && spec.description
    ? h("span", { class: "hint" }, spec.description) : null;
  const choices = Array.isArray(spec.choices) ? spec.choices.map(String) : [];
  const labels = Array.isArray(spec.labels) ? spec.labels.map(String) : [];
  const shown = (value, at) => labels[at] || value;
  if (spec.kind === "boolean") {
    const input = h("input", { type: "checkbox", name, checked: spec.default === true });
    return { name, read: () => input.checked,
      element: h("label", { class: "check", "data-kind": "input-field" }, input, label, hint) };
  }
  let input;
  let read;
  if (spec.kind === "choices") {
    const boxes = choices.map((value, at) => h("input", { type: "checkbox", name, value,
      checked: Array.isArray(spec.default) && spec.default.includes(value) }));
    input = h("span", { class: "row" }, boxes.map((box, at) =>
      h("label", { class: "check" }, box, shown(choices[at], at))));
    read = () => boxes.filter((b) => b.checked).map((b) => b.value);
  } else if (spec.kind === "choice") {
    input = h("select", { name }, h("option", { value: "" }, "—"),
      choices.map((value, at) => h("option", { value: String(at) }, shown(value, at))));
    const at = choices.indexOf(String(spec.default));
    if (spec.default !== null && at >= 0) input.value = String(at);
    read = () => (input.value === "" ? undefined : choices[Number(input.value)]);
  } else {
    const numeric = spec.kind === "number" || spec.kind === "integer";
    input = h("input", { name, type: numeric ? "number" : "text",
      step: spec.kind === "integer" ? "1" : numeric ? "any" : null });
    if (spec.default !== undefined && spec.default !== null) input.value = String(spec.default);
    read = () => (input.value === "" ? undefined : numeric ? Number(input.value) : input.value);
  }
  return { name, read, element: h("label", { class: "field", "data-kind": "input-field",
    "data-type": String(spec.kind) }, label,
  spec.required ? h("span", { class: "hint" }, "required") : null, hint, input) };
}
