"""The Audit view in Chromium, over a real SQLite store kept at ``full``: the governance log of
a scripted run, its filters (the gate's by keyboard), each row's count, a link to the run, no
serious or critical axe violation, and hostile names that must read literally."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page

from toolwire import RunOptions, ScriptedProvider
from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.loop.governance import Gate
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore

from ..governed import EXPECTED_VERBATIM, governed_run, registry
from ..inspector_kit import TOKEN, live_server, settings
from ..store.test_gate_counts import ADMIN_ONLY, WORKSPACE_ONLY, plain_run
from .axe import audit, axe_context, report
from .harness import Watched, watching
from .payloads import PAYLOADS, shown

NAMES = list(dict.fromkeys(shown(p) for p in PAYLOADS))  # a model's names are valid text

pytestmark = pytest.mark.browser
FORBIDDEN = "script, img, svg, iframe, object, embed, style, link, meta, base, video, audio"
ROWS = "#audit-table tr.audit-row"
PER_TURN = 30  # within the per-turn limit, so every hostile name reaches the seam


def hostile_run(store: RunStore) -> str:
    """A run whose model calls a tool by every payload, asked for tools named by payloads,
    and was denied by a person whose name is a payload: its id."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": p, "arguments": {}} for p in NAMES[at : at + PER_TURN]]}
        for at in range(0, len(NAMES), PER_TURN)
    ]
    turns += [{"tool_calls": [{"name": "delete_row", "arguments": {"n": 1}}]}, {"content": "ok"}]
    provider = ScriptedProvider.from_turns(turns)
    runtime = Runtime(registry(), recorder=store, state_key=StateKey.generate())
    options = RunOptions(allowed_tools=["delete_row", *NAMES[:5]], max_rounds=10)
    waiting = runtime.run_sync(RunRequest.of("go", provider=provider, options=options))
    assert waiting.pause is not None
    decision = OperatorDecision(action="deny", digest=waiting.pause.digest, actor=NAMES[2])
    runtime.resume_sync(waiting.run_id, decision, provider=provider)
    return waiting.run_id


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RunStore, str, str]]:
    path: Path = tmp_path_factory.mktemp("audit") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.FULL)
    _, governed = governed_run(store)
    hostile = hostile_run(store)
    plain_run(store)  # a non-admin run without a workspace: refused many tools for two reasons
    app = create_app(settings(store=store, privacy_level="full"))
    with live_server(app) as url:
        yield url, store, governed.run_id, hostile
    store.close()


@pytest.fixture
def watched(browser: Browser, served: tuple[str, RunStore, str, str]) -> Iterator[Watched]:
    with watching(browser, served[0], TOKEN) as watched:
        yield watched
        assert watched.page.evaluate("typeof window.__pwned") == "undefined"


def show_audit(page: Page, **filters: str) -> list[list[str]]:
    """The log's rows once the page shows them for ``filters`` (the others as they were)."""
    page.click(".nav-link[data-view=audit]")
    for name, value in filters.items():
        if name == "gate":
            page.select_option("#audit-gate", value)
        else:
            page.fill(f"#audit-{name}", value)
    page.click("#audit-refresh")
    return shown_rows(page)


def shown_rows(page: Page) -> list[list[str]]:
    """The log's rows once the page shows them for its filters as they are."""
    names = ("since", "gate", "tool", "reason")
    values = {n: page.input_value(f"#audit-{n}").strip() for n in names}
    query = urlencode({"limit": "200"} | {n: v for n, v in values.items() if v})
    page.wait_for_selector(f"#audit-table[data-query='{query}']", state="attached")
    cells: list[list[str]] = page.eval_on_selector_all(
        ROWS, "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    return cells


def test_the_log_of_a_scripted_run_lists_each_decision(
    watched: Watched, served: tuple[str, RunStore, str, str]
) -> None:
    governed = served[2]
    rows = show_audit(watched.page, since="1h")
    mine = [r for r in rows if r[1] == governed[:8]]
    shown = [(g, r, a, None if t == "—" else t) for _, _, _, g, r, _, t, a, _ in reversed(mine)]
    assert shown == EXPECTED_VERBATIM  # the store keeps everything (full)
    assert {r[5] for r in mine} == {"1"}
    budget = mine[0]
    assert (budget[2], budget[8]) == ("4", "after 4 rounds, 110 tokens")


def test_filters_narrow_the_log_and_a_bad_time_is_named(
    watched: Watched, served: tuple[str, RunStore, str, str]
) -> None:
    page = watched.page
    rows = show_audit(page, tool="delete_row", reason="denied")
    assert [(r[1], r[3], r[7]) for r in rows][-1] == (served[2][:8], "call", "ann")
    assert {r[6] for r in rows} == {"delete_row"}
    assert show_audit(page, tool="", reason="", since="2999-01-01") == []
    assert page.text_content("#audit-table p.muted") == "No gate decision matches."
    assert show_audit(page, since="soon") == []
    assert "since: 'soon' is neither a duration" in (page.text_content("#audit-note") or "")


def test_a_run_link_opens_the_stored_run(
    watched: Watched, served: tuple[str, RunStore, str, str]
) -> None:
    page = watched.page
    governed = served[2]
    show_audit(page, reason="budget_exhausted", since="")
    page.locator(f"{ROWS} a.run-link", has_text=governed[:8]).first.click()
    page.wait_for_selector("#view-runs:not([hidden]) #stored-run h3")
    assert governed in (page.text_content("#stored-run h3") or "")


def test_hostile_names_in_the_log_read_literally_and_run_nothing(
    watched: Watched, served: tuple[str, RunStore, str, str]
) -> None:
    page = watched.page
    _, store, _, hostile = served
    stored = store.list_gate_decisions(run_id=hostile, limit=1000)
    rows = [r for r in show_audit(page, tool="", reason="", since="") if r[1] == hostile[:8]]
    assert len(rows) == len(stored) >= len(NAMES) + 1  # the 5 not offered: one row
    assert [(r[6], r[7]) for r in rows] == [(d.tool or "—", d.actor) for d in stored]
    tools = {r[6] for r in rows}
    assert {p for p in NAMES if "\x00" not in p and len(p) < 255} <= tools
    assert NAMES[2] in {r[7] for r in rows}  # the person who denied
    (offer,) = [r for r in rows if r[3] == "offer"]
    (kept,) = [d for d in stored if d.gate == "offer"]  # its detail names the 5, read literally
    assert (offer[4], offer[5], offer[8]) == ("not_registered", "5", kept.detail)
    assert kept.count == 5 and kept.detail and NAMES[1] in kept.detail
    assert page.eval_on_selector_all(f"#view-audit :is({FORBIDDEN})", "e => e.length") == 0
    hrefs = page.eval_on_selector_all("#view-audit a", "e => e.map(a => a.href)")
    assert hrefs and all(h.startswith("http://127.0.0.1:") and "#run=" in h for h in hrefs)
    assert watched.dialogs == [] and watched.errors == [] and watched.console == []


def test_the_gate_filter_is_a_labelled_control_that_works_by_keyboard(
    watched: Watched, served: tuple[str, RunStore, str, str]
) -> None:
    page = watched.page
    show_audit(page, since="", tool="", reason="", gate="")
    gate = page.get_by_label("Gate")
    assert gate.evaluate("e => e.id") == "audit-gate"
    options = gate.locator("option").evaluate_all("os => os.map(o => o.value)")
    assert options == ["", *Gate]  # any, then every gate the log knows
    page.focus("#audit-since")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "audit-gate"
    page.keyboard.press("ArrowDown")  # a gate chosen by keyboard shows its decisions at once
    rows = shown_rows(page)
    assert page.input_value("#audit-gate") == "offer"
    assert rows and {r[3] for r in rows} == {"offer"}
    counts = {r[4]: r[5] for r in rows if r[4] in ("no_workspace",)}
    assert counts == {"no_workspace": str(len(WORKSPACE_ONLY))}
    admin = [r for r in rows if r[4] == "requires_admin" and r[5] != "1"]
    assert [(r[5], r[6], r[8]) for r in admin] == [
        (str(len(ADMIN_ONLY)), "—", ", ".join(ADMIN_ONLY))
    ]
    page.keyboard.press("ArrowDown")
    assert {r[3] for r in shown_rows(page)} == {"call"}
    assert show_audit(page, gate="rounds") == []
    assert page.text_content("#audit-table p.muted") == "No gate decision matches."


def test_a_run_without_a_workspace_says_once_in_its_steps_what_it_was_not_offered(
    watched: Watched, served: tuple[str, RunStore, str, str]
) -> None:
    page = watched.page
    rows = show_audit(page, since="", tool="", reason="no_workspace", gate="offer")
    page.locator(f"{ROWS} a.run-link", has_text=rows[0][1]).first.click()
    page.wait_for_selector("#view-runs:not([hidden]) #stored-run h3")
    notes = page.locator("#view-runs [data-testid=no-workspace]")
    assert notes.all_text_contents() == [f"{len(WORKSPACE_ONLY)} tools not offered: no workspace"]
    note = page.locator("[data-testid=no-workspace]")
    assert page.locator("#view-runs li.step", has=note).get_attribute("data-kind") == "request"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_audit_view_with_a_gate_chosen_has_no_serious_axe_violation(
    browser: Browser, served: tuple[str, RunStore, str, str], scheme: str
) -> None:
    context = axe_context(browser, 1280, scheme)
    try:
        page = context.new_page()
        page.goto(f"{served[0]}/#token={TOKEN}")
        page.wait_for_selector("body[data-ready=true]")
        rows = show_audit(page, since="", tool="", reason="", gate="offer")
        assert rows
        assert report({"audit": audit(page)}) == ""
    finally:
        context.close()
