// The keys that move within a list, a timeline or a tab list (one tab stop each: the current
// item has tabindex 0, the others -1), and what counts as typing, where single keys are text.

const PAGE_ROWS = 10;

// The index to go to from `index` among `count` items for `key`, or null for another key.
// A tab list goes left and right and wraps around; a list goes up and down and stops.
export function moveTo(key, index, count, { across = false } = {}) {
  if (count <= 0) return null;
  const last = count - 1;
  if (across) {
    if (key === "ArrowLeft") return index <= 0 ? last : index - 1;
    if (key === "ArrowRight") return index >= last ? 0 : index + 1;
  } else {
    if (key === "ArrowUp") return Math.max(index - 1, 0);
    if (key === "ArrowDown") return Math.min(index + 1, last);
    if (key === "PageUp") return Math.max(index - PAGE_ROWS, 0);
    if (key === "PageDown") return Math.min(index + PAGE_ROWS, last);
  }
  if (key === "Home") return 0;
  if (key === "End") return last;
  return null;
}

// Whether an activation key: Enter, or Space (which scrolls the page otherwise).
export function activates(event) {
  return event.key === "Enter" || event.key === " ";
}

const NOT_TYPED = new Set(["checkbox", "radio", "button", "submit", "reset", "range", "color",
  "file", "image"]);

// Whether keys pressed in `target` are text (a field, an editable element).
export function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName;
  if (tag === "TEXTAREA" || tag === "SELECT") return true;
  return tag === "INPUT" && !NOT_TYPED.has(target.type);
}

// Make `item` the one tab stop among `items`.
export function rove(items, item) {
  for (const other of items) other.setAttribute("tabindex", other === item ? "0" : "-1");
}
