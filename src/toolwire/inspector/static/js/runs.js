// The stored-runs browser: the store's runs a page at a time (filtered, sorted and searched on
// the server), and one run's stored (privacy-filtered) steps with its timeline, export,
// re-run and deep links; a waiting run shows its pending panel. Two checked runs compare.
//
// The table is one tab stop: each row's run id is a button that opens the run, and the arrow
// keys, Home and End move between the rows (the current row's compare box is the other stop).
// A redrawn table keeps the focus (a sort button, a pager button); an opened run takes it, at
// its heading, scrolled into view.

import { call, errorText } from "./api.js";
import { Conversation } from "./conversation.js";
import { linkTo, readLink, writeLink } from "./deeplink.js";
import { dataTable, fill, h, ms, NOT_STORED, runLink } from "./dom.js";
import { egressPanel } from "./egress.js";
import { exportPanel } from "./exportview.js";
import { focusOn, keepFocus } from "./focus.js";
import { moveTo, rove } from "./keys.js";
import { titlePart } from "./pagetitle.js";
import { pendingPanel } from "./pending.js";
import { questionPanel } from "./questions.js";
import { StepView } from "./stepview.js";
import { RunFilters } from "./runfilters.js";
import { LIVE, shownStatus, STATUS_TEXT, WAITING } from "./status.js";
import { costText, summarise, summaryStrip, tokensText } from "./steps.js";

const PAGE = 50;
// Columns: [label, sort key or null].
const COLUMNS = [["", null], ["Run", null], ["Status", null], ["Started", "created_at"],
  ["Provider", null], ["Model", null], ["Rounds", "rounds"], ["Tokens", "tokens"],
  ["Cost", "cost"], ["Duration", "duration"], ["Steps", null], ["Prompt", null]];

export class RunsView {
  // `decide(runId, body, steps)` answers a waiting run (see RunView.decide); `follow(runId)`
  // follows a run still going (queued or running, here or on a worker) live; `rerun(form)`
  // fills the run form from a re-run template; `compare(a, b)` opens two runs side by side.
  constructor(root, { decide, follow, rerun, compare }) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.decide = decide;
    this.follow = follow;
    this.rerun = rerun;
    this.compare = compare;
    this.offset = 0;
    this.sort = "created_at";
    this.order = "desc";
    this.checked = [];  // run ids ticked for comparing, oldest tick first
    this.shown = null;  // the id of the run shown below the table
    this.view = null;  // its StepView
    this.near = null;  // its previous and next buttons (see neighbours)
    this.filters = new RunFilters(this.$("runs-filters"), () => { this.offset = 0; this.load(); });
    this.choicesLoaded = false;
    this.$("runs-refresh").addEventListener("click", () => this.load());
    this.$("runs-waiting").addEventListener("change", () => { this.offset = 0; this.load(); });
    this.$("runs-compare").addEventListener("click", () => this.compare(...this.checked));
  }

  async load() {
    if (!this.choicesLoaded) {
      this.choicesLoaded = true;
      this.filters.loadChoices();
    }
    const query = this.listing();
    query.set("limit", String(PAGE));
    query.set("offset", String(this.offset));
    const ticket = (this.loads = (this.loads ?? 0) + 1);
    try {
      const page = await call("GET", `/runs?${query}`);
      if (ticket !== this.loads) return;  // a newer listing was asked for meanwhile
      this.$("runs-note").textContent = page.stored ? ""
        : "No store is configured, so runs are not kept. Start the server with --db URL.";
      const table = this.$("runs-table");
      keepFocus(table, () => table.replaceChildren(this.table(page.runs, query.has("q"))));
      keepFocus(this.$("runs-pager"), () => this.pager(page));
      if (this.near?.nav.isConnected) this.placeNeighbours();  // the filters may have changed
    } catch (err) {
      if (ticket !== this.loads) return;
      this.$("runs-note").textContent = errorText(err, "Loading failed.");
    }
  }

  // The listing's filters and order, as GET /runs and GET /runs/{id}/neighbours take them.
  listing() {
    const query = this.filters.params();
    if (this.$("runs-waiting").checked) query.set("waiting", "true");
    query.set("sort", this.sort);
    query.set("order", this.order);
    return query;
  }

  table(runs, searched) {
    if (!runs.length) {
      const filtered = [...this.filters.params().keys()].length > 0;
      return h("p", { class: "muted", "data-testid": "no-runs" },
        this.$("runs-waiting").checked ? "No run is waiting for a person."
          : searched ? "No stored run has these words in what its privacy level kept."
            : filtered ? "No stored run matches these filters." : "No stored runs yet.");
    }
    const rows = runs.map((r) => this.row(r));
    const wrap = dataTable("data runs-table", COLUMNS.map(([label, key]) => this.header(label, key)),
      rows, "Stored runs");
    wrap.querySelector("tbody").addEventListener("keydown", (e) => this.key(e, rows));
    this.current(rows, rows.find((r) => r.getAttribute("data-id") === this.shown) ?? rows[0]);
    return wrap;
  }

  // Make `row` the table's tab stop: its open button and its compare box.
  current(rows, row) {
    rove(rows.map((r) => r.querySelector(".run-open")), row.querySelector(".run-open"));
    rove(rows.map((r) => r.querySelector(".compare-check")), row.querySelector(".compare-check"));
  }

  key(event, rows) {
    const row = event.target.closest("tr.run-row");
    const to = row ? moveTo(event.key, rows.indexOf(row), rows.length) : null;
    if (to === null) return;
    event.preventDefault();
    this.current(rows, rows[to]);
    const same = event.target.classList.contains("compare-check") ? ".compare-check" : ".run-open";
    rows[to].querySelector(same).focus();
  }

  header(label, key) {
    if (!key) return h("th", {}, label);
    const active = this.sort === key;
    const button = h("button", { type: "button", class: "sort", "data-sort": key },
      label, active ? (this.order === "desc" ? " ▼" : " ▲") : "");
    button.addEventListener("click", () => {
      this.order = active && this.order === "desc" ? "asc" : "desc";
      this.sort = key;
      this.offset = 0;
      this.load();
    });
    return h("th", { "aria-sort": active ? (this.order === "desc" ? "descending" : "ascending")
      : null }, button);
  }

  row(r) {
    const id = String(r.id);
    const tick = h("input", { type: "checkbox", class: "compare-check",
      "aria-label": "Compare this run", checked: this.checked.includes(id) });
    tick.addEventListener("click", (e) => e.stopPropagation());
    tick.addEventListener("change", () => this.tick(id, tick.checked));
    const errors = Number(r.tool_errors) > 0 ? h("span", { class: "badge error",
      title: "calls that returned an error" }, `${Number(r.tool_errors)} failed`) : null;
    const open = h("button", { type: "button", class: "run-open" }, h("code", {}, id.slice(0, 12)));
    const row = h("tr", { class: "run-row", "data-status": String(r.status), "data-id": id },
      h("td", { class: "pick" }, tick),
      h("td", { title: id }, open),
      h("td", {}, h("span", { class: `badge status-${String(r.status)}` }, String(r.status)),
        errors),
      h("td", { title: String(r.created_at ?? "") }, when(r.created_at)),
      h("td", {}, String(r.provider ?? "")),
      h("td", {}, String(r.model ?? "")),
      h("td", {}, String(r.rounds ?? "")),
      h("td", { title: `${Number(r.prompt_tokens) || 0} in, ${Number(r.completion_tokens) || 0} out` },
        tokensText(tokensOf(r), r.tokens_known !== false)),
      h("td", { class: "cost" }, storedCost(r)),
      h("td", {}, storedDuration(r)),
      h("td", {}, String(r.step_count ?? "")),
      previewCell(r));
    row.addEventListener("click", () => this.show(id));  // the button's click, and the row's
    return row;
  }

  tick(id, on) {
    this.checked = this.checked.filter((x) => x !== id);
    if (on) this.checked.push(id);
    if (this.checked.length > 2) {
      const dropped = this.checked.shift();
      for (const box of this.$("runs-table").querySelectorAll("tr.run-row")) {
        if (box.querySelector("td[title]")?.getAttribute("title") === dropped) {
          box.querySelector(".compare-check").checked = false;
        }
      }
    }
    this.$("runs-compare").disabled = this.checked.length !== 2;
  }

  pager(page) {
    const total = Number(page.total) || 0;
    const first = total ? this.offset + 1 : 0;
    const last = Math.min(this.offset + (page.runs?.length ?? 0), total);
    const prev = h("button", { type: "button", class: "small", disabled: this.offset === 0 },
      "← Newer");
    const next = h("button", { type: "button", class: "small", disabled: last >= total },
      "Older →");
    prev.addEventListener("click", () => { this.offset = Math.max(0, this.offset - PAGE); this.load(); });
    next.addEventListener("click", () => { this.offset += PAGE; this.load(); });
    if (this.sort !== "created_at" || this.order !== "desc") {
      prev.textContent = "← Previous";
      next.textContent = "Next →";
    }
    fill(this.$("runs-pager"), prev,
      h("span", { class: "pager-text", "data-testid": "pager-text" },
        `${first.toLocaleString("en")}–${last.toLocaleString("en")} of ${total.toLocaleString("en")}`),
      next);
  }

  // One stored run below the table; `step` (a stored sequence number) is selected if given.
  async show(id, step = null) {
    const box = this.$("stored-run");
    try {
      // Each request as only what is new: a long run's requests would repeat it all.
      const run = await call("GET", `/runs/${encodeURIComponent(id)}?requests=delta`);
      if (LIVE.has(run.status)) {
        fill(box, null);
        this.view = null;
        this.follow(id);
        return;
      }
      const conversation = new Conversation();
      const steps = Array.isArray(run.steps) ? run.steps.map((s) => conversation.expand(s)) : [];
      const pending = await pendingOf(id, run, (body) => this.decide(id, body, steps),
        () => this.show(id));
      const list = h("ol", { class: "steps" });
      const detail = h("div", { class: "detail" });
      const timeline = h("div", { class: "timeline", hidden: true });
      const tools = h("div", { class: "stored-tools" });
      const egress = h("div", { class: "stored-egress" });
      const final = { wall_ms: wallOf(run), usage: { total_tokens: tokensOf(run),
        prompt_tokens: run.prompt_tokens, completion_tokens: run.completion_tokens,
        tokens_known: run.tokens_known !== false },
      cost: run.cost, cost_complete: run.cost_complete, cost_estimated: run.cost_estimated === true,
      termination_reason: run.termination_reason };
      const heading = h("h3", { tabindex: -1 }, "Run ", runLink(id, id));
      fill(box,
        h("div", { class: "row stored-head" }, heading, this.actions(run, tools)),
        this.neighbours(id),
        h("p", { class: "muted" }, `Stored at privacy level ${String(run.privacy_level ?? "?")}`,
          run.termination_reason ? ` · ${String(run.termination_reason)}` : "",
          run.error ? ` · ${String(run.error)}` : ""),
        links(run),
        tools,
        h("div", { class: "summary" }, summaryStrip(summarise(steps, final, NaN), shownStatus(run))),
        egress,
        pending,
        timeline,
        h("div", { class: "workbench" }, list, detail),
        answerOf(run));
      this.shown = id;
      titlePart("runs", `Run ${id.slice(0, 8)} · ${STATUS_TEXT[shownStatus(run)] ?? run.status}`);
      const view = new StepView(list, detail, timeline,
        (_, chosen) => writeLink({ run: id, step: chosen.sequence }));
      this.view = view;
      view.reset(steps);
      // It opens below the table: the whole box is brought to the top of the view (at the
      // next frame, once it is laid out), its heading focused.
      focusOn(heading);
      requestAnimationFrame(() => box.scrollIntoView({ block: "start" }));
      const at = steps.findIndex((s) => s.sequence === step);
      if (at >= 0) {
        view.select(at);
        list.querySelector("li.selected")?.scrollIntoView({ block: "nearest" });
      } else {
        writeLink({ run: id });
      }
      reruns(id).then((found) => found && box.querySelector(".run-links")?.append(found));
      egressPanel(id).then((panel) => fill(egress, panel));
    } catch (err) {
      this.view = null;
      fill(box, h("p", { class: "banner error", role: "alert" },
        errorText(err, "Loading the run failed.")));
    }
  }

  // The runs before and after this one in the listing (its filters and order, on any page:
  // the server finds them), a button each; off at either end, and until the server answers.
  // The run opened takes the focus, and the table turns to the page that lists it.
  neighbours(id) {
    const button = (text, testid, way) => {
      const go = h("button", { type: "button", class: "small", disabled: true,
        "data-testid": testid }, text);
      go.addEventListener("click", () => {
        const to = this.near?.to[way];
        if (to) this.open(to.id, to.position);
      });
      return go;
    };
    const near = { id, to: {}, previous: button("← Previous run", "previous-run", "previous"),
      next: button("Next run →", "next-run", "next"),
      place: h("span", { class: "muted", "data-testid": "run-place", tabindex: "-1" }) };
    near.nav = h("nav", { class: "row run-neighbours", "aria-label": "Stored runs" },
      near.previous, near.place, near.next);
    this.near = near;
    this.placeNeighbours();
    return near.nav;
  }

  // Ask the server for the shown run's neighbours in the listing as it is now.
  async placeNeighbours() {
    const near = this.near;
    let found;
    try {
      found = await call("GET",
        `/runs/${encodeURIComponent(near.id)}/neighbours?${this.listing()}`);
    } catch (err) {
      const text = errorText(err, "The runs beside it could not be found.");
      if (near === this.near) near.place.textContent = text;
      return;
    }
    if (near !== this.near) return;  // another run was opened meanwhile
    const at = Number.isInteger(found.position) ? found.position : null;
    const total = Number(found.total) || 0;
    const listed = `${total.toLocaleString("en")} listed`;
    near.place.textContent = at ? `${at.toLocaleString("en")} of ${listed}`
      : `not in the listing (${listed})`;
    const focused = document.activeElement;
    for (const [way, step] of [["previous", -1], ["next", 1]]) {
      const other = found[way];
      const id = other && typeof other.id === "string" ? other.id : null;
      near.to[way] = id ? { id, position: at ? at + step : null } : null;
      near[way].disabled = !id;
      if (id) near[way].setAttribute("title", `Run ${id}`);
      else near[way].removeAttribute("title");
    }
    // A button turned off under the focus hands it on (to the other one, else the place), so
    // that it never falls to the page's body.
    if ((focused === near.previous || focused === near.next) && focused.disabled) {
      const other = focused === near.previous ? near.next : near.previous;
      (other.disabled ? near.place : other).focus();
    }
  }

  // Open run `id` from a neighbour's button; at `position` in the listing (when known), the
  // table turns to the page that lists it, its row the table's tab stop.
  async open(id, position) {
    await this.show(id);
    const offset = position ? Math.floor((position - 1) / PAGE) * PAGE : this.offset;
    if (offset === this.offset) {
      this.markListed(id);
      return;
    }
    this.offset = offset;
    await this.load();
  }

  // The table's row of run `id` becomes its tab stop.
  markListed(id) {
    const rows = [...this.$("runs-table").querySelectorAll("tr.run-row")];
    const row = rows.find((r) => r.getAttribute("data-id") === id);
    if (row) this.current(rows, row);
  }

  // Export, re-run, copy link: each opens its panel in `tools`.
  actions(run, tools) {
    const id = String(run.id);
    const exported = h("button", { type: "button", class: "small", "data-testid": "export" },
      "Export JSON");
    exported.addEventListener("click", async () => fill(tools, await exportPanel(id)));
    const again = h("button", { type: "button", class: "small", "data-testid": "rerun" },
      "Re-run…");
    again.addEventListener("click", async () => {
      try {
        const form = await call("GET", `/runs/${encodeURIComponent(id)}/rerun`);
        if (form.available) this.rerun(form);
        else fill(tools, h("p", { class: "banner", "data-testid": "rerun-refused" },
          `This run cannot be re-run: ${String(form.reason)}.`));
      } catch (err) {
        fill(tools, h("p", { class: "banner error" },
          errorText(err, "The re-run form could not be loaded.")));
      }
    });
    const copy = h("button", { type: "button", class: "small", "data-testid": "copy-link" },
      "Copy link");
    copy.addEventListener("click", async () => {
      const link = linkTo({ run: id, step: readLink().step });  // the step selected, if any
      const shown = h("code", { class: "deep-link" }, link);
      try {
        await navigator.clipboard.writeText(link);
        fill(tools, h("p", { class: "muted" }, "Copied: ", shown));
      } catch {
        fill(tools, h("p", { class: "muted" }, "Link: ", shown));
      }
    });
    return h("span", { class: "actions" }, exported, again, copy);
  }
}

// The run this one re-ran, as a link.
function links(run) {
  return h("p", { class: "run-links muted" }, typeof run.rerun_of === "string"
    ? ["Re-run of ", runLink(run.rerun_of, run.rerun_of)] : null);
}

// The runs started again from this one, as links (none: nothing).
async function reruns(id) {
  try {
    const page = await call("GET", `/runs?rerun_of=${encodeURIComponent(id)}&limit=20`);
    if (!page.runs?.length) return null;
    return h("span", { class: "reruns" }, " Re-runs: ",
      page.runs.map((r, i) => [i ? ", " : "", runLink(String(r.id), String(r.id).slice(0, 12))]));
  } catch {
    return null;
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

// The pending panel of a waiting run, or nothing; a turn that cannot be read says why. A run
// waiting for input may be waiting on a server's live question (its process waits in the
// call): then the question's panel, whose answer goes on the store's board (`shown()` after).
async function pendingOf(id, run, decide, shown) {
  if (!WAITING.has(run.status)) return null;
  try {
    const path = `/runs/${encodeURIComponent(id)}/questions`;
    const found = run.status === "awaiting_input" ? await call("GET", path) : null;
    const ask = Array.isArray(found && found.questions) ? found.questions[0] : null;
    if (ask) {
      return questionPanel(ask, (body) => answerLive(id, path, String(ask.id), body, shown));
    }
    return pendingPanel(await call("GET", `/runs/${encodeURIComponent(id)}/pending`), decide);
  } catch (err) {
    return h("p", { class: "banner error" },
      errorText(err, "Loading the pending turn failed."));
  }
}

// A live question's answer sent; null once taken, else the refusal. The run's own process
// takes the answer within a poll: the run is shown again once it stopped waiting (or after
// LIVE_ANSWER_WAIT_MS, as it stands then).
const LIVE_ANSWER_WAIT_MS = 5000;
const LIVE_ANSWER_POLL_MS = 200;

async function answerLive(runId, path, id, body, shown) {
  try {
    await call("POST", `${path}/${encodeURIComponent(id)}`, body);
  } catch (err) {
    return errorText(err, "The answer could not be sent.");
  }
  const until = Date.now() + LIVE_ANSWER_WAIT_MS;
  while (Date.now() < until) {
    await new Promise((done) => { setTimeout(done, LIVE_ANSWER_POLL_MS); });
    const run = await call("GET", `/runs/${encodeURIComponent(runId)}`).catch(() => null);
    if (!run || run.status !== "awaiting_input") break;
  }
  shown();
  return null;
}

// A stored timestamp in the reader's local time, to the second; the exact value is the title.
export function when(value) {
  const time = Date.parse(String(value ?? ""));
  if (!Number.isFinite(time)) return String(value ?? "");
  const d = new Date(time);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} `
    + `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// A stored run's cost; runs stored before costs were kept have none.
export function storedCost(run) {
  return Number.isFinite(run.cost)
    ? costText(run.cost, run.cost_complete === true, run.cost_estimated === true) : "—";
}

// A stored run's duration; a run that has not ended has none.
export function storedDuration(run) {
  return Number.isFinite(run.duration_ms) ? ms(run.duration_ms) : "—";
}

// A stored run's tokens in and out, together.
function tokensOf(run) {
  return (Number(run.prompt_tokens) || 0) + (Number(run.completion_tokens) || 0);
}

function wallOf(run) {
  const start = Date.parse(run.created_at);
  const end = Date.parse(run.finished_at);
  return Number.isFinite(start) && Number.isFinite(end) ? end - start : NaN;
}
