"""A run that drops old exchanges to fit its context window, in Chromium: the window set in
the run form, each ``context_truncated`` step in the live list and in the stored run, its
numbers in the detail pane as text."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from toolwire import ChatMessage, CompletionResponse, ScriptedProvider, ToolCall
from toolwire.core.errors import ConfigError
from toolwire.inspector import InspectorSettings, create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Provider, Stop
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, live_server, registry
from .harness import start_run, wait_status, watching

pytestmark = pytest.mark.browser
ECHOES = 8


def echoing(messages: Sequence[ChatMessage]) -> CompletionResponse:
    """Echoes a long text ``ECHOES`` times (the latest call, always in view, counts them)."""
    turns = [m for m in messages if m.role == "assistant"]
    done = int(turns[-1].tool_calls[0].id.split("_")[1]) if turns else 0
    if done >= ECHOES:
        return CompletionResponse(content=f"echoed {done} times")
    call = ToolCall(f"call_{done + 1}", "echo", '{"text": "' + "x" * 600 + '"}')
    return CompletionResponse(tool_calls=(call,), stop=Stop.TOOL_CALLS)


def provider_factory(name: str, model: str | None) -> Provider:
    if name != "echoing":
        raise ConfigError(f"unknown provider {name!r}")
    return ScriptedProvider(echoing, name=name)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path: Path = tmp_path_factory.mktemp("context") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.METADATA)
    settings = InspectorSettings(registry=registry(), provider_factory=provider_factory,
                                 token=TOKEN, store=store, privacy_level="metadata")  # fmt: skip
    with live_server(create_app(settings)) as url:
        yield url
    store.close()


TITLE = re.compile(r"✂ Context: (\d+) old exchanges? dropped")


def facts(page: Page) -> dict[str, str]:
    rows = page.locator("#detail [data-testid=context-facts] dd")
    return {dd.get_attribute("data-kind") or "": dd.text_content() or "" for dd in rows.all()}


def check_step(page: Page, where: str) -> None:
    rows = page.locator(f"{where} li[data-kind=context_truncated]")
    assert rows.count() > 0
    title = rows.first.locator(".step-title").text_content() or ""
    found = TITLE.fullmatch(title)
    assert found, title
    rows.first.click()
    shown = facts(page)
    assert (shown["context_window"], shown["reserved_tokens"]) == ("3000", "20")
    assert shown["dropped_exchanges"] == found[1]
    assert int(shown["dropped_messages"]) == 2 * int(found[1])
    assert int(shown["tokens_before"]) > 2980 >= int(shown["tokens_after"])
    assert page.locator("#detail .badge.muted").count() == 0  # nothing was withheld


def test_the_form_sets_the_window_and_each_drop_shows_live_and_stored(
    browser: Browser, base: str
) -> None:
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        page.fill("#context-window", "3000")
        page.fill("#max-tokens", "20")
        start_run(page, "echoing", max_rounds=ECHOES + 2)
        wait_status(page, "completed")
        assert page.text_content("#final pre.answer") == f"echoed {ECHOES} times"
        kinds = page.locator("#steps li").evaluate_all(
            "items => items.map(i => i.getAttribute('data-kind'))"
        )
        for index, kind in enumerate(kinds):  # each drop comes just before its request
            if kind == "context_truncated":
                assert kinds[index + 1] == "request"
        check_step(page, "#steps")
        page.click(".nav-link[data-view=runs]")
        page.locator("tr.run-row").first.click()
        page.wait_for_selector("#stored-run ol.steps li[data-kind=context_truncated]")
        check_step(page, "#stored-run ol.steps")
