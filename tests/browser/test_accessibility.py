"""axe-core over every view of the inspector and every artifact type, and over the demo's run
(every step, every tab), in Chromium, at a desktop width and a phone's, in the light and the
dark colour scheme: no violation of serious or critical impact of the WCAG 2.0/2.1 A and AA
rules, anywhere."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from toolwire import Artifact, ToolRegistry, ToolResult, tool
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import (
    AUTH,
    TOKEN,
    book_trip,
    boom,
    call,
    dormant,
    echo,
    every_artifact,
    lookup,
    odd_artifacts,
    write_note,
)
from ..served import served
from .axe import audit, axe_context, count, report
from .harness import start_run, stored_inspector, wait_status
from .test_page import fake_stream

pytestmark = pytest.mark.browser

# A 1x1 white PNG.
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c49444154"
        "789c63f8ffff3f0005fe02fedccc59e70000000049454e44ae426082"
    )
).decode()


@tool(group="records", data_class="public")
def picture() -> ToolResult:
    """Return a picture and one the page will not draw."""
    return ToolResult.text(
        "two pictures",
        Artifact.image("a white pixel", "image/png", PIXEL),
        Artifact.image("a huge picture", "image/png", "A" * 40_000),
    )


LONG_ROUNDS = 110
SCRIPTS = {
    "pictures": [{"tool_calls": [call("picture")]}, {"content": "ok"}],
    "both": [{"tool_calls": [call("lookup", {"customer": "Ada"}), call("echo", {"text": "hi"})]},
             {"content": "done"}],
    "off": [{"tool_calls": [call("dormant")]}, {"content": "it is off"}],  # a refusal, audited
    # 3 steps a round and 2 for the answer: 332, past the 300 rows a list draws in whole
    "long": [{"tool_calls": [call("echo", {"text": "again"})]}] * LONG_ROUNDS
            + [{"content": "done"}],
}  # fmt: skip
# Steps no scripted run streams: a raw reply, a context cut, a decision, an unknown kind.
ODD_STEPS: list[dict[str, Any]] = [
    {"type": "context", "run_id": "r1", "provider": "scripted", "tools": []},
    {"type": "step", "step": {"kind": "request", "round": 1, "messages_sent": []}},
    {"type": "step", "step": {"kind": "llm", "round": 1, "content": "x", "raw": {"id": 1}}},
    {"type": "step", "step": {"kind": "context_truncated", "dropped_exchanges": 2,
                              "tokens_before": 900, "tokens_after": 400}},
    {"type": "step", "step": {"kind": "decision", "decision": "approve", "decided_by": "admin"}},
    {"type": "step", "step": {"kind": "mystery", "round": 1}},
    {"type": "end", "status": "completed", "final_content": "x"},
]  # fmt: skip
WIDTHS = {"desktop": 1280, "phone": 390}


def everything() -> ToolRegistry:
    return ToolRegistry(
        [lookup, every_artifact, odd_artifacts, echo, dormant, boom, write_note, book_trip, picture]
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A full-level store holding a completed run, a failed one and one waiting for approval."""
    with stored_inspector(
        tmp_path_factory, PrivacyLevel.FULL, registry=everything(), scripts=SCRIPTS,
        state_key=StateKey.generate(),
    ) as url:  # fmt: skip
        for provider in ("every", "exhausted", "approve", "off"):
            body = {"prompt": "go", "provider": provider, "max_rounds": 3}
            httpx.post(f"{url}/api/runs", json=body, headers=AUTH, timeout=30)
        yield url


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``toolwire demo`` on a fresh data home: (base URL, token)."""
    with served(["demo"], tmp_path_factory.mktemp("demo")) as (url, token):
        yield url, token


class Walk:
    """A page walked through views; each view's serious and critical violations are kept."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.found: dict[str, list[dict[str, Any]]] = {}
        self.views = 0

    def check(self, view: str) -> None:
        self.page.wait_for_timeout(50)  # a frame: what was just asked for is drawn
        self.views += 1
        violations = audit(self.page)
        if violations:
            self.found[view] = violations

    def step(self, index: int, tabs: list[str], view: str, where: str = "#view-run") -> None:
        """Select step ``index`` and check the view with each of ``tabs`` open."""
        self.page.click(f"{where} .steps [data-index='{index}']")
        for tab in tabs or [""]:
            if tab:
                self.page.click(f"{where} .detail .tab:text-is('{tab}')")
            self.check(f"{view} · {tab or 'detail'}")


def run_to(page: Page, provider: str, status: str) -> None:
    start_run(page, provider, max_rounds=3)
    wait_status(page, status)


def live_views(walk: Walk) -> None:
    page = walk.page
    walk.check("run: idle form")
    run_to(page, "scripted", "completed")
    walk.check("run: completed")
    walk.step(0, ["Messages sent", "Tools offered"], "run: request")
    walk.step(1, ["Content"], "run: model turn")
    walk.step(2, ["Arguments", "Result", "Artifacts"], "run: tool (table)")
    page.select_option("#view-run .step-filter select[name=kind]", "tool")
    page.fill("#view-run .step-find input[name=find]", "orders")
    walk.check("run: steps filtered, a find")
    page.click("#view-run .step-tools [data-testid=conversation]")
    walk.check("run: the conversation")
    page.fill("#view-run .step-filter input[name=tool]", "no such tool")
    walk.check("run: a filter that hides every step")
    page.fill("#view-run .step-filter input[name=tool]", "")
    page.select_option("#view-run .step-filter select[name=kind]", "")
    page.fill("#view-run .step-find input[name=find]", "")
    start_run(page, "long", max_rounds=LONG_ROUNDS + 1)
    wait_status(page, "completed", timeout=60_000)
    walk.check("run: a long run, its rows virtualized")
    run_to(page, "every", "completed")
    walk.step(2, ["Artifacts"], "run: every artifact type")
    walk.step(3, ["Artifacts"], "run: malformed artifacts")
    run_to(page, "pictures", "completed")
    walk.step(2, ["Artifacts"], "run: image artifacts")
    run_to(page, "both", "completed")
    walk.check("run: two calls at once")
    run_to(page, "streaming", "completed")
    walk.step(1, ["Thinking"], "run: thinking")
    run_to(page, "refusing", "refused")
    walk.check("run: refused")
    run_to(page, "exhausted", "failed")
    walk.check("run: failed")
    run_to(page, "no-such-provider", "failed")
    walk.check("run: unknown provider")
    run_to(page, "ask", "awaiting_input")
    walk.check("run: awaiting input")
    run_to(page, "approve", "awaiting_approval")
    walk.check("run: awaiting approval")
    page.click("#view-run .pending-panel button.approve")
    wait_status(page, "completed")
    walk.check("run: approved and resumed")
    fake_stream(page, *ODD_STEPS)
    run_to(page, "scripted", "completed")
    page.unroute("**/api/runs/stream")
    walk.step(1, ["Raw"], "run: raw reply")
    walk.step(2, [], "run: context truncated")
    walk.step(3, [], "run: decision")
    walk.step(4, [], "run: a step of an unknown kind")


def stored_views(walk: Walk) -> None:
    page = walk.page
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row").first.wait_for()
    walk.check("stored runs: list")
    page.select_option("#runs-has_error", "true")
    page.locator("tr.run-row").first.wait_for()
    walk.check("stored runs: filtered")
    page.select_option("#runs-has_error", "")
    page.locator("tr.run-row", has_text="every").first.click()
    page.wait_for_selector("#stored-run .steps [data-index='2']")
    walk.check("stored run: opened")
    walk.step(2, ["Artifacts"], "stored run: artifacts", "#stored-run")
    page.click("#stored-run [data-testid=export]")
    page.wait_for_selector("#stored-run .export-json")
    walk.check("stored run: export")
    page.click("#stored-run [data-testid=copy-link]")
    page.wait_for_selector("#stored-run .deep-link")
    walk.check("stored run: link")
    page.check("#runs-waiting")
    page.locator("tr.run-row").first.wait_for()
    page.locator("tr.run-row").first.click()
    page.wait_for_selector("#stored-run .pending-panel")
    walk.check("stored run: waiting for approval")
    page.uncheck("#runs-waiting")
    page.locator("tr.run-row[data-status=completed]").first.wait_for()
    boxes = page.locator("tr.run-row .compare-check")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("#runs-compare")
    page.wait_for_selector("#compare-out .compare-table")
    walk.check("compare: two runs")


def other_views(walk: Walk) -> None:
    page = walk.page
    page.click(".nav-link[data-view=compare]")
    walk.check("compare: form")
    page.click(".nav-link[data-view=tools]")
    page.wait_for_selector("tr[data-kind=tool-row]")
    walk.check("tools: list")
    row = page.locator("tr[data-kind=tool-row]", has=page.locator("code:text-is('lookup')"))
    row.locator("button", has_text="Call…").click()
    page.click("#invoke-panel button.primary")
    page.wait_for_selector("#invoke-panel .invoke-out .artifact")
    walk.check("tools: a direct call")
    page.click(".nav-link[data-view=audit]")
    page.wait_for_selector("[data-testid=audit-row]")
    walk.check("audit: decisions")
    if page.locator("#help").count():
        page.keyboard.press("?")
        page.wait_for_selector("#help[open]")
        walk.check("help: shortcuts")
        page.keyboard.press("Escape")


def demo_views(walk: Walk) -> None:
    """The demo's run: it waits for approval of its write; every step with each of its tabs."""
    page = walk.page
    page.click("#run-button")
    wait_status(page, "awaiting_approval", timeout=60_000)
    walk.check("demo: awaiting approval")
    for index in range(page.locator("#steps [data-index]").count()):
        page.click(f"#steps [data-index='{index}']")
        for tab in page.locator("#detail .tab").all_text_contents():
            page.click(f"#detail .tab:text-is('{tab}')")
            walk.check(f"demo: step {index} · {tab}")
    page.click("#view-run .pending-panel button.approve")
    wait_status(page, "completed", timeout=60_000)
    walk.check("demo: completed")
    page.click(".nav-link[data-view=tools]")
    page.wait_for_selector("tr[data-kind=tool-row]")
    walk.check("demo: tools")
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row").first.click()
    page.wait_for_selector("#stored-run .steps [data-index]")
    walk.check("demo: stored run")


WALKS: dict[str, Callable[[Walk], None]] = {
    "live": live_views,
    "stored": stored_views,
    "other": other_views,
    "demo": demo_views,
}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("walk", list(WALKS))
def test_no_view_has_a_serious_or_critical_violation(
    request: pytest.FixtureRequest, browser: Browser, walk: str, width: str, scheme: str
) -> None:
    base, token = (
        request.getfixturevalue("demo")
        if walk == "demo"
        else (request.getfixturevalue("base"), TOKEN)
    )
    context = axe_context(browser, WIDTHS[width], scheme)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        walked = Walk(page)
        if walk == "other":
            page.goto(f"{base}/")  # no token yet: the prompt for one
            page.wait_for_selector("body[data-ready=true]")
            walked.check("token prompt")
            page.close()
            page = walked.page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/#token={token}")
        page.wait_for_selector("body[data-ready=true]")
        WALKS[walk](walked)
        assert walked.views >= 5
        assert errors == []
        assert walked.found == {}, (
            f"{count(walked.found)} elements in violation over {len(walked.found)} of "
            f"{walked.views} views:\n{report(walked.found)}"
        )
    finally:
        context.close()
