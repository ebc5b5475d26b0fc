// Whitespace in a preview line made visible, as the command line shows it (toolwire.cli.show):
// every run of whitespace but a single space with more text after it, so an indentation moved
// out of a block, a tab for spaces or a trailing space reads as the change it is. Each marked run
// is a glyph hidden from assistive technology with its words beside it ("4 spaces"), and the
// panel shows a legend: the glyphs are never the only cue, nor is their colour.

import { h } from "./dom.js";

const RUN = /[\t \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+/g;
const GLYPHS = { "\t": "→", " ": "·" };
const OTHER = "␣";
const WORDS = { "\t": ["tab", "tabs"], " ": ["space", "spaces"] };
const OTHER_WORDS = ["other space character", "other space characters"];

export const LEGEND = "Whitespace is shown: → tab, · space (at the start or end of a line, or "
  + "two or more together), ␣ another space character.";

// The line as a span of text nodes and marked runs; `marked` says whether any run was marked.
export function previewLine(line) {
  const text = String(line);
  const parts = [];
  let at = 0;
  for (const run of text.matchAll(RUN)) {
    const end = run.index + run[0].length;
    if (run[0] === " " && end < text.length) continue;
    parts.push(text.slice(at, run.index), marker(run[0]));
    at = end;
  }
  parts.push(text.slice(at));
  return { node: h("span", { class: "preview-line" }, parts), marked: at > 0 };
}

function marker(run) {
  const glyphs = Array.from(run, (c) => GLYPHS[c] ?? OTHER).join("");
  return h("span", { class: "ws" },
    h("span", { class: "ws-glyph", "aria-hidden": "true" }, glyphs),
    h("span", { class: "visually-hidden" }, ` ${words(run)} `));
}

// "4 spaces, 1 tab": the run's characters counted in the order they come.
function words(run) {
  const groups = [];
  for (const c of run) {
    const last = groups[groups.length - 1];
    if (last && last.c === c) last.n += 1;
    else groups.push({ c, n: 1 });
  }
  return groups.map(({ c, n }) => {
    const [one, many] = WORDS[c] ?? OTHER_WORDS;
    return `${n} ${n === 1 ? one : many}`;
  }).join(", ");
}
