"""Values a run held for the model, in Chromium: the step that made one shows its handle, its
label and the call it went to; its value, hostile HTML, reads as literal text and runs nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import Browser

from toolwire import ChatMessage, CompletionResponse, ScriptedProvider, ToolCall, ToolRegistry
from toolwire import tool as make_tool
from toolwire.core.lifecycle import RunStatus
from toolwire.inspector import InspectorSettings, create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.quarantine import HANDLE
from toolwire.providers.base import Provider
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, live_server, settings
from .harness import Watched, open_inspector, open_step, start_run, wait_status, watching
from .payloads import PAYLOADS

pytestmark = pytest.mark.browser
VALUE = "\n".join(PAYLOADS[:26])
FORBIDDEN = "script, img, svg, iframe, object, embed, style, link, meta, base, form, video, audio"


@make_tool(data_class="content", integrity="untrusted", quarantine=True)
def read_page() -> str:
    """Read a page someone else wrote."""
    return VALUE


@make_tool(data_class="content", integrity="trusted", blocking=False)
def measure(text: str) -> str:
    """Measure a text."""
    return f"{len(text)} characters"


def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
    done = sum(1 for m in messages if m.role == "assistant")
    seen = [h for m in messages if m.role == "tool" for h in HANDLE.findall(m.content)]
    if done == 0:
        return CompletionResponse(tool_calls=(ToolCall.of("c0", "read_page", {}),))
    if done == 1:
        return CompletionResponse(tool_calls=(ToolCall.of("c1", "measure", {"text": seen[0]}),))
    return CompletionResponse(content="done")


def provider_factory(name: str, model: str | None) -> Provider:
    return ScriptedProvider(respond, name=name)


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Watched]:
    settings = InspectorSettings(registry=ToolRegistry([read_page, measure]),
                                 provider_factory=provider_factory, token=TOKEN)  # fmt: skip
    with live_server(create_app(settings)) as base:
        watched = open_inspector(browser, base, TOKEN)
        start_run(watched.page, "holding")
        wait_status(watched.page, "completed")
        yield watched


def test_the_step_that_made_a_value_shows_its_label_where_it_went_and_its_value_as_text(
    page: Watched,
) -> None:
    p = page.page
    open_step(p, 2, "Variables")  # request, answer, then the call that made it
    box = p.wait_for_selector("#detail [data-testid=variables]")
    assert box is not None
    handle = p.text_content("#detail .variable-handle")
    assert handle is not None and HANDLE.fullmatch(handle)
    assert p.text_content("#detail .variable .integrity") == "untrusted"
    assert p.text_content("#detail .variable-flow") == "Went to: measure (round 2)"
    assert p.text_content("#detail .variable-value") == VALUE  # literally, every byte
    assert p.query_selector_all(f"#detail :is({FORBIDDEN})") == []
    assert p.evaluate("() => window.__pwned") is None
    assert p.eval_on_selector("#detail .variable-value", "e => e.children.length") == 0


def test_the_call_that_received_it_names_the_value_and_where_it_came_from(
    page: Watched,
) -> None:
    p = page.page
    open_step(p, 5, "Variables")  # the second round's request, answer, then its call
    p.wait_for_selector("#detail [data-testid=variables]")
    shown = p.text_content("#detail .variable")
    assert shown is not None and shown.endswith(" from read_page (round 1)")
    assert p.query_selector_all(f"#detail :is({FORBIDDEN})") == []
    assert p.evaluate("() => window.__pwned") is None
    assert page.dialogs == [] and page.errors == []


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live inspector over a store keeping runs at ``metadata``, holding one such run."""
    path = tmp_path_factory.mktemp("held") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.METADATA)
    try:
        runtime = Runtime(ToolRegistry([read_page, measure]), recorder=store)
        request = RunRequest.of("go", provider=ScriptedProvider(respond))
        with ThreadPoolExecutor(1) as aside:  # this thread's event loop drives the browser
            done = aside.submit(runtime.run_sync, request).result()
        assert done.status is RunStatus.COMPLETED
        with live_server(create_app(settings(store=store))) as url:
            yield url, done.run_id
    finally:
        store.close()


def test_a_stored_run_shows_the_variable_and_its_flow_but_not_a_value_its_level_withholds(
    browser: Browser, stored: tuple[str, str]
) -> None:
    base, run_id = stored
    with watching(browser, base, TOKEN) as watched:
        p = watched.page
        p.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
        p.wait_for_selector("#stored-run ol.steps li[data-kind=tool]")
        p.click("#stored-run ol.steps li[data-index='2']")
        p.click("#stored-run .detail .tab:text-is('Variables')")
        p.wait_for_selector("#stored-run .detail [data-testid=variables]")
        handle = p.text_content("#stored-run .detail .variable-handle")
        assert handle is not None and HANDLE.fullmatch(handle)
        flow = p.text_content("#stored-run .detail .variable-flow")
        assert flow == "Went to: measure (round 2)"
        withheld = p.text_content("#stored-run .detail .variable .not-stored")
        assert withheld == "The value is not stored at this privacy level."
        assert "onerror" not in (p.text_content("#stored-run .detail") or "")
