"""The page while a model streams: thinking and answer fill the waiting row as they arrive, as
text; the llm step replaces them. Stop reasons, refusals, run options and cost, in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from toolwire.inspector import RunDefaults, create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Reasoning

from ..inspector_kit import (
    HOSTILE_REFUSAL,
    STREAMED_ANSWER,
    TOKEN,
    StreamingModel,
    live_server,
    settings,
)
from .harness import Watched, open_step, start_run, stored_inspector, wait_status, watching

pytestmark = pytest.mark.browser
FORBIDDEN = "script, img, b, i, svg, iframe"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.FULL) as url:
        yield url


@pytest.fixture
def watched(watched: Watched) -> Iterator[Watched]:
    """The shared page (see conftest), and no script of the payloads ran in it."""
    yield watched
    assert watched.page.evaluate("window.__pwned") is None


def metric(page: Page, name: str) -> str:
    return page.text_content(f"#metric-{name} .metric-value") or ""


# Every change to the step list, as (thinking shown, answer shown, llm steps): what a person saw,
# in order, whatever the test's own polling catches.
RECORD = """() => {
  window.__seen = [];
  const list = document.querySelector('#steps');
  const look = () => window.__seen.push([
    list.querySelector('[data-testid=live-thinking]')?.textContent ?? null,
    list.querySelector('[data-testid=live-answer]')?.textContent ?? null,
    list.querySelectorAll('li[data-kind=llm]').length]);
  new MutationObserver(look).observe(list, {childList: true, subtree: true, characterData: true});
}"""


def test_the_first_piece_shows_before_the_step_and_the_step_replaces_it(watched: Watched) -> None:
    page = watched.page
    page.evaluate(RECORD)
    start_run(page, "streaming")
    page.wait_for_selector("#steps [data-testid=live-thinking]", timeout=5_000)
    assert page.query_selector("#steps li[data-kind=llm]") is None
    assert page.get_attribute("#run-status", "data-status") == "running"
    wait_status(page, "completed")
    seen = [tuple(x) for x in page.evaluate("window.__seen")]
    streamed = [x for x in dict.fromkeys(seen) if x != (None, None, 0)]
    # Each piece on its own, thinking apart from the answer, before the step; then the step.
    assert streamed == [
        ("Weighing ", None, 0),
        ("Weighing <b>the</b> orders.", None, 0),
        ("Weighing <b>the</b> orders.", "Ada has ", 0),
        ("Weighing <b>the</b> orders.", STREAMED_ANSWER, 0),
        (None, None, 1),
    ]
    assert page.query_selector("#steps li.waiting") is None
    assert page.query_selector("#steps [data-testid=live-answer]") is None
    kinds = page.eval_on_selector_all("#steps li", "l => l.map(i => i.dataset.kind)")
    assert kinds == ["request", "llm"]
    assert page.text_content("#final pre.answer") == STREAMED_ANSWER
    cost = metric(page, "cost")
    assert re.fullmatch(r"\$0\.0\d+", cost) and cost != "$0.0000", cost
    open_step(page, 1, "Content")
    facts = page.eval_on_selector_all(
        "#detail [data-testid=model-facts] dd", "l => l.map(d => [d.dataset.kind, d.textContent])"
    )
    assert facts == [
        ["stop", "end"], ["finish_reason", "stop"], ["prompt_tokens", "1200"],
        ["completion_tokens", "800"], ["total_tokens", "2000"],
        ["response_model", "gpt-4o-mini"], ["cost", cost],
    ]  # fmt: skip


def test_the_stored_run_shows_its_cost(watched: Watched) -> None:
    page = watched.page
    start_run(page, "streaming")
    wait_status(page, "completed")
    live_cost = metric(page, "cost")
    page.click(".nav-link[data-view=runs]")
    row = page.locator("tr.run-row").first
    row.wait_for()
    assert row.locator("td.cost").text_content() == live_cost
    row.click()
    page.wait_for_selector("#stored-run #metric-cost")
    assert page.text_content("#stored-run #metric-cost .metric-value") == live_cost
    assert page.text_content("#stored-run #metric-reason .metric-value") == "completed"


@pytest.mark.parametrize(
    ("provider", "status", "heading"),
    [("refusing", "refused", "Refused"), ("blocked", "blocked", "Blocked")],
)
def test_a_hostile_refusal_reads_literally_with_its_reason(
    watched: Watched, provider: str, status: str, heading: str
) -> None:
    page = watched.page
    start_run(page, provider)
    wait_status(page, status)
    assert page.text_content("#run-status .metric-value") == heading
    assert metric(page, "reason") == status
    assert page.text_content("#final h3") == heading
    assert page.text_content("#final [data-testid=refusal]") == HOSTILE_REFUSAL
    open_step(page, 1, "Content")
    assert page.text_content("#detail pre.refusal") == HOSTILE_REFUSAL
    stop = page.text_content("#detail [data-testid=model-facts] dd[data-kind=stop]")
    assert stop == ("refusal" if status == "refused" else "blocked")
    assert page.query_selector_all(f":is(#final, #detail, #steps) :is({FORBIDDEN})") == []


def test_the_form_sends_reasoning_budgets_and_no_stream(watched: Watched) -> None:
    page = watched.page
    StreamingModel.requests.clear()
    page.select_option("#reasoning", "high")
    page.fill("#max-tokens", "700")
    page.fill("#max-total-tokens", "90000")
    page.fill("#max-cost", "1.25")
    page.uncheck("#stream")
    start_run(page, "streaming")
    wait_status(page, "completed")
    (request,) = StreamingModel.requests
    assert (request.reasoning, request.max_tokens, request.stream) == (
        Reasoning(effort="high"), 700, False
    )  # fmt: skip
    assert page.query_selector("#steps [data-testid=live-answer]") is None
    page.fill("#reasoning-budget", "3000")  # a budget wins over the level
    page.check("#stream")
    StreamingModel.requests.clear()
    start_run(page, "streaming")
    wait_status(page, "completed")
    assert StreamingModel.requests[0].reasoning == Reasoning(budget_tokens=3000)


def test_a_spent_budget_shows_as_cut_with_its_reason(watched: Watched) -> None:
    page = watched.page
    page.fill("#max-total-tokens", "50")
    start_run(page, "spendy")
    wait_status(page, "cut")
    assert page.text_content("#run-status .metric-value") == "Truncated"
    assert metric(page, "reason") == "budget_exhausted"


def test_a_bad_budget_is_refused_with_the_fields_name(watched: Watched) -> None:
    page = watched.page
    page.fill("#max-cost", "0")
    start_run(page, "streaming")
    wait_status(page, "failed")
    assert "body.max_cost: Input should be greater than 0" in (
        page.text_content("#run-message") or ""
    )


def test_the_servers_run_defaults_fill_the_form(browser: Browser) -> None:
    defaults = RunDefaults(prompt="p", reasoning=4096, stream=False, max_tokens=300,
                           max_total_tokens=9000, max_cost=0.5)  # fmt: skip
    with (
        live_server(create_app(settings(defaults=defaults))) as url,
        watching(browser, url, TOKEN) as watched,
    ):
        page = watched.page
        values = page.evaluate(
            "() => ['reasoning', 'reasoning-budget', 'max-tokens', 'max-total-tokens', 'max-cost']"
            ".map(id => document.getElementById(id).value)"
        )
        assert values == ["", "4096", "300", "9000", "0.5"]
        assert page.is_checked("#stream") is False
