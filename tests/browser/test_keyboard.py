"""The inspector's main tasks by keyboard only, in Chromium: start a run, read an artifact,
approve a call, filter and open the stored runs; after each action the test checks where the
focus is, and what the live regions and the title say."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import AUTH, waiting_registry
from .harness import Watched, stored_inspector, wait_status

pytestmark = pytest.mark.browser

FOCUSED = """() => {
  const e = document.activeElement;
  return { tag: e.tagName.toLowerCase(), id: e.id, cls: e.className, role: e.getAttribute("role"),
    index: e.getAttribute("data-index"), selected: e.getAttribute("aria-selected"),
    text: e.textContent.trim().slice(0, 80), sort: e.getAttribute("data-sort"),
    where: e.closest("[id]") ? e.closest("[id]").id : null };
}"""
SAID = "document.querySelector('#announce-%s').textContent"  # what a live region says
IN_VIEW = """document.activeElement.getBoundingClientRect().top >= 0
  && document.activeElement.getBoundingClientRect().top < window.innerHeight"""
MOST_TABS = 25  # the most Tab presses any one control may take to reach from the one before


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.FULL, registry=waiting_registry(),
                          state_key=StateKey.generate()) as url:  # fmt: skip
        yield url


def focused(page: Page) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(FOCUSED)
    return found


def tab_to(page: Page, selector: str, back: bool = False) -> int:
    """Press Tab (Shift+Tab) until the focus is on ``selector``; how many presses it took."""
    for presses in range(1, MOST_TABS + 1):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return presses
    raise AssertionError(f"{selector} not reached in {MOST_TABS} Tabs; at {focused(page)}")


def until(page: Page, predicate: str, timeout_s: float = 10) -> None:
    """Poll ``predicate`` (a JS expression) until it holds; the page's CSP forbids eval, which
    Playwright's own polling of a page function would use."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"() => Boolean({predicate})"):
        if time.monotonic() > deadline:
            raise AssertionError(f"never true: {predicate}; the focus is at {focused(page)}")
        page.wait_for_timeout(50)


def live(page: Page, which: str) -> str:
    return page.text_content(f"#announce-{which}") or ""


def run_by_keyboard(page: Page, provider: str) -> None:
    """From a page just opened: the skip link, the prompt, the provider, Ctrl+Enter."""
    page.keyboard.press("Tab")
    assert focused(page)["id"] == "skip-link"
    page.keyboard.press("Enter")
    assert focused(page)["id"] == "prompt"
    page.keyboard.press("Control+A")
    page.keyboard.type("go")
    tab_to(page, "#provider")
    page.keyboard.press("Control+A")
    page.keyboard.type(provider)
    page.keyboard.press("Control+Enter")


def test_start_a_run_and_read_an_artifact_by_keyboard(watched: Watched) -> None:
    page = watched.page
    run_by_keyboard(page, "scripted")
    assert focused(page)["id"] == "run-status"  # the focus follows the run
    wait_status(page, "completed")
    assert focused(page)["id"] == "run-status"
    until(page, "document.title.startsWith('Completed · run ')")
    assert page.title().endswith(" · Run · toolwire inspector")
    until(page, f"{SAID % 'polite'}.startsWith('Run completed')")
    assert live(page, "polite") == "Run completed: 2 rounds, 1 tool call."
    # The timeline, then the steps' bar (the filter's kind, tool name and status, the find's
    # words, Previous and Next being off with nothing to find, Conversation), then the steps:
    # one Tab each, on the selected (last) step.
    page.keyboard.press("Tab")
    assert (focused(page)["role"], focused(page)["index"]) == ("option", "4")
    assert "timeline-row" in focused(page)["cls"]
    assert tab_to(page, "#steps li[aria-selected=true]") == 6
    now = focused(page)
    assert (now["tag"], now["role"], now["index"], now["selected"]) == ("li", "option", "4", "true")
    page.keyboard.press("Home")
    assert (focused(page)["index"], focused(page)["selected"]) == ("0", "true")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page)["text"].startswith("⚙ lookup")
    assert page.text_content("#detail .detail-title") == "Tool · lookup"
    page.keyboard.press("Tab")  # into the detail: its open tab
    assert (focused(page)["role"], focused(page)["text"]) == ("tab", "Arguments")
    page.keyboard.press("End")
    now = focused(page)
    assert (now["role"], now["text"], now["selected"]) == ("tab", "Artifacts", "true")
    page.keyboard.press("ArrowRight")  # past the last tab: back to the first
    assert focused(page)["text"] == "Arguments"
    page.keyboard.press("ArrowLeft")
    assert focused(page)["text"] == "Artifacts"
    page.keyboard.press("Tab")  # the panel the tab controls
    panel = page.evaluate("""() => { const e = document.activeElement;
      return [e.getAttribute('role'), e.id === document.querySelector(
        '#detail .tab[aria-selected=true]').getAttribute('aria-controls')]; }""")
    assert panel == ["tabpanel", True]
    assert page.text_content("#detail .tab-panel .artifact-label") == "orders"
    # j and k: the next and the previous step, focused.
    page.keyboard.press("j")
    assert (focused(page)["index"], focused(page)["selected"]) == ("3", "true")
    page.keyboard.press("k")
    page.keyboard.press("k")
    assert focused(page)["index"] == "1"
    assert page.text_content("#detail .detail-title") == "Model"


def test_approve_a_call_by_keyboard(watched: Watched) -> None:
    page = watched.page
    run_by_keyboard(page, "approve")
    wait_status(page, "awaiting_approval")
    now = focused(page)
    assert (now["tag"], now["cls"]) == ("section", "pending-panel")  # the panel took the focus
    until(page, IN_VIEW)  # scrolled to, at the next frame
    assert live(page, "assertive") == (
        "Approval needed for write_note: approve or deny it in the panel."
    )
    assert page.title().startswith("Awaiting approval · run ")
    tab_to(page, "#view-run .pending-panel button.approve")
    page.keyboard.press("Enter")
    until(page, "document.activeElement.id === 'run-status'")
    wait_status(page, "completed")
    assert focused(page)["id"] == "run-status"
    assert page.is_hidden("#pending")


def test_filter_sort_and_open_stored_runs_by_keyboard(watched: Watched, base: str) -> None:
    page = watched.page
    for _ in range(2):  # two completed runs, stored before the page opens them
        body = {"prompt": "go", "provider": "scripted", "max_rounds": 3}
        httpx.post(f"{base}/api/runs", json=body, headers=AUTH, timeout=30)
    run_by_keyboard(page, "exhausted")
    wait_status(page, "failed")
    until(page, f"{SAID % 'assertive'}.startsWith('Failed: ')")
    page.keyboard.press("/")  # from the Run view: Stored runs' search
    assert focused(page)["id"] == "runs-q"
    assert page.is_visible("#view-runs")
    assert page.title() == "Stored runs · toolwire inspector"
    page.locator("tr.run-row").first.wait_for()
    tab_to(page, "#runs-has_error")
    page.keyboard.press("ArrowDown")  # "with errors": the table is drawn again
    until(page, "document.querySelectorAll('tr.run-row[data-status=failed]').length"
                " === document.querySelectorAll('tr.run-row').length")  # fmt: skip
    assert focused(page)["id"] == "runs-has_error"
    page.keyboard.press("ArrowUp")  # any: every run again
    page.wait_for_selector("tr.run-row[data-status=completed]")
    tab_to(page, "button.sort[data-sort=cost]")
    page.keyboard.press("Enter")
    page.wait_for_selector("th[aria-sort=descending] button[data-sort=cost]")
    assert focused(page)["sort"] == "cost"  # the header drawn again has the focus back
    tab_to(page, "tr.run-row .run-open")
    first = focused(page)["text"]
    stops = page.eval_on_selector_all(
        "#runs-table tbody [tabindex='0']", "e => e.map(x => x.className)"
    )
    assert stops == ["compare-check", "run-open"]  # the table is one row of tab stops
    page.keyboard.press("ArrowDown")
    second = focused(page)["text"]
    assert second != first and "run-open" in focused(page)["cls"]
    page.keyboard.press("Enter")
    until(page, "document.activeElement.tagName === 'H3'")
    assert focused(page)["where"] == "stored-run"
    assert second in focused(page)["text"]
    until(page, IN_VIEW)
    assert page.title().startswith(f"Run {second[:8]} · ")
    page.keyboard.press("j")  # the stored run's steps
    assert (focused(page)["role"], focused(page)["where"]) == ("option", "stored-run")


def test_the_shortcuts_list_opens_and_gives_the_focus_back(watched: Watched) -> None:
    page = watched.page
    page.focus("#run-button")
    page.keyboard.press("?")
    page.wait_for_selector("#help[open]")
    assert page.evaluate("document.querySelector('#help').contains(document.activeElement)")
    page.keyboard.press("Escape")
    page.wait_for_selector("#help[open]", state="detached")
    assert focused(page)["id"] == "run-button"
    page.focus("#prompt")
    page.keyboard.type("a/b?j")  # in a field, the keys are text
    assert page.input_value("#prompt").endswith("a/b?j")
    assert page.is_hidden("#help")


def test_a_toggle_pressed_keeps_the_focus_while_the_tools_are_drawn_again(
    watched: Watched,
) -> None:
    page = watched.page
    page.click(".nav-link[data-view=tools]")
    row = "tr[data-kind=tool-row]:has(code:text-is('echo'))"
    page.wait_for_selector(row)
    page.focus(f"{row} .toggles button:text-is('Disable')")
    with page.expect_response("**/api/tools/echo"):
        page.keyboard.press("Enter")
    page.wait_for_selector(f"{row} .badge.error")  # the list drawn again: echo is disabled
    now = page.evaluate("""() => [document.activeElement.textContent,
      document.activeElement.getAttribute('aria-pressed'),
      document.activeElement.closest('tr').querySelector('code').textContent]""")
    assert now == ["Disable", "true", "echo"]
    page.keyboard.press("ArrowRight")  # nothing moves: buttons, not a tab list
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # Default
    page.wait_for_selector(f"{row} .badge.ok")
    assert page.evaluate("document.activeElement.textContent") == "Default"
