"""axe-core in the inspector page: injected before the page's own script (an init script runs
outside the page's CSP and Trusted Types, as an extension would), run over the whole document
with the WCAG 2.0 and 2.1 A and AA rules; what it finds is kept by impact.

axe-core comes from npm at the version tests/axe/package-lock.json pins (``npm ci --prefix
tests/axe``: scripts/test runs it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page

AXE = Path(__file__).resolve().parent.parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"serious", "critical"}  # the impacts a view may not have
RUN = """async (tags) => {
  const result = await window.axe.run(document, {
    runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
  return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })) }));
}"""


def axe_context(browser: Browser, width: int, scheme: str) -> BrowserContext:
    """A browser context whose every page has axe-core, at ``width`` px and colour ``scheme``."""
    if not AXE.is_file():
        raise AssertionError(f"axe-core is not installed at {AXE}: run npm ci --prefix tests/axe")
    context = browser.new_context(
        viewport={"width": width, "height": 900},
        color_scheme=scheme,  # type: ignore[arg-type]
    )
    context.add_init_script(path=str(AXE))
    return context


def audit(page: Page) -> list[dict[str, Any]]:
    """The violations of serious or critical impact in the page as it is now."""
    found: list[dict[str, Any]] = page.evaluate(RUN, WCAG_AA)
    return [v for v in found if v["impact"] in BLOCKING]


def report(found: dict[str, list[dict[str, Any]]]) -> str:
    """Each view's violations, a line per rule with its first few elements."""
    lines = []
    for view, violations in found.items():
        for v in violations:
            where = "; ".join(f"{n['target']}" for n in v["nodes"][:4])
            lines.append(f"{view}: {v['id']} ({v['impact']}, {len(v['nodes'])}) {where}")
            lines.append(f"    {v['nodes'][0]['summary']}".replace("\n", " "))
    return "\n".join(lines)


def count(found: dict[str, list[dict[str, Any]]]) -> int:
    """The elements in violation, over every view."""
    return sum(len(v["nodes"]) for violations in found.values() for v in violations)
