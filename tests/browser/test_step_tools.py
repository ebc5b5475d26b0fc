"""The bar above a run's steps in Chromium: the filter (kind, tool name, status) of the list
and the timeline, the find ("2 of 3", next and previous) and the conversation as the last
request sent it, by keyboard, over a live run, a stored one and a virtualized one (whose rows
tell their place among all); hostile words and tool names read as text."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page

from toolwire.policy.privacy import PrivacyLevel

from ..inspector_kit import AUTH, call
from .harness import Watched, start_run, stored_inspector, wait_status
from .test_keyboard import focused, live, until

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(1)>"
SIFT = [
    {
        "tool_calls": [
            call("lookup", {"customer": "Ada"}),
            call("boom"),
            call("echo", {"text": f"needle {HOSTILE}"}),
        ]
    },
    {"tool_calls": [call("lookup", {"customer": "Grace"})]},
    {"content": "the needle was found"},
]
HOSTILE_RUN = [  # a tool the registry does not know, named in markup, and markup as text
    {"tool_calls": [call(HOSTILE), call("echo", {"text": HOSTILE})]},
    {"content": "done"},
]
# request 0, model 1, lookup 2, boom 3, echo 4, request 5, model 6, lookup 7, request 8, answer 9
STEPS = 10
LONG_ROUNDS = 120  # 3 steps a round and 2 for the answer: 362 steps, past VIRTUAL_FROM (300)
LONG = [{"tool_calls": [call("lookup", {"customer": "Ada"})]}] * LONG_ROUNDS + [
    {"content": "done at last"}
]
BAR = "#view-run .step-tools"
TIMELINE = "#view-run .timeline-row[data-index]"
HIDDEN = "#view-run [data-testid=timeline-hidden]"
KIND = f"{BAR} select[name=kind]"
TOOL = f"{BAR} input[name=tool]"
STATUS = f"{BAR} select[name=status]"
FIND = f"{BAR} input[name=find]"
ROWS = "(s) => [...document.querySelectorAll(s)].map((r) => Number(r.dataset.index))"
# Each drawn row as [its index, aria-posinset, aria-setsize] (null for one not set).
PLACES = """(s) => [...document.querySelectorAll(s)].map((r) => [Number(r.dataset.index),
  r.getAttribute("aria-posinset"), r.getAttribute("aria-setsize")])"""
SAYS = "document.querySelector('#announce-polite').textContent === '%s'"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scripts = {"sift": SIFT, "long": LONG, "hostile": HOSTILE_RUN}
    with stored_inspector(tmp_path_factory, PrivacyLevel.FULL, scripts=scripts) as url:
        yield url


def shown_rows(page: Page, rows_of: str = "#steps li[data-index]") -> list[int]:
    rows: list[int] = page.evaluate(ROWS, rows_of)
    return rows


def sifted(page: Page) -> Page:
    start_run(page, "sift")
    wait_status(page, "completed")
    page.wait_for_selector(f"#steps li[data-index='{STEPS - 1}']")
    return page


def test_the_filter_narrows_the_steps_by_kind_tool_and_status(watched: Watched) -> None:
    page = sifted(watched.page)
    assert page.text_content(f"{BAR} [data-testid=step-count]") == f"{STEPS} steps"
    page.select_option(KIND, "tool")
    assert shown_rows(page) == [2, 3, 4, 7]
    assert page.text_content(f"{BAR} [data-testid=step-count]") == f"4 of {STEPS} steps"
    until(page, SAYS % f"Showing 4 of {STEPS} steps")
    page.fill(TOOL, "LOOK")
    assert shown_rows(page) == [2, 7]
    page.fill(TOOL, "")
    page.select_option(STATUS, "error")
    assert shown_rows(page) == [3]
    assert page.text_content("#detail .detail-title") == "Tool · boom"  # the selection follows
    page.select_option(KIND, "")
    page.select_option(STATUS, "")
    assert shown_rows(page) == list(range(STEPS))
    page.wait_for_timeout(300)
    assert live(page, "polite") == f"Showing all {STEPS} steps"


def test_the_timeline_shows_the_steps_the_filter_lets_through(watched: Watched) -> None:
    page = sifted(watched.page)
    assert shown_rows(page, TIMELINE) == list(range(STEPS))
    assert page.text_content(HIDDEN) == ""
    left = "(s) => document.querySelector(s).querySelector('.timeline-bar').style.left"
    before = page.evaluate(left, f"{TIMELINE}[data-index='7']")
    page.select_option(KIND, "tool")
    assert shown_rows(page, TIMELINE) == [2, 3, 4, 7]
    assert page.text_content(HIDDEN) == f" · 4 of {STEPS} steps shown, 6 hidden by the filter"
    assert page.evaluate(left, f"{TIMELINE}[data-index='7']") == before  # the run's own axis
    page.select_option(STATUS, "error")
    assert shown_rows(page, TIMELINE) == [3]
    assert page.get_attribute(f"{TIMELINE}[data-index='3']", "aria-selected") == "true"
    detail = "#view-run [data-testid=timeline-detail]"  # the selected step's, in words
    assert page.is_visible(detail)
    assert (page.text_content(detail) or "").startswith("Selected: ⚙ boom: ")
    page.fill(TOOL, "no such tool")
    assert shown_rows(page, TIMELINE) == [] and page.is_hidden("#view-run .timeline-rows")
    assert page.text_content(HIDDEN) == f" · 0 of {STEPS} steps shown, {STEPS} hidden by the filter"
    page.fill(TOOL, "")
    page.select_option(STATUS, "")
    start_run(page, "sift")  # the filter stays: the new run's steps stream through it
    wait_status(page, "completed")
    assert shown_rows(page, TIMELINE) == [2, 3, 4, 7] == shown_rows(page)
    page.select_option(KIND, "")
    assert shown_rows(page, TIMELINE) == list(range(STEPS))
    assert page.text_content(HIDDEN) == ""


def test_the_filter_by_keyboard_keeps_one_tab_stop_among_the_shown(watched: Watched) -> None:
    page = sifted(watched.page)
    page.focus(KIND)
    page.keyboard.press("ArrowDown")  # any -> request
    page.keyboard.press("ArrowDown")  # request -> model
    assert shown_rows(page) == [1, 6, 9]
    assert focused(page)["tag"] == "select"  # the focus stays in the filter
    page.focus(FIND)
    page.keyboard.press("Tab")  # Previous and Next are off, with nothing to find: Conversation
    assert focused(page)["text"] == "Conversation"
    page.keyboard.press("Tab")
    assert focused(page)["index"] == "9" and focused(page)["selected"] == "true"
    page.keyboard.press("ArrowUp")
    assert focused(page)["index"] == "6"  # the next shown step up, not step 8
    page.keyboard.press("Home")
    assert focused(page)["index"] == "1"
    page.keyboard.press("j")
    assert focused(page)["index"] == "6"


def test_find_steps_through_the_matches_and_keeps_the_focus_in_its_box(watched: Watched) -> None:
    page = sifted(watched.page)
    page.focus(FIND)
    page.keyboard.type("needle")
    count = f"{BAR} [data-testid=find-count]"
    assert page.text_content(count) == "1 of 3"  # the echo call, its result, the answer
    assert shown_rows(page) == list(range(STEPS))
    assert shown_rows(page, "#steps li.find-hit") == [1, 4, 9]
    assert page.get_attribute("#steps li[data-index='1']", "aria-selected") == "true"
    page.keyboard.press("Enter")
    assert page.text_content(count) == "2 of 3"
    assert page.get_attribute("#steps li[data-index='4']", "aria-selected") == "true"
    assert focused(page)["tag"] == "input"
    until(page, SAYS % "2 of 3")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    assert page.text_content(count) == "1 of 3"  # around the end
    page.keyboard.press("Shift+Enter")
    assert page.text_content(count) == "3 of 3"
    page.click(f"{BAR} [data-testid=find-prev]")
    assert page.text_content(count) == "2 of 3"
    page.select_option(KIND, "tool")  # the find counts only the shown steps
    assert page.text_content(count) == "1 of 1"
    page.focus(FIND)
    page.keyboard.press("Escape")
    assert page.input_value(FIND) == "" and page.text_content(count) == ""
    assert page.locator("#steps li.find-hit").count() == 0
    page.fill(FIND, "no such words")
    assert page.text_content(count) == "No matches"
    assert page.is_disabled(f"{BAR} [data-testid=find-next]")


def test_find_reaches_a_row_out_of_the_virtualized_window(watched: Watched) -> None:
    page = watched.page
    start_run(page, "long", max_rounds=LONG_ROUNDS + 1)
    wait_status(page, "completed", timeout=60_000)
    page.click("#steps li[data-index='0']")  # the first row: the last is out of the window
    assert page.locator("#steps li[data-index]").count() < 120
    page.fill(FIND, "model answer")
    assert page.text_content(f"{BAR} [data-testid=find-count]") == "1 of 1"
    last = f"#steps li[data-index='{3 * LONG_ROUNDS + 1}']"
    assert page.get_attribute(last, "aria-selected") == "true"
    top = page.evaluate(f'document.querySelector("{last}").getBoundingClientRect().top')
    box = page.evaluate("document.querySelector('#steps').getBoundingClientRect().bottom")
    assert top < box  # scrolled into the list's view
    page.select_option(KIND, "tool")
    assert page.text_content(f"{BAR} [data-testid=step-count]") == (
        f"{LONG_ROUNDS} of {3 * LONG_ROUNDS + 2} steps"
    )
    assert page.locator("#steps li[data-index]").count() == LONG_ROUNDS


def test_a_virtualized_list_tells_each_drawn_row_its_place_among_all(watched: Watched) -> None:
    page = watched.page
    start_run(page, "long", max_rounds=LONG_ROUNDS + 1)
    wait_status(page, "completed", timeout=60_000)
    total = 3 * LONG_ROUNDS + 2
    lists = ("#steps li[data-index]", "#view-run .timeline-row[data-index]")
    for rows in lists:  # the rows drawn while the run streamed know the final count
        places = page.evaluate(PLACES, rows)
        assert 0 < len(places) < 120 and places[-1][0] == total - 1
        assert places == [[i, str(i + 1), str(total)] for i, _, _ in places]
    page.focus("#steps li[aria-selected=true]")
    page.keyboard.press("Home")
    places = page.evaluate(PLACES, "#steps li[data-index]")
    assert places[0] == [0, "1", str(total)]
    assert [p for p in places if p[1:] != [str(p[0] + 1), str(total)]] == []
    page.select_option(KIND, "model")  # 121 rows: all in the DOM, which tells their places
    assert page.evaluate(PLACES, lists[0]) == [[3 * i + 1, None, None] for i in range(121)]
    page.select_option(KIND, "")
    places = page.evaluate(PLACES, lists[0])
    assert places and all(p[1:] == [str(p[0] + 1), str(total)] for p in places)


def test_the_bar_of_a_stored_run_filters_its_steps(watched: Watched, base: str) -> None:
    body = {"prompt": "go", "provider": "sift", "max_rounds": 5}
    run_id = httpx.post(f"{base}/api/runs", json=body, headers=AUTH, timeout=30).json()["context"][
        "run_id"
    ]
    page = watched.page
    page.goto(f"{base}/#run={run_id}")
    page.wait_for_selector("#stored-run .steps li[data-index]")
    bar = "#stored-run .step-tools"
    page.select_option(f"{bar} select[name=status]", "error")
    assert shown_rows(page, "#stored-run .steps li[data-index]") == [3]
    assert shown_rows(page, "#stored-run .timeline-row[data-index]") == [3]
    ids = page.evaluate("[...document.querySelectorAll('.step-tools [id]')].map((e) => e.id)")
    assert len(ids) == len(set(ids))  # the live run's bar and this one: no id twice


def test_hostile_words_and_tool_names_read_as_text(watched: Watched) -> None:
    page = watched.page
    start_run(page, "hostile")
    wait_status(page, "completed")
    page.fill(TOOL, HOSTILE)
    assert shown_rows(page) == [2]
    assert page.text_content("#steps li[data-index='2'] .step-title") == f"⚙ {HOSTILE}"
    assert page.text_content(f"{BAR} [data-testid=step-count]") == "1 of 6 steps"
    page.fill(TOOL, "")
    page.fill(FIND, HOSTILE)
    assert page.text_content(f"{BAR} [data-testid=find-count]") == "1 of 3"  # the call, echo's
    assert page.locator("#view-run img").count() == 0
    assert page.locator(f"{BAR} [onerror], #steps [onerror]").count() == 0
    assert watched.dialogs == []


def test_the_conversation_is_the_last_request_with_each_result_after_its_call(
    watched: Watched,
) -> None:
    page = sifted(watched.page)
    page.click(f"{BAR} [data-testid=conversation]")
    assert page.get_attribute("#steps li[data-index='8']", "aria-selected") == "true"
    assert page.text_content("#detail .tab[aria-selected=true]") == "Messages sent"
    assert page.evaluate("document.activeElement.getAttribute('role')") == "tabpanel"
    roles = page.locator("#detail .message-role").all_text_contents()
    assert [re.sub(r" · [^ ]+$", "", r) for r in roles] == [
        "user", "assistant", "tool · lookup", "tool · boom", "tool · echo", "assistant",
        "tool · lookup",
    ]  # fmt: skip
    echoed = page.locator("#detail .message.role-tool pre").nth(2).text_content()
    assert echoed == f"needle {HOSTILE}"
    assert page.locator("#detail img, #detail [onerror]").count() == 0
    page.click("#steps li[data-index='2']")  # another step: its own first tab
    assert page.text_content("#detail .tab[aria-selected=true]") == "Arguments"
