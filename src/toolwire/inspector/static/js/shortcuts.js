// The page's keyboard shortcuts, listed in its help dialog (index.html, #help): `/` find (the
// find of the run shown, live or stored; without one, the view's search), `j` and `k` the
// next and previous step, `?` the list itself. Single keys act only outside fields
// (there they are text) and without Ctrl, Alt or Meta (the browser's and the reader's own).

import { typing } from "./keys.js";

// The search each view's `/` goes to when it shows no run; from a view without one, Stored
// runs' search.
const FIND = { runs: "runs-q", audit: "audit-tool", compare: "compare-a" };

// `view()` names the view shown, `show(name)` shows another, `steps()` is the step view of the
// view shown (a StepView) or null.
export function shortcuts({ view, show, steps }) {
  const help = document.getElementById("help");
  let before = null;  // what had the focus before the help opened
  const openHelp = () => {
    before = document.activeElement;
    help.showModal();
  };
  help.addEventListener("close", () => {
    if (before && before.isConnected) before.focus();
  });
  document.getElementById("help-button").addEventListener("click", openHelp);
  document.getElementById("help-close").addEventListener("click", () => help.close());
  const keys = {
    "/": () => {
      if (steps()?.tools.focusFind()) return;
      const id = FIND[view()];
      if (!id) show("runs");
      document.getElementById(id ?? FIND.runs).focus();
    },
    j: () => steps()?.step(1),
    k: () => steps()?.step(-1),
    "?": openHelp,
  };
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.altKey || e.metaKey || typing(e.target)) return;
    if (help.open) return;
    const act = keys[e.key];
    if (!act) return;
    e.preventDefault();
    act();
  });
}
