"""The page in a new user's first hour, in Chromium over a metadata-level SQLite store: no
`null` and no empty boxes, a stale token said at once, the direct call form beside its tool
and built from its schema, plain descriptions, red failures, the replay banner before any run,
a run id with a deep link, trust zones and the gate's refusals before a run starts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, Route

from toolwire.core.jsonenc import dumps
from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import (
    HOSTILE_SCHEMA_TEXT,
    TOKEN,
    TUNE_PLAIN,
    form_registry,
)
from .harness import Watched, open_inspector, start_run, stored_inspector, wait_status

pytestmark = pytest.mark.browser
NOT_STORED = "not stored at this privacy level"
HOSTILE_PREVIEW = '<img src=x onerror="window.__pwned=1"> sk-proj-***'


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.METADATA, registry=form_registry()) as url:
        yield url


@pytest.fixture
def watched(watched: Watched) -> Iterator[Watched]:
    """The shared page (see conftest), and no script of the payloads ran in it."""
    yield watched
    assert watched.page.evaluate("window.__pwned") is None


def tool_row(page: Page, name: str) -> Locator:
    page.click(".nav-link[data-view=tools]")
    row = page.locator("tr[data-kind=tool-row]", has=page.locator(f"code:text-is('{name}')"))
    row.wait_for()
    return row


def test_a_metadata_run_says_what_is_not_stored_and_never_null(watched: Watched) -> None:
    page = watched.page
    start_run(page, "scripted")
    wait_status(page, "completed")
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row").first.click()
    page.wait_for_selector("#stored-run ol.steps li[data-kind=tool]")
    assert page.text_content("[data-testid=answer-not-stored]") == (
        f"The answer is {NOT_STORED} (metadata)."
    )
    page.click("#stored-run li[data-kind=tool]")
    assert page.text_content("#stored-run .tab-panel") == f"The content is {NOT_STORED}."
    page.click("#stored-run .tab:text-is('Result')")
    assert page.text_content("#stored-run .tab-panel") == f"The content is {NOT_STORED}."
    assert "null" not in page.inner_text("#view-runs")
    assert (
        page.locator("tr.run-row").first.locator("td.prompt-preview").get_attribute("title")
        == NOT_STORED
    )


def test_a_refused_direct_call_shows_the_refusal_and_no_null(watched: Watched) -> None:
    page = watched.page
    tool_row(page, "dormant").locator("button", has_text="Call…").click()
    page.click("#invoke-panel button.primary")
    page.wait_for_selector("#invoke-panel .invoke-out .banner")
    assert page.inner_text("#invoke-panel .invoke-out") == "Refused: disabled"


def test_a_stale_token_is_said_at_once_and_drops_the_admin_badge(
    browser: Browser, base: str
) -> None:
    watched = open_inspector(browser, base, "stale-token-" + "y" * 32)
    page = watched.page
    page.wait_for_selector("#auth-banner:not([hidden])")
    assert page.text_content("#auth-state") == "token no longer valid"
    assert "error" in (page.get_attribute("#auth-state", "class") or "")
    assert "open the URL the server printed most recently" in (
        page.text_content("#auth-banner") or ""
    )
    page.close()


def test_the_direct_call_form_opens_beside_its_tool_with_schema_fields(watched: Watched) -> None:
    page = watched.page
    row = tool_row(page, "tune")
    row.locator("button", has_text="Call…").click()
    holder = page.locator("tr.invoke-row")
    assert row.evaluate("r => r.nextElementSibling.classList.contains('invoke-row')")
    # focus moves into the form once it is drawn (the click's handler may finish after it)
    page.wait_for_function(
        "() => document.querySelector('tr.invoke-row')?.contains(document.activeElement)"
    )
    box = holder.bounding_box()
    assert box is not None and box["y"] < 900  # in the viewport
    kinds = page.eval_on_selector_all(
        "#invoke-panel [data-kind=input-field]",
        "fs => fs.map(f => f.getAttribute('data-type') || 'boolean')",
    )
    assert kinds == ["string", "enum", "integer", "number", "boolean", "json", "json"]
    options = page.eval_on_selector_all(
        "#invoke-panel select[name=mode] option", "os => os.map(o => o.textContent)"
    )
    assert options == ["—", "plain", '<b onclick="window.__pwned=1">bold</b>']
    label = page.text_content("#invoke-panel [data-type=string]") or ""
    assert f"Key {HOSTILE_SCHEMA_TEXT}" in label and f"Which setting {HOSTILE_SCHEMA_TEXT}" in label
    assert page.locator("#invoke-panel img, #invoke-panel b").count() == 0
    page.fill("#invoke-panel input[name=key]", "colour")
    page.select_option("#invoke-panel select[name=mode]", label="plain")
    page.fill("#invoke-panel textarea[name=tags]", '["a", "b"]')
    page.check("#invoke-panel input[name=dry]")
    page.click("#invoke-panel button.primary")
    page.wait_for_selector("#invoke-panel .invoke-out pre")
    assert page.text_content("#invoke-panel .invoke-out pre") == (
        "colour=plain level=3 ratio=0.5 dry=True tags=['a', 'b'] extra=None"
    )
    page.check("#invoke-panel .raw-toggle")
    assert '"key": "colour"' in page.input_value("#invoke-panel textarea.raw-arguments")


def test_descriptions_are_plain_text_and_the_state_column_lines_up(watched: Watched) -> None:
    page = watched.page
    row = tool_row(page, "tune")
    assert row.locator("td.col-description").text_content() == TUNE_PLAIN
    lefts = page.eval_on_selector_all(
        "td.col-state", "cs => [...new Set(cs.map(c => Math.round(c.getBoundingClientRect().x)))]"
    )
    assert len(lefts) == 1


def test_a_failed_run_is_red_and_a_preview_stays_text(watched: Watched) -> None:
    page = watched.page
    runs = [
        {"id": "a" * 32, "status": "failed", "privacy_level": "redacted",
         "prompt_preview": HOSTILE_PREVIEW},
        {"id": "b" * 32, "status": "completed", "privacy_level": "redacted",
         "prompt_preview": None},
    ]  # fmt: skip

    def fake(route: Route) -> None:
        route.fulfill(status=200, content_type="application/json",
                      body=dumps({"runs": runs, "stored": True}))  # fmt: skip

    page.route("**/api/runs?*", fake)
    page.click(".nav-link[data-view=runs]")
    page.wait_for_selector("tr.run-row")
    color = "e => getComputedStyle(e).color"
    assert page.eval_on_selector(".badge.status-failed", color) == "rgb(180, 35, 24)"
    assert page.eval_on_selector(".badge.status-completed", color) == "rgb(19, 122, 75)"
    cells = page.locator("td.prompt-preview").all_text_contents()
    assert cells == [HOSTILE_PREVIEW, "—"]
    assert page.locator("#runs-table img").count() == 0


def test_the_replay_banner_shows_before_the_first_run(watched: Watched) -> None:
    page = watched.page
    assert page.is_visible("#replay-banner")
    assert page.text_content("#replay-banner") == "Replay: scripted model, no provider is called"


def test_the_run_id_links_to_the_stored_run(browser: Browser, base: str, watched: Watched) -> None:
    page = watched.page
    start_run(page, "scripted")
    wait_status(page, "completed")
    link = page.locator("#run-id a.run-link")
    run_id = link.text_content() or ""
    assert len(run_id) == 36 and link.get_attribute("href") == f"#run={run_id}"
    other = open_inspector(browser, base, TOKEN).page
    other.goto(f"{base}/#run={run_id}")
    other.wait_for_selector("#stored-run ol.steps li[data-kind=tool]")
    assert other.is_visible("#view-runs")
    assert other.text_content("#stored-run h3") == f"Run {run_id}"
    other.close()
    fresh = browser.new_page()  # the token and the run in one link, as a person shares it
    fresh.goto(f"{base}/#token={TOKEN}&run={run_id}")
    fresh.wait_for_selector("#stored-run ol.steps li[data-kind=tool]")
    assert fresh.text_content("#stored-run h3") == f"Run {run_id}"
    fresh.close()


def test_a_chosen_zone_marks_refused_tools_and_the_run_is_not_offered_them(
    watched: Watched,
) -> None:
    page = watched.page
    zones = page.eval_on_selector_all("#trust-zone option", "os => os.map(o => o.value)")
    assert zones == ["", "local", "private_hosted", "external_eu", "external_global"]
    assert page.locator("#tool-choices [data-kind=gate-refused]").count() == 0
    page.select_option("#trust-zone", "external_global")
    refused = page.locator("#tool-choices [data-kind=gate-refused]")
    refused.wait_for()
    assert refused.text_content() == (
        "tunerefused: trust_zone (data class configuration is above the external_global ceiling)"
    )
    assert refused.locator("input").is_disabled()
    start_run(page, "scripted")
    wait_status(page, "completed")
    page.click("#steps li[data-index='0']")
    page.click("#detail .tab:text-is('Tools offered')")
    assert page.text_content("#detail .tab-panel pre") == "lookup\necho\nboom"
