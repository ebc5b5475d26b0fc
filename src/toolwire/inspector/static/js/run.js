// The Run view: the form, the live stream, the step list, the summary, the cancel button and,
// when the run waits for a person, the pending panel. The status shown is the `end` line's,
// never a guess: a stream that ends without one has failed. A decision streams the resumed
// segment into the same step list. A stream's lines are handled once per animation frame
// (see FrameQueue): the steps, the summary and the status are drawn once for all of them.
//
// The focus goes where the run is: to its status when it starts (or resumes after a
// decision), to the pending panel when it waits for a person. A screen reader hears the new
// steps and the status (politely, at most every STEP_NEWS_MS), and at once that the run waits
// or failed; the page's title names the run and its status.
//
// The egress panel sums the stream's `egress` lines (see egress.js), drawn once per frame
// that brought one; a decision on a run opened from the store starts from its stored ledger.

import { alertNow, announce } from "./announce.js";
import { call, errorText, followStream, openStream } from "./api.js";
import { Conversation } from "./conversation.js";
import { fill, h, NOT_STORED, runLink } from "./dom.js";
import { egressOf, egressTable, LiveLedger } from "./egress.js";
import { focusOn, keepFocus } from "./focus.js";
import { FrameQueue } from "./frames.js";
import { titlePart } from "./pagetitle.js";
import { pendingNews, pendingPanel } from "./pending.js";
import { questionNews, questionPanel } from "./questions.js";
import { STATUS_TEXT, shownStatus, WAITING } from "./status.js";
import { StepView } from "./stepview.js";
import { drawSummary, stepLabel, summarise } from "./steps.js";

// How often a live run's open questions (from its MCP servers) are looked for.
const QUESTIONS_EVERY_MS = 500;
const STEP_NEWS_MS = 2000;

// The run's numeric limits: [RunBody field, form input id].
const LIMITS = [["max_tokens", "max-tokens"], ["max_total_tokens", "max-total-tokens"],
  ["max_cost", "max-cost"], ["context_window", "context-window"],
  ["max_concurrency", "max-concurrency"], ["max_egress_bytes", "max-egress-bytes"]];

export class RunView {
  constructor(root) {
    this.$ = (id) => root.querySelector(`#${id}`);
    this.view = new StepView(this.$("steps"), this.$("detail"), this.$("timeline"));
    this.runId = null;
    this.rerunOf = null;  // the stored run the form was filled from, until the run starts
    this.controller = null;
    this.questionTimer = null;
    this.ledger = new LiveLedger();
    this.ledgerChanged = false;
    this.$("run-form").addEventListener("submit", (e) => { e.preventDefault(); this.start(); });
    this.$("run-form").addEventListener("keydown", (e) => {  // Ctrl+Enter in a field: Run
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !this.controller) {
        e.preventDefault();
        this.$("run-form").requestSubmit();
      }
    });
    this.heard = 0;  // the steps the live region has told of
    this.newsTimer = 0;
    this.said = null;  // the status it told of last
    this.$("cancel-button").addEventListener("click", () => this.cancel());
    this.$("provider").addEventListener("change", () => this.checkGate());
    this.$("trust-zone").addEventListener("change", () => this.checkGate());
    this.tools = null;
    this.verdicts = new Map();  // tool -> the gate's refusal for the chosen provider and zone
    this.status("idle");
  }

  // Fills the form from the server's defaults; never overwrites what was typed already.
  setDefaults(defaults) {
    for (const [id, value] of [["prompt", defaults.prompt], ["provider", defaults.provider],
      ["model", defaults.model], ["base-url", defaults.base_url],
      ["tool-choice", defaults.tool_choice]]) {
      const field = this.$(id);
      if (typeof value === "string" && value && (!field.value || field.value === field.defaultValue)) {
        field.value = value;
      }
    }
    const reasoning = defaults.reasoning;
    if (typeof reasoning === "string") this.$("reasoning").value = reasoning;
    if (Number.isInteger(reasoning)) this.$("reasoning-budget").value = String(reasoning);
    if (defaults.stream === false) this.$("stream").checked = false;
    if (Array.isArray(defaults.trust_zones)) {
      this.$("trust-zone").append(...defaults.trust_zones.map((z) =>
        h("option", { value: String(z) }, String(z))));
    }
    this.showReplay(defaults.replay_label);
    for (const [key, id] of LIMITS) {
      if (Number.isFinite(defaults[key])) this.$(id).value = String(defaults[key]);
    }
  }

  setTools(list) {
    this.tools = list;
    this.drawTools();
    this.gateChecked = this.checkGate();  // the page is ready once the choices are final
  }

  // The tools, each marked with the gate's refusal (and its reason) for this provider and zone:
  // a refused tool cannot be chosen, since the run would not be offered it.
  drawTools() {
    const choices = this.$("tool-choices");
    const unchecked = new Set([...choices.querySelectorAll("input[name=tool]:not(:checked)")]
      .filter((c) => !c.disabled).map((c) => c.value));
    const groups = new Map();
    for (const tool of this.tools ? this.tools.tools : []) {
      if (!groups.has(tool.group)) groups.set(tool.group, []);
      groups.get(tool.group).push(tool);
    }
    const boxes = [...groups].map(([group, tools]) => h("div", { class: "tool-group" },
      h("div", { class: "tool-group-name" }, group), tools.map((t) => this.choice(t, unchecked))));
    keepFocus(choices, () => fill(choices,
      boxes.length ? boxes : h("p", { class: "muted" }, "No tools are registered.")));
  }

  choice(tool, unchecked) {
    const refusal = tool.enabled ? this.verdicts.get(tool.name) : null;
    const usable = tool.enabled && !refusal;
    return h("label", { class: usable ? "check" : "check disabled", title: tool.why,
      "data-kind": refusal ? "gate-refused" : null },
    h("input", { type: "checkbox", name: "tool", value: tool.name,
      checked: usable && !unchecked.has(tool.name), disabled: !usable }), tool.name,
    // Why a tool is off, in words as well as in the tooltip (a keyboard or touch has none).
    tool.enabled ? null : h("span", { class: "gate-reason" }, String(tool.why ?? "disabled")),
    refusal ? h("span", { class: "gate-reason" }, `refused: ${String(refusal.reason)}`,
      refusal.detail ? ` (${String(refusal.detail)})` : "") : null);
  }

  async checkGate() {
    if (!this.tools) return;
    const query = new URLSearchParams({ provider: this.$("provider").value.trim() || "scripted" });
    if (this.$("model").value.trim()) query.set("model", this.$("model").value.trim());
    if (this.$("trust-zone").value) query.set("trust_zone", this.$("trust-zone").value);
    let note = null;
    try {
      const gate = await call("GET", `/gate?${query}`);
      this.verdicts = new Map(gate.tools.filter((v) => !v.allowed).map((v) => [v.tool, v]));
    } catch (err) {
      this.verdicts = new Map();
      note = errorText(err, "The gate could not be asked.");
    }
    this.drawTools();
    if (note) this.$("tool-choices").append(h("p", { class: "muted gate-note" }, note));
  }

  body() {
    const value = (id) => this.$(id).value;
    const number = (id) => (value(id).trim() === "" ? undefined : Number(value(id)));
    const checked = [...this.$("tool-choices").querySelectorAll("input[name=tool]:checked")];
    const body = {
      prompt: value("prompt"),
      provider: value("provider") || "scripted",
      max_rounds: Number(value("max-rounds")) || 5,
      allowed_tools: checked.map((c) => c.value),  // none checked means no tools at all
      dry_run: this.$("dry-run").checked,
      capture_raw: this.$("capture-raw").checked,
    };
    if (value("system-prompt").trim()) body.system_prompt = value("system-prompt");
    if (value("model").trim()) body.model = value("model").trim();
    if (value("base-url").trim()) body.base_url = value("base-url").trim();
    if (value("tool-choice").trim()) body.tool_choice = value("tool-choice").trim();
    if (value("temperature") !== "") body.temperature = Number(value("temperature"));
    if (value("trust-zone")) body.trust_zone = value("trust-zone");
    if (value("on-egress-limit")) body.on_egress_limit = value("on-egress-limit");
    body.stream = this.$("stream").checked;
    const reasoning = number("reasoning-budget") ?? (value("reasoning") || undefined);
    if (reasoning !== undefined) body.reasoning = reasoning;
    for (const [field, id] of LIMITS) {
      if (number(id) !== undefined) body[field] = number(id);
    }
    if (this.rerunOf) body.rerun_of = this.rerunOf;
    return body;
  }

  // Fill the form from a stored run's re-run template (GET /runs/{id}/rerun): its prompt,
  // provider and options; the new run will be linked to it. The prompt stays editable.
  prefill(form) {
    const set = (id, value) => { this.$(id).value = value ?? ""; };
    set("prompt", form.prompt);
    set("system-prompt", form.system_prompt);
    set("provider", form.provider);
    set("model", form.model);
    const o = form.options ?? {};
    set("tool-choice", typeof o.tool_choice === "string" ? o.tool_choice : "auto");
    set("max-rounds", o.max_rounds ?? 5);
    set("temperature", o.temperature);
    this.$("trust-zone").value = typeof o.trust_zone === "string" ? o.trust_zone : "";
    this.$("on-egress-limit").value = typeof o.on_egress_limit === "string" ? o.on_egress_limit : "";
    this.$("stream").checked = o.stream !== false;
    this.$("dry-run").checked = o.dry_run === true;
    this.$("capture-raw").checked = o.capture_raw === true;
    this.$("reasoning").value = typeof o.reasoning === "string" ? o.reasoning : "";
    set("reasoning-budget", Number.isInteger(o.reasoning) ? o.reasoning : "");
    for (const [key, id] of LIMITS) set(id, o[key]);
    const allowed = Array.isArray(o.allowed_tools) ? new Set(o.allowed_tools.map(String)) : null;
    for (const box of this.$("tool-choices").querySelectorAll("input[name=tool]")) {
      if (!box.disabled) box.checked = allowed === null || allowed.has(box.value);
    }
    this.rerunOf = form.run_id;
    this.showRerun(form);
    this.checkGate();
  }

  // The banner over a re-run's form: which run it repeats, what came from where.
  showRerun(form) {
    const box = this.$("rerun-banner");
    if (!form) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const clear = h("button", { type: "button", class: "small" }, "Not a re-run");
    clear.addEventListener("click", () => {
      this.rerunOf = null;
      this.showRerun(null);
      this.$("prompt").focus();
    });
    fill(box, "Re-run of ", runLink(form.run_id, String(form.run_id).slice(0, 12)),
      form.source === "sealed" ? " (request from its sealed state)" : "",
      form.options_recorded ? "" : " · its options were not recorded: the form's defaults apply",
      form.provider_problem ? ` · ${String(form.provider_problem)}` : "",
      " · edit the prompt, then Run. ", clear);
    box.hidden = false;
  }

  async start() {
    if (this.controller) return;
    this.runId = null;
    const body = this.body();
    this.rerunOf = null;
    this.$("replay-banner").hidden = true;
    this.showRunId(null);
    this.view.reset();
    this.ledger = new LiveLedger();
    this.begin();
    this.focusStatus();
    try {
      await this.consume(await openStream("/runs/stream", body, this.controller.signal));
    } catch (err) {
      this.failed(err);
    }
  }

  // Follow the stored run `runId` live, wherever it executes (a queue worker, another
  // process): its steps as they are stored, then how it ended.
  async follow(runId) {
    if (this.controller) return;
    this.runId = runId;
    this.showRunId(runId);
    this.view.reset();
    this.ledger = new LiveLedger();
    this.begin();
    this.focusStatus();
    try {
      await this.consume(await followStream(`/runs/${encodeURIComponent(runId)}/stream`,
        this.controller.signal));
    } catch (err) {
      this.failed(err);
    }
  }

  // Answer the waiting run `runId`; `steps` (a stored run's) start the list when given.
  // Resolves to null once the resumed segment streams, or to the refusal's message.
  async decide(runId, body, steps) {
    if (this.controller) return "A run is already streaming here.";
    this.controller = new AbortController();
    let events;
    let stored = null;
    try {
      // what the run sent before (asked first: the segment adds to it once it starts)
      if (steps) stored = await egressOf(runId).catch(() => null);
      events = await openStream(`/runs/${encodeURIComponent(runId)}/decision`, body,
        this.controller.signal);
    } catch (err) {
      this.controller = null;
      return errorText(err, "The server could not be reached.");
    }
    if (steps) {
      this.view.reset(steps);
      this.ledger = new LiveLedger();
      this.ledger.seed(stored);
    }
    this.runId = runId;
    this.showRunId(runId);
    this.begin();
    this.focusStatus();  // the panel, and the button pressed in it, are gone
    this.consume(events).catch((err) => this.failed(err));
    return null;
  }

  // The focus on the run's status (the summary's first cell), when the Run view shows.
  focusStatus() {
    if (!this.$("run-status").closest("[hidden]")) focusOn(this.$("run-status"));
  }

  begin() {
    this.controller = this.controller ?? new AbortController();
    this.final = null;
    this.started = performance.now();
    this.message(null);
    this.heard = this.view.steps.length;
    this.$("final").hidden = true;
    this.$("pending").hidden = true;
    this.$("pending").replaceChildren();
    this.view.setWaiting(true);
    this.running(true);
    this.status("running");
    this.drawLedger();
  }

  // The egress panel, from the ledger summed so far: folded if it was, the focus kept if it
  // was inside.
  drawLedger() {
    const box = this.$("egress");
    const open = box.querySelector("details")?.open ?? true;
    this.ledgerChanged = false;
    keepFocus(box, () => fill(box, egressTable(this.ledger.ledger(), open)));
    box.hidden = false;
  }

  async consume(events) {
    const conversation = new Conversation();  // the server starts over with each stream
    const frames = new FrameQueue((batch) => this.apply(batch, conversation));
    try {
      for await (const event of events) frames.push(event);
      frames.flush();
      if (!this.final) this.finish(failure("The stream ended before the run did."));
    } finally {
      frames.flush();  // a stream that broke: what came before shows all the same
      this.controller = null;
      this.running(false);
    }
  }

  // A frame's events, in order; then the steps and the summary are drawn once.
  apply(events, conversation) {
    this.batching = true;
    try {
      for (const event of events) this.on(event, conversation);
    } finally {
      this.batching = false;
      this.view.render();
      if (this.ledgerChanged) this.drawLedger();
      this.status(this.statusShown);
      this.tellSteps();
    }
  }

  // The new steps, told politely: at once, then at most one message every STEP_NEWS_MS
  // (for the steps that came meanwhile), naming the last.
  tellSteps() {
    if (this.final) this.heard = this.view.steps.length;  // the status tells how it ended
    if (this.newsTimer || this.view.steps.length <= this.heard) return;
    this.tellNews();
    this.newsTimer = setTimeout(() => {
      this.newsTimer = 0;
      if (this.controller) this.tellSteps();  // once the run ends, its status says it
    }, STEP_NEWS_MS);
  }

  tellNews() {
    const steps = this.view.steps;
    const fresh = steps.length - this.heard;
    this.heard = steps.length;
    const last = `step ${steps.length}: ${stepLabel(steps[steps.length - 1])}`;
    announce(fresh === 1 ? `New ${last}` : `${fresh} new steps, the last ${last}`);
  }

  failed(err) {
    const text = errorText(err, "The server could not be reached.");
    if (!this.final) this.finish(failure(text));
    this.controller = null;
    this.running(false);
  }

  on(event, conversation) {
    switch (event.type) {
      case "context":
        this.runId = typeof event.run_id === "string" ? event.run_id : this.runId;
        this.showRunId(this.runId, event.rerun_of);
        this.watchQuestions();
        if (event.status === "queued") this.status("queued");
        this.showReplay(event.replay_label);
        break;
      case "step":
        if (event.step && typeof event.step === "object") {
          this.view.add(conversation.expand(event.step));
        }
        this.status("running");
        break;
      case "delta":
        this.view.delta(event);
        break;
      case "egress":
        this.ledger.add(event);
        this.ledgerChanged = true;
        break;
      case "end":
        this.finish(event);
        break;
      default:
        break;  // an event this page does not know: ignore it, the terminal one still comes
    }
  }

  // While the run goes on, show each question one of its servers asks, and send the answer.
  watchQuestions() {
    this.stopQuestions();
    const runId = this.runId;
    if (!runId) return;
    const path = `/runs/${encodeURIComponent(runId)}/questions`;
    const shown = new Set();
    const look = async () => {
      let found;
      try {
        found = await call("GET", path);
      } catch {
        return;  // looked for again at the next tick
      }
      const open = Array.isArray(found && found.questions) ? found.questions : [];
      const ask = open.find((a) => a && !shown.has(String(a.id)));
      if (!ask || this.runId !== runId || this.questionTimer === null) return;
      shown.add(String(ask.id));
      const panel = questionPanel(ask, (body) => this.answerQuestion(path, String(ask.id), body));
      fill(this.$("pending"), panel);
      this.$("pending").hidden = false;
      alertNow(questionNews(ask));
      if (!this.$("pending").closest("[hidden]")) focusOn(panel, { scroll: true });
    };
    this.questionTimer = setInterval(look, QUESTIONS_EVERY_MS);
    look();
  }

  stopQuestions() {
    if (this.questionTimer) clearInterval(this.questionTimer);
    this.questionTimer = null;
    if (this.$("pending").querySelector(".question-panel")) {
      fill(this.$("pending"));
      this.$("pending").hidden = true;
    }
  }

  async answerQuestion(path, id, body) {
    try {
      await call("POST", `${path}/${encodeURIComponent(id)}`, body);
    } catch (err) {
      return errorText(err, "The answer could not be sent.");
    }
    if (this.$("pending").querySelector(".question-panel")) {
      fill(this.$("pending"));
      this.$("pending").hidden = true;
    }
    return null;
  }

  finish(event) {
    this.stopQuestions();
    this.final = event;
    this.view.setWaiting(false);
    if (!this.batching) this.view.render();
    this.status(shownStatus(event));
    if (event.status === "completed" && typeof event.final_content === "string") {
      this.$("final").replaceChildren(...finalParts(event));
      this.$("final").hidden = false;
    }
    if (WAITING.has(event.status) && event.pending && typeof event.pending === "object") {
      const runId = this.runId;
      const panel = pendingPanel(event.pending, (body) => this.decide(runId, body));
      fill(this.$("pending"), panel);
      this.$("pending").hidden = false;
      alertNow(pendingNews(event.pending));
      if (!this.$("pending").closest("[hidden]")) focusOn(panel, { scroll: true });
    } else if (typeof event.message === "string") {
      const error = event.status !== "cancelled";
      this.message(event.message, error ? "error" : "cancelled");
      if (error) alertNow(`${STATUS_TEXT[shownStatus(event)] ?? "Failed"}: ${event.message}`);
    }
  }

  async cancel() {
    if (!this.runId) return;
    try {
      await call("POST", `/runs/${encodeURIComponent(this.runId)}/cancel`);
    } catch (err) {
      this.message(errorText(err, "Cancelling failed."), "error");
    }
  }

  // The run's id, linking to its stored view (`#run=<id>`) when a store keeps it.
  showRunId(runId, rerunOf = null) {
    const box = this.$("run-id");
    box.hidden = !runId;
    fill(box, runId ? ["Run ", runLink(runId, runId)] : null,
      runId && typeof rerunOf === "string" ? [" · re-run of ", runLink(rerunOf, rerunOf)] : null);
    if (runId) this.showRerun(null);
  }

  // The banner naming the script a scripted provider replays; nothing without one.
  showReplay(label) {
    if (typeof label !== "string" || !label) return;
    this.$("replay-banner").textContent = label;
    this.$("replay-banner").hidden = false;
  }

  running(on) {
    const cancel = this.$("cancel-button");
    if (!on && document.activeElement === cancel) this.focusStatus();  // it is about to hide
    this.$("run-button").disabled = on;
    cancel.hidden = !on;
  }

  // The status shown in the summary; drawn at once, or at the end of the frame's events.
  status(status) {
    this.statusShown = status;
    if (this.batching) return;
    const elapsed = this.started ? performance.now() - this.started : 0;
    const counts = summarise(this.view.steps, this.final, elapsed, this.view.span());
    drawSummary(this.$("summary"), counts, status);
    this.tellStatus(status, counts);
  }

  // The status, told politely when it changes; the title names it with the run.
  tellStatus(status, counts) {
    const text = STATUS_TEXT[status] ?? status;
    const id = this.runId ? ` · run ${this.runId.slice(0, 8)}` : "";
    titlePart("run", status === "idle" ? null : `${text}${id}`);
    if (this.said === status || (status === "idle" && this.said === null)) return;
    this.said = status;
    if (status === "running" || status === "queued") announce(`Run ${text.toLowerCase()}.`);
    else if (this.final) {
      announce(`Run ${text.toLowerCase()}: ${counts.rounds} round${counts.rounds === 1 ? "" : "s"}, `
        + `${counts.toolCalls} tool call${counts.toolCalls === 1 ? "" : "s"}.`);
    }
  }

  message(text, kind = "info") {
    const box = this.$("run-message");
    box.hidden = !text;
    box.className = `banner ${kind}`;
    box.textContent = text ?? "";
  }
}

// The answer, and for a refusal or a safety block what the provider said (untrusted text).
function finalParts(event) {
  const parts = [];
  if (event.answer_withheld === true) {  // a followed run: the store's copy keeps no content
    return [h("h3", {}, "Answer"), h("p", { class: "muted not-stored",
      "data-testid": "answer-not-stored" }, `The answer is ${NOT_STORED}.`)];
  }
  if (typeof event.refusal === "string" && event.refusal) {
    parts.push(h("h3", {}, event.reason === "blocked" ? "Blocked" : "Refused"),
      h("pre", { class: "block refusal", "data-testid": "refusal" }, event.refusal));
  }
  if (event.final_content || !parts.length) {
    parts.push(h("h3", {}, "Answer"), h("pre", { class: "block answer" }, event.final_content));
  }
  return parts;
}

function failure(message) {
  return { type: "end", status: "failed", message };
}

