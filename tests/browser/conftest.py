"""One Chromium per test module, and a watched page of the module's server (``base``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from ..inspector_kit import TOKEN
from .harness import Watched, launch, watching


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launch()


@pytest.fixture
def watched(browser: Browser, base: str) -> Iterator[Watched]:
    """The inspector at the module's ``base`` URL; no dialog or page error may happen in it."""
    with watching(browser, base, TOKEN) as watched:
        yield watched
