"""One Chromium per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from .harness import launch


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from launch()
