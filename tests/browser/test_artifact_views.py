"""Reading a step's data in Chromium: a long table's header row stays in view and its size is
said, JSON folds by keyboard, and copy buttons put the exact text on the clipboard (through
navigator.clipboard, or the older way where the page may not use it), saying "Copied";
hostile keys and labels read as text."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from toolwire import Artifact, ToolRegistry, ToolResult, tool
from toolwire.core.result import ArtifactType
from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import call, lookup
from .harness import Watched, open_step, start_run, stored_inspector, wait_status
from .test_keyboard import focused, until

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)>"
ROWS = 200
NESTED = {"columns": "id", "rows": {HOSTILE: [1, {"deep": {"deeper": [True, None]}}], "n": 2}}


@tool(group="records", data_class="public")
def long_table() -> ToolResult:
    """A table longer than its box."""
    rows = [[str(n), f"name {n}"] for n in range(ROWS)]
    return ToolResult.text("many rows", Artifact.table("many", ["id", "name"], rows))


@tool(group="records", data_class="public")
def nested() -> ToolResult:
    """A table whose data does not fit its type: shown as JSON, nested, with a hostile key."""
    return ToolResult.text("odd", Artifact(ArtifactType.TABLE, HOSTILE, NESTED))


SCRIPTS = {
    "long": [{"tool_calls": [call("long_table")]}, {"content": "ok"}],
    "nested": [{"tool_calls": [call("nested"), call("lookup", {"customer": "Ada"})]},
               {"content": "ok"}],
}  # fmt: skip


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    registry = ToolRegistry([long_table, nested, lookup])
    with stored_inspector(
        tmp_path_factory, PrivacyLevel.FULL, registry=registry, scripts=SCRIPTS
    ) as url:
        yield url


def run(page: Page, provider: str) -> None:
    start_run(page, provider)
    wait_status(page, "completed")


def test_a_long_table_says_its_size_and_keeps_its_header_in_view(watched: Watched) -> None:
    page = watched.page
    run(page, "long")
    open_step(page, 2, "Artifacts")
    assert page.text_content("#detail .artifact-table caption") == f"{ROWS} rows, 2 columns"
    panel = page.eval_on_selector(
        "#detail .tab-panel", "p => [p.childNodes.length, p.firstChild.className]"
    )
    assert panel == [1, "artifacts"]  # the artifacts alone: no copy row, no stray text
    wrap = "#detail .artifact .table-wrap"
    page.eval_on_selector(wrap, "w => { w.scrollTop = w.scrollHeight; }")
    page.wait_for_timeout(100)
    head = page.eval_on_selector(
        wrap,
        """w => {
      const box = w.getBoundingClientRect();
      const th = w.querySelector('thead th').getBoundingClientRect();
      return { scrolled: w.scrollTop > 0, top: th.top - box.top, shown: th.bottom <= box.bottom };
    }""",
    )
    assert head["scrolled"] and head["shown"] and 0 <= head["top"] < 2
    assert page.get_attribute(wrap, "tabindex") == "0"  # the keyboard can scroll it
    cells = page.eval_on_selector(
        "#detail table.artifact-table", "t => [...t.rows].map(r => r.cells.length)"
    )
    assert len(cells) == ROWS + 1  # the caption is not a row


def test_json_folds_by_keyboard_and_reads_as_the_json(watched: Watched) -> None:
    page = watched.page
    run(page, "nested")
    open_step(page, 2, "Artifacts")
    tree = "#detail .artifact-json"
    shown = {"type": "table", "label": HOSTILE, "data": NESTED}
    assert page.text_content(tree) == json.dumps(shown, indent=2)
    summaries = f"{tree} summary"
    assert page.locator(summaries).count() == 7  # every object and array that is not empty
    names = page.eval_on_selector_all(summaries, "s => s.map(e => e.getAttribute('aria-label'))")
    assert names[:4] == ["value: object, 3 keys", "data: object, 2 keys", "rows: object, 2 keys",
                         f"{HOSTILE}: array of 2"]  # fmt: skip
    assert page.locator(summaries).nth(2).evaluate("s => s.parentElement.open") is True
    deep = page.locator(summaries).nth(3)  # the array, three levels down: folded at first
    assert deep.evaluate("s => s.parentElement.open") is False
    deep.focus()
    page.keyboard.press("Enter")
    assert deep.evaluate("s => s.parentElement.open") is True
    assert focused(page)["tag"] == "summary"
    page.keyboard.press("Space")
    assert deep.evaluate("s => s.parentElement.open") is False
    page.locator(summaries).first.focus()
    page.keyboard.press("Enter")  # the whole value folded
    assert page.locator(f"{tree} .json-key").first.is_visible() is False
    assert page.locator(f"{tree} img, {tree} [onerror]").count() == 0
    assert page.text_content("#detail .artifact-label") == HOSTILE


def test_copy_puts_the_exact_text_on_the_clipboard_and_says_so(watched: Watched) -> None:
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    run(page, "nested")
    open_step(page, 3, "Arguments")
    button = "#detail .tab-panel [data-testid=copy]"
    assert page.get_attribute(button, "aria-label") == "Copy the arguments"
    page.focus(button)
    page.keyboard.press("Enter")
    until(page, "document.querySelector('#announce-polite').textContent === 'Copied'")
    assert page.text_content(button) == "Copied"
    assert focused(page)["text"] == "Copied"
    assert json.loads(page.evaluate("navigator.clipboard.readText()")) == {"customer": "Ada"}
    open_step(page, 3, "Artifacts")
    page.click("#detail .artifact-head [data-testid=copy]")
    until(page, "document.querySelector('#detail .artifact-head .copy').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == (
        "id\tcustomer\ttotal\n1001\tAda\t49.90\n1002\tGrace\t12.00"
    )


def test_copy_without_the_clipboard_api_copies_through_a_field(watched: Watched) -> None:
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    run(page, "nested")
    open_step(page, 2, "Artifacts")
    page.evaluate("Object.defineProperty(window, 'isSecureContext', { value: false })")
    page.focus("#detail .artifact-head [data-testid=copy]")
    page.keyboard.press("Enter")
    until(page, "document.querySelector('#detail .artifact-head .copy').textContent === 'Copied'")
    shown = {"type": "table", "label": HOSTILE, "data": NESTED}
    assert json.loads(page.evaluate("navigator.clipboard.readText()")) == shown
    assert page.locator("body > textarea").count() == 0
    assert focused(page)["text"] == "Copied"
    assert page.get_attribute("#detail .artifact-head .copy", "aria-label") == f"Copy {HOSTILE}"
