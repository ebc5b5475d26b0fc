"""A server's live question of a run another process carries out, in Chromium: the stored run's
pending panel shows the question (the run waits in its own process), and the answer sent from
this inspector reaches the server, so the run completes with it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from toolwire.inspector import create_app
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, live_server, settings
from ..store.conftest import Backend
from ..store.test_live_questions import live_run
from .axe import audit, axe_context
from .harness import Watched

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("live")


@pytest.fixture(scope="module")
def store(folder: Path) -> Iterator[RunStore]:
    opened = RunStore.open(str(folder / "runs.db"))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def base(store: RunStore) -> Iterator[str]:
    with live_server(create_app(settings(store=store))) as url:
        yield url


def test_the_stored_runs_panel_answers_a_question_another_process_waits_on(
    watched: Watched, store: RunStore, folder: Path
) -> None:
    backend = Backend(kind="sqlite", url=str(folder / "runs.db"), path=folder / "runs.db")
    page = watched.page
    with live_run(backend, folder) as run:
        question = run.question(store)
        page.goto(page.url.split("#")[0] + f"#run={run.run_id}")
        panel = page.wait_for_selector(".question-panel", timeout=20_000)
        assert panel is not None
        assert panel.get_attribute("data-id") == question.id
        assert page.inner_text(".question-panel .question-message") == "Who are you?"
        assert page.inner_text(".question-panel .question-until") == (
            f"The run waits for an answer until {question.expires_at}.")  # fmt: skip
        page.fill(".question-panel input[name=age]", "-1")
        page.click(".question-panel button[type=submit]")
        page.wait_for_selector(".question-panel .pending-error:not([hidden])")
        assert page.inner_text(".question-panel .pending-error") == (
            "the answer does not fit the form: name: required, and it has no default; age: is "
            "under the least allowed, 0")  # fmt: skip
        page.fill(".question-panel input[name=name]", "Ada")
        page.fill(".question-panel input[name=age]", "36")
        page.click(".question-panel button[type=submit]")
        ended = run.ended()
    content = {"name": "Ada", "plan": "free", "age": 36}
    assert json.loads(ended["told"]) == {"action": "accept", "content": content}
    page.wait_for_selector(".question-panel", state="detached", timeout=20_000)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_live_questions_panel_has_no_serious_accessibility_problem(
    browser: Browser, base: str, store: RunStore, folder: Path, scheme: str
) -> None:
    backend = Backend(kind="sqlite", url=str(folder / "runs.db"), path=folder / "runs.db")
    context = axe_context(browser, 1280, scheme)
    page = context.new_page()
    try:
        with live_run(backend, folder) as run:
            run.question(store)
            page.goto(f"{base}/#token={TOKEN}")
            page.wait_for_selector("body[data-ready=true]")
            page.goto(f"{base}/#run={run.run_id}")
            page.wait_for_selector(".question-panel .question-until", timeout=20_000)
            found = audit(page)
            page.click(".question-panel button:text-is('Decline')")
            ended = run.ended()
    finally:
        context.close()
    assert found == [], found
    assert json.loads(ended["told"]) == {"action": "decline", "content": None}
