// Building DOM without parsing HTML. Every string becomes a text node or a checked attribute
// value; there is no path from data to markup. `href` and `src` are not settable here: see
// safeLink and safeImage.

import { scrollableRegion } from "./focus.js";

const SAFE_ATTRIBUTES = new Set([
  "class", "id", "type", "name", "value", "for", "title", "role", "hidden", "disabled",
  "checked", "colspan", "start", "tabindex", "placeholder", "min", "max", "step", "rows",
  "aria-selected", "aria-label", "aria-live", "data-kind", "data-status", "data-view",
  "data-type", "data-index", "data-testid", "alt", "aria-sort", "data-sort", "data-side",
  "data-diff", "autocomplete", "aria-hidden", "aria-current", "aria-controls",
  "aria-labelledby", "aria-describedby", "aria-disabled", "aria-keyshortcuts", "aria-modal",
  "aria-pressed", "data-id", "data-label",
]);
const WEB_PROTOCOLS = new Set(["http:", "https:"]);
// Drawn from a data URL only for these types (no SVG: a document that can carry script), and
// only within the seam's cap (toolwire.bounding.IMAGE_DATA_CAP, characters of base64).
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
export const IMAGE_DATA_CAP = 32000;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (!SAFE_ATTRIBUTES.has(key)) throw new Error(`attribute ${key} is not allowed`);
    element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

// Replace `element`'s children; null, undefined and false are skipped (replaceChildren would
// print them as "null").
export function fill(element, ...children) {
  element.replaceChildren();
  return append(element, children);
}

// What a run id looks like; anything else is not put into a link or the address bar.
export const RUN_ID = /^[0-9A-Za-z-]{1,100}$/;

// A link to a stored run inside this page (`#run=<id>`); an id that is not an id is text.
export function runLink(id, text) {
  if (typeof id !== "string" || !RUN_ID.test(id)) return h("span", {}, text);
  const anchor = h("a", { class: "link run-link" }, text);
  anchor.href = `#run=${id}`;
  return anchor;
}

export const NOT_STORED = "not stored at this privacy level";

// A table in its scrolling wrapper: one header row of `heads` (th elements), then `rows`;
// the wrapper, when the table is wider than it, is a tab stop named `label`. A `caption`
// (text) is the table's caption.
export function dataTable(cls, heads, rows, label = "Table", caption = null) {
  return scrollableRegion(h("div", { class: "table-wrap" }, h("table", { class: cls },
    caption === null ? null : h("caption", { class: "table-count" }, caption),
    h("thead", {}, h("tr", {}, heads)), h("tbody", {}, rows))), label);
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

// A web URL as an anchor; anything else (javascript:, data:, relative, malformed) as text.
export function safeLink(url, text) {
  const label = text === "" || text === undefined || text === null ? url : text;
  if (isWebUrl(url)) {
    const anchor = h("a", { class: "link" }, label);
    anchor.href = new URL(url).href;
    anchor.rel = "noopener noreferrer";
    anchor.target = "_blank";
    return anchor;
  }
  return h("span", { class: "link-blocked", title: "not an http(s) link" }, label);
}

// An image from base64 data as an <img> with a data URL; anything the page does not draw (a type
// outside the list, data that is not base64, data over the cap) as a visible note instead.
export function safeImage(mimeType, data, alt) {
  const why = imageProblem(mimeType, data);
  if (why) return h("p", { class: "artifact-note image-blocked" }, why);
  const image = h("img", { class: "artifact-img", alt: String(alt ?? "") });
  image.src = `data:${mimeType};base64,${data}`;
  return image;
}

function imageProblem(mimeType, data) {
  if (typeof mimeType !== "string" || !IMAGE_TYPES.has(mimeType)) {
    return "Image not shown: not a PNG, JPEG, GIF or WebP image.";
  }
  if (typeof data !== "string" || !data) return "Image not shown: no data.";
  if (data.length > IMAGE_DATA_CAP) {
    return `Image not shown: ${data.length} characters of data, over the ${IMAGE_DATA_CAP} cap.`;
  }
  return BASE64.test(data) ? null : "Image not shown: the data is not base64.";
}

function isWebUrl(url) {
  if (typeof url !== "string") return false;
  try {
    return WEB_PROTOCOLS.has(new URL(url).protocol);
  } catch {
    return false;
  }
}

export function pretty(value) {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

export function ms(value) {
  const n = Number(value);
  if (!Number.isFinite(n)) return "—";
  return n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(n < 10 ? 1 : 0)} ms`;
}
