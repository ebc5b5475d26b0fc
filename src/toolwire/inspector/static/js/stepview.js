// A run's steps as a list, a timeline and a detail pane; the same view draws a live run and a
// stored one. Drawing is incremental: `add` and `delta` only keep what came in, and `render`
// (once per animation frame while a run streams) appends the new rows, moves the selection
// mark, redraws the waiting row, and redraws the detail pane only when another step is
// selected. A drawn row is never rebuilt, so a focused row keeps the focus.
//
// The list is a listbox: one tab stop (the selected row), the arrow keys, Home, End, Page Up
// and Page Down move the selection and the focus; `step(±1)` does it for the `j`/`k` keys.
// While the focus is in the list or the detail pane, new steps do not move the selection.
//
// The bar above the list (StepTools) filters the rows: the list then draws only the steps the
// filter lets through, `shown` their indices in order; a row's place in the list (its
// position) is its step's index when nothing is filtered. A row keeps its step's index as its
// `data-index` either way. The timeline draws the same steps.

import { renderDetail } from "./detail.js";
import { focusRow, keepFocus } from "./focus.js";
import { activates, moveTo } from "./keys.js";
import { stepRow, waitingRow } from "./steps.js";
import { StepTools } from "./steptools.js";
import { Timeline } from "./timeline.js";
import { VirtualRows } from "./virtual.js";

const ROW_PX = 32;  // a row's height once the list is virtual (app.css: .steps.virtual)

export class StepView {
  // `timeline` (optional) gets a bar per step; `onSelect(index, step)` hears every selection.
  constructor(list, detail, timeline = null, onSelect = null) {
    this.list = list;
    this.detail = detail;
    this.onSelect = onSelect;
    this.steps = [];
    this.selected = -1;
    this.marked = -1;  // the row drawn as selected
    this.follow = true;
    this.waiting = false;
    this.live = new Map();  // round -> {thinking, content} streamed so far, until its llm step
    this.waitingShown = null;  // the waiting row drawn, until what it shows changes
    this.detailStep = undefined;  // the step the detail pane shows; it is redrawn only for another
    this.detailDrawn = false;
    list.setAttribute("role", "listbox");
    if (!list.hasAttribute("aria-label")) list.setAttribute("aria-label", "Steps");
    this.shown = null;  // the indices of the steps the filter lets through; null: every step
    this.passes = null;  // the filter's test of a step; null: none
    this.rows = new VirtualRows(list, { rowHeight: ROW_PX, spacer: "li",
      build: (pos) => this.build(pos), tail: () => this.tail(),
      pinned: () => this.posOf(this.selected),
      positionOf: (row) => this.posOf(Number(row.getAttribute("data-index"))) });
    this.tools = new StepTools(this);
    (list.closest(".workbench") ?? list).before(this.tools.element);
    this.timeline = timeline ? new Timeline(timeline, (i, focus) => this.select(i, { focus }))
      : null;
    list.addEventListener("click", (e) => this.pick(e.target));
    list.addEventListener("keydown", (e) => this.key(e));
  }

  key(event) {
    const row = event.target.closest("li[data-index]");
    if (!row) return;
    const at = Number(row.getAttribute("data-index"));
    const to = moveTo(event.key, this.posOf(at), this.shownCount());
    if (to !== null) {
      event.preventDefault();
      this.select(this.indexAt(to), { focus: true });
    } else if (activates(event)) {
      event.preventDefault();
      this.select(at, { focus: true });
    }
  }

  // The next (1) or previous (-1) step, selected and focused.
  step(delta) {
    const count = this.shownCount();
    if (!count) return;
    const at = this.posOf(this.selected);
    const from = at < 0 ? (delta > 0 ? -1 : count) : at;
    this.select(this.indexAt(Math.min(Math.max(from + delta, 0), count - 1)), { focus: true });
  }

  build(pos) {
    const index = this.indexAt(pos);
    const row = stepRow(this.steps[index], index, index === this.selected);
    if (this.tools.hit(this.steps[index])) row.classList.add("find-hit");
    return row;
  }

  // How many rows the list has; the step at a position; the position of a step (-1: hidden).
  shownCount() {
    return this.shown ? this.shown.length : this.steps.length;
  }

  indexAt(pos) {
    return this.shown ? this.shown[pos] : pos;
  }

  posOf(index) {
    if (!this.shown) return index;
    let low = 0;
    let high = this.shown.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const at = this.shown[mid];
      if (at === index) return mid;
      if (at < index) low = mid + 1;
      else high = mid - 1;
    }
    return -1;
  }

  // Draw only the steps `passes` lets through (null: every step); how many that is. A
  // selected step the filter hides gives the selection to the next one shown (or the last).
  setFilter(passes) {
    this.passes = passes;
    this.shown = passes ? this.steps.flatMap((s, i) => (passes(s) ? [i] : [])) : null;
    if (this.shown && this.shown.length && this.posOf(this.selected) < 0) {
      this.selected = this.shown.find((i) => i > this.selected) ?? this.shown[this.shown.length - 1];
    }
    this.marked = -1;
    this.rows.reset();
    this.timeline?.setFilter(passes, this.selected);
    this.render();
    this.rows.reveal(this.posOf(this.selected));
    this.timeline?.reveal(this.selected);
    return this.shownCount();
  }

  // The rows drawn marked again as holding the find's words, or not.
  markHits() {
    for (const row of this.rows.drawn.values()) {
      row.classList.toggle("find-hit", this.tools.hit(this.steps[Number(row.getAttribute("data-index"))]));
    }
  }

  // Whether the person is reading here: the focus is in the list or the detail pane.
  reading() {
    const active = document.activeElement;
    return Boolean(active) && (this.list.contains(active) || this.detail.contains(active));
  }

  reset(steps = []) {
    this.steps = [...steps];  // this view's own: steps added here stay here
    this.shown = this.passes ? this.steps.flatMap((s, i) => (this.passes(s) ? [i] : [])) : null;
    this.selected = this.shown ? (this.shown[this.shown.length - 1] ?? -1) : steps.length - 1;
    this.marked = -1;
    this.follow = true;
    this.waiting = false;
    this.live = new Map();
    this.waitingShown = null;
    this.detailDrawn = false;
    this.rows.reset();
    this.timeline?.reset(this.steps, this.selected);
    this.tools.refind();
    this.render();
  }

  // A step that came in; it is drawn at the next `render`.
  add(step) {
    if (step.kind === "llm" && this.live.delete(step.round)) this.waitingShown = null;
    this.steps.push(step);
    const index = this.steps.length - 1;
    if (this.passes && !this.passes(step)) return;
    this.shown?.push(index);
    this.tools.added(index);
    if (this.follow && this.reading()) this.follow = false;
    if (this.follow) this.selected = index;
  }

  setWaiting(on) {
    if (this.waiting !== on) this.waitingShown = null;
    this.waiting = on;
  }

  pick(target) {
    const row = target.closest("li[data-index]");
    if (row) this.select(Number(row.getAttribute("data-index")));
  }

  // Select step `index`; `focus` moves the focus to its row in the list (or, with
  // "timeline", to its row in the timeline).
  select(index, { focus = false } = {}) {
    if (!Number.isInteger(index) || index < 0 || index >= this.steps.length) return;
    this.selected = index;
    this.follow = this.selected === this.indexAt(this.shownCount() - 1);
    this.render();
    const pos = this.posOf(index);
    this.rows.reveal(pos);
    this.timeline?.reveal(index);
    if (focus === "timeline") this.timeline?.focus(index);
    else if (focus) focusRow(this.rows.row(pos));
    this.onSelect?.(index, this.steps[index]);
  }

  // A piece of a round's answer or thinking; the waiting row shows it at the next `render`.
  delta(event) {
    if (!Number.isInteger(event.round) || typeof event.text !== "string") return;
    if (event.kind !== "content" && event.kind !== "thinking") return;
    const live = this.live.get(event.round) ?? { thinking: "", content: "" };
    live[event.kind] += event.text;
    this.live.set(event.round, live);
    this.waitingShown = null;
  }

  // Draw what changed since the last render.
  render() {
    this.rows.setCount(this.shownCount());
    this.mark();
    this.tools.update();
    if (this.timeline) {  // selected first: the row the timeline keeps drawn is the selected one
      this.timeline.select(this.selected);
      this.timeline.update();
    }
    this.drawDetail();
  }

  mark() {
    if (this.marked === this.selected) return;
    const was = this.marked < 0 ? null : this.rows.row(this.posOf(this.marked));
    if (was) markRow(was, false);
    const now = this.rows.row(this.posOf(this.selected));
    if (now) markRow(now, true);
    this.marked = this.selected;
  }

  // From the first step's start to the last one's end, as the timeline lays them out (NaN
  // before any step, or without a timeline).
  span() {
    return this.timeline?.scale ? this.timeline.scale.span : NaN;
  }

  // The conversation as the run's last request sent it: that step selected, its messages
  // open, the focus on their panel. False when the run has no request (yet).
  conversation() {
    const at = this.steps.findLastIndex((s) => s.kind === "request");
    if (at < 0) return false;
    this.wantTab = "Messages sent";
    this.detailDrawn = false;
    this.select(at);
    this.detail.querySelector(".tab-panel")?.focus();
    return true;
  }

  // Streamed steps leave the detail of a step being read alone: its open tab and what it
  // shows stay. A new selection opens the same tab when its step has one.
  drawDetail() {
    const step = this.steps[this.selected];
    if (this.detailDrawn && step === this.detailStep) return;
    const open = this.detail.querySelector(".tab[aria-selected=true]");
    const tab = this.wantTab ?? (open ? open.textContent : null);
    this.wantTab = null;
    keepFocus(this.detail, () => renderDetail(this.detail, step, tab, this.steps));
    this.detailStep = step;
    this.detailDrawn = true;
  }

  // The row after the last step while a round waits for its model; the same element until
  // what it shows changes.
  tail() {
    const last = this.steps[this.steps.length - 1];
    if (!this.waiting || !last || last.kind !== "request") return null;
    this.waitingShown = this.waitingShown ?? waitingRow(this.live.get(last.round));
    return this.waitingShown;
  }
}

function markRow(row, selected) {
  row.classList.toggle("selected", selected);
  row.setAttribute("aria-selected", selected ? "true" : "false");
  row.setAttribute("tabindex", selected ? "0" : "-1");
}
