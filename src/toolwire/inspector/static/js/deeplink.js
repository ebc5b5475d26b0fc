// Deep links: `#run=<id>&step=<sequence>` opens a stored run at one step, `#compare=<a>,<b>`
// puts two runs side by side. The address bar follows what is shown (replaceState, so Back
// still leaves the page), so a link copied from it opens the same place, after the token
// prompt when the tab has no token yet.

import { RUN_ID } from "./dom.js";

// What the fragment names: { run, step, compare } (each null when absent or malformed).
export function readLink(hash = window.location.hash) {
  const params = new Map();
  for (const part of hash.replace(/^#/, "").split("&")) {
    const at = part.indexOf("=");
    if (at > 0) params.set(part.slice(0, at), part.slice(at + 1));
  }
  const run = params.get("run");
  const step = Number(params.get("step"));
  const pair = (params.get("compare") ?? "").split(",");
  return {
    run: run && RUN_ID.test(run) ? run : null,
    step: run && Number.isSafeInteger(step) && step >= 0 ? step : null,
    compare: pair.length === 2 && pair.every((id) => RUN_ID.test(id)) ? pair : null,
  };
}

// The fragment for a place: a run (and one of its steps), or two runs to compare.
export function fragment({ run = null, step = null, compare = null } = {}) {
  if (compare) return `#compare=${compare.join(",")}`;
  if (!run) return "";
  return Number.isSafeInteger(step) ? `#run=${run}&step=${step}` : `#run=${run}`;
}

// Show `place` in the address bar without loading anything.
export function writeLink(place) {
  history.replaceState(null, "", window.location.pathname + window.location.search
    + fragment(place));
}

// The full link to `place`, to paste into a chat or a ticket (it carries no token).
export function linkTo(place) {
  return window.location.origin + window.location.pathname + fragment(place);
}
