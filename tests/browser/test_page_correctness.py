"""What the Run view says, in Chromium over the demo: a re-run of a scripted run starts (its
provider is the served one, not the script's name); the wall time of a run resumed after a
wait covers the wait; no cost is shown before a run or for a run no model answered; a token
URL pasted into the address bar of an open page is adopted at once; the views stay hidden
behind the token prompt until a token is accepted."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from ..inspector_kit import TOKEN
from .demo_server import demo_inspector, run_demo
from .harness import Watched, wait_status, watching

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with demo_inspector(tmp_path_factory) as url:
        yield url


def seconds(text: str) -> float:
    match = re.fullmatch(r"([\d.]+) (ms|s)", text)
    assert match is not None, text
    return float(match[1]) / (1000 if match[2] == "ms" else 1)


def test_a_scripted_run_is_rerun_with_the_served_provider(watched: Watched) -> None:
    page = watched.page
    run_demo(page)
    page.click(".nav-link[data-view=runs]")
    row = page.locator("tr.run-row").first
    assert row.locator("td").nth(4).text_content() == "demo replay"  # the script's name
    row.click()
    page.click("#stored-run [data-testid=rerun]")
    page.wait_for_selector("#rerun-banner:not([hidden])")
    assert page.input_value("#provider") == "scripted"
    assert "unknown provider" not in (page.text_content("#rerun-banner") or "")
    page.click("#run-button")
    wait_status(page, "awaiting_approval", timeout=20_000)
    assert page.is_hidden("#run-message")


def test_a_resumed_runs_wall_time_covers_its_wait(watched: Watched) -> None:
    page = watched.page
    run_demo(page, wait_ms=1500)
    wall = seconds(page.text_content("#metric-wall .metric-value") or "")
    span = re.search(r"([\d.]+ m?s) from first to last step", page.text_content("#timeline") or "")
    assert span is not None
    assert wall >= seconds(span[1]) >= 1.5  # it was the resumed segment's few ms


def test_no_cost_is_shown_before_a_run_or_for_a_run_no_model_answered(watched: Watched) -> None:
    page = watched.page
    assert page.locator("#summary .metric").count() == 1  # the status only: nothing ran
    assert page.locator("#metric-cost").count() == 0
    page.fill("#provider", "no-such-provider")
    page.click("#run-button")
    wait_status(page, "failed")
    assert page.text_content("#metric-cost .metric-value") == "no cost"  # was "$0.0000"


def open_without_token(browser: Browser, base: str) -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/")
    page.wait_for_selector("body[data-ready=true]")
    return page


def test_the_views_stay_hidden_until_a_token_is_accepted(browser: Browser, base: str) -> None:
    page = open_without_token(browser, base)
    assert page.is_visible("#token-form")
    assert page.is_hidden("#run-form") and page.is_hidden("#run-button")
    page.fill("#token-input", "two words")
    page.click("#token-form button[type=submit]")
    assert page.is_hidden("#run-form")  # not a token: still hidden
    page.fill("#token-input", f"http://127.0.0.1:1/#token={TOKEN}")
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("#run-form", state="visible")
    assert page.is_hidden("#token-form")
    assert page.text_content("#auth-state") == "admin"
    page.close()


def test_a_token_url_pasted_into_the_address_bar_is_adopted_at_once(
    browser: Browser, base: str
) -> None:
    page = open_without_token(browser, base)
    page.goto(f"{base}/#token={TOKEN}")  # the same page: only the fragment changes, no reload
    page.wait_for_selector("#run-form", state="visible")
    assert page.text_content("#auth-state") == "admin"
    assert page.is_hidden("#token-form")
    assert page.url == f"{base}/"  # the token left the address bar
    assert page.evaluate("sessionStorage.getItem('toolwire.token')") == TOKEN
    page.click("#run-button")
    wait_status(page, "awaiting_approval", timeout=20_000)
    page.close()


def test_a_token_url_with_a_deep_link_opens_the_run_it_names(browser: Browser, base: str) -> None:
    with watching(browser, base, TOKEN) as watched:
        run_demo(watched.page)
        run_id = watched.page.text_content("#run-id a") or ""
    page = open_without_token(browser, base)
    page.goto(f"{base}/#token={TOKEN}&run={run_id}")
    page.wait_for_selector("#stored-run ol.steps li")
    assert page.url == f"{base}/#run={run_id}"
    page.close()
