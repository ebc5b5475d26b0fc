// The bar above a run's step list: a filter (by kind, tool name and status), a find over the
// steps' text and a button to the conversation as the last request sent it, for the live run
// and a stored one alike. Typed words only ever compare with
// text; they are never markup. A filter narrows the rows the list draws (StepView.setFilter);
// the find counts the shown steps whose text holds the words and steps through them ("3 of
// 12"), selecting each in the list, which scrolls its virtualized rows to it. A streamed step
// costs one test against each (none when both are empty); the bar's texts are set at the
// view's render, once per frame.

import { announce } from "./announce.js";
import { h, pretty } from "./dom.js";
import { requestedNames, stepTitle } from "./steps.js";

const KINDS = [["", "any"], ["request", "request"], ["llm", "model"], ["tool", "tool"],
  ["decision", "decision"], ["context_truncated", "context"],
  ["provider_failed", "provider failure"]];
const STATUSES = [["", "any"], ["ok", "ok"], ["error", "error"]];

let drawn = 0;  // bars drawn so far: each gets ids of its own

const texts = new WeakMap();  // step -> its searchable text, lower-cased, built once

// What find looks in: the row's title and what the detail pane shows of the step as text (the
// arguments, the result, the answer, its thinking, the calls asked for). A request's messages
// are left out: each repeats the conversation so far, and would match every request.
export function stepText(step) {
  let text = texts.get(step);
  if (text === undefined) {
    const args = step.tool_arguments;
    const calls = Array.isArray(step.requested_tool_calls) ? step.requested_tool_calls : [];
    text = [stepTitle(step), typeof args === "string" ? args : args ? pretty(args) : "",
      step.tool_result, step.content, step.thinking, step.refusal, requestedNames(step),
      calls.map((c) => String(c && c.arguments))]
      .flat().filter((part) => typeof part === "string").join("\n").toLowerCase();
    texts.set(step, text);
  }
  return text;
}

// A step's status as the filter sees it: a tool call that failed is an error, every other
// step is ok.
export function stepStatus(step) {
  return step.tool_is_error === true || (typeof step.error === "string" && step.error)
    ? "error" : "ok";
}

export class StepTools {
  constructor(view) {
    this.view = view;
    this.query = "";
    this.matches = [];  // indices of the shown steps whose text holds the query, ascending
    this.current = -1;  // which of them is selected, or -1
    this.counted = null;  // the count text set last
    const id = `step-tools-${(drawn += 1)}`;
    const choice = (name, label, options) => h("label", { class: "field tiny" }, label,
      h("select", { name, id: `${id}-${name}` },
        options.map(([value, text]) => h("option", { value }, text))));
    this.kind = choice("kind", "Kind", KINDS);
    this.tool = h("label", { class: "field small" }, "Tool name",
      h("input", { type: "search", name: "tool", id: `${id}-tool`, placeholder: "any",
        autocomplete: "off" }));
    this.status = choice("status", "Status", STATUSES);
    this.findBox = h("input", { type: "search", name: "find", id: `${id}-find`,
      placeholder: "words…", autocomplete: "off", "aria-describedby": `${id}-found` });
    this.found = h("span", { class: "find-count", id: `${id}-found`,
      "data-testid": "find-count" });
    this.shownCount = h("span", { class: "step-count", "data-testid": "step-count" });
    this.previous = h("button", { type: "button", class: "small", "data-testid": "find-prev",
      disabled: true }, "Previous");
    this.next = h("button", { type: "button", class: "small", "data-testid": "find-next",
      disabled: true }, "Next");
    const filters = h("div", { class: "step-filter", role: "group", "aria-label": "Filter the steps" },
      this.kind, this.tool, this.status, this.shownCount);
    const find = h("div", { class: "step-find", role: "search", "aria-label": "Find in this run" },
      h("label", { class: "field search" }, "Find in this run", this.findBox),
      this.previous, this.next, this.found);
    const talk = h("button", { type: "button", class: "small", "data-testid": "conversation" },
      "Conversation");
    talk.addEventListener("click", () => {
      if (!view.conversation()) announce("No request in this run yet");
    });
    this.element = h("div", { class: "step-tools", "data-testid": "step-tools", hidden: true },
      filters, find, talk);
    filters.addEventListener("input", () => this.filter());
    this.findBox.addEventListener("input", () => this.find());
    this.findBox.addEventListener("keydown", (e) => this.findKey(e));
    this.previous.addEventListener("click", () => this.go(-1));
    this.next.addEventListener("click", () => this.go(1));
  }

  // The focus in the find (its words selected, to type over), when the bar shows: the run
  // has a step. Whether it went there.
  focusFind() {
    if (this.element.closest("[hidden]")) return false;
    this.findBox.focus();
    this.findBox.select();
    return true;
  }

  value(label) {
    return label.querySelector("select, input").value.trim();
  }

  // The filter as a test of one step, or null when it lets every step through.
  passes() {
    const kind = this.value(this.kind);
    const tool = this.value(this.tool).toLowerCase();
    const status = this.value(this.status);
    if (!kind && !tool && !status) return null;
    return (step) => (!kind || step.kind === kind)
      && (!tool || (step.kind === "tool" && String(step.tool_name ?? "").toLowerCase().includes(tool)))
      && (!status || stepStatus(step) === status);
  }

  filter() {
    const shown = this.view.setFilter(this.passes());
    this.refind();
    this.update();
    const all = this.view.steps.length;
    announce(shown === all ? `Showing all ${all} steps` : `Showing ${shown} of ${all} steps`);
  }

  find() {
    this.query = this.findBox.value.trim().toLowerCase();
    this.refind();
    if (this.matches.length) {  // typed words go to their first match in the run
      this.current = 0;
      this.view.select(this.matches[0]);
    }
    this.update();
    announce(this.countText() || "Find cleared");
  }

  findKey(event) {
    if (event.key === "Enter") {
      event.preventDefault();
      this.go(event.shiftKey ? -1 : 1);
    } else if (event.key === "Escape" && this.findBox.value) {
      event.preventDefault();
      this.findBox.value = "";
      this.find();
    }
  }

  // Every shown step tested again: the query or the filter changed.
  refind() {
    const view = this.view;
    this.matches = [];
    if (this.query) {
      for (let pos = 0; pos < view.shownCount(); pos += 1) {
        const index = view.indexAt(pos);
        if (this.hit(view.steps[index])) this.matches.push(index);
      }
    }
    this.current = this.matches.indexOf(view.selected);
    view.markHits();
  }

  // Whether a step holds the query (the list marks its row).
  hit(step) {
    return Boolean(this.query) && stepText(step).includes(this.query);
  }

  // A step the view just took in (and let through its filter).
  added(index) {
    if (this.hit(this.view.steps[index])) this.matches.push(index);
  }

  // The next (1) or previous (-1) match after the selected step, around the end; selected in
  // the list, the focus staying where it is.
  go(delta) {
    const count = this.matches.length;
    if (!count) return;
    const at = this.view.selected;
    let to;
    if (this.current >= 0 && this.matches[this.current] === at) {
      to = (this.current + delta + count) % count;
    } else if (delta > 0) {
      to = this.matches.findIndex((i) => i >= at);
      if (to < 0) to = 0;
    } else {
      to = this.matches.findLastIndex((i) => i <= at);
      if (to < 0) to = count - 1;
    }
    this.current = to;
    this.view.select(this.matches[to]);
    this.update();
    announce(this.countText());
  }

  countText() {
    if (!this.query) return "";
    const count = this.matches.length;
    if (!count) return "No matches";
    const at = this.matches[this.current] === this.view.selected ? this.current + 1 : 0;
    return at ? `${at} of ${count}` : `${count} match${count === 1 ? "" : "es"}`;
  }

  // The bar's texts, set only when they change (once per render while a run streams).
  update() {
    const view = this.view;
    const all = view.steps.length;
    const shown = view.shownCount();
    const counted = `${shown}/${all}|${this.countText()}`;
    if (counted === this.counted) return;
    this.counted = counted;
    this.element.hidden = all === 0;  // before a run's first step there is nothing to sift
    this.shownCount.textContent = shown === all ? `${all} step${all === 1 ? "" : "s"}`
      : `${shown} of ${all} steps`;
    this.found.textContent = this.countText();
    this.previous.disabled = this.matches.length === 0;
    this.next.disabled = this.matches.length === 0;
  }
}
