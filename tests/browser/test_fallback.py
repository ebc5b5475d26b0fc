"""A run whose first provider fails and whose fallback answers, in Chromium: the failed attempt
is a step of its own in the live list and in the stored run, its provider, error and the
provider asked next in the detail pane as text; the answer names the provider that gave it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from toolwire import BaseProvider, CompletionRequest, CompletionResponse, ScriptedProvider
from toolwire.core.errors import ConfigError, ServerError
from toolwire.inspector import InspectorSettings, create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Provider
from toolwire.providers.fallback import FallbackProvider
from toolwire.providers.scripted import Turn
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, live_server, registry
from .harness import start_run, wait_status, watching

pytestmark = pytest.mark.browser
TITLE = "✗ Provider primary failed (ServerError); trying backup"


class Down(BaseProvider):
    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        raise ServerError("primary: HTTP 503 server error (http://127.0.0.1:1/v1)", status=503)


def provider_factory(name: str, model: str | None) -> Provider:
    if name != "chain":
        raise ConfigError(f"unknown provider {name!r}")
    backup = ScriptedProvider([Turn(content="answered by the backup")], name="backup")
    return FallbackProvider([Down(name="primary", trust_zone="local"), backup])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path: Path = tmp_path_factory.mktemp("fallback") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.METADATA)
    settings = InspectorSettings(registry=registry(), provider_factory=provider_factory,
                                 token=TOKEN, store=store, privacy_level="metadata")  # fmt: skip
    with live_server(create_app(settings)) as url:
        yield url
    store.close()


def facts(page: Page, detail: str, testid: str) -> dict[str, str]:
    rows = page.locator(f"{detail} [data-testid={testid}] dd")
    return {dd.get_attribute("data-kind") or "": dd.text_content() or "" for dd in rows.all()}


def check_steps(page: Page, where: str, detail: str) -> None:
    kinds = page.locator(f"{where} li").evaluate_all(
        "items => items.map(i => i.getAttribute('data-kind'))"
    )
    assert kinds == ["request", "provider_failed", "llm"]
    failed = page.locator(f"{where} li[data-kind=provider_failed]")
    assert (failed.locator(".step-title").text_content() or "").strip() == TITLE
    failed.click()
    shown = facts(page, detail, "failure-facts")
    assert (shown["provider"], shown["error_class"], shown["error_status"]) == (
        "primary", "ServerError", "503"
    )  # fmt: skip
    assert shown["next_provider"] == "backup" and "HTTP 503" in shown["error"]
    page.locator(f"{where} li[data-kind=llm]").click()
    assert facts(page, detail, "model-facts")["provider"] == "backup"


def test_a_failed_attempt_shows_live_and_stored(browser: Browser, base: str) -> None:
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        start_run(page, "chain")
        wait_status(page, "completed")
        assert page.text_content("#final pre.answer") == "answered by the backup"
        check_steps(page, "#steps", "#detail")
        page.click(".nav-link[data-view=runs]")
        page.locator("tr.run-row").first.click()
        page.wait_for_selector("#stored-run ol.steps li[data-kind=provider_failed]")
        check_steps(page, "#stored-run ol.steps", "#stored-run .detail")
