// Artifacts, rendered by type. Every shape is checked before it is drawn; anything unknown or
// malformed is shown whole as pretty JSON, so nothing is silently dropped. A table says how
// many rows and columns it has, and its header row stays in view while its rows scroll.

import { highlightLines } from "./codehighlight.js";
import { copyButton } from "./copy.js";
import { dataTable, h, pretty, safeImage, safeLink } from "./dom.js";
import { jsonTree } from "./jsontree.js";

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isText = (v) => typeof v === "string";

export function renderArtifacts(list) {
  return h("div", { class: "artifacts" }, list.map((artifact, i) => renderArtifact(artifact, i)));
}

function renderArtifact(artifact, index = 0) {
  const label = isObject(artifact) && isText(artifact.label) ? artifact.label : "Artifact";
  const type = isObject(artifact) && isText(artifact.type) ? artifact.type : "unknown";
  const data = isObject(artifact) && isObject(artifact.data) ? artifact.data : {};
  const body = RENDERERS[type]?.(data, label) ?? fallback(artifact);
  const kind = body.classList.contains("artifact-json") ? "json" : type;
  const copied = kind === "json" ? () => pretty(artifact) : COPIED[type]?.(data);
  return h("section", { class: "artifact", "data-type": kind, "data-index": index },
    h("header", { class: "artifact-head" },
      h("span", { class: "artifact-label" }, label),
      h("span", { class: "artifact-type" }, kind === "json" ? `${type} · JSON` : type),
      copied ? copyButton(copied, `Copy ${label.slice(0, LABEL_CHARS)}`) : null),
    body);
}

const LABEL_CHARS = 80;  // of an artifact's label, in its copy button's name

// What a copy button copies of an artifact: its text, its code, a table as tab-separated lines.
const COPIED = {
  text: (data) => () => data.text,
  code: (data) => () => data.code,
  table: (data) => () => [data.columns, ...data.rows]
    .map((row) => (Array.isArray(row) ? row : []).map(String).join("\t")).join("\n"),
};

function fallback(artifact) {
  return jsonTree(artifact, "artifact-json");
}

function table(data, label) {
  if (!Array.isArray(data.columns) || !Array.isArray(data.rows)) return null;
  const heads = data.columns.map((c) => h("th", {}, String(c)));
  const rows = data.rows.map((row) =>
    h("tr", {}, Array.isArray(row) ? row.map((cell) => h("td", {}, String(cell))) : []));
  return dataTable("artifact-table", heads, rows, label, counted(data.rows.length, "row")
    + `, ${counted(data.columns.length, "column")}`);
}

function counted(n, what) {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

function text(data) {
  if (!isText(data.text)) return null;
  return h("pre", { class: "artifact-text" }, data.text);
}

function tree(data) {
  if (!Array.isArray(data.nodes) || !data.nodes.every(validNode)) return null;
  return h("div", { class: "artifact-tree" }, branch(data.nodes));
}

function validNode(node) {
  return isObject(node) && isText(node.label) &&
    (node.children === undefined || (Array.isArray(node.children) && node.children.every(validNode)));
}

function branch(nodes) {
  return h("ul", {}, nodes.map((node) =>
    h("li", {}, h("span", { class: "node" }, node.label),
      node.children && node.children.length ? branch(node.children) : null)));
}

function keyValue(data) {
  const pairs = data.items;
  if (!Array.isArray(pairs) || !pairs.every((p) => Array.isArray(p) && p.length === 2)) return null;
  return h("dl", { class: "artifact-kv" },
    pairs.map(([k, v]) => [h("dt", {}, String(k)), h("dd", {}, String(v))]));
}

function code(data) {
  if (!isText(data.code)) return null;
  const first = Number.isSafeInteger(data.first_line) ? data.first_line : 1;
  const texts = data.code.split("\n").map((line) => h("span", { class: "line-text" }, line));
  const box = h("div", { class: "artifact-code" },
    isText(data.language) && data.language ? h("div", { class: "code-lang" }, data.language) : null,
    h("pre", {}, h("code", {}, texts.map((text, i) =>
      h("span", { class: "code-line" }, h("span", { class: "line-no" }, String(first + i)),
        text)))));
  // Coloured once its grammar loads; until then, and without one, plain text.
  highlightLines(data.code, data.language, texts).then((done) => {
    if (done) box.classList.add("highlighted");
  });
  return box;
}

function link(data) {
  if (!isText(data.url)) return null;
  const label = isText(data.text) ? data.text : data.url;
  return h("p", { class: "artifact-link" }, safeLink(data.url, label));
}

// An image only through safeImage; the note says why the data is missing, when it is.
function image(data, label) {
  if (!isText(data.mime_type)) return null;
  const note = isText(data.note) && data.note ? h("p", { class: "artifact-note" }, data.note) : null;
  const picture = isText(data.data) && data.data ? safeImage(data.mime_type, data.data, label) : null;
  return h("figure", { class: "artifact-image" },
    picture ?? (note ? null : h("p", { class: "artifact-note" }, "No image data.")), note);
}

const RENDERERS = {
  table, text, tree, key_value: keyValue, code, link, image,
};
