"""The inspector as ``toolwire demo`` serves it, in this process: the demo shop, its built-in
tools, the replay script (whose run waits for an approval), a full-level SQLite store and a
state key, so that every view has real content to lay out."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page

from toolwire.core.sealing import StateKey
from toolwire.demo import SCRIPT_PATH, prepare_demo
from toolwire.inspector import InspectorSettings, RunDefaults, create_app, provider_factory
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore
from toolwire.tools.defaults import default_registry

from ..inspector_kit import TOKEN, live_server
from .harness import wait_status

VIEWS = ("run", "runs", "tools", "compare", "audit")


@contextmanager
def demo_inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live inspector over a new demo folder; its base URL."""
    folder = tmp_path_factory.mktemp("demo")
    shop = prepare_demo(folder)
    store = RunStore.open(f"sqlite:///{folder / 'runs.db'}", privacy=PrivacyLevel.FULL)
    settings = InspectorSettings(
        registry=default_registry(), provider_factory=provider_factory(SCRIPT_PATH),
        token=TOKEN, store=store, privacy_level=str(PrivacyLevel.FULL),
        workspace=shop.workspace, state_key=StateKey.generate(),
        defaults=RunDefaults(prompt=shop.prompt),
    )  # fmt: skip
    try:
        with live_server(create_app(settings)) as url:
            yield url
    finally:
        store.close()


def run_demo(page: Page, wait_ms: int = 0) -> None:
    """Start the demo's run from the form, approve its write after ``wait_ms``, see it end."""
    page.click(".nav-link[data-view=run]")
    page.click("#run-button")
    wait_status(page, "awaiting_approval", timeout=20_000)
    page.wait_for_timeout(wait_ms)
    page.click("#pending button.approve")
    wait_status(page, "completed", timeout=20_000)


def open_view(page: Page, view: str) -> None:
    """Show ``view`` with content in it: a stored run opened, two runs compared."""
    page.click(f".nav-link[data-view={view}]")
    if view == "runs":
        page.locator("tr.run-row").first.click()
        page.wait_for_selector("#stored-run ol.steps li")
    elif view == "tools":
        page.wait_for_selector("tr[data-kind=tool-row]")
    elif view == "compare":
        page.click(".nav-link[data-view=runs]")
        for row in page.locator("tr.run-row").all()[:2]:
            row.locator(".compare-check").check()
        page.click("#runs-compare")
        page.wait_for_selector("#compare-out .compare-section")
    elif view == "audit":
        page.wait_for_selector("#audit-table > *")
