"""Hostile bytes in every place a run can carry them: none may run, each must read literally."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from toolwire import ToolRegistry
from toolwire.cli.show import preview_line
from toolwire.core.sealing import StateKey
from toolwire.inspector import InspectorSettings, create_app
from toolwire.loop.suspension import bound_preview
from toolwire.policy.options import DEFAULT_MAX_CALLS_PER_TURN

from ..inspector_kit import TOKEN, echo, factory, live_server
from .harness import Watched, open_inspector, open_step, start_run, wait_status
from .payloads import (
    PAYLOADS,
    PREVIEW_CHUNK,
    hostile_artifacts,
    hostile_input,
    hostile_write,
    shown,
)

pytestmark = pytest.mark.browser
SHOWN = ":is(#steps, #detail, #final, #summary, #run-message, #replay-banner, #pending)"
PANEL = "#view-run .pending-panel"
PARTS = range((len(PAYLOADS) + PREVIEW_CHUNK - 1) // PREVIEW_CHUNK)
FORBIDDEN = "script, img, svg, iframe, object, embed, style, link, meta, base, form, video, audio"


CALLS_PER_TURN = DEFAULT_MAX_CALLS_PER_TURN  # the calls are spread over turns within the cap


def hostile_script() -> list[dict[str, Any]]:
    p = PAYLOADS
    calls = [{"name": p[2], "arguments": {}}]  # an unknown tool whose name is hostile
    calls += [{"name": "echo", "arguments": {"text": x}} for x in p]
    calls += [{"name": "hostile_artifacts", "arguments": {}}]
    turns = [
        {"content": p[0], "thinking": p[1], "tool_calls": calls[at : at + CALLS_PER_TURN]}
        for at in range(0, len(calls), CALLS_PER_TURN)
    ]
    return [*turns, {"content": p[13], "thinking": p[14]}]


def tool_step(k: int) -> int:
    """The step-list index of the k-th call: each turn's request and answer come first."""
    turn, place = divmod(k, CALLS_PER_TURN)
    return 2 + turn * (CALLS_PER_TURN + 2) + place


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Watched]:
    settings = InspectorSettings(
        registry=ToolRegistry([echo, hostile_artifacts]),
        provider_factory=factory({"hostile": hostile_script()}),
        token=TOKEN,
    )
    with live_server(create_app(settings)) as base:
        watched = open_inspector(browser, base, TOKEN)
        start_run(watched.page, "hostile", prompt=PAYLOADS[9])
        wait_status(watched.page, "completed")
        yield watched


def text(page: Page, selector: str) -> str | None:
    return page.text_content(selector)


def all_texts(page: Page, selector: str) -> list[str]:
    result: list[str] = page.eval_on_selector_all(selector, "e => e.map(x => x.textContent)")
    return result


def assert_nothing_ran(watched: Watched) -> None:
    page = watched.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert watched.dialogs == [] and watched.errors == [] and watched.console == []
    # the input form of a pending panel is the page's own; any other form came from data
    found = f"{SHOWN} :is({FORBIDDEN}):not(.pending-panel form.input-form)"
    assert page.eval_on_selector_all(found, "e => e.length") == 0
    hrefs = page.eval_on_selector_all("main a", "e => e.map(a => a.href)")
    assert all(h.startswith(("http://", "https://")) for h in hrefs)


def test_there_are_at_least_fifty_payloads() -> None:
    assert len(set(PAYLOADS)) >= 50


def test_model_content_and_thinking_read_literally(page: Watched) -> None:
    p = page.page
    assert text(p, "#final pre") == shown(PAYLOADS[13])
    open_step(p, 1, "Content")
    assert text(p, "#detail .tab-panel pre") == shown(PAYLOADS[0])
    open_step(p, 1, "Thinking")
    assert text(p, "#detail .tab-panel pre") == shown(PAYLOADS[1])
    open_step(p, 0, "Messages sent")
    assert text(p, "#detail .message pre") == shown(PAYLOADS[9])
    assert_nothing_ran(page)


def test_a_hostile_tool_name_reads_literally_and_has_no_artifacts_tab(page: Watched) -> None:
    p = page.page
    open_step(p, tool_step(0), "Result")
    assert text(p, "#detail .detail-title") == f"Tool · {PAYLOADS[2]}"
    assert text(p, "#detail .tab-panel pre") == f'Error: unknown tool "{PAYLOADS[2]}"'
    assert all_texts(p, "#detail .tab") == ["Arguments", "Result"]
    assert_nothing_ran(page)


def test_every_payload_reads_literally_as_argument_result_and_artifact(page: Watched) -> None:
    p = page.page
    for i, payload in enumerate(PAYLOADS):
        index = tool_step(1 + i)
        open_step(p, index, "Arguments")
        argument = p.evaluate(
            "JSON.parse(document.querySelector('#detail .tab-panel pre').textContent)"
        )
        assert argument == {"text": shown(payload)}
        open_step(p, index, "Result")
        assert text(p, "#detail .tab-panel pre") == shown(payload)
        open_step(p, index, "Artifacts")
        assert text(p, "#detail .artifact-label") == shown(payload)
        assert text(p, "#detail .artifact-text") == shown(payload)
    assert_nothing_ran(page)


def test_every_artifact_field_reads_literally(page: Watched) -> None:
    p, s = page.page, [shown(x) for x in PAYLOADS]
    open_step(p, tool_step(1 + len(PAYLOADS)), "Artifacts")
    labels = all_texts(p, "#detail .artifact-label")
    assert labels[:6] == [s[1], s[2], s[3], s[4], s[5], s[0]]
    cells = p.eval_on_selector(
        "#detail table.artifact-table",
        "t => [...t.rows].map(r => [...r.cells].map(c => c.textContent))",
    )
    assert cells == [s[:6], *[s[i : i + 6] for i in range(0, len(s) - 6, 6)]]
    assert text(p, "#detail .artifact-text") == "\n".join(s)
    tree = all_texts(p, "#detail .artifact-tree .node")
    assert tree == [x for pair in itertools.pairwise(s) for x in pair]
    pairs = all_texts(p, "#detail .artifact-kv > *")
    assert pairs == [x for pair in zip(s, reversed(s), strict=True) for x in pair]
    assert all_texts(p, "#detail .line-text") == "\n".join(s).split("\n")
    assert text(p, "#detail .code-lang") == s[6]
    links = all_texts(p, "#detail .artifact-link")
    assert links == list(reversed(s))
    assert p.eval_on_selector_all("#detail .artifact-link a", "e => e.length") == 0
    assert_nothing_ran(page)


def pending_scripts() -> dict[str, list[dict[str, Any]]]:
    writes = [{"name": "hostile_write", "arguments": {"part": n}} for n in PARTS]
    return {
        "writes": [{"tool_calls": [{"name": PAYLOADS[2], "arguments": {}}, *writes]},
                   {"content": "done"}],
        "ask": [{"tool_calls": [{"name": "hostile_input", "arguments": {}}]}, {"content": "ok"}],
    }  # fmt: skip


@pytest.fixture(scope="module")
def pending_base() -> Iterator[str]:
    settings = InspectorSettings(
        registry=ToolRegistry([hostile_write, hostile_input]),
        provider_factory=factory(pending_scripts()),
        token=TOKEN,
        state_key=StateKey.generate(),
    )
    with live_server(create_app(settings)) as base:
        yield base


def as_seen(lines: list[str]) -> list[str]:
    """Payloads as their preview lines read: bounded as the pause bounds them (a newline starts
    a line, controls and invisible characters get stand-ins), whitespace drawn as the command
    line draws it: the page must draw it alike."""
    return [preview_line(line)[0].plain for line in bound_preview([shown(x) for x in lines])]


# A preview line as it is seen: glyphs, without the words kept for assistive technology.
SEEN = """e => e.map(line => {
  const copy = line.cloneNode(true);
  copy.querySelectorAll(".visually-hidden").forEach(x => x.remove());
  return copy.textContent;
})"""


def test_preview_lines_tool_names_and_reasons_read_literally(
    browser: Browser, pending_base: str
) -> None:
    watched = open_inspector(browser, pending_base, TOKEN)
    p = watched.page
    start_run(p, "writes")
    wait_status(p, "awaiting_approval")
    names = all_texts(p, f"{PANEL} .call-name")
    assert names == [shown(PAYLOADS[2]), *["hostile_write"] * len(PARTS)]
    for n in PARTS:
        selector = f"{PANEL} .pending-call[data-index='{n + 1}'] .preview-line"
        lines = p.eval_on_selector_all(selector, SEEN)
        assert lines == as_seen(PAYLOADS[n * PREVIEW_CHUNK : (n + 1) * PREVIEW_CHUNK])
    assert_nothing_ran(watched)
    p.fill(f"{PANEL} .decision-reason", PAYLOADS[0])
    p.click(f"{PANEL} button.deny")
    wait_status(p, "completed")
    open_step(p, 2)
    decision = p.evaluate("JSON.parse(document.querySelector('#detail .json-tree').textContent)")
    assert decision["decision_reason"] == PAYLOADS[0]
    assert_nothing_ran(watched)
    p.close()


def test_input_schema_titles_and_descriptions_read_literally(
    browser: Browser, pending_base: str
) -> None:
    watched = open_inspector(browser, pending_base, TOKEN)
    p = watched.page
    start_run(p, "ask")
    wait_status(p, "awaiting_input")
    labels = all_texts(p, f"{PANEL} [data-kind=input-field]")
    hints = all_texts(p, f"{PANEL} [data-kind=input-field] .hint")
    expected = [shown(x) for x in PAYLOADS]
    assert hints == list(reversed(expected))
    assert labels == [t + d for t, d in zip(expected, reversed(expected), strict=True)]
    assert_nothing_ran(watched)
    p.close()
