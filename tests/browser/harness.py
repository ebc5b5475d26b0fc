"""One Chromium per test module, driven by Playwright's sync API, against a live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import live_server, settings

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def launch() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("TOOLWIRE_CHROMIUM", "/usr/bin/chromium"),
            args=CHROMIUM_ARGS,
        )
        yield browser
        browser.close()


@contextmanager
def stored_inspector(
    tmp_path_factory: pytest.TempPathFactory, level: PrivacyLevel, **kit: Any
) -> Iterator[str]:
    """A live inspector over a new SQLite store that keeps runs at ``level``; its base URL.

    ``kit`` goes to ``inspector_kit.settings`` (``registry``, ``scripts``, ``state_key``...)."""
    path = tmp_path_factory.mktemp("runs") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=level)
    try:
        with live_server(create_app(settings(store=store, privacy_level=str(level), **kit))) as url:
            yield url
    finally:
        store.close()


class Watched:
    """A page with everything that would betray running script: dialogs, console, errors."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def open_inspector(browser: Browser, base: str, token: str, width: int = 1280) -> Watched:
    page = browser.new_page(viewport={"width": width, "height": 900})
    watched = Watched(page)
    page.goto(f"{base}/#token={token}")
    page.wait_for_selector("body[data-ready=true]")
    return watched


@contextmanager
def watching(browser: Browser, base: str, token: str, width: int = 1280) -> Iterator[Watched]:
    """The inspector in a new page ``width`` px wide; on leaving, no dialog and no page error
    may have happened."""
    watched = open_inspector(browser, base, token, width)
    yield watched
    assert watched.errors == [] and watched.dialogs == []
    watched.page.close()


def start_run(page: Page, provider: str, prompt: str = "go", max_rounds: int = 5) -> None:
    page.fill("#prompt", prompt)
    page.fill("#provider", provider)
    page.fill("#max-rounds", str(max_rounds))
    page.click("#run-button")


def wait_status(page: Page, status: str, timeout: float = 10_000) -> None:
    page.wait_for_selector(f"#run-status[data-status={status}]", timeout=timeout)


def open_step(page: Page, index: int, tab: str | None = None) -> None:
    page.click(f"#steps li[data-index='{index}']")
    if tab is not None:
        page.click(f"#detail .tab:text-is('{tab}')")
