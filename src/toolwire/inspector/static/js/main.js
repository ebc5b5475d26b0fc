// Start-up: adopt the token from the URL fragment, wire the three views, load the tools.

import { adoptToken, call } from "./api.js";
import { RunView } from "./run.js";
import { RunsView } from "./runs.js";
import { ToolsView } from "./tools.js";

function main() {
  const token = adoptToken();
  const auth = document.getElementById("auth-state");
  auth.textContent = token ? "admin" : "no token: open the URL the server printed";
  auth.className = token ? "auth-state ok" : "auth-state error";
  const run = new RunView(document.getElementById("view-run"));
  const runs = new RunsView(document.getElementById("view-runs"));
  const tools = new ToolsView(document.getElementById("view-tools"), (list) => run.setTools(list));
  const views = { run: null, runs: () => runs.load(), tools: () => tools.load() };
  for (const link of document.querySelectorAll(".nav-link")) {
    link.addEventListener("click", () => {
      const name = link.getAttribute("data-view");
      for (const other of document.querySelectorAll(".nav-link")) {
        other.setAttribute("aria-selected", String(other === link));
      }
      for (const key of Object.keys(views)) {
        document.getElementById(`view-${key}`).hidden = key !== name;
      }
      views[name]?.();
    });
  }
  const ready = () => document.body.setAttribute("data-ready", "true");
  if (token) {
    const defaults = call("GET", "/defaults").then((d) => run.setDefaults(d), () => {});
    Promise.allSettled([defaults, tools.load()]).finally(ready);
  }
  else ready();
}

main();
