"""The inspector, started on its own, shows a run a worker process executes, live, in Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from ..browser.harness import launch, wait_status, watching
from ..served import served
from .kit import Queue, rounds

pytestmark = pytest.mark.browser
ROUNDS = 6  # each model turn takes 0.4 s: the page has time to show the run growing


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launch()


def test_the_inspector_follows_a_run_executing_in_a_worker(
    browser: Browser, queue: Queue, tmp_path: Path
) -> None:
    queue.start(1)
    with served(["serve", "--db", queue.url], tmp_path / "home") as (base, token):
        (run_id,) = queue.submit(queue.script(rounds(ROUNDS, delay_ms=400)), max_rounds=10)
        queue.wait_for_steps(run_id, 1)  # a worker runs it: not this inspector
        with watching(browser, base, token) as watched:
            page = watched.page
            page.evaluate(f"location.hash = '#run={run_id}'")
            page.wait_for_selector("#view-run:not([hidden])")
            wait_status(page, "running")
            page.wait_for_selector("#steps li[data-index='3']", timeout=10_000)
            early = len(page.query_selector_all("#steps li[data-index]"))
            assert page.get_attribute("#run-status", "data-status") == "running"
            assert run_id in (page.text_content("#run-id") or "")
            wait_status(page, "completed", timeout=30_000)
            steps = page.query_selector_all("#steps li[data-index]")
            assert early < len(steps) == 3 * ROUNDS + 2  # it grew while we watched
            kinds = [step.get_attribute("data-kind") for step in steps]
            assert kinds == ["request", "llm", "tool"] * ROUNDS + ["request", "llm"]
