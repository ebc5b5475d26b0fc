// The timeline: one bar per step on a shared time axis, so where the time went shows at a
// glance. Calls of one turn that ran at once overlap on the axis, side by side in their rows.
//
// A step's place comes from its `start_ms` (when it began, ms since the epoch) and its
// `duration_ms`. Steps stored before start times were kept have none: they are laid end to end
// in order, and the timeline says so. A long idle stretch (a run waiting for a person) is
// drawn short, with its length written in it, so it does not squeeze every bar to a line.
// Bars are placed with CSSOM properties (allowed by the page's CSP), labels are text.
//
// The timeline grows with the run: a new step is placed once (its neighbours are not placed
// again), its row is appended (see VirtualRows), and only the bars drawn are moved when the
// axis grows.
//
// The rows are a listbox with one tab stop (the selected step's row); the arrow keys, Home
// and End move the selection with the focus. The selected step's details (when it started,
// how long it took, what it used) show in a line under the rows, which is the selected row's
// description (aria-describedby) to a reader; the other rows' tooltips are theirs.
//
// The step list's filter (StepView.setFilter) filters the timeline too: only the steps it lets
// through have a row, placed on the whole run's axis, and the head says how many are hidden.

import { fill, h, ms } from "./dom.js";
import { focusRow } from "./focus.js";
import { activates, moveTo } from "./keys.js";
import { stepCost, stepTitle, titleParts } from "./steps.js";
import { VirtualRows } from "./virtual.js";

const IDLE_MS = 2000;  // an idle stretch longer than this is drawn short
const IDLE_SHARE = 0.04;  // ... as this share of the axis
const MIN_BAR = 0.4;  // percent: a 0 ms step still shows
const MARK_PX = 48;  // the widest label on the axis ("⋯ 12.34 s" at its font size), and a gap
const UNMEASURED_PX = 600;  // the axis' width until it is first measured
const ROW_PX = 20;  // a row's height once the rows are virtual (app.css: .timeline-rows.virtual)
const BARS = new WeakMap();  // a row -> its bar
let drawn = 0;  // timelines drawn so far: each gets ids of its own

export class Timeline {
  // `pick(i, focus)` selects step i (a click on its row, or a key; `focus` is "timeline" when
  // the focus is to move to the row).
  constructor(container, pick) {
    this.container = container;
    this.pick = pick;
    this.placed = new Placement();
    this.steps = [];
    this.selected = -1;
    this.passes = null;  // the step list's filter (null: every step has a row)
    this.title = h("span", { class: "muted" });
    this.hiddenNote = h("span", { class: "muted", "data-testid": "timeline-hidden" });
    this.derivedBadge = h("span", { class: "badge muted", "data-testid": "timeline-derived" },
      "times derived from durations");
    this.head = h("div", { class: "timeline-head" },
      h("span", { class: "timeline-title" }, "Timeline"), this.title, this.hiddenNote);
    this.axis = h("div", { class: "timeline-axis", "aria-hidden": "true" });
    this.axisPx = UNMEASURED_PX;  // kept from resizes: drawing reads no layout
    new ResizeObserver(([entry]) => {
      this.axisPx = entry.contentRect.width || UNMEASURED_PX;
      if (this.scale) this.axis.replaceChildren(...ticks(this.scale, this.axisPx));
    }).observe(this.axis);
    this.list = h("div", { class: "timeline-rows", role: "listbox", "aria-label": "Timeline" });
    this.detailId = `timeline-detail-${(drawn += 1)}`;
    this.detail = h("p", { class: "timeline-detail", id: this.detailId,
      "data-testid": "timeline-detail", hidden: true });
    this.detailShown = null;  // [step, origin] the line describes
    container.replaceChildren(this.head, this.axis, this.list, this.detail);
    container.hidden = true;
    this.rows = new VirtualRows(this.list, { rowHeight: ROW_PX,
      build: (i) => this.row(this.placed.items[i]),
      pinned: () => this.placed.positions.get(this.selected) ?? -1 });
    this.list.addEventListener("click", (e) => this.picked(e.target));
    this.list.addEventListener("keydown", (e) => this.key(e));
    this.scale = null;
  }

  key(event) {
    const row = event.target.closest(".timeline-row[data-index]");
    if (!row) return;
    const at = this.placed.positions.get(Number(row.getAttribute("data-index")));
    const to = moveTo(event.key, at, this.placed.items.length);
    if (to !== null) {
      event.preventDefault();
      this.pick(this.placed.items[to].index, "timeline");
    } else if (activates(event)) {
      event.preventDefault();
      this.picked(event.target);
    }
  }

  // Focus step `index`'s row.
  focus(index) {
    focusRow(this.rowOf(index));
  }

  // Rows only for the steps `passes` lets through (null: every step), placed again; step
  // `selected` is the selection.
  setFilter(passes, selected) {
    this.passes = passes;
    this.reset(this.steps, selected);
  }

  // `steps` is the step view's own array: `update` places the steps appended to it since.
  reset(steps, selected) {
    this.placed = new Placement();
    this.steps = steps;
    this.selected = selected;
    this.scale = null;
    this.rows.reset();
    this.update();
  }

  // Place the steps appended since the last update; redraw the axis and the bars drawn.
  update() {
    const before = this.placed.origin;
    const passes = this.passes;
    for (let i = this.placed.seen; i < this.steps.length; i += 1) {
      const step = this.steps[i];
      this.placed.add(step, i, !passes || passes(step));
    }
    this.placed.seen = this.steps.length;
    const items = this.placed.items;
    this.container.hidden = this.placed.placed === 0;
    if (this.container.hidden) return;
    this.scale = this.placed.scale();
    this.title.textContent = ` ${ms(this.scale.span)} from first to last step`;
    this.tellHidden();
    if (this.placed.derived) this.head.append(this.derivedBadge);
    else this.derivedBadge.remove();
    this.axis.replaceChildren(...ticks(this.scale, this.axisPx));
    const moved = before !== this.placed.origin;  // a step began before the first: rare
    this.rows.setCount(items.length);
    for (const [at, row] of this.rows.drawn) {
      this.placeBar(row, items[at]);
      if (moved) describeRow(row, describe(items[at].step, items[at], this.placed.origin));
    }
    this.showDetail();
  }

  // How many steps the filter hides, in the head; the rows are left out when it hides all.
  tellHidden() {
    const hidden = this.placed.placed - this.placed.items.length;
    const text = hidden ? ` · ${this.placed.items.length} of ${this.placed.placed} steps shown,`
      + ` ${hidden} hidden by the filter` : "";
    if (this.hiddenNote.textContent !== text) this.hiddenNote.textContent = text;
    this.list.hidden = this.placed.items.length === 0;
  }

  select(index) {
    const was = this.rowOf(this.selected);
    this.selected = index;
    if (was) mark(was, false, this.detailId);
    const now = this.rowOf(index);
    if (now) mark(now, true, this.detailId);
    if (this.placed.seen === this.steps.length) this.showDetail();  // else `update` will
  }

  // The selected step's details in the line under the rows (drawn again only for another
  // step, or when the axis' origin moved).
  showDetail() {
    const at = this.placed.positions.get(this.selected);
    const item = at === undefined ? null : this.placed.items[at];
    const origin = this.placed.origin;
    const shown = this.detailShown;
    if (shown && item && shown[0] === item.step && shown[1] === origin) return;
    this.detailShown = item ? [item.step, origin] : null;
    this.detail.hidden = !item;
    fill(this.detail, item ? [
      h("span", { class: "timeline-detail-label", "aria-hidden": "true" }, "Selected: "),
      titleParts(item.step), details(item.step, item, origin)] : null);
  }

  // Scroll the timeline to step `index`'s row.
  reveal(index) {
    const at = this.placed.positions.get(index);
    if (at !== undefined) this.rows.reveal(at);
  }

  rowOf(index) {
    const at = this.placed.positions.get(index);
    return at === undefined ? null : this.rows.row(at);
  }

  picked(target) {
    const row = target.closest(".timeline-row[data-index]");
    if (row) this.pick(Number(row.getAttribute("data-index")), "timeline");
  }

  row(item) {
    const { step, index } = item;
    const bar = h("span", { class: `timeline-bar kind-${safeKind(step.kind)}`
      + (step.tool_is_error === true ? " failed" : "") }, ms(item.duration));
    const selected = index === this.selected;
    const said = describe(step, item, this.placed.origin);
    const line = h("div", {
      class: selected ? "timeline-row selected" : "timeline-row",
      role: "option", tabindex: selected ? 0 : -1, "aria-selected": selected ? "true" : "false",
      "aria-describedby": selected ? this.detailId : null,
      "data-index": index, "data-kind": String(step.kind), title: said,
    }, h("span", { class: "timeline-label" }, titleParts(step)),
    h("span", { class: "timeline-track" }, bar));
    BARS.set(line, bar);
    this.placeBar(line, item);
    return line;
  }

  placeBar(line, item) {
    const axis = this.scale;
    const bar = BARS.get(line);
    if (!axis || !bar) return;
    const left = axis.at(item.start - this.placed.origin);
    const width = Math.max(axis.at(item.end - this.placed.origin) - left, MIN_BAR);
    bar.style.left = `${Math.min(left, 100 - MIN_BAR)}%`;
    bar.style.width = `${width}%`;
  }
}

function mark(row, selected, detailId) {
  row.classList.toggle("selected", selected);
  row.setAttribute("aria-selected", selected ? "true" : "false");
  row.setAttribute("tabindex", selected ? "0" : "-1");
  if (selected) row.setAttribute("aria-describedby", detailId);
  else row.removeAttribute("aria-describedby");
}

function describeRow(row, said) {
  row.setAttribute("title", said);  // a reader hears it as the row's description
}

// Each step's start and end (ms since the epoch, or derived), added one step at a time; the
// axis over them all, with idle stretches found incrementally while steps come in start
// order; an item (a row) for each step shown.
class Placement {
  constructor() {
    this.items = [];
    this.positions = new Map();  // a step's index -> its item's
    this.seen = 0;  // steps looked at (a step that is not an object has no item)
    this.placed = 0;  // steps placed on the axis, shown or not
    this.spans = [];  // [start, end] of each, for an axis whose steps came out of order
    this.derived = false;
    this.cursor = null;
    this.origin = Infinity;
    this.reach = -Infinity;  // the latest end so far
    this.lastStart = -Infinity;
    this.gaps = [];  // [from, to] absolute, while `ordered`
    this.ordered = true;  // every item started no earlier than the one before
  }

  add(step, index, shown) {
    if (!step || typeof step !== "object") return;
    const duration = Math.max(0, Number(step.duration_ms) || 0);
    let start = Number(step.start_ms);
    if (!Number.isFinite(start)) {
      this.derived = true;
      start = this.cursor ?? 0;
    }
    this.cursor = Math.max(this.cursor ?? start, start + duration);
    const end = start + duration;
    this.placed += 1;
    this.spans.push([start, end]);
    if (shown) {
      this.positions.set(index, this.items.length);
      this.items.push({ index, step, start, end, duration });
    }
    this.origin = Math.min(this.origin, start);
    if (start < this.lastStart) this.ordered = false;
    this.lastStart = Math.max(this.lastStart, start);
    if (this.ordered) {
      if (this.reach > -Infinity && start - this.reach > IDLE_MS) this.gaps.push([this.reach, start]);
      this.reach = Math.max(this.reach, end);
    }
  }

  // The axis: busy time at its real length, idle stretches over IDLE_MS drawn short; times
  // relative to the first start.
  scale() {
    let gaps = this.gaps;
    let reach = this.reach;
    if (!this.ordered) [gaps, reach] = idleOf(this.spans);
    const origin = this.origin;
    const relative = gaps.map(([a, b]) => [a - origin, b - origin]);
    return axisOf(reach - origin, relative);
  }
}

function idleOf(placed) {
  const spans = [...placed].sort((a, b) => a[0] - b[0]);
  const gaps = [];
  let reach = -Infinity;
  for (const [start, end] of spans) {
    if (reach > -Infinity && start - reach > IDLE_MS) gaps.push([reach, start]);
    reach = Math.max(reach, end);
  }
  return [gaps, reach];
}

function axisOf(span, gaps) {
  const idle = gaps.reduce((sum, [a, b]) => sum + (b - a), 0);
  const busy = Math.max(span - idle, 1);
  const gapWidth = gaps.length ? busy * IDLE_SHARE : 0;
  const drawn = busy + gapWidth * gaps.length;
  const at = (t) => {
    let x = t;
    for (const [a, b] of gaps) {
      if (t >= b) x -= (b - a) - gapWidth;
      else if (t > a) x -= (t - a) * (1 - gapWidth / (b - a));
    }
    return (100 * x) / drawn;
  };
  // The time at `share` percent of the axis, or null within `clear` percent of an idle stretch.
  const timeAt = (share, clear) => {
    let t = (share * drawn) / 100;
    for (const [a, b] of gaps) {
      if (share < at(a) - clear) break;
      if (share <= at(b) + clear) return null;
      t += (b - a) - gapWidth;
    }
    return t;
  };
  return { span, gaps, at, timeAt };
}

// Marks spread evenly along the drawn axis (`px` wide), each naming the time at its place, and
// each idle stretch drawn short with its length written over it. Labels never overlap: a mark
// is left out near an idle stretch (the first and last marks too: the head names the span).
function ticks(axis, px) {
  const label = (100 * MARK_PX) / px;  // a label's width, in percent of the axis
  const idle = idleMarks(axis, label);
  const crowds = (from, to) => idle.some((g) => g.text && g.left < to && g.right > from);
  const shares = px >= 6 * MARK_PX ? [0, 25, 50, 75, 100]
    : px >= 3 * MARK_PX ? [0, 50, 100] : [0, 100];
  const marks = shares.map((share, n) => {
    const first = n === 0;
    const last = n === shares.length - 1;
    const time = first ? 0 : last ? axis.span : axis.timeAt(share, label / 2);
    const [from, to] = first ? [0, label] : last ? [100 - label, 100]
      : [share - label / 2, share + label / 2];
    if (time === null || crowds(from, to)) return null;
    const mark = h("span", { class: `timeline-tick${first ? " first" : last ? " last" : ""}` },
      ms(time));
    mark.style.left = `${share}%`;
    return mark;
  }).filter(Boolean);
  return [...marks, ...idle.map((g) => g.element)];
}

// The idle stretches, each with where its label spans (percent); a stretch too close to the
// one before has its length only in its title.
function idleMarks(axis, label) {
  let taken = -Infinity;
  return axis.gaps.map(([a, b]) => {
    const from = axis.at(a);
    const to = axis.at(b);
    const middle = (from + to) / 2;
    const place = middle - label / 2 < 0 ? "start" : middle + label / 2 > 100 ? "end" : "";
    const left = place === "start" ? from : place === "end" ? to - label : middle - label / 2;
    const text = left >= taken;
    if (text) taken = left + label;
    const element = h("span", { class: "timeline-gap", title: `idle for ${ms(b - a)}` });
    element.style.left = `${from}%`;
    element.style.width = `${to - from}%`;
    if (text) {
      element.append(h("span", { class: `timeline-gap-label ${place}`.trim() }, `⋯ ${ms(b - a)}`));
    }
    return { element, text, left, right: left + label };
  });
}

// The row's tooltip: its title and details.
function describe(step, item, origin) {
  return stepTitle(step) + details(step, item, origin);
}

// What follows a step's title in its details: how long it took, when it started, and for a
// model call what it used.
function details(step, item, origin) {
  const parts = [`: ${ms(item.duration)}, at +${ms(item.start - origin)}`];
  if (step.kind === "llm") {
    const tokens = Number(step.total_tokens);
    if (Number.isFinite(tokens)) parts.push(`${tokens} tokens`);
    parts.push(stepCost(step));
  }
  return parts.join(" · ");
}

function safeKind(kind) {
  return ["request", "llm", "tool", "decision", "context_truncated", "provider_failed"]
    .includes(kind) ? kind : "other";
}
