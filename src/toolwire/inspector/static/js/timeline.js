// The timeline: one bar per step on a shared time axis, so where the time went shows at a
// glance. Calls of one turn that ran at once overlap on the axis, side by side in their rows.
//
// A step's place comes from its `start_ms` (when it began, ms since the epoch) and its
// `duration_ms`. Steps stored before start times were kept have none: they are laid end to end
// in order, and the timeline says so. A long idle stretch (a run waiting for a person) is
// drawn short, with its length written in it, so it does not squeeze every bar to a line.
// Bars are placed with CSSOM properties (allowed by the page's CSP), labels are text.

import { h, ms } from "./dom.js";
import { stepCost, stepTitle } from "./steps.js";

const IDLE_MS = 2000;  // an idle stretch longer than this is drawn short
const IDLE_SHARE = 0.04;  // ... as this share of the axis
const MIN_BAR = 0.4;  // percent: a 0 ms step still shows

// Draw `steps` into `container`; `selected` is the index shown in the detail pane, `pick(i)`
// selects a step (a click on its row, or Enter).
export function renderTimeline(container, steps, selected, pick) {
  const placed = place(steps);
  if (!placed.items.length) {
    container.replaceChildren();
    container.hidden = true;
    return;
  }
  container.hidden = false;
  const axis = scale(placed.items);
  const rows = placed.items.map((item) => row(item, axis, item.index === selected, pick));
  container.replaceChildren(
    h("div", { class: "timeline-head" },
      h("span", { class: "timeline-title" }, "Timeline"),
      h("span", { class: "muted" }, ` ${ms(axis.span)} from first to last step`),
      placed.derived ? h("span", { class: "badge muted", "data-testid": "timeline-derived" },
        "times derived from durations") : null),
    ticks(axis),
    h("div", { class: "timeline-rows", role: "list" }, rows));
}

// Each step's start and end (ms from the first start), and whether any had to be derived.
export function place(steps) {
  let derived = false;
  let cursor = null;
  const items = [];
  steps.forEach((step, index) => {
    if (!step || typeof step !== "object") return;
    const duration = Math.max(0, Number(step.duration_ms) || 0);
    let start = Number(step.start_ms);
    if (!Number.isFinite(start)) {
      derived = true;
      start = cursor ?? 0;
    }
    cursor = Math.max(cursor ?? start, start + duration);
    items.push({ index, step, start, end: start + duration, duration });
  });
  const first = Math.min(...items.map((i) => i.start));
  for (const item of items) {
    item.start -= first;
    item.end -= first;
  }
  return { items, derived };
}

// The axis: busy time at its real length, idle stretches over IDLE_MS drawn short.
function scale(items) {
  const spans = items.map((i) => [i.start, i.end]).sort((a, b) => a[0] - b[0]);
  const gaps = [];
  let reach = 0;
  for (const [start, end] of spans) {
    if (start - reach > IDLE_MS) gaps.push([reach, start]);
    reach = Math.max(reach, end);
  }
  const span = reach;
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
  return { span, gaps, at };
}

function ticks(axis) {
  const marks = [0, 0.25, 0.5, 0.75, 1].map((share) => {
    const mark = h("span", { class: "timeline-tick" }, ms(axis.span * share));
    mark.style.left = `${axis.at(axis.span * share)}%`;
    return mark;
  });
  const idle = axis.gaps.map(([a, b]) => {
    const gap = h("span", { class: "timeline-gap", title: `idle for ${ms(b - a)}` },
      `⋯ ${ms(b - a)}`);
    gap.style.left = `${axis.at(a)}%`;
    gap.style.width = `${axis.at(b) - axis.at(a)}%`;
    return gap;
  });
  return h("div", { class: "timeline-axis" }, marks, idle);
}

function row(item, axis, selected, pick) {
  const { step, index } = item;
  const left = axis.at(item.start);
  const width = Math.max(axis.at(item.end) - left, MIN_BAR);
  const bar = h("span", { class: `timeline-bar kind-${safeKind(step.kind)}`
    + (step.tool_is_error === true ? " failed" : "") }, ms(item.duration));
  bar.style.left = `${Math.min(left, 100 - MIN_BAR)}%`;
  bar.style.width = `${width}%`;
  const line = h("div", {
    class: selected ? "timeline-row selected" : "timeline-row",
    role: "listitem", tabindex: 0, "data-index": index, "data-kind": String(step.kind),
    title: describe(step, item),
  }, h("span", { class: "timeline-label" }, stepTitle(step)),
  h("span", { class: "timeline-track" }, bar));
  line.addEventListener("click", () => pick(index));
  line.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(index); });
  return line;
}

// The row's tooltip: when it started, how long it took, and for a model call what it used.
function describe(step, item) {
  const parts = [`${stepTitle(step)}: ${ms(item.duration)}, at +${ms(item.start)}`];
  if (step.kind === "llm") {
    const tokens = Number(step.total_tokens);
    if (Number.isFinite(tokens)) parts.push(`${tokens} tokens`);
    parts.push(stepCost(step));
  }
  return parts.join(" · ");
}

function safeKind(kind) {
  return ["request", "llm", "tool", "decision", "context_truncated"].includes(kind) ? kind
    : "other";
}
