// Rows drawn incrementally in a scrolling container: the step list and the timeline.
//
// Up to VIRTUAL_FROM rows, every row is in the DOM. Past it, only the rows in view (and
// OVERSCAN rows each side) are: every row then has the fixed height `rowHeight` (the
// container's `virtual` class sets it in app.css), and two empty spacers (aria-hidden, sized
// through CSSOM, which the CSP allows) stand in for the rows above and below.
// Invariants: a row element is built once and kept while it stays drawn (appending never
// rebuilds a drawn row); the container holds [spacer] rows in index order [tail] [spacer];
// a row holding the focus is never removed (it stays drawn at its place, out of the window),
// nor is the pinned row (the list's one tab stop: the selected row), which is drawn wherever
// it is.
// Past VIRTUAL_FROM, each drawn row says its place among them all (aria-posinset, set when it is
// built, of aria-setsize, set again on the drawn rows only when the count changes): the DOM
// holds a window of them, from which a screen reader could not tell. The tail counts as a row.
// Drawing reads no layout: the scroll position and the height in view are kept from the last
// scroll and resize (a read after a frame's first write would lay the page out again).

import { h } from "./dom.js";

export const VIRTUAL_FROM = 300;
const OVERSCAN = 20;
const FALLBACK_VIEW_PX = 1200;  // a container not laid out yet (hidden, not attached)

export class VirtualRows {
  // `build(index)` makes row `index` (an element); `tail()` the element after the last row, or
  // null (asked whenever the last row is drawn); `spacer` the spacers' tag (li in a list);
  // `pinned()` the index of the row always drawn (-1: none); `positionOf(row)` the index of a
  // row element (by default its data-index).
  constructor(container, { rowHeight, build, tail = () => null, spacer = "div",
    pinned = () => -1, positionOf = (row) => Number(row.getAttribute("data-index")) }) {
    this.container = container;
    this.rowHeight = rowHeight;
    this.build = build;
    this.tail = tail;
    this.pinned = pinned;
    this.positionOf = positionOf;
    this.count = 0;
    this.drawn = new Map();  // index -> element, for the rows in the DOM
    this.tailShown = null;
    this.above = h(spacer, { class: "virtual-spacer", "aria-hidden": "true", role: "none" });
    this.below = h(spacer, { class: "virtual-spacer", "aria-hidden": "true", role: "none" });
    this.gapped = new Set();  // rows drawn with a margin for the rows missing before them
    this.scheduled = 0;
    this.sized = 0;  // the aria-setsize the drawn rows carry (0: none, not virtual)
    this.scrollTop = 0;
    this.viewHeight = 0;
    container.addEventListener("scroll", () => {
      this.scrollTop = container.scrollTop;
      this.schedule();
    }, { passive: true });
    new ResizeObserver(([entry]) => {
      this.viewHeight = entry.contentRect.height;
      this.schedule();
    }).observe(container);
  }

  get virtual() {
    return this.count > VIRTUAL_FROM;
  }

  // Forget every row: the container is emptied, and `count` rows (none by default) follow.
  reset(count = 0) {
    this.drawn = new Map();
    this.gapped = new Set();
    this.tailShown = null;
    this.sized = 0;
    this.container.replaceChildren();
    if (this.scrollTop !== 0) this.container.scrollTop = 0;  // a write that lays out
    this.scrollTop = 0;
    this.count = count;
    this.render();
  }

  setCount(count) {
    this.count = count;
    this.render();
  }

  row(index) {
    return this.drawn.get(index) ?? null;
  }

  // Scroll the container (only it) so that row `index` shows, and draw it.
  reveal(index) {
    if (index < 0 || index >= this.count) return;
    const box = this.container;
    if (this.virtual) {
      const start = this.offset() + index * this.rowHeight;
      if (start < box.scrollTop) box.scrollTop = start;
      else if (start + this.rowHeight > box.scrollTop + box.clientHeight) {
        box.scrollTop = start + this.rowHeight - box.clientHeight;
      }
      this.scrollTop = box.scrollTop;
      this.render();
      return;
    }
    const row = this.drawn.get(index);
    if (!row) return;
    const shown = box.getBoundingClientRect();
    const at = row.getBoundingClientRect();
    if (at.top < shown.top) box.scrollTop -= shown.top - at.top;
    else if (at.bottom > shown.bottom) box.scrollTop += at.bottom - shown.bottom;
  }

  schedule() {
    if (this.scheduled || !this.virtual) return;
    this.scheduled = requestAnimationFrame(() => {
      this.scheduled = 0;
      this.render();
    });
  }

  // Draw the rows that should be in the DOM now; keep every other drawn row that stays.
  render() {
    const [first, last] = this.window();
    const focused = this.focusedIndex();
    const pinned = this.pinned();
    for (const [index, element] of this.drawn) {
      if ((index < first || index >= last) && index !== focused && index !== pinned) {
        element.remove();
        this.drawn.delete(index);
        this.gapped.delete(element);
      }
    }
    this.spacers();
    this.insert(first, last);
    if (pinned >= 0 && pinned < this.count && (pinned < first || pinned >= last)) {
      this.insert(pinned, pinned + 1);
    }
    this.place();
    this.drawTail(last === this.count);
    this.size();
  }

  // Every drawn row's aria-setsize, when the count changed; the tail's place.
  size() {
    const size = this.virtual ? this.count + (this.tailShown ? 1 : 0) : 0;
    if (size !== this.sized) {
      const placed = this.sized > 0;  // rows drawn before the list turned virtual have no place
      this.sized = size;
      for (const [index, element] of this.drawn) {
        if (!placed || !size) setPlace(element, size ? index + 1 : 0);
        setSize(element, size);
      }
    }
    if (this.tailShown) {  // the same element may have been drawn in a virtual list before
      setSize(this.tailShown, size);
      setPlace(this.tailShown, size ? this.count + 1 : 0);
    }
  }

  // [first, last): the rows in view, with OVERSCAN; every row when not virtual.
  window() {
    if (!this.virtual) return [0, this.count];
    const view = this.viewHeight || FALLBACK_VIEW_PX;
    const top = Math.max(0, this.scrollTop - this.offset());
    const first = Math.max(0, Math.floor(top / this.rowHeight) - OVERSCAN);
    const last = Math.min(this.count, Math.ceil((top + view) / this.rowHeight) + OVERSCAN);
    return [Math.min(first, last), last];
  }

  // Where the first row starts in the container's scrolled content: its top padding.
  offset() {
    if (this.padding === undefined) {
      this.padding = parseFloat(getComputedStyle(this.container).paddingTop) || 0;
    }
    return this.padding;
  }

  spacers() {
    const on = this.virtual;
    this.container.classList.toggle("virtual", on);
    if (!on) {
      this.above.remove();
      this.below.remove();
      return;
    }
    if (this.container.firstChild !== this.above) this.container.prepend(this.above);
    if (this.container.lastChild !== this.below) this.container.append(this.below);
  }

  // Build the rows of [first, last) that are not drawn, each before its drawn successor.
  insert(first, last) {
    const ordered = [...this.drawn.keys()].sort((a, b) => a - b);
    let at = ordered.length - 1;
    let next = this.tailShown ?? (this.virtual ? this.below : null);
    for (let index = last - 1; index >= first; index -= 1) {
      while (at >= 0 && ordered[at] > index) next = this.drawn.get(ordered[at--]);
      if (at >= 0 && ordered[at] === index) {
        next = this.drawn.get(ordered[at--]);
        continue;
      }
      const element = this.build(index);
      if (this.virtual) {
        setPlace(element, index + 1);
        setSize(element, this.sized);
      }
      this.drawn.set(index, element);
      this.container.insertBefore(element, next);
      next = element;
    }
  }

  // The spacers' heights, and a margin before a kept row that is not next to its neighbour
  // (a focused row out of the window), so that every row sits at its own place.
  place() {
    const ordered = [...this.drawn.keys()].sort((a, b) => a - b);
    const gapped = new Set();
    let previous = ordered.length ? ordered[0] - 1 : -1;
    for (const index of ordered) {
      if (this.virtual && index - previous > 1) {
        const element = this.drawn.get(index);
        element.style.marginTop = `${(index - previous - 1) * this.rowHeight}px`;
        gapped.add(element);
      }
      previous = index;
    }
    for (const element of this.gapped) {
      if (!gapped.has(element)) element.style.removeProperty("margin-top");
    }
    this.gapped = gapped;
    if (!this.virtual) return;
    const top = ordered.length ? ordered[0] : 0;
    const bottom = ordered.length ? ordered[ordered.length - 1] + 1 : 0;
    this.above.style.height = `${top * this.rowHeight}px`;
    this.below.style.height = `${(this.count - bottom) * this.rowHeight}px`;
  }

  drawTail(atEnd) {
    const next = atEnd ? this.tail() : null;
    if (next === this.tailShown) return;
    this.tailShown?.remove();
    if (next) this.container.insertBefore(next, this.virtual ? this.below : null);
    this.tailShown = next;
  }

  focusedIndex() {
    const active = document.activeElement;
    if (!active || !this.container.contains(active)) return -1;
    const row = active.closest("[data-index]");
    return row && this.container.contains(row) ? this.positionOf(row) : -1;
  }
}

function setSize(element, size) {
  if (size) element.setAttribute("aria-setsize", String(size));
  else element.removeAttribute("aria-setsize");
}

function setPlace(element, place) {
  if (place) element.setAttribute("aria-posinset", String(place));
  else element.removeAttribute("aria-posinset");
}
