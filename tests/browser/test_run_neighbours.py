"""Previous and next between stored runs in Chromium, across the pages of the stored-runs list
and from a run opened by a link (``#run=``): the server finds the runs beside the one shown in
the listing's filters and order, and the table turns to the page that lists the one opened."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page

from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import AUTH
from .harness import Watched, stored_inspector

pytestmark = pytest.mark.browser

RUNS = 53  # past one page of the list (runs.js: PAGE, 50)
PLACE = "#stored-run [data-testid=run-place]"
PREVIOUS = "#stored-run [data-testid=previous-run]"
NEXT = "#stored-run [data-testid=next-run]"
DASH = "\N{EN DASH}"  # between the first and last run the pager counts


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.METADATA) as url:
        with httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
            for n in range(RUNS):
                body = {"prompt": f"run {n}", "provider": "scripted", "max_rounds": 3}
                assert client.post("/api/runs", json=body).status_code == 200
        yield url


@pytest.fixture(scope="module")
def listed(base: str) -> list[str]:
    """Every run's id, newest first: the list's order."""
    page = httpx.get(f"{base}/api/runs", params={"limit": 200}, headers=AUTH).json()
    return [r["id"] for r in page["runs"]]


def opened(page: Page, run_id: str, place: str) -> None:
    """Wait until ``run_id`` is shown with its place in the listing."""
    page.wait_for_selector(f"#stored-run h3:has-text('{run_id}')")
    page.wait_for_selector(f"{PLACE}:text-is('{place}')")


def table_stop(page: Page) -> list[str]:
    stops: list[str] = page.locator("tr.run-row .run-open[tabindex='0']").evaluate_all(
        "bs => bs.map(b => b.closest('tr').dataset.id)"
    )
    return stops


def test_next_goes_on_to_the_next_page_and_the_table_follows(
    watched: Watched, listed: list[str]
) -> None:
    page = watched.page
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row").nth(49).click()  # the last row of the first page
    opened(page, listed[49], f"50 of {RUNS} listed")
    page.focus(f"{NEXT}:enabled")
    page.keyboard.press("Enter")
    opened(page, listed[50], f"51 of {RUNS} listed")
    assert page.evaluate("document.activeElement.tagName") == "H3"  # the run opened
    page.wait_for_selector(f"[data-testid=pager-text]:text-is('51{DASH}{RUNS} of {RUNS}')")
    assert table_stop(page) == [listed[50]]
    page.click(f"{PREVIOUS}:enabled")
    opened(page, listed[49], f"50 of {RUNS} listed")
    page.wait_for_selector(f"[data-testid=pager-text]:text-is('1{DASH}50 of {RUNS}')")
    assert table_stop(page) == [listed[49]]


def test_a_run_opened_by_link_has_its_neighbours(
    watched: Watched, base: str, listed: list[str]
) -> None:
    page = watched.page
    page.goto(f"{base}/#run={listed[51]}")
    opened(page, listed[51], f"52 of {RUNS} listed")
    assert page.get_attribute(f"{PREVIOUS}:enabled", "title") == f"Run {listed[50]}"
    page.click(f"{NEXT}:enabled")
    opened(page, listed[52], f"{RUNS} of {RUNS} listed")
    page.wait_for_selector(f"{PREVIOUS}:enabled")
    assert page.is_disabled(NEXT)  # the oldest run: the end of the listing


def test_the_neighbours_follow_the_listings_order_and_filters(
    watched: Watched, base: str, listed: list[str]
) -> None:
    page = watched.page
    page.goto(f"{base}/#run={listed[0]}")
    opened(page, listed[0], f"1 of {RUNS} listed")
    assert page.is_disabled(PREVIOUS)
    page.click("button.sort[data-sort=created_at]")  # oldest first now
    page.wait_for_selector("th[aria-sort=ascending] button[data-sort=created_at]")
    page.wait_for_selector(f"{PLACE}:text-is('{RUNS} of {RUNS} listed')")
    page.wait_for_selector(f"{PREVIOUS}:enabled")
    assert page.is_disabled(NEXT)
    page.select_option("#runs-has_error", "true")  # no run failed: it is not listed
    page.wait_for_selector(f"{PLACE}:text-is('not in the listing (0 listed)')")
    assert page.is_disabled(PREVIOUS) and page.is_disabled(NEXT)


def test_a_button_turned_off_under_the_focus_hands_the_focus_on(
    watched: Watched, base: str, listed: list[str]
) -> None:
    page = watched.page
    page.goto(f"{base}/#run={listed[0]}")
    opened(page, listed[0], f"1 of {RUNS} listed")
    page.focus(f"{NEXT}:enabled")
    # The listing changes while Next has the focus (a click by script leaves the focus): the
    # run shown is now the last, so Next turns off and Previous takes the focus.
    page.evaluate("document.querySelector('button.sort[data-sort=created_at]').click()")
    page.wait_for_selector(f"{PLACE}:text-is('{RUNS} of {RUNS} listed')")
    page.wait_for_selector(f"{PREVIOUS}:enabled")
    assert page.is_disabled(NEXT)
    assert page.evaluate("document.activeElement.dataset.testid") == "previous-run"
    # Both off (the run is no longer listed): the place, which says why, takes it.
    page.evaluate("""() => {
        const failed = document.querySelector('#runs-has_error');
        failed.value = 'true';
        failed.dispatchEvent(new Event('change', { bubbles: true }));
    }""")
    page.wait_for_selector(f"{PLACE}:text-is('not in the listing (0 listed)')")
    assert page.evaluate("document.activeElement.dataset.testid") == "run-place"
