// Compare: two stored runs side by side. Settings, tools offered, the step sequence (aligned
// on what each step was: a request, a model turn and the calls it asked for, a call of a given
// tool), tool results and answers, each difference marked. Texts are compared word by word;
// the words only one run has are marked in place. Everything is text: both runs are as the
// store keeps them, so at a level that keeps no content their lengths are compared instead.

import { call, errorText } from "./api.js";
import { writeLink } from "./deeplink.js";
import { titlePart } from "./pagetitle.js";
import { dataTable, fill, h, ms, NOT_STORED, runLink } from "./dom.js";
import { storedCost, storedDuration } from "./runs.js";
import { shownStatus } from "./status.js";
import { requestedNames, stepTitle } from "./steps.js";

const WORD_DIFF_CAP = 2000;  // words per text: beyond, the texts are only said to differ

export class CompareView {
  constructor(root) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.$("compare-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.show(this.$("compare-a").value.trim(), this.$("compare-b").value.trim());
    });
  }

  async show(a, b) {
    this.$("compare-a").value = a ?? "";
    this.$("compare-b").value = b ?? "";
    const note = this.$("compare-note");
    if (!a || !b) {
      note.textContent = "Give two run ids, or tick two runs in Stored runs.";
      return;
    }
    writeLink({ compare: [a, b] });
    titlePart("compare", `${a.slice(0, 8)} and ${b.slice(0, 8)}`);
    try {
      const [left, right] = await Promise.all([a, b].map((id) =>
        call("GET", `/runs/${encodeURIComponent(id)}`)));
      note.textContent = "";
      fill(this.$("compare-out"), comparison(left, right));
    } catch (err) {
      note.textContent = errorText(err, "Loading the runs failed.");
      this.$("compare-out").replaceChildren();
    }
  }
}

// Two plain values (settings, what a step said) are the same when their JSON is.
function same(x, y) {
  return JSON.stringify(x) === JSON.stringify(y);
}

function comparison(a, b) {
  const differences = settings(a, b).filter(([, x, y]) => !same(x, y)).length;
  return [
    h("p", { class: "muted", "data-testid": "compare-heads" }, "A: ", runLink(a.id, a.id),
      " · B: ", runLink(b.id, b.id), ` · ${differences} setting${differences === 1 ? "" : "s"} differ`),
    section("Settings", settingsTable(a, b)),
    section("Tools offered", toolsTable(a, b)),
    section("Steps", stepsTable(a, b)),
    section("Tool results", resultsTable(a, b)),
    section("Answers", answers(a, b)),
  ];
}

function section(title, body) {
  return h("section", { class: "compare-section" }, h("h3", {}, title), body);
}

// [label, A's value, B's value] for every setting and total either run has.
function settings(a, b) {
  const rows = [
    ["Status", shownStatus(a), shownStatus(b)],
    ["Provider", a.provider, b.provider],
    ["Model", a.model, b.model],
    ["Privacy level", a.privacy_level, b.privacy_level],
    ["Why it stopped", a.termination_reason, b.termination_reason],
    ["Rounds", a.rounds, b.rounds],
    ["Prompt tokens", a.prompt_tokens, b.prompt_tokens],
    ["Completion tokens", a.completion_tokens, b.completion_tokens],
    ["Tokens reported", tokensReported(a), tokensReported(b)],
    ["Cost", storedCost(a), storedCost(b)],
    ["Duration", storedDuration(a), storedDuration(b)],
    ["Steps", a.step_count, b.step_count],
    ["Failed calls", a.tool_errors, b.tool_errors],
    ["Error", a.error, b.error],
  ];
  const oa = a.options ?? {};
  const ob = b.options ?? {};
  for (const key of [...new Set([...Object.keys(oa), ...Object.keys(ob)])].sort()) {
    rows.push([`Option ${key}`, oa[key], ob[key]]);
  }
  return rows;
}

// Whether the counts above are the provider's, or toolwire's estimate for a call it did not report.
function tokensReported(run) {
  return run.tokens_known === false ? "no: tokens unknown, the counts are estimates" : "yes";
}

function shown(value) {
  if (value === null || value === undefined) return "—";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function settingsTable(a, b) {
  return table(["", "A", "B"], settings(a, b).map(([label, x, y]) => {
    const differs = shown(x) !== shown(y);
    return [label, shown(x), shown(y), differs];
  }));
}

// Rows: [label, A cell, B cell, differs]; the mark column says ≠ where they differ.
function table(heads, rows) {
  return dataTable("data compare-table",
    [h("th", {}, heads[0] || hidden("What")), h("th", {}, hidden("Difference")),
      h("th", {}, heads[1]), h("th", {}, heads[2])],
    rows.map(([label, x, y, differs, mark]) =>
      h("tr", { class: differs ? "diff" : "same", "data-diff": differs ? "true" : "false" },
        h("th", { class: "compare-label" }, label),
        h("td", { class: "compare-mark" }, mark ?? (differs ? "≠" : "")),
        h("td", { "data-side": "a" }, x),
        h("td", { "data-side": "b" }, y))), "Comparison");
}

// A header read by a screen reader only (the column's meaning shows in its cells).
function hidden(text) {
  return h("span", { class: "visually-hidden" }, text);
}

function offered(run) {
  const request = (run.steps ?? []).find((s) => s && s.kind === "request");
  return Array.isArray(request?.tool_specs) ? request.tool_specs.map(String) : [];
}

function toolsTable(a, b) {
  const left = new Set(offered(a));
  const right = new Set(offered(b));
  const names = [...new Set([...left, ...right])].sort();
  if (!names.length) return h("p", { class: "muted" }, "Neither run was offered a tool.");
  return table(["Tool", "A", "B"], names.map((name) => {
    const inA = left.has(name);
    const inB = right.has(name);
    return [name, inA ? "offered" : "—", inB ? "offered" : "—", inA !== inB,
      inA === inB ? "" : inA ? "− only A" : "+ only B"];
  }));
}

// What a step was, to align two runs' steps on.
function signature(step) {
  if (!step || typeof step !== "object") return "?";
  if (step.kind === "tool") return `tool:${String(step.tool_name)}`;
  if (step.kind === "llm") return `llm:${requestedNames(step).join(",")}`;
  return String(step.kind);
}

// What a step said (or, withheld, how much): two aligned steps differ when this does.
function said(step) {
  if (step.kind === "tool") {
    return [step.tool_is_error === true, step.tool_result ?? step.tool_result_length ?? null];
  }
  if (step.kind === "llm") return [step.content ?? step.content_length ?? null, step.stop];
  if (step.kind === "decision") return [step.decision];
  return [];
}

// Pairs [A step or null, B step or null] in order: the longest common run of signatures.
export function align(left, right, key = signature) {
  const n = left.length;
  const m = right.length;
  const lengths = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      lengths[i][j] = key(left[i]) === key(right[j]) ? lengths[i + 1][j + 1] + 1
        : Math.max(lengths[i + 1][j], lengths[i][j + 1]);
    }
  }
  const pairs = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && key(left[i]) === key(right[j])) pairs.push([left[i++], right[j++]]);
    else if (j >= m || (i < n && lengths[i + 1][j] >= lengths[i][j + 1])) pairs.push([left[i++], null]);
    else pairs.push([null, right[j++]]);
  }
  return pairs;
}

function stepCell(step) {
  if (!step) return h("span", { class: "muted" }, "—");
  const time = step.kind === "request" ? "" : ` · ${ms(step.duration_ms)}`;
  return h("span", { class: "compare-step", "data-kind": String(step.kind) },
    stepTitle(step), time, step.tool_is_error === true ? " · error" : "");
}

function stepsTable(a, b) {
  const pairs = align(a.steps ?? [], b.steps ?? []);
  if (!pairs.length) return h("p", { class: "muted" }, "Neither run has a stored step.");
  return table(["#", "A", "B"], pairs.map(([x, y], i) => {
    const mark = !x ? "+ only B" : !y ? "− only A"
      : same(said(x), said(y)) ? "" : "≠";
    return [String(i + 1), stepCell(x), stepCell(y), Boolean(mark), mark];
  }));
}

function resultsTable(a, b) {
  const tools = (run) => (run.steps ?? []).filter((s) => s && s.kind === "tool");
  const pairs = align(tools(a), tools(b));
  if (!pairs.length) return h("p", { class: "muted" }, "Neither run called a tool.");
  return table(["Call", "A", "B"], pairs.map(([x, y]) => {
    const name = String((x ?? y).tool_name);
    const [left, right] = texts(x && resultOf(x), y && resultOf(y));
    const differs = !x || !y || !same(said(x), said(y));
    return [name, left, right, differs, !x ? "+ only B" : !y ? "− only A" : undefined];
  }));
}

function resultOf(step) {
  if (typeof step.tool_result === "string") return step.tool_result;
  const length = Number(step.tool_result_length);
  return { withheld: Number.isFinite(length) ? length : null, error: step.tool_is_error === true };
}

function answers(a, b) {
  const answer = (run) => (typeof run.final_answer === "string" ? run.final_answer
    : { withheld: run.final_answer_length ?? null });
  const [left, right] = texts(answer(a), answer(b));
  return table(["", "A", "B"], [["Answer", left, right, !same(answer(a), answer(b))]]);
}

// Two texts as <pre> blocks, their different words marked; a withheld text as its length.
function texts(x, y) {
  if (typeof x === "string" && typeof y === "string") return wordDiff(x, y);
  return [textBlock(x), textBlock(y)];
}

function textBlock(value) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "—");
  if (typeof value === "string") return h("pre", { class: "block compare-text" }, value);
  const length = Number.isFinite(value.withheld) ? `${value.withheld} characters` : "unknown length";
  return h("span", { class: "muted not-stored" },
    `${NOT_STORED} (${length}${value.error ? ", an error" : ""})`);
}

export function wordDiff(x, y) {
  const left = x.split(/(\s+)/);
  const right = y.split(/(\s+)/);
  if (left.length > WORD_DIFF_CAP * 2 || right.length > WORD_DIFF_CAP * 2 || x === y) {
    return [textBlock(x), textBlock(y)];
  }
  const pairs = align(left, right, (word) => word);
  const side = (pick, cls) => h("pre", { class: "block compare-text" },
    pairs.filter((p) => p[pick] !== null).map((p) => (p[1 - pick] === null && p[pick].trim()
      ? h("mark", { class: cls }, p[pick]) : p[pick])));
  return [side(0, "diff-del"), side(1, "diff-ins")];
}
