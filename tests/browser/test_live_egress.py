"""A live run's egress ledger, in Chromium: the Run view's panel grows with each request while
the run runs, ends as the store's ledger, and the run opened from the store shows the same
table; a hostile provider and tool name reach it as text; nothing serious for axe-core; a
keyboard folds and unfolds it, and a fold lasts while the run adds to it; a run approved from
its stored view goes on from the ledger it had."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, call, live_server, settings, waiting_registry
from .axe import audit, axe_context
from .harness import start_run, wait_status, watching

pytestmark = pytest.mark.browser
HOSTILE = "<img src=x onerror=alert(1)>"  # a provider's name, and a tool name the model made up
SLOW_MS = 400
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [call("lookup", {"customer": "Ada"}), call(HOSTILE, {})]},
    *[{"tool_calls": [call("lookup", {"customer": "Ada"})], "delay_ms": SLOW_MS}] * 3,
    {"content": "read slowly", "delay_ms": SLOW_MS},
]
IN_PANEL = "document.activeElement.closest('#egress') !== null"
ROWS = "#view-run #egress .egress-table tbody tr"
CELLS = "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
# Every drawing of the panel while the run runs: its caption and the run's status.
RECORD = """() => {
  window.__ledger = [];
  const box = document.querySelector("#egress");
  new MutationObserver(() => {
    const caption = box.querySelector("caption");
    const status = document.querySelector("#run-status").getAttribute("data-status");
    if (caption) window.__ledger.push([caption.textContent, status]);
  }).observe(box, { childList: true, subtree: true, characterData: true });
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RunStore]]:
    path = tmp_path_factory.mktemp("live-egress") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.METADATA)
    kit = settings(store=store, privacy_level="metadata", scripts={HOSTILE: SCRIPT})
    try:
        with live_server(create_app(kit)) as url:
            yield url, store
    finally:
        store.close()


def run_it(page: Page) -> str:
    page.evaluate(RECORD)
    start_run(page, HOSTILE, max_rounds=6)
    wait_status(page, "completed", timeout=20_000)
    run_id = page.text_content("#run-id a")
    assert run_id
    return run_id


def stored_rows(store: RunStore, run_id: str) -> list[list[str]]:
    return [[t.provider or "", t.tool or "", t.data_class or "", t.label or "",
             f"{t.new_bytes:,}", f"{t.wire_bytes:,}"]
            for t in store.egress(run_id=run_id)]  # fmt: skip


def test_the_live_ledger_grows_with_the_run_and_ends_as_the_stored_one(
    browser: Browser, served: tuple[str, RunStore]
) -> None:
    base, store = served
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        run_id = run_it(page)
        expected = stored_rows(store, run_id)
        assert {row[1] for row in expected} == {"lookup", "(unregistered)"}
        assert {row[0] for row in expected} == {HOSTILE}
        assert page.eval_on_selector_all(ROWS, CELLS) == expected
        drawn: list[list[str]] = page.evaluate("window.__ledger")
        while_running = [int(c.split(" ")[0].replace(",", "")) for c, s in drawn
                         if s == "running"]  # fmt: skip
        # requests 2 to 5 carried tool output: each grew the table while the run ran
        assert len(set(while_running)) >= 3
        assert while_running == sorted(while_running)
        wire, new = (sum(getattr(t, f) for t in store.egress(run_id=run_id))
                     for f in ("wire_bytes", "new_bytes"))  # fmt: skip
        assert page.text_content("#egress caption") == f"{wire:,} bytes on the wire, {new:,} new"
        assert page.query_selector("#egress img") is None
        page.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
        page.wait_for_selector("#stored-run [data-testid=egress] table")
        stored = page.eval_on_selector_all("#stored-run .egress-table tbody tr", CELLS)
        assert stored == expected
        assert page.text_content("#stored-run .egress-table caption") == page.text_content(
            "#egress caption"
        )
    # watching: no dialog opened and no page error happened


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_live_ledger_has_nothing_serious_for_axe_and_a_keyboard_reaches_it(
    browser: Browser, served: tuple[str, RunStore], scheme: str
) -> None:
    base, _ = served
    context = axe_context(browser, 390, scheme)
    page = context.new_page()
    try:
        page.goto(f"{base}/#token={TOKEN}")
        page.wait_for_selector("body[data-ready=true]")
        run_it(page)
        found = [v for v in audit(page) if any("egress" in n["target"] for n in v["nodes"])]
        assert found == []
        page.focus("#run-id a")
        for _ in range(40):  # the steps, their filter and the details come first
            page.keyboard.press("Tab")
            if page.evaluate(IN_PANEL):
                break
        assert page.evaluate("document.activeElement === document.querySelector('#egress summary')")
        page.keyboard.press("Enter")
        assert page.is_hidden("#egress table")
        page.keyboard.press("Space")
        assert page.is_visible("#egress table")
    finally:
        context.close()


def test_a_folded_panel_stays_folded_and_focused_as_the_run_adds_to_it(
    browser: Browser, served: tuple[str, RunStore]
) -> None:
    base, _ = served
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        page.evaluate(RECORD)
        start_run(page, HOSTILE, max_rounds=6)
        page.wait_for_selector("#egress summary")
        page.focus("#egress summary")
        page.keyboard.press("Enter")  # folded while the run goes on
        wait_status(page, "completed", timeout=20_000)
        drawn_after: list[Any] = page.evaluate("window.__ledger")
        assert len({caption for caption, _ in drawn_after}) >= 3  # drawn again meanwhile
        assert page.evaluate("document.querySelector('#egress details').open") is False
        assert page.evaluate(IN_PANEL) and page.is_hidden("#egress table")


WAITS: list[dict[str, Any]] = [
    {"tool_calls": [call("lookup", {"customer": "Ada"})]},
    {"tool_calls": [call("write_note", {"path": "notes/a.md", "text": "one"})]},
    {"content": "The note is written."},
]


def test_a_run_approved_from_its_stored_view_goes_on_from_the_ledger_it_had(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("waits") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.METADATA)
    kit = settings(store=store, privacy_level="metadata", registry=waiting_registry(),
                   state_key=StateKey.generate(), scripts={"waits": WAITS})  # fmt: skip
    try:
        with live_server(create_app(kit)) as base, watching(browser, base, TOKEN) as watched:
            page = watched.page
            start_run(page, "waits")
            wait_status(page, "awaiting_approval")
            run_id = page.text_content("#run-id a")
            assert run_id
            before = page.eval_on_selector_all(ROWS, CELLS)
            assert [row[1] for row in before] == ["lookup"]  # the second request's
            page.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
            page.click("#stored-run .pending-panel button.approve")
            page.wait_for_selector("#view-run:not([hidden])")
            wait_status(page, "completed")
            expected = stored_rows(store, run_id)
            assert {row[1] for row in expected} == {"lookup", "write_note"}
            assert page.eval_on_selector_all(ROWS, CELLS) == expected
    finally:
        store.close()
