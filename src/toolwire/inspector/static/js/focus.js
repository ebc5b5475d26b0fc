// Focus kept across a redraw: content drawn again (a table re-sorted, a list of toggles after a
// change, a form whose choices loaded) replaces the element that had the focus; the focus goes
// to its counterpart in the new content (the same id, or the same place and tag), else to the
// first control there, else to the container. Without this it would fall to the page's body.

const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]),"
  + " textarea:not([disabled]), [tabindex]";

// Run `redraw()` (which replaces what `container` holds) keeping the focus inside it.
export function keepFocus(container, redraw) {
  const active = document.activeElement;
  const inside = active instanceof Element && active !== container && container.contains(active);
  const place = inside ? placeOf(container, active) : null;
  const result = redraw();
  if (place && !active.isConnected) restore(container, place);
  return result;
}

// Focus `element` (made focusable by script when it is not); `scroll` brings it to the top of
// the view at the next frame, once what was just drawn is laid out (scrolling now would lay
// the page out twice).
export function focusOn(element, { scroll = false } = {}) {
  if (!element) return;
  if (!element.matches(FOCUSABLE)) element.setAttribute("tabindex", "-1");
  element.focus({ preventScroll: true });
  if (scroll) requestAnimationFrame(() => element.scrollIntoView({ block: "start" }));
}

// Focus a row of a scrolling list (already scrolled to it there, see VirtualRows.reveal) and
// bring it into the window when the list itself is partly out of it (a phone's narrow page
// stacks the list under everything else): only as far as it takes, read on a key press.
export function focusRow(row) {
  if (!row) return;
  row.focus({ preventScroll: true });
  const at = row.getBoundingClientRect();
  if (at.top < 0 || at.bottom > window.innerHeight) row.scrollIntoView({ block: "nearest" });
}

function placeOf(container, element) {
  const path = [];
  for (let node = element; node && node !== container; node = node.parentElement) {
    path.unshift([...node.parentElement.children].indexOf(node));
  }
  return { path, tag: element.tagName, id: element.id };
}

function restore(container, { path, tag, id }) {
  let found = id ? document.getElementById(id) : null;
  if (!found || !container.contains(found)) {
    found = container;
    for (const at of path) found = found?.children[at];
    if (found && found.tagName !== tag) found = null;
  }
  if (!usable(found)) found = [...container.querySelectorAll(FOCUSABLE)].find(usable) ?? null;
  focusOn(found ?? container);
}

function usable(element) {
  return Boolean(element) && element.matches(FOCUSABLE) && !element.closest("[hidden]");
}

// A scrolling box with nothing focusable inside (a wide table, a long JSON text) is a tab stop
// while it overflows, so that the keyboard can scroll it: a named region with tabindex 0.
// Whether it overflows is read when its size changes (a ResizeObserver), never while drawing.
const overflowing = new ResizeObserver((entries) => {
  for (const { target } of entries) {
    const over = target.scrollWidth > target.clientWidth + 1
      || target.scrollHeight > target.clientHeight + 1;
    if (over === target.hasAttribute("tabindex")) continue;
    if (over) {
      target.setAttribute("tabindex", "0");
      target.setAttribute("role", "region");
      target.setAttribute("aria-label", target.getAttribute("data-label"));
    } else {
      for (const name of ["tabindex", "role", "aria-label"]) target.removeAttribute(name);
    }
  }
});

export function scrollableRegion(element, label) {
  element.setAttribute("data-label", label);
  overflowing.observe(element);
  return element;
}
