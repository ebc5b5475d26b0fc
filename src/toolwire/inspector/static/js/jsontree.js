// JSON shown as a tree that folds: each object and array is a <details> whose <summary> is its
// opening bracket (a native disclosure: Tab reaches it, Enter or Space folds it, a screen reader
// hears "expanded" or "collapsed"). The text is exactly the pretty JSON (two spaces of indent),
// so what is copied or read is the JSON itself; a folded node's "…}" is drawn by CSS. Keys and
// values are text nodes. Past JSON_NODES_CAP objects and arrays the JSON is plain text:
// thousands of disclosures would be slow to draw and to tab through.

import { h, pretty } from "./dom.js";

export const JSON_NODES_CAP = 500;
const OPEN_DEPTH = 3;  // nodes this deep or deeper start folded
const NAME_CHARS = 80;  // of a key, in its bracket's accessible name

export function jsonTree(value, cls = "") {
  const box = h("div", { class: `json-tree ${cls}`.trim(), "data-testid": "json-tree" });
  if (containers(value, JSON_NODES_CAP + 1) > JSON_NODES_CAP) {
    box.append(pretty(value));
    return box;
  }
  box.append(node(value, 0, "value"));
  return box;
}

function node(value, depth, name) {
  if (value === null || typeof value !== "object") {
    return h("span", { class: `json-${value === null ? "null" : typeof value}` },
      JSON.stringify(value) ?? "null");
  }
  const array = Array.isArray(value);
  const entries = array ? value.map((v, i) => [i, v]) : Object.entries(value);
  const [open, close] = array ? ["[", "]"] : ["{", "}"];
  if (!entries.length) return h("span", {}, open + close);
  const count = array ? `array of ${entries.length}` : `object, ${entries.length} `
    + (entries.length === 1 ? "key" : "keys");
  const pad = "  ".repeat(depth + 1);
  const folded = h("details", { class: "json-node" },
    h("summary", { "aria-label": `${String(name).slice(0, NAME_CHARS)}: ${count}`,
      "data-label": close }, open));
  folded.open = depth < OPEN_DEPTH;
  entries.forEach(([key, child], i) => {
    folded.append(`\n${pad}`);
    if (!array) folded.append(h("span", { class: "json-key" }, JSON.stringify(key)), ": ");
    folded.append(node(child, depth + 1, array ? `item ${key}` : key));
    if (i < entries.length - 1) folded.append(",");
  });
  folded.append(`\n${"  ".repeat(depth)}${close}`);
  return folded;
}

// How many objects and arrays `value` holds, counting stops past `stop`.
function containers(value, stop) {
  let found = 0;
  const queue = [value];
  while (queue.length && found < stop) {
    const next = queue.pop();
    if (next === null || typeof next !== "object") continue;
    found += 1;
    queue.push(...(Array.isArray(next) ? next : Object.values(next)));
  }
  return found;
}
