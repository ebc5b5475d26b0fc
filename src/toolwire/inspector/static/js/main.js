// Start-up: adopt the token from the URL fragment, wire the four views, load the tools.

import { adoptToken, call, whenUnauthorized } from "./api.js";
import { AuditView } from "./audit.js";
import { RunView } from "./run.js";
import { RunsView } from "./runs.js";
import { ToolsView } from "./tools.js";

const STALE_TOKEN = "This tab's token is no longer valid (the server was restarted?): open the "
  + "URL the server printed most recently.";

// `#run=<id>` names a stored run to open.
function linkedRun() {
  const match = /(?:^|[#&])run=([0-9A-Za-z-]{1,100})(?:&|$)/.exec(window.location.hash);
  return match ? match[1] : null;
}

function main() {
  const linked = linkedRun();  // read first: adopting a token clears the fragment
  const { token, problem } = adoptToken();
  const auth = document.getElementById("auth-state");
  const fix = "open the URL the server printed";
  auth.textContent = problem ? `${problem}: ${fix}` : token ? "admin" : `no token: ${fix}`;
  auth.className = token && !problem ? "auth-state ok" : "auth-state error";
  whenUnauthorized(() => {
    auth.textContent = "token no longer valid";
    auth.className = "auth-state error";
    const banner = document.getElementById("auth-banner");
    banner.textContent = STALE_TOKEN;
    banner.hidden = false;
  });
  const run = new RunView(document.getElementById("view-run"));
  // A decision taken on a stored run continues live in the Run view.
  const decide = async (runId, body, steps) => {
    const refused = await run.decide(runId, body, steps);
    if (refused === null) show("run");
    return refused;
  };
  const follow = (runId) => {
    show("run");
    run.follow(runId);
  };
  const runs = new RunsView(document.getElementById("view-runs"), decide, follow);
  const tools = new ToolsView(document.getElementById("view-tools"), (list) => run.setTools(list));
  const audit = new AuditView(document.getElementById("view-audit"));
  const views = { run: null, runs: () => runs.load(), tools: () => tools.load(),
    audit: () => audit.load() };
  const show = (name) => {
    for (const link of document.querySelectorAll(".nav-link")) {
      link.setAttribute("aria-selected", String(link.getAttribute("data-view") === name));
    }
    for (const key of Object.keys(views)) {
      document.getElementById(`view-${key}`).hidden = key !== name;
    }
    views[name]?.();
  };
  for (const link of document.querySelectorAll(".nav-link")) {
    link.addEventListener("click", () => show(link.getAttribute("data-view")));
  }
  const openLinked = (id = linkedRun()) => {
    if (!id || !token) return;
    show("runs");
    runs.show(id);
  };
  window.addEventListener("hashchange", () => openLinked());
  openLinked(linked);
  const ready = () => document.body.setAttribute("data-ready", "true");
  if (token) {
    const defaults = call("GET", "/defaults").then((d) => run.setDefaults(d), () => {});
    Promise.allSettled([defaults, tools.load()]).then(() => run.gateChecked).finally(ready);
  }
  else ready();
}

main();
