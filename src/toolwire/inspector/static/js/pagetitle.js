// The page's title: what the view shown shows (a run and its status, a stored run, two runs
// compared), the view, the page's name; a tab list or a screen reader tells them apart.

const PAGE = "toolwire inspector";
const VIEWS = { run: "Run", runs: "Stored runs", tools: "Tools", compare: "Compare",
  audit: "Audit" };
const parts = new Map();  // view -> what it shows now, or nothing
let shown = "run";

// The view on screen now.
export function titleView(view) {
  shown = view;
  draw();
}

// What `view` shows; null when nothing in particular.
export function titlePart(view, text) {
  if (text) parts.set(view, String(text));
  else parts.delete(view);
  if (view === shown) draw();
}

function draw() {
  document.title = [parts.get(shown), VIEWS[shown], PAGE].filter(Boolean).join(" · ");
}
