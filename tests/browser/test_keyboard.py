"""The inspector's main tasks by keyboard only, in Chromium: start a run, read an artifact,
approve a call, filter and open the stored runs; after each action the test checks where the
focus is, and what the live regions and the title say. Each walk is done at a desktop's width
and at a phone's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import AUTH, TOKEN, waiting_registry
from .harness import Watched, stored_inspector, wait_status, watching

pytestmark = pytest.mark.browser

FOCUSED = """() => {
  const e = document.activeElement;
  return { tag: e.tagName.toLowerCase(), id: e.id, cls: e.className, role: e.getAttribute("role"),
    index: e.getAttribute("data-index"), selected: e.getAttribute("aria-selected"),
    text: e.textContent.trim().slice(0, 80), sort: e.getAttribute("data-sort"),
    where: e.closest("[id]") ? e.closest("[id]").id : null };
}"""
RUN_FIND = "#view-run .step-tools input[name=find]"
STORED_FIND = "#stored-run .step-tools input[name=find]"
SAID = "document.querySelector('#announce-%s').textContent"  # what a live region says
# The focused element's top is in the window (with OUT_OF_VIEW's pixel of leeway).
IN_VIEW = """document.activeElement.getBoundingClientRect().top >= -1
  && document.activeElement.getBoundingClientRect().top < window.innerHeight"""
# Where the focused element is, if not wholly in the window: a keyboard user cannot see it.
# (A pixel's leeway: layout places boxes at fractions of one.)
OUT_OF_VIEW = """() => { const r = document.activeElement.getBoundingClientRect();
  const [w, h] = [document.documentElement.clientWidth, document.documentElement.clientHeight];
  const inside = r.top >= -1 && r.left >= -1 && r.bottom <= h + 1 && r.right <= w + 1;
  return inside ? null : [r.left, r.top, r.right, r.bottom, w, h]; }"""
# The focused element's description (aria-describedby): its text, whether it shows whole in the
# window, and how many elements name it.
DESCRIBED = """() => { const id = document.activeElement.getAttribute("aria-describedby");
  const d = id ? document.getElementById(id) : null;
  if (!d) return null;
  const r = d.getBoundingClientRect();
  return [d.textContent, d.checkVisibility() && r.top >= 0 && r.bottom <= innerHeight,
    document.querySelectorAll(`[aria-describedby="${id}"]`).length]; }"""
MOST_TABS = 25  # the most Tab presses any one control may take to reach from the one before
WIDTHS = {"desktop": 1280, "phone": 390}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.FULL, registry=waiting_registry(),
                          state_key=StateKey.generate()) as url:  # fmt: skip
        yield url


@pytest.fixture(params=list(WIDTHS))
def watched(request: pytest.FixtureRequest, browser: Browser, base: str) -> Iterator[Watched]:
    """The inspector at a desktop's width, then at a phone's."""
    with watching(browser, base, TOKEN, WIDTHS[request.param]) as watched:
        yield watched


def focused(page: Page) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(FOCUSED)
    return found


def tab_to(page: Page, selector: str, back: bool = False, most: int = MOST_TABS) -> int:
    """Press Tab (Shift+Tab) until the focus is on ``selector``, at most ``most`` times; how
    many presses it took."""
    for presses in range(1, most + 1):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            where = page.evaluate(OUT_OF_VIEW)
            assert where is None, f"{selector} is out of view at {where}"
            return presses
    raise AssertionError(f"{selector} not reached in {most} Tabs; at {focused(page)}")


def press(page: Page, key: str) -> None:
    """Press ``key``; the element it focuses shows whole in the window (at the next frame)."""
    page.keyboard.press(key)
    page.wait_for_timeout(50)
    where = page.evaluate(OUT_OF_VIEW)
    assert where is None, f"after {key}, {focused(page)} is out of view at {where}"


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
    press(page, "Tab")
    assert focused(page)["id"] == "skip-link"
    press(page, "Enter")
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
    press(page, "Tab")
    assert (focused(page)["role"], focused(page)["index"]) == ("option", "4")
    assert "timeline-row" in focused(page)["cls"]
    text, shows, rows = page.evaluate(DESCRIBED)  # its details, shown and read out
    assert text.startswith("Selected: ✓ Model answer: ") and " tokens" in text, text
    assert (shows, rows) == (True, 1)
    press(page, "ArrowUp")
    text, shows, rows = page.evaluate(DESCRIBED)
    assert text.startswith("Selected: ⬆ Request · round 2: ") and (shows, rows) == (True, 1), text
    press(page, "End")
    assert tab_to(page, "#steps li[aria-selected=true]") == 6
    now = focused(page)
    assert (now["tag"], now["role"], now["index"], now["selected"]) == ("li", "option", "4", "true")
    press(page, "Home")
    assert (focused(page)["index"], focused(page)["selected"]) == ("0", "true")
    press(page, "ArrowDown")
    press(page, "ArrowDown")
    assert focused(page)["text"].startswith("⚙ lookup")
    assert page.text_content("#detail .detail-title") == "Tool · lookup"
    press(page, "Tab")  # into the detail: its open tab
    assert (focused(page)["role"], focused(page)["text"]) == ("tab", "Arguments")
    press(page, "End")
    now = focused(page)
    assert (now["role"], now["text"], now["selected"]) == ("tab", "Artifacts", "true")
    press(page, "ArrowRight")  # past the last tab: back to the first
    assert focused(page)["text"] == "Arguments"
    press(page, "ArrowLeft")
    assert focused(page)["text"] == "Artifacts"
    press(page, "Tab")  # the panel the tab controls
    panel = page.evaluate("""() => { const e = document.activeElement;
      return [e.getAttribute('role'), e.id === document.querySelector(
        '#detail .tab[aria-selected=true]').getAttribute('aria-controls')]; }""")
    assert panel == ["tabpanel", True]
    assert page.text_content("#detail .tab-panel .artifact-label") == "orders"
    # j and k: the next and the previous step, focused.
    press(page, "j")
    assert (focused(page)["index"], focused(page)["selected"]) == ("3", "true")
    press(page, "k")
    press(page, "k")
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
    press(page, "/")  # a run is shown: its own find
    assert page.evaluate(f"document.activeElement.matches('{RUN_FIND}')")
    assert page.is_visible("#view-run")
    tab_to(page, ".nav-link[data-view=runs]", back=True, most=80)  # up the whole Run view
    page.keyboard.press("Enter")
    press(page, "/")  # no stored run is open: Stored runs' search
    assert focused(page)["id"] == "runs-q"
    assert page.is_visible("#view-runs")
    assert page.title() == "Stored runs · toolwire inspector"
    page.locator("tr.run-row").first.wait_for()
    tab_to(page, "#runs-has_error")
    press(page, "ArrowDown")  # "with errors": the table is drawn again
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
    press(page, "ArrowDown")
    second = focused(page)["text"]
    assert second != first and "run-open" in focused(page)["cls"]
    page.keyboard.press("Enter")
    until(page, "document.activeElement.tagName === 'H3'")
    assert focused(page)["where"] == "stored-run"
    assert second in focused(page)["text"]
    until(page, IN_VIEW)
    assert page.title().startswith(f"Run {second[:8]} · ")
    press(page, "j")  # the stored run's steps
    assert (focused(page)["role"], focused(page)["where"]) == ("option", "stored-run")
    press(page, "/")  # the stored run's own find
    assert page.evaluate(f"document.activeElement.matches('{STORED_FIND}')")


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
    page.focus("#run-button")
    press(page, "/")  # no run shown yet: Stored runs' search
    assert focused(page)["id"] == "runs-q"
    assert page.is_visible("#view-runs") and page.is_hidden("#view-run")


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
