"""The stored-runs browser in Chromium, over a real SQLite store at the redacted level."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from toolwire.policy.privacy import PrivacyLevel

from .harness import Watched, start_run, stored_inspector, wait_status

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.__pwned=1"> sk-proj-AbCdEfGhIjKlMnOpQrStUv'
EXTRA = {"hostile": [{"content": HOSTILE}]}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.REDACTED, scripts=EXTRA) as url:
        yield url


@pytest.fixture
def watched(watched: Watched) -> Iterator[Watched]:
    """The shared page (see conftest), and no script of the payloads ran in it."""
    yield watched
    assert watched.page.evaluate("window.__pwned") is None


def test_a_finished_run_is_listed_and_shows_its_stored_steps(watched: Watched) -> None:
    page = watched.page
    start_run(page, "scripted")
    wait_status(page, "completed")
    page.click(".nav-link[data-view=runs]")
    row = page.locator("tr.run-row").first
    row.wait_for()
    cells = row.locator("td").all_text_contents()
    _, run_id, status, started, *rest = cells  # first: the box to tick for comparing
    assert status == "completed"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", started)
    provider, model, rounds, tokens, cost, duration, steps, prompt = rest
    assert [provider, model, rounds, tokens, cost, steps, prompt] == [
        "scripted", "", "2", "37", "unknown", "5", "go"  # a script has no price
    ]  # fmt: skip
    assert re.fullmatch(r"\d+(\.\d)? ms|\d+\.\d\d s", duration), duration
    full_id = row.locator("td").nth(1).get_attribute("title") or ""
    assert len(run_id) == 12 and full_id.startswith(run_id) and len(full_id) == 36
    row.click()
    page.wait_for_selector("#stored-run ol.steps li[data-kind=tool]")
    kinds = page.locator("#stored-run ol.steps li").evaluate_all(
        "items => items.map(i => i.getAttribute('data-kind'))"
    )
    assert kinds == ["request", "llm", "tool", "request", "llm"]
    assert "privacy level redacted" in (page.text_content("#stored-run p.muted") or "")
    assert page.text_content("#stored-run pre.answer") == "Ada has 2 orders."


def test_a_stored_hostile_answer_is_redacted_and_shown_as_text(watched: Watched) -> None:
    page = watched.page
    start_run(page, "hostile")
    wait_status(page, "completed")
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row", has_text="hostile").first.click()
    answer = page.locator("#stored-run pre.answer")
    answer.wait_for()
    assert answer.text_content() == '<img src=x onerror="window.__pwned=1"> sk-proj-***'
    assert page.locator("#stored-run img").count() == 0


def test_a_hostile_prompt_preview_is_redacted_as_stored_and_shown_as_text(
    watched: Watched,
) -> None:
    page = watched.page
    start_run(page, "scripted", prompt=HOSTILE)
    wait_status(page, "completed")
    page.click(".nav-link[data-view=runs]")
    preview = page.locator("tr.run-row").first.locator("td.prompt-preview")
    preview.wait_for()
    assert preview.text_content() == '<img src=x onerror="window.__pwned=1"> sk-proj-***'
    assert page.locator("#runs-table img").count() == 0


def test_previous_and_next_open_the_runs_listed_beside_the_one_shown(watched: Watched) -> None:
    page = watched.page
    for _ in range(2):
        start_run(page, "scripted")
        wait_status(page, "completed")
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row").nth(1).wait_for()
    ids = page.locator("tr.run-row").evaluate_all("rows => rows.map(r => r.dataset.id)")
    page.locator("tr.run-row").first.click()
    page.wait_for_selector("#stored-run [data-testid=next-run]:enabled")  # the server answered
    assert page.is_disabled("#stored-run [data-testid=previous-run]")
    assert page.text_content("#stored-run [data-testid=run-place]") == f"1 of {len(ids)} listed"
    page.focus("#stored-run [data-testid=next-run]")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#stored-run h3:has-text('{ids[1]}')")
    assert page.evaluate("document.activeElement.tagName") == "H3"  # the run opened
    page.wait_for_selector(f"#stored-run [data-testid=run-place]:text-is('2 of {len(ids)} listed')")
    current = page.locator("tr.run-row .run-open[tabindex='0']").evaluate_all(
        "bs => bs.map(b => b.closest('tr').dataset.id)"
    )
    assert current == [ids[1]]  # the table's tab stop follows
    page.click("#stored-run [data-testid=previous-run]:enabled")
    page.wait_for_selector(f"#stored-run h3:has-text('{ids[0]}')")
    assert page.locator("#stored-run .steps li[data-index]").count() == 5
