"""Values a run held for the model, in Chromium: the step that made one shows its handle, its
label and the call it went to; its value, hostile HTML, reads as literal text and runs nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from playwright.sync_api import Browser

from toolwire import ChatMessage, CompletionResponse, ScriptedProvider, ToolCall, ToolRegistry
from toolwire import tool as make_tool
from toolwire.inspector import InspectorSettings, create_app
from toolwire.policy.quarantine import HANDLE
from toolwire.providers.base import Provider

from ..inspector_kit import TOKEN, live_server
from .harness import Watched, open_inspector, open_step, start_run, wait_status
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
