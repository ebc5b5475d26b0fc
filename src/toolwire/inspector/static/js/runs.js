// The stored-runs browser: the store's list (all runs, or only those waiting for a person),
// and one run's stored (privacy-filtered) steps; a waiting run shows its pending panel.

import { ApiError, call } from "./api.js";
import { fill, h, NOT_STORED, runLink } from "./dom.js";
import { pendingPanel } from "./pending.js";
import { StepView } from "./run.js";
import { LIVE, shownStatus, WAITING } from "./status.js";
import { costText, summarise, summaryStrip } from "./steps.js";

const COLUMNS = ["Run", "Status", "Started", "Provider", "Model", "Rounds", "Tokens", "Cost",
  "Steps", "Prompt"];

export class RunsView {
  // `decide(runId, body, steps)` answers a waiting run (see RunView.decide); `follow(runId)`
  // follows a run still going (queued or running, here or on a worker) live.
  constructor(root, decide, follow) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.decide = decide;
    this.follow = follow;
    this.$("runs-refresh").addEventListener("click", () => this.load());
    this.$("runs-waiting").addEventListener("change", () => this.load());
  }

  async load() {
    const ticket = (this.loads = (this.loads ?? 0) + 1);
    try {
      const waiting = this.$("runs-waiting").checked ? "&waiting=true" : "";
      const page = await call("GET", `/runs?limit=50${waiting}`);
      if (ticket !== this.loads) return;  // a newer listing was asked for meanwhile
      this.$("runs-note").textContent = page.stored ? ""
        : "No store is configured, so runs are not kept. Start the server with --db URL.";
      this.$("runs-table").replaceChildren(this.table(page.runs));
    } catch (err) {
      if (ticket !== this.loads) return;
      this.$("runs-note").textContent = err instanceof ApiError ? err.message : "Loading failed.";
    }
  }

  table(runs) {
    if (!runs.length) {
      return h("p", { class: "muted" }, this.$("runs-waiting").checked
        ? "No run is waiting for a person." : "No stored runs yet.");
    }
    const rows = runs.map((r) => {
      const tokens = (Number(r.prompt_tokens) || 0) + (Number(r.completion_tokens) || 0);
      const row = h("tr", { class: "run-row", tabindex: 0 },
        h("td", { title: String(r.id) }, h("code", {}, String(r.id).slice(0, 12))),
        h("td", {}, h("span", { class: `badge status-${String(r.status)}` }, String(r.status))),
        h("td", { title: String(r.created_at ?? "") }, when(r.created_at)),
        h("td", {}, String(r.provider ?? "")),
        h("td", {}, String(r.model ?? "")),
        h("td", {}, String(r.rounds ?? "")),
        h("td", {}, String(tokens)),
        h("td", { class: "cost" }, storedCost(r)),
        h("td", {}, String(r.step_count ?? "")),
        previewCell(r));
      row.addEventListener("click", () => this.show(String(r.id)));
      return row;
    });
    return h("div", { class: "table-wrap" }, h("table", { class: "data" },
      h("thead", {}, h("tr", {}, COLUMNS.map((c) => h("th", {}, c)))), h("tbody", {}, rows)));
  }

  async show(id) {
    const box = this.$("stored-run");
    try {
      const run = await call("GET", `/runs/${encodeURIComponent(id)}`);
      if (LIVE.has(run.status)) {
        fill(box, null);
        this.follow(id);
        return;
      }
      const steps = Array.isArray(run.steps) ? run.steps : [];
      const pending = await pendingOf(id, run, (body) => this.decide(id, body, steps));
      const list = h("ol", { class: "steps" });
      const detail = h("div", { class: "detail" });
      const final = { wall_ms: wallOf(run), usage: { total_tokens:
        (Number(run.prompt_tokens) || 0) + (Number(run.completion_tokens) || 0) },
      cost: run.cost, cost_complete: run.cost_complete,
      termination_reason: run.termination_reason };
      fill(box,
        h("h3", {}, "Run ", runLink(id, id)),
        h("p", { class: "muted" }, `Stored at privacy level ${String(run.privacy_level ?? "?")}`,
          run.termination_reason ? ` · ${String(run.termination_reason)}` : "",
          run.error ? ` · ${String(run.error)}` : ""),
        h("div", { class: "summary" }, summaryStrip(summarise(steps, final, 0), shownStatus(run))),
        pending,
        h("div", { class: "workbench" }, list, detail),
        answerOf(run));
      new StepView(list, detail).reset(steps);
    } catch (err) {
      fill(box, h("p", { class: "banner error" },
        err instanceof ApiError ? err.message : "Loading the run failed."));
    }
  }
}

// The stored answer; at a level that keeps no content, a word saying so instead of nothing.
function answerOf(run) {
  if (typeof run.final_answer === "string" && run.final_answer) {
    return h("pre", { class: "block answer" }, run.final_answer);
  }
  if (keepsContent(run.privacy_level)) return null;
  return h("p", { class: "muted not-stored", "data-testid": "answer-not-stored" },
    `The answer is ${NOT_STORED} (${String(run.privacy_level ?? "unknown")}).`);
}

function keepsContent(level) {
  return level === "redacted" || level === "full";
}

// The first user message as stored (already redacted), or why there is none.
function previewCell(run) {
  if (typeof run.prompt_preview === "string") {
    return h("td", { class: "prompt-preview", title: run.prompt_preview }, run.prompt_preview);
  }
  const why = keepsContent(run.privacy_level) ? "no prompt" : NOT_STORED;
  return h("td", { class: "prompt-preview muted", title: why }, "—");
}

// The pending panel of a waiting run, or nothing; a turn that cannot be read says why.
async function pendingOf(id, run, decide) {
  if (!WAITING.has(run.status)) return null;
  try {
    return pendingPanel(await call("GET", `/runs/${encodeURIComponent(id)}/pending`), decide);
  } catch (err) {
    return h("p", { class: "banner error" },
      err instanceof ApiError ? err.message : "Loading the pending turn failed.");
  }
}


// A stored timestamp in the reader's local time, to the second; the exact value is the title.
function when(value) {
  const time = Date.parse(String(value ?? ""));
  if (!Number.isFinite(time)) return String(value ?? "");
  const d = new Date(time);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} `
    + `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// A stored run's cost; runs stored before costs were kept have none.
function storedCost(run) {
  return Number.isFinite(run.cost) ? costText(run.cost, run.cost_complete === true) : "—";
}

function wallOf(run) {
  const start = Date.parse(run.created_at);
  const end = Date.parse(run.finished_at);
  return Number.isFinite(start) && Number.isFinite(end) ? end - start : NaN;
}
