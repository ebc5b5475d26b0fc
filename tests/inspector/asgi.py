"""The inspector in process: an httpx client over ASGI, under the loopback name it answers."""

from __future__ import annotations

from typing import Any

import httpx

BASE = "http://127.0.0.1:8765"  # a loopback name: the inspector answers no other


def asgi_client(app: Any) -> httpx.AsyncClient:
    """A client of ``app`` (use it as ``async with``); nothing leaves the process."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE)
