"""The inspector page in Chromium: live steps, artifacts, statuses, the tool choice."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pytest
from playwright.sync_api import Browser, Page, Route

from toolwire.core.jsonenc import dumps
from toolwire.inspector import create_app

from ..inspector_kit import TABLE_COLUMNS, TABLE_ROWS, TOKEN, live_server, settings
from .harness import Watched, open_step, start_run, wait_status

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with live_server(create_app(settings())) as url:
        yield url


def status_text(page: Page) -> str:
    return page.text_content("#run-status .metric-value") or ""


def test_the_token_leaves_the_address_bar(watched: Watched, base: str) -> None:
    assert watched.page.url == f"{base}/"
    token = watched.page.evaluate("sessionStorage.getItem('toolwire.token')")
    assert token == TOKEN


def test_a_slow_run_shows_its_first_step_before_it_ends(watched: Watched) -> None:
    page = watched.page
    start_run(page, "slow")
    page.wait_for_selector("#steps li[data-kind=tool]")
    assert page.get_attribute("#run-status", "data-status") == "running"
    page.wait_for_selector("#steps li[data-kind=waiting]")
    assert page.is_visible("#cancel-button")
    wait_status(page, "completed")
    assert page.query_selector("#steps li[data-kind=waiting]") is None
    assert page.is_hidden("#cancel-button")


def test_the_artifacts_tab_shows_the_exact_table_cells(watched: Watched) -> None:
    page = watched.page
    start_run(page, "scripted")
    wait_status(page, "completed")
    assert status_text(page) == "Completed"
    assert page.text_content("#metric-tokens .metric-value") == "37"
    assert page.text_content("#metric-rounds .metric-value") == "2"
    open_step(page, 2, "Artifacts")
    cells = page.eval_on_selector(
        "#detail table.artifact-table",
        "t => [...t.rows].map(r => [...r.cells].map(c => c.textContent))",
    )
    assert cells == [TABLE_COLUMNS, *TABLE_ROWS]
    assert page.text_content("#detail .artifact-label") == "orders"
    assert page.text_content("#replay-banner") == "Replay: scripted model, no provider is called"


def test_each_artifact_type_renders_and_malformed_ones_fall_back_to_json(
    watched: Watched,
) -> None:
    page = watched.page
    start_run(page, "every")
    wait_status(page, "completed")
    open_step(page, 2, "Artifacts")
    types = page.eval_on_selector_all(
        "#detail .artifact", "s => s.map(a => a.getAttribute('data-type'))"
    )
    assert types == ["table", "text", "tree", "key_value", "code", "link"]
    assert page.text_content("#detail .artifact-text") == "line one\nline two"
    tree = page.eval_on_selector(
        "#detail .artifact-tree",
        "t => [...t.querySelectorAll('li')].map(l => l.firstChild.textContent)",
    )
    assert tree == ["root", "leaf"]
    pairs = page.eval_on_selector_all("#detail .artifact-kv > *", "e => e.map(x => x.textContent)")
    assert pairs == ["name", "Ada", "role", "admin"]
    numbers = page.eval_on_selector_all("#detail .line-no", "e => e.map(x => x.textContent)")
    lines = page.eval_on_selector_all("#detail .line-text", "e => e.map(x => x.textContent)")
    assert (numbers, lines) == (["10", "11"], ["x = 1", "y = 2"])
    anchor = page.query_selector("#detail .artifact-link a")
    assert anchor is not None
    assert [anchor.get_attribute(a) for a in ("href", "rel", "target")] == [
        "https://example.com/docs", "noopener noreferrer", "_blank",
    ]  # fmt: skip
    assert anchor.text_content() == "the docs"
    open_step(page, 3, "Artifacts")
    types = page.eval_on_selector_all(
        "#detail .artifact", "s => s.map(a => a.getAttribute('data-type'))"
    )
    assert types == ["json", "link"]
    broken = {"type": "table", "label": "broken table", "data": {"columns": "id", "rows": 3}}
    assert page.text_content("#detail .artifact-json") == json.dumps(broken, indent=2)
    assert page.query_selector("#detail .artifact-link a") is None
    assert page.text_content("#detail .artifact-link .link-blocked") == "click me"


def test_the_tabs_follow_the_step_kind(watched: Watched) -> None:
    page = watched.page
    start_run(page, "exhausted")
    wait_status(page, "failed")
    open_step(page, 2)
    tabs = page.eval_on_selector_all("#detail .tab", "t => t.map(x => x.textContent)")
    assert tabs == ["Arguments", "Result", "Artifacts"]
    open_step(page, 1)
    assert page.eval_on_selector_all("#detail .tab", "t => t.map(x => x.textContent)") == [
        "Content"
    ]


def test_a_failed_run_shows_error_with_its_safe_message(watched: Watched) -> None:
    page = watched.page
    start_run(page, "exhausted")
    wait_status(page, "failed")
    assert status_text(page) == "Failed"
    assert page.text_content("#run-message") == "the provider call failed: ScriptExhausted"


def test_a_run_at_the_round_cap_shows_truncated(watched: Watched) -> None:
    page = watched.page
    start_run(page, "looping", max_rounds=1)
    wait_status(page, "truncated")
    assert status_text(page) == "Truncated (round cap)"


def test_a_dry_run_shows_dry_run(watched: Watched) -> None:
    page = watched.page
    page.check("#dry-run")
    start_run(page, "scripted")
    wait_status(page, "dry_run")
    assert page.eval_on_selector_all("#steps li", "l => l.map(x => x.dataset.kind)") == ["request"]


def test_the_cancel_button_cancels_the_run(watched: Watched) -> None:
    page = watched.page
    start_run(page, "hang")
    page.wait_for_selector("#steps li[data-kind=waiting]")
    page.click("#cancel-button")
    wait_status(page, "cancelled")
    assert status_text(page) == "Cancelled"
    assert page.text_content("#run-message") == "The run was cancelled."


def test_unchecking_every_tool_sends_an_empty_list(watched: Watched) -> None:
    page = watched.page
    for box in page.query_selector_all("#tool-choices input:checked"):
        box.uncheck()
    with page.expect_request("**/api/runs/stream") as request:
        start_run(page, "scripted")
    assert json.loads(request.value.post_data or "")["allowed_tools"] == []
    wait_status(page, "completed")
    open_step(page, 0, "Tools offered")
    assert page.text_content("#detail .tab-panel pre") == ""


def fake_stream(page: Page, *events: Mapping[str, object]) -> None:
    body = "".join(dumps(e) + "\n" for e in events)

    def fulfil(route: Route) -> None:
        route.fulfill(status=200, content_type="application/x-ndjson", body=body)

    page.route("**/api/runs/stream", fulfil)


CONTEXT = {"type": "context", "run_id": "r1", "provider": "scripted", "tools": []}
REQUEST = {"type": "step", "step": {"kind": "request", "round": 1, "messages_sent": []}}


@pytest.mark.parametrize(
    ("terminal", "status", "text"),
    [
        ({"type": "end", "status": "awaiting_approval", "run_id": "r1"}, "awaiting_approval",
         "Awaiting approval"),
        ({"type": "end", "status": "awaiting_input", "run_id": "r1"}, "awaiting_input",
         "Awaiting input"),
        ({"type": "end", "status": "cancelled", "message": "The run was cancelled."},
         "cancelled", "Cancelled"),
        ({"type": "end", "status": "failed", "message": "nope"}, "failed", "Failed"),
        ({"type": "end", "status": "interrupted", "message": "gone"}, "interrupted",
         "Interrupted"),
        ({"type": "end", "status": "completed", "final_content": "x", "truncated": True},
         "truncated", "Truncated (round cap)"),
    ],
)  # fmt: skip
def test_every_terminal_event_sets_its_own_status(
    watched: Watched, terminal: dict[str, object], status: str, text: str
) -> None:
    page = watched.page
    fake_stream(page, CONTEXT, REQUEST, terminal)
    start_run(page, "scripted")
    wait_status(page, status)
    assert status_text(page) == text
    assert page.query_selector("#steps li[data-kind=waiting]") is None


def test_a_stream_that_stops_without_a_terminal_event_is_an_error(watched: Watched) -> None:
    page = watched.page
    fake_stream(page, CONTEXT, REQUEST, {"type": "step", "step": "not an object"}, {"x": 1})
    start_run(page, "scripted")
    wait_status(page, "failed")
    assert page.text_content("#run-message") == "The stream ended before the run did."


def test_the_tools_view_toggles_a_tool_and_calls_one_directly(watched: Watched) -> None:
    page = watched.page
    page.click(".nav-link[data-view=tools]")
    row = page.locator("tr[data-kind=tool-row]", has_text="dormant")
    row.locator("button", has_text="Enable").click()
    row.locator(".badge", has_text="enabled").wait_for()
    row.locator("button", has_text="Default").click()
    row.locator(".badge", has_text="disabled").wait_for()
    lookup = page.locator("tr[data-kind=tool-row]", has_text="lookup")
    lookup.locator("button", has_text="Call…").click()
    page.check("#invoke-panel .raw-toggle")  # the raw JSON fallback
    page.fill("#invoke-panel textarea", '{"customer": "Ada"}')
    page.click("#invoke-panel button.primary")
    page.wait_for_selector("#invoke-panel .artifact-table")
    assert page.text_content("#invoke-panel pre.block") == "2 orders for Ada"


def test_a_streamed_step_leaves_the_open_tab_of_the_step_being_read(watched: Watched) -> None:
    page = watched.page
    start_run(page, "slow_rounds")
    page.wait_for_selector("#steps li[data-index='2'][data-kind=tool]")
    open_step(page, 2, "Artifacts")
    panel = page.query_selector("#detail .tab-panel > *")
    assert panel is not None
    page.wait_for_selector("#steps li[data-index='8']")  # two more rounds have streamed since
    same = "(el) => el.isConnected && document.querySelector('#detail .tab-panel > *') === el"
    assert page.evaluate(same, panel) is True
    assert page.text_content("#detail .tab[aria-selected=true]") == "Artifacts"
    assert page.get_attribute("#steps li[data-index='2']", "aria-selected") == "true"
    wait_status(page, "completed")
    assert page.evaluate(same, panel) is True
    page.click("#steps li[data-index='5']")  # another tool step: the same tab opens
    assert page.text_content("#detail .tab[aria-selected=true]") == "Artifacts"
    assert page.text_content("#detail .detail-title") == "Tool · lookup"


def test_following_the_newest_step_still_shows_each_new_one(watched: Watched) -> None:
    page = watched.page
    start_run(page, "slow_rounds")
    page.wait_for_selector("#steps li[data-index='4']")
    wait_status(page, "completed")
    last = page.eval_on_selector_all("#steps li[data-index]", "(rows) => rows.length") - 1
    assert page.get_attribute(f"#steps li[data-index='{last}']", "aria-selected") == "true"
    assert page.text_content("#detail .detail-title") == "Model"


@pytest.mark.parametrize(
    ("fragment", "problem"),
    [("#token=%E0%A4%A", "the URL's token is malformed"), ("#token=", "the URL's token is empty"),
     ("#token=%20", "the URL's token is empty")],
)  # fmt: skip
def test_a_malformed_token_fragment_still_starts_the_page_and_says_why(
    browser: Browser, base: str, fragment: str, problem: str
) -> None:
    page = browser.new_page()
    watched = Watched(page)
    page.goto(f"{base}/{fragment}")
    page.wait_for_selector("body[data-ready=true]")
    assert page.text_content("#auth-state") == (
        f"{problem}: open the URL the server printed, or paste the token below"
    )
    assert page.get_attribute("#auth-state", "class") == "auth-state error"
    assert page.is_visible("#token-form")
    assert page.url == f"{base}/"
    assert page.evaluate("sessionStorage.getItem('toolwire.token')") is None
    assert watched.errors == [] and watched.dialogs == []
    page.close()
