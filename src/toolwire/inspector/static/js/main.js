// Start-up: adopt the token from the URL fragment (or ask for it), wire the views, load the
// tools, and open the place a deep link names (`#run=…&step=…`, `#compare=…,…`). Until a
// token is accepted, only the token prompt shows: the views behind it could only fail. A
// token URL pasted into the address bar of an open page is adopted at once (`hashchange`).

import { adoptToken, call, setToken, whenUnauthorized } from "./api.js";
import { AuditView } from "./audit.js";
import { CompareView } from "./compare.js";
import { readLink } from "./deeplink.js";
import { focusOn } from "./focus.js";
import { titleView } from "./pagetitle.js";
import { RunView } from "./run.js";
import { RunsView } from "./runs.js";
import { shortcuts } from "./shortcuts.js";
import { ToolsView } from "./tools.js";

const STALE_TOKEN = "This tab's token is no longer valid (the server was restarted?): open the "
  + "URL the server printed most recently.";
const FIX = "open the URL the server printed, or paste the token below";

function main() {
  const { token, problem } = adoptToken();  // keeps a deep link's part of the fragment
  const auth = document.getElementById("auth-state");
  const tokenForm = document.getElementById("token-form");
  const content = document.querySelector("main");
  const ask = () => {
    tokenForm.hidden = false;
    content.hidden = true;
  };
  auth.textContent = problem ? `${problem}: ${FIX}` : token ? "admin" : `no token: ${FIX}`;
  auth.className = token && !problem ? "auth-state ok" : "auth-state error";
  whenUnauthorized(() => {
    auth.textContent = "token no longer valid";
    auth.className = "auth-state error";
    const banner = document.getElementById("auth-banner");
    banner.textContent = STALE_TOKEN;
    banner.hidden = false;
    ask();
  });
  const run = new RunView(document.getElementById("view-run"));
  // A decision taken on a stored run continues live in the Run view.
  const decide = async (runId, body, steps) => {
    const refused = await run.decide(runId, body, steps);
    if (refused === null) {
      show("run");
      run.focusStatus();
    }
    return refused;
  };
  const follow = (runId) => {
    show("run");
    run.follow(runId);
  };
  const compare = new CompareView(document.getElementById("view-compare"));
  const runs = new RunsView(document.getElementById("view-runs"), {
    decide,
    follow,
    rerun: (form) => {
      run.prefill(form);
      show("run");
      document.getElementById("prompt").focus();  // the banner says: edit the prompt, then Run
    },
    compare: (a, b) => { show("compare"); compare.show(a, b); },
  });
  const tools = new ToolsView(document.getElementById("view-tools"), (list) => run.setTools(list));
  const audit = new AuditView(document.getElementById("view-audit"));
  const views = { run: null, runs: () => runs.load(), tools: () => tools.load(),
    audit: () => audit.load(), compare: null };
  let shown = "run";
  const show = (name) => {
    shown = name;
    for (const link of document.querySelectorAll(".nav-link")) {
      if (link.getAttribute("data-view") === name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    for (const key of Object.keys(views)) {
      document.getElementById(`view-${key}`).hidden = key !== name;
    }
    titleView(name);
    views[name]?.();
  };
  titleView("run");
  shortcuts({
    view: () => shown,
    show,
    // The step view of the view shown: the Run view's, or the stored run open below the table.
    steps: () => (shown === "run" ? run.view : shown === "runs" ? runs.view : null),
  });
  document.getElementById("skip-link").addEventListener("click", (e) => {
    e.preventDefault();  // the fragment is the page's deep link: it stays
    focusOn(document.getElementById(`view-${shown}`).querySelector("h2, h3, textarea, input")
      ?? document.getElementById("main"), { scroll: true });
  });
  for (const link of document.querySelectorAll(".nav-link")) {
    link.addEventListener("click", () => show(link.getAttribute("data-view")));
  }
  const openLinked = () => {
    const place = readLink();
    if (place.compare) {
      show("compare");
      compare.show(...place.compare);
    } else if (place.run) {
      show("runs");
      runs.show(place.run, place.step);
    }
  };
  const ready = () => document.body.setAttribute("data-ready", "true");
  let started = false;
  const begin = () => {
    if (started) {  // a token given again after the last one went stale
      openLinked();
      tools.load();
      return;
    }
    started = true;
    openLinked();
    const defaults = call("GET", "/defaults").then((d) => run.setDefaults(d), () => {});
    Promise.allSettled([defaults, tools.load()]).then(() => run.gateChecked).finally(ready);
  };
  const accepted = () => {
    content.hidden = false;
    focusOn(content);  // the form, focused, is about to be hidden
    tokenForm.hidden = true;
    document.getElementById("auth-banner").hidden = true;
    auth.textContent = "admin";
    auth.className = "auth-state ok";
    begin();
  };
  tokenForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const input = document.getElementById("token-input");
    if (!setToken(input.value)) {
      auth.textContent = "that is not a token: paste the token or the URL the server printed";
      return;
    }
    input.value = "";
    accepted();
  });
  window.addEventListener("hashchange", () => {
    if (!/(?:^|[#&])token=/.test(window.location.hash)) {
      if (started) openLinked();
      return;
    }
    const given = adoptToken();  // takes the token out of the address bar, keeps the rest
    if (given.problem) {
      auth.textContent = `${given.problem}: ${FIX}`;
      auth.className = "auth-state error";
    } else if (given.token) {
      accepted();  // opens the place the rest of the fragment names
    }
  });
  if (token) begin();
  else {
    ask();
    document.getElementById("token-input").focus();
    ready();
  }
}

main();
