"""The incremental live view in Chromium: rows appended (never rebuilt), a conversation rebuilt
from the stream's request deltas, and a 2,000-step stored run drawn a window at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import AUTH, TOKEN, call
from .harness import Watched, open_step, start_run, stored_inspector, wait_status, watching

pytestmark = pytest.mark.browser

LONG_ROUNDS = 666  # 3 steps a round and 2 for the answer: 2,000 steps
LONG = [{"tool_calls": [call("lookup", {"customer": "Ada"})]}] * LONG_ROUNDS + [
    {"content": "done at last"}
]
DRAWN_AT_MOST = 120  # the rows in view and the overscan, far below the run's 2,000
ROW_IDENTITY = """(indices) => indices.map((i) =>
  document.querySelector(`#steps li[data-index='${i}']`) === window.__rows[i])"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.FULL) as url:
        yield url


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server over a metadata-level store holding one 2,000-step run; (URL, run id)."""
    with stored_inspector(tmp_path_factory, PrivacyLevel.METADATA, scripts={"long": LONG}) as url:
        body = {"prompt": "go", "provider": "long", "max_rounds": LONG_ROUNDS + 1}
        answer = httpx.post(f"{url}/api/runs", json=body, headers=AUTH, timeout=120)
        assert len(answer.json()["steps"]) == 2000
        yield url, answer.json()["context"]["run_id"]


def test_appended_steps_keep_the_rows_drawn_and_the_focus(watched: Watched) -> None:
    page = watched.page
    start_run(page, "slow_rounds", max_rounds=10)
    page.wait_for_selector("#steps li[data-index='2']")
    page.evaluate("""() => {
      window.__rows = [0, 1, 2].map((i) => document.querySelector(`#steps li[data-index='${i}']`));
      window.__bar = document.querySelector("#timeline .timeline-row[data-index='0']");
      window.__rows[1].focus();
    }""")
    wait_status(page, "completed")
    assert page.locator("#steps li[data-index]").count() == 14
    assert page.evaluate(ROW_IDENTITY, [0, 1, 2]) == [True, True, True]
    assert page.evaluate(
        "document.querySelector(\"#timeline .timeline-row[data-index='0']\") === window.__bar"
    )
    assert page.evaluate("document.activeElement === window.__rows[1]")
    page.keyboard.press("Enter")  # selecting the focused row marks it; it stays the same one
    assert page.evaluate(ROW_IDENTITY, [0, 1, 2]) == [True, True, True]
    assert page.evaluate("document.activeElement === window.__rows[1]")
    assert page.get_attribute("#steps li[data-index='1']", "aria-selected") == "true"
    assert page.get_attribute("#steps li[data-index='13']", "aria-selected") == "false"
    assert page.text_content("#detail .detail-title") == "Model"


def messages_shown(page: Page, where: str) -> list[str]:
    found: list[str] = page.eval_on_selector_all(
        f"{where} .tab-panel .message", "ms => ms.map((m) => m.textContent)"
    )
    return found


def test_a_request_rebuilt_from_its_delta_shows_the_conversation_the_store_kept(
    watched: Watched, base: str
) -> None:
    page = watched.page
    with page.expect_response(lambda r: r.url.endswith("/api/runs/stream")) as streamed:
        start_run(page, "looping", max_rounds=10)
    wait_status(page, "completed")
    lines: list[dict[str, Any]] = [
        httpx.Response(200, content=line).json()
        for line in streamed.value.body().split(b"\n") if line
    ]  # fmt: skip
    requests = [e["step"] for e in lines if e["type"] == "step" and e["step"]["kind"] == "request"]
    assert [r.get("messages_kept") for r in requests] == [None, 1, 3, 5]
    assert all("messages_sent" not in r for r in requests[1:])
    open_step(page, 9, "Messages sent")
    live = messages_shown(page, "#detail")
    assert len(live) == 7 and live[0] == "usergo"
    assert live[-1].startswith("tool · ") and live[-1].endswith("2 orders for Ada")
    run_id = page.get_attribute("#run-id a", "href") or ""
    page.evaluate("(hash) => { window.location.hash = hash; }", run_id.removeprefix("#"))
    page.wait_for_selector("#stored-run ol.steps li[data-index='9']")
    page.click("#stored-run ol.steps li[data-index='9']")
    page.click("#stored-run .detail .tab:text-is('Messages sent')")
    assert messages_shown(page, "#stored-run .detail") == live  # rebuilt from deltas too
    run = httpx.get(f"{base}/api/runs/{run_id.removeprefix('#run=')}", headers=AUTH).json()
    whole = run["steps"][9]["messages_sent"]
    names = {c["id"]: c["name"] for m in whole for c in m.get("tool_calls") or []}
    heads = [m["role"] + (f" · {names[m['tool_call_id']]} · {m['tool_call_id']}"
                          if m.get("tool_call_id") else "")
             + m["content"] for m in whole]  # fmt: skip
    assert len(heads) == len(live) and all(map(str.startswith, live, heads))


def rows_drawn(page: Page) -> tuple[int, int]:
    counted: tuple[int, int] = page.evaluate("""() => [
      document.querySelectorAll('#stored-run ol.steps li[data-index]').length,
      document.querySelectorAll('#stored-run .timeline-row').length]""")
    return counted


def in_view(page: Page, row: str, box: str) -> bool:
    shown: bool = page.evaluate(
        """([row, box]) => {
          const r = document.querySelector(row).getBoundingClientRect();
          const b = document.querySelector(box).getBoundingClientRect();
          return r.top >= b.top && r.bottom <= b.bottom; }""",
        [row, box],
    )
    return shown


def test_a_2000_step_stored_run_draws_a_window_of_rows_and_reaches_any_step(
    browser: Browser, big: tuple[str, str]
) -> None:
    url, run_id = big
    with watching(browser, url, TOKEN) as watched:
        page = watched.page
        page.evaluate("(id) => { window.location.hash = `run=${id}&step=1000`; }", run_id)
        page.wait_for_selector("#stored-run ol.steps li.selected[data-index='999']")
        assert page.text_content("#stored-run .detail-title") == "⬆ Request · round 334"
        assert in_view(page, "#stored-run ol.steps li.selected", "#stored-run ol.steps")
        listed, bars = rows_drawn(page)
        assert 0 < listed <= DRAWN_AT_MOST and 0 < bars <= DRAWN_AT_MOST
        page.evaluate("""() => { window.__focused = document.querySelector(
          "#stored-run ol.steps li.selected"); window.__focused.focus(); }""")
        page.eval_on_selector("#stored-run ol.steps", "l => { l.scrollTop = l.scrollHeight; }")
        page.wait_for_selector("#stored-run ol.steps li[data-index='1999']")
        assert page.evaluate("""() => document.activeElement === window.__focused
          && window.__focused.isConnected""")  # out of view, the focused row stays
        page.click("#stored-run ol.steps li[data-index='1999']")
        assert page.text_content("#stored-run .detail-title") == "Model"
        assert page.get_attribute("#stored-run li[data-index='1999']", "aria-selected") == "true"
        assert page.evaluate("window.location.hash") == f"#run={run_id}&step=2000"
        page.eval_on_selector("#stored-run .timeline-rows", "t => { t.scrollTop = 0; }")
        page.click("#stored-run .timeline-row[data-index='1']")  # the list follows to its row
        page.wait_for_selector("#stored-run ol.steps li.selected[data-index='1']")
        assert in_view(page, "#stored-run ol.steps li.selected", "#stored-run ol.steps")
        assert page.evaluate("window.location.hash") == f"#run={run_id}&step=2"
        listed, bars = rows_drawn(page)
        assert 0 < listed <= DRAWN_AT_MOST and 0 < bars <= DRAWN_AT_MOST
        spacers = page.eval_on_selector_all(
            "#stored-run ol.steps > :not([data-index])",
            "s => s.map((e) => [e.getAttribute('aria-hidden'), e.textContent])",
        )
        assert spacers == [["true", ""], ["true", ""]]  # nothing a reader would hear
