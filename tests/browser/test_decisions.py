"""Waiting runs in Chromium: approve, deny and input from the page; the run goes on live."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import WRITES, waiting_registry
from .harness import Watched, open_step, start_run, stored_inspector, wait_status

pytestmark = pytest.mark.browser
PANEL = "#view-run .pending-panel"
DENIED = 'Error: tool "write_note" was denied by the operator.'


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with stored_inspector(tmp_path_factory, PrivacyLevel.METADATA, registry=waiting_registry(),
                          state_key=StateKey.generate()) as url:  # fmt: skip
        yield url


def titles(page: Page) -> list[str]:
    found: list[str] = page.eval_on_selector_all(
        "#steps li .step-title", "e => e.map(x => x.textContent)"
    )
    return found


def result_of(page: Page, title: str) -> str:
    index = titles(page).index(title)
    open_step(page, index, "Result")
    return page.text_content("#detail .tab-panel pre") or ""


def test_an_approved_write_runs_and_its_result_appears_in_the_step_list(watched: Watched) -> None:
    page = watched.page
    before = len(WRITES)
    start_run(page, "approve")
    wait_status(page, "awaiting_approval")
    assert page.text_content(f"{PANEL} h3") == "Approval needed"
    assert page.text_content(f"{PANEL} .call-name") == "write_note"
    lines = page.eval_on_selector_all(f"{PANEL} .preview-line", "e => e.map(x => x.textContent)")
    assert lines == ["write notes/a.md", "+ one", "+ two"]
    assert len(WRITES) == before
    page.click(f"{PANEL} button.approve")
    wait_status(page, "completed")
    assert page.is_hidden("#pending")
    assert titles(page) == [
        "⬆ Request · round 1", "⬇ Model requests write_note", "☛ approved by admin",
        "⚙ write_note", "⬆ Request · round 2", "✓ Model answer",
    ]  # fmt: skip
    assert result_of(page, "⚙ write_note") == "wrote 7 characters to notes/a.md"
    assert page.text_content("#final pre") == "The note is written."
    assert WRITES[before:] == ["notes/a.md: one\ntwo"]


def test_a_denial_shows_the_error_turn_the_model_reads(watched: Watched) -> None:
    page = watched.page
    before = len(WRITES)
    start_run(page, "approve")
    wait_status(page, "awaiting_approval")
    page.fill(f"{PANEL} .decision-reason", "not on a Friday")
    page.click(f"{PANEL} button.deny")
    wait_status(page, "completed")
    assert "☛ denied by admin" in titles(page)
    assert result_of(page, "⚙ write_note") == DENIED
    assert page.get_attribute("#detail pre.error-text", "class") == "block error-text"
    open_step(page, titles(page).index("☛ denied by admin"))
    assert '"decision_reason": "not on a Friday"' in (page.text_content("#detail .json-tree") or "")
    assert len(WRITES) == before


def test_an_input_form_round_trip_with_an_invalid_submission(watched: Watched) -> None:
    page = watched.page
    start_run(page, "ask")
    wait_status(page, "awaiting_input")
    assert page.text_content(f"{PANEL} h3") == "Input needed"
    labels = page.eval_on_selector_all(
        f"{PANEL} [data-kind=input-field]", "e => e.map(x => x.textContent)"
    )
    assert labels == ["CityrequiredWhere to go", "Nightsrequired", "Window seat"]
    page.fill(f"{PANEL} input[name=city]", "X")
    page.fill(f"{PANEL} input[name=nights]", "0")
    page.click(f"{PANEL} button[type=submit]")
    page.wait_for_selector(f"{PANEL} .pending-error:not([hidden])")
    message = page.text_content(f"{PANEL} .pending-error") or ""
    assert message.startswith("the input does not fit: ")
    assert page.get_attribute("#run-status", "data-status") == "awaiting_input"
    assert page.input_value(f"{PANEL} input[name=city]") == "X"
    page.fill(f"{PANEL} input[name=city]", "Oslo")
    page.fill(f"{PANEL} input[name=nights]", "3")
    page.check(f"{PANEL} input[name=window]")
    page.click(f"{PANEL} button[type=submit]")
    wait_status(page, "completed")
    assert "☛ input given by admin" in titles(page)
    assert result_of(page, "⚙ book_trip") == "booked 3 nights in Oslo, window seat"
    assert page.text_content("#final pre") == "The trip is booked."


def test_a_waiting_run_is_approved_from_the_stored_runs_view(watched: Watched) -> None:
    page = watched.page
    start_run(page, "approve")
    wait_status(page, "awaiting_approval")
    page.click(".nav-link[data-view=runs]")
    page.check("#runs-waiting")
    # The list loaded before the box was ticked is replaced once the filtered one arrives:
    # wait for a list holding waiting runs only (a filter that fails never gets there).
    page.wait_for_function(
        """() => {
          const badges = [...document.querySelectorAll("#runs-table tr.run-row .badge")];
          return badges.length > 0 && badges.every(b => b.textContent === "awaiting_approval");
        }"""
    )
    badges = page.eval_on_selector_all(
        "#runs-table tr.run-row .badge", "e => e.map(x => x.textContent)"
    )
    assert badges == ["awaiting_approval"]
    rounds = page.text_content("#runs-table tr.run-row >> nth=0 >> td >> nth=6")
    assert rounds == "1"  # what the waiting run has done so far
    page.click("#runs-table tr.run-row >> nth=0")
    stored = "#stored-run .pending-panel"
    page.wait_for_selector(stored)
    assert page.text_content("#stored-run #metric-wall .metric-value") == "—"  # not ended yet
    lines = page.eval_on_selector_all(f"{stored} .preview-line", "e => e.map(x => x.textContent)")
    assert lines == ["write notes/a.md", "+ one", "+ two"]
    page.click(f"{stored} button.approve")
    page.wait_for_selector("#view-run:not([hidden])")
    wait_status(page, "completed")
    assert titles(page)[:3] == [
        "⬆ Request · round 1", "⬇ Model requests write_note", "☛ approved by admin"
    ]  # fmt: skip
    assert page.text_content("#final pre") == "The note is written."
