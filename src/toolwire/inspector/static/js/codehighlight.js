// Syntax highlighting for `code` artifacts, with the vendored Lezer parsers
// (../vendor/lezer/README.md). Lezer's highlightCode hands over each piece of the code with
// the classes it gets; this module makes a text node of the piece, inside a <span> whose
// class comes from Lezer's own fixed class names (classHighlighter: "tok-keyword" ...). The
// code is never parsed as HTML and never becomes markup: a line reads exactly as it did.
//
// A language without a vendored grammar, a grammar that fails to load, or code over the
// size cap stays plain text. Grammars load on first use (a static ES module each).

import { h } from "./dom.js";

const GRAMMARS = {
  python: ["python", (m) => m.parser],
  py: ["python", (m) => m.parser],
  javascript: ["javascript", (m) => m.parser],
  js: ["javascript", (m) => m.parser],
  jsx: ["javascript", (m) => m.parser.configure({ dialect: "jsx" })],
  typescript: ["javascript", (m) => m.parser.configure({ dialect: "ts" })],
  ts: ["javascript", (m) => m.parser.configure({ dialect: "ts" })],
  tsx: ["javascript", (m) => m.parser.configure({ dialect: "ts jsx" })],
  json: ["json", (m) => m.parser],
  css: ["css", (m) => m.parser],
  html: ["html", (m) => m.parser],
  yaml: ["yaml", (m) => m.parser],
  yml: ["yaml", (m) => m.parser],
  go: ["go", (m) => m.parser],
  rust: ["rust", (m) => m.parser],
  php: ["php", (m) => m.parser.configure({ top: "Program" })],
};
export const HIGHLIGHT_CHAR_CAP = 200_000;  // beyond this, parsing costs more than it shows

let runtime = null;

function load(name) {
  return import(`../vendor/lezer/${name}.js`);
}

// The parser for `language`, or null when there is none.
async function parserFor(language) {
  const entry = GRAMMARS[String(language ?? "").trim().toLowerCase()];
  if (!entry) return null;
  const [file, pick] = entry;
  return pick(await load(file));
}

// Colour the lines of a code artifact in place. `lines` are the `.line-text` spans, one per
// line of `code`; each keeps its text exactly, split into plain and classed pieces.
// Resolves to true when the code was highlighted.
export async function highlightLines(code, language, lines) {
  if (typeof code !== "string" || code.length > HIGHLIGHT_CHAR_CAP) return false;
  let parser;
  try {
    parser = await parserFor(language);
    runtime = runtime ?? await load("highlight");
  } catch {
    return false;  // the grammar did not load: plain text, as before
  }
  if (!parser) return false;
  const pieces = lines.map(() => []);
  let line = 0;
  runtime.highlightCode(code, parser.parse(code), runtime.classHighlighter,
    (text, classes) => {
      if (line >= pieces.length) return;
      pieces[line].push(classes ? span(text, classes) : document.createTextNode(text));
    },
    () => { line += 1; });
  lines.forEach((element, i) => {
    if (pieces[i].map((n) => n.textContent).join("") === element.textContent) {
      element.replaceChildren(...pieces[i]);
    }
  });
  return true;
}

function span(text, classes) {
  // Lezer's class names are its own constants ("tok-string tok-definition"); anything else
  // is dropped rather than passed on.
  const kept = classes.split(" ").filter((c) => /^tok-[A-Za-z0-9]+$/.test(c)).join(" ");
  return h("span", { class: kept }, text);
}
