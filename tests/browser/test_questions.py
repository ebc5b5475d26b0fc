"""A question an MCP server asks during a live run, in Chromium: the pending panel shows the
server's message as text (markup in it is never parsed), the form's fields with their
defaults, a refusal naming what does not fit, and the answer reaches the server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from toolwire.inspector import create_app
from toolwire.mcp.hub import HUB
from toolwire.mcp.remote import add_remote_tools

from ..inspector_kit import live_server, registry, settings
from ..mcp.kit import PYTHON, script, workspace
from .harness import Watched, start_run, wait_status

pytestmark = pytest.mark.browser
HOSTILE = '<img src=x onerror="window.__pwned=1"><b>Who</b> are you?'


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tools = registry()
    ws = workspace(tmp_path_factory.mktemp("ws"), f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
pass_env = ["MESSAGE"]
enabled = true
admin_only = false
data_class = "public"
""", environ={"MESSAGE": HOSTILE})  # fmt: skip
    assert add_remote_tools(tools, ws) == []
    call = {"name": "asking__sign_up", "arguments": {}}
    scripts = {"asking": [{"tool_calls": [call]}, {"content": "signed up"}]}
    try:
        with live_server(create_app(settings(registry=tools, scripts=scripts))) as url:
            yield url
    finally:
        HUB.close()


def tool_result(page: Page) -> dict[str, object]:
    page.click("#steps li[data-kind=tool]")
    page.click("#detail .tab:text-is('Result')")
    text = page.locator("#detail pre").first.inner_text()
    said: dict[str, object] = json.loads(text)
    return said


def test_the_panel_shows_the_servers_message_as_text_and_sends_the_answer(
    watched: Watched,
) -> None:
    page = watched.page
    start_run(page, "asking")
    panel = page.wait_for_selector(".question-panel", timeout=20_000)
    assert panel is not None
    assert page.inner_text(".question-panel .question-message") == HOSTILE
    assert page.locator(".question-panel img, .question-panel b").count() == 0
    labels = page.eval_on_selector_all(".question-panel [data-kind=input-field]",
                                       "fs => fs.map(f => f.dataset.type)")  # fmt: skip
    assert labels == ["string", "choice", "integer"]
    assert page.eval_on_selector(".question-panel select", "s => s.selectedOptions[0].text") == (
        "Free"
    )  # the default, shown by its title
    page.fill(".question-panel input[name=age]", "-1")
    page.click(".question-panel button[type=submit]")
    page.wait_for_selector(".question-panel .pending-error:not([hidden])")
    assert page.inner_text(".question-panel .pending-error") == (
        "the answer does not fit the form: name: required, and it has no default; age: is "
        "under the least allowed, 0")  # fmt: skip
    page.fill(".question-panel input[name=name]", "Ada")
    page.fill(".question-panel input[name=age]", "36")
    page.click(".question-panel button[type=submit]")
    wait_status(page, "completed", timeout=20_000)
    assert page.locator(".question-panel").count() == 0
    assert page.evaluate("window.__pwned === undefined")
    assert tool_result(page) == {"action": "accept",
                                 "content": {"name": "Ada", "plan": "free", "age": 36}}  # fmt: skip
