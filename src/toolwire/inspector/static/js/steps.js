// The step list and the summary strip. A step list is a plain array of RunStep dicts; the
// same code draws a live run and a stored (privacy-filtered) one, so every field is optional.

import { h, ms } from "./dom.js";
import { reasonOf, STATUS_TEXT } from "./status.js";


const DECISION_TEXT = { approve: "approved", deny: "denied", input: "input given",
  "elicit:accept": "server's question answered", "elicit:decline": "server's question declined",
  "elicit:cancel": "server's question cancelled" };

export function stepTitle(step) {
  const round = Number.isInteger(step.round) ? ` · round ${step.round}` : "";
  switch (step.kind) {
    case "request":
      return `⬆ Request${round}`;
    case "llm": {
      const calls = requestedNames(step);
      return calls.length ? `⬇ Model requests ${calls.join(", ")}` : "✓ Model answer";
    }
    case "tool":
      return `⚙ ${String(step.tool_name ?? "tool")}`;
    case "decision": {
      const what = DECISION_TEXT[step.decision] ?? String(step.decision ?? "decided");
      return `☛ ${what} by ${String(step.decided_by ?? "someone")}`;
    }
    case "provider_failed": {
      const then = step.next_provider ? `; trying ${String(step.next_provider)}` : "";
      return `✗ Provider ${String(step.provider ?? "?")} failed`
        + ` (${String(step.error_class ?? "error")})${then}`;
    }
    case "context_truncated": {
      const count = Number(step.dropped_exchanges);
      const what = Number.isInteger(count) ? `${count} old exchange${count === 1 ? "" : "s"}`
        : "old exchanges";
      return `✂ Context: ${what} dropped`;
    }
    default:
      return `? ${String(step.kind ?? "step")}`;
  }
}

// The names of the calls a model turn asked for (a stored step may keep only the names).
export function requestedNames(step) {
  if (Array.isArray(step.requested_tool_calls)) {
    return step.requested_tool_calls.map((c) => String(c && c.name));
  }
  return Array.isArray(step.requested_tool_names) ? step.requested_tool_names.map(String) : [];
}

// A step's title with its leading symbol hidden from assistive technology (the words say it).
export function titleParts(step) {
  const title = stepTitle(step);
  const at = title.indexOf(" ");
  return at > 0 ? [h("span", { "aria-hidden": "true" }, title.slice(0, at)), title.slice(at)]
    : [title];
}

// The words of a step's title, without its symbol: what a screen reader is told.
export function stepLabel(step) {
  const title = stepTitle(step);
  return title.slice(title.indexOf(" ") + 1);
}

// A step as an option of the step list (a listbox); the selected row is the list's tab stop.
export function stepRow(step, index, selected) {
  const parts = [h("span", { class: "step-title" }, titleParts(step))];
  if (step.kind === "tool") {
    const failed = step.tool_is_error === true;
    parts.push(h("span", { class: failed ? "badge error" : "badge ok" }, failed ? "error" : "ok"));
  }
  if (step.kind === "provider_failed") parts.push(h("span", { class: "badge error" }, "failed"));
  if (step.kind === "request") parts.push(unoffered(step));
  if (step.kind === "llm") parts.push(usage(step));
  if (step.kind !== "request") parts.push(h("span", { class: "step-time" }, ms(step.duration_ms)));
  return h("li", {
    class: selected ? "step selected" : "step",
    "data-kind": String(step.kind),
    "data-index": index,
    tabindex: selected ? 0 : -1,
    role: "option",
    "aria-selected": selected ? "true" : "false",
  }, parts);
}

// The one note a run gives for the tools it was not offered for want of a workspace (only its
// first request carries the gate's refusals); the words are the command line's
// (toolwire.tools.policy.workspace_note).
function unoffered(step) {
  const refusals = Array.isArray(step.refusals) ? step.refusals : [];
  const count = refusals.filter((r) => r && r.reason === "no_workspace").length;
  if (!count) return null;
  return h("span", { class: "badge note", "data-testid": "no-workspace" },
    `${count} tool${count === 1 ? "" : "s"} not offered: no workspace`);
}

// A model call's tokens (in and out in the title) and cost, as the step list shows them. A
// call whose provider reported no usage shows toolwire's estimate, marked as one.
function usage(step) {
  const tokens = Number(step.total_tokens);
  const cost = Number(step.cost);
  const estimated = step.tokens_estimated === true;
  const count = estimated ? `~${tokens} tok (estimated)` : `${tokens} tok`;
  const text = [Number.isFinite(tokens) ? count : null,
    Number.isFinite(cost) ? costText(cost, true, estimated) : null].filter(Boolean).join(" · ");
  const split = `${Number(step.prompt_tokens) || 0} prompt + ${Number(step.completion_tokens) || 0} `
    + "completion tokens";
  return h("span", { class: "step-usage", "data-testid": "step-usage",
    title: `${estimated ? `${tokensText(tokens, false)}: ` : ""}${split}; `
      + costText(cost, Number.isFinite(cost), estimated) }, text);
}

// A run's tokens as a person reads them: the count, or "tokens unknown" with the estimate its
// budgets counted when a provider did not report them all.
export function tokensText(total, known) {
  return known ? String(total) : `tokens unknown (about ${total} estimated)`;
}

// The row of a round whose model has not answered yet; once its answer streams, the thinking
// and the answer so far fill it in (as text), until the round's llm step replaces it.
export function waitingRow(live) {
  const thinking = live && live.thinking;
  const content = live && live.content;
  const row = { role: "option", "aria-disabled": "true", "aria-selected": "false" };
  if (!thinking && !content) {
    return h("li", { class: "step waiting", "data-kind": "waiting", ...row },
      h("span", { class: "spinner" }), "Waiting for model…");
  }
  return h("li", { class: "step waiting live", "data-kind": "streaming", ...row },
    h("span", { class: "spinner" }),
    h("div", { class: "live-text" },
      thinking ? h("div", { class: "live-thinking", "data-testid": "live-thinking" }, thinking)
        : null,
      content ? h("div", { class: "live-answer", "data-testid": "live-answer" }, content) : null));
}

// Counts for the summary strip; `final` is the terminal event (or a stored run) when known,
// `spanMs` the time from the first step's start to the last one's end. A run resumed after a
// wait streams only its last segment, whose own `wall_ms` leaves out the run before it: the
// wall time is never shorter than the span of the steps shown.
export function summarise(steps, final, elapsedMs, spanMs = NaN) {
  const llm = steps.filter((s) => s.kind === "llm");
  const streamedTokens = llm.reduce((sum, s) => sum + (Number(s.total_tokens) || 0), 0);
  const usage = final && final.usage;
  const priced = final && Number.isFinite(final.cost);
  const sum = (key) => llm.reduce((total, s) => total + (Number(s[key]) || 0), 0);
  const known = (key) => (usage && Number.isFinite(Number(usage[key])) ? Number(usage[key])
    : sum(key));
  return {
    rounds: llm.length,
    toolCalls: steps.filter((s) => s.kind === "tool").length,
    tokens: usage && Number.isFinite(usage.total_tokens) ? usage.total_tokens : streamedTokens,
    tokensIn: known("prompt_tokens"),
    tokensOut: known("completion_tokens"),
    // The terminal event (or stored run) says; before it, the calls so far do.
    tokensKnown: usage && typeof usage.tokens_known === "boolean" ? usage.tokens_known
      : llm.every((s) => s.tokens_estimated !== true),
    wall: atLeast(final && Number.isFinite(final.wall_ms) ? final.wall_ms : elapsedMs, spanMs),
    // No model call answered: nothing was spent, and no price applies (null: "no cost").
    cost: !llm.length ? null : priced ? final.cost
      : llm.reduce((total, s) => total + (Number(s.cost) || 0), 0),
    costComplete: priced ? final.cost_complete === true
      : llm.every((s) => Number.isFinite(s.cost)),
    // Priced from estimated tokens: the terminal event (or stored run) says; before it, a
    // priced call whose tokens were estimated does.
    costEstimated: priced && typeof final.cost_estimated === "boolean" ? final.cost_estimated
      : llm.some((s) => s.tokens_estimated === true && Number.isFinite(s.cost)),
    reason: reasonOf(final),
  };
}

function atLeast(wall, spanMs) {
  return Number.isFinite(wall) && Number.isFinite(spanMs) ? Math.max(wall, spanMs) : wall;
}

// A model call's cost, as the detail pane and the timeline show it.
export function stepCost(step) {
  return costText(Number(step.cost), Number.isFinite(step.cost), step.tokens_estimated === true);
}

// A cost as a person reads it: exact, a floor when a call had no price, or unknown; priced
// from estimated tokens, it says so.
export function costText(usd, complete, estimated = false) {
  if (!Number.isFinite(usd)) return "—";
  const dollars = usd === 0 || usd >= 0.01 ? `$${usd.toFixed(4)}`
    : `$${usd.toFixed(8).replace(/0+$/, "")}`;
  const shown = complete ? dollars : usd > 0 ? `at least ${dollars}` : null;
  if (shown === null) return "unknown";
  return estimated ? `${shown} (estimated)` : shown;
}

// Draw the summary strip into `box`, changing only what changed: the cells stay the same
// elements (the status cell can hold the focus), their texts and classes are updated.
export function drawSummary(box, counts, status) {
  const cells = summaryStrip(counts, status);
  if (!box.firstChild) {
    box.replaceChildren(...cells);
    return;
  }
  const kept = new Set();
  let before = null;
  for (const cell of cells.reverse()) {
    const old = box.querySelector(`#${cell.id}`);
    if (!old) {
      box.insertBefore(cell, before);
      before = cell;
      kept.add(cell);
      continue;
    }
    if (old.className !== cell.className) old.className = cell.className;
    if (cell.hasAttribute("data-status")) old.setAttribute("data-status", cell.getAttribute("data-status"));
    for (const part of cell.children) {
      const same = old.querySelector(`.${part.className}`);
      if (!same) old.append(part);
      else if (same.textContent !== part.textContent) same.textContent = part.textContent;
    }
    kept.add(old);
    before = old;
  }
  for (const old of [...box.children]) if (!kept.has(old)) old.remove();
}

// The summary strip; before any run (`idle`) only the status: no count or cost to show yet.
export function summaryStrip(counts, status) {
  const cell = (label, value, id, more = null) =>
    h("div", { class: "metric", id }, h("span", { class: "metric-label" }, label),
      h("span", { class: "metric-value" }, String(value)),
      more ? h("span", { class: "metric-more" }, more) : null);
  const shown = h("div", { class: `metric status status-${status}`, id: "run-status",
    "data-status": status, tabindex: -1 }, h("span", { class: "metric-label" }, "Status"),
  h("span", { class: "metric-value" }, STATUS_TEXT[status] ?? status));
  if (status === "idle") return [shown];
  return [
    shown,
    cell("Rounds", counts.rounds, "metric-rounds"),
    cell("Tool calls", counts.toolCalls, "metric-tools"),
    cell("Tokens", tokensText(counts.tokens, counts.tokensKnown !== false), "metric-tokens",
      `${counts.tokensIn} in · ${counts.tokensOut} out`),
    cell("Cost", counts.cost === null ? "no cost"
      : costText(counts.cost, counts.costComplete, counts.costEstimated === true),
      "metric-cost"),
    cell("Wall time", ms(counts.wall), "metric-wall"),
    counts.reason ? cell("Reason", counts.reason, "metric-reason") : null,
  ].filter(Boolean);
}
