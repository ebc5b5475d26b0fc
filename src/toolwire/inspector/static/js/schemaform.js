// Form fields generated from a JSON schema's properties: text, number and integer inputs, a
// checkbox for a boolean, a select for an enum, and JSON text areas for arrays, objects and
// anything else. Titles, descriptions and enum values are untrusted: they become text only.

import { h } from "./dom.js";

const FIELD_TYPES = new Set(["string", "number", "integer", "boolean"]);

// The schema's fields, each { name, element, read() -> { value } | { error } }.
export function schemaFields(schema) {
  const object = schema && typeof schema === "object" ? schema : {};
  const properties = object.properties && typeof object.properties === "object"
    ? object.properties : {};
  const required = new Set(Array.isArray(object.required) ? object.required.map(String) : []);
  return Object.entries(properties).map(([name, spec]) =>
    field(name, unwrapOptional(spec || {}), required.has(name)));
}

// The values of `fields` as one object, or { error } naming the first that does not read.
export function readFields(fields) {
  const values = {};
  for (const f of fields) {
    const read = f.read();
    if (read.error) return { error: read.error };
    if (read.value !== undefined) values[f.name] = read.value;
  }
  return { values };
}

// `X | None` is {anyOf: [X, {type: null}]}: the field is X, optional.
function unwrapOptional(spec) {
  if (!Array.isArray(spec.anyOf)) return spec;
  const kept = spec.anyOf.filter((s) => !(s && s.type === "null"));
  return kept.length === 1 ? { ...kept[0], ...spec, anyOf: undefined } : spec;
}

function field(name, spec, required) {
  const kind = Array.isArray(spec.enum) ? "enum" : FIELD_TYPES.has(spec.type) ? spec.type : "json";
  const label = typeof spec.title === "string" && spec.title ? spec.title : name;
  const hint = typeof spec.description === "string" && spec.description
    ? h("span", { class: "hint" }, spec.description) : null;
  if (kind === "boolean") {
    const input = h("input", { type: "checkbox", name, checked: spec.default === true });
    return { name, read: () => ({ value: input.checked }),
      element: h("label", { class: "check", "data-kind": "input-field" }, input, label, hint) };
  }
  const input = control(name, kind, spec);
  const read = () => readValue(input, kind, spec, required, label);
  return {
    name, read,
    element: h("label", { class: "field", "data-kind": "input-field", "data-type": kind }, label,
      required ? h("span", { class: "hint" }, "required") : null, hint, input),
  };
}

function control(name, kind, spec) {
  if (kind === "enum") {
    const select = h("select", { name }, h("option", { value: "" }, "—"),
      spec.enum.map((v, i) => h("option", { value: String(i) }, String(v))));
    const at = spec.enum.indexOf(spec.default);
    if (at >= 0) select.value = String(at);
    return select;
  }
  if (kind === "json") {
    const area = h("textarea", { name, rows: 3, placeholder: "JSON", class: "mono" });
    if (spec.default !== undefined && spec.default !== null) area.value = JSON.stringify(spec.default);
    return area;
  }
  const numeric = kind === "number" || kind === "integer";
  const input = h("input", { name, type: numeric ? "number" : "text",
    step: kind === "integer" ? "1" : numeric ? "any" : null });
  if (spec.default !== undefined && spec.default !== null) input.value = String(spec.default);
  return input;
}

function readValue(input, kind, spec, required, label) {
  const text = input.value;
  // An empty required field is sent as it is: the server's schema check names what is wrong.
  if (text === "" && !required) return { value: undefined };
  if (kind === "enum") return { value: text === "" ? undefined : spec.enum[Number(text)] };
  if (kind === "string") return { value: text };
  if (kind === "number" || kind === "integer") {
    return { value: text === "" ? undefined : Number(text) };
  }
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: `${label}: not valid JSON` };
  }
}
