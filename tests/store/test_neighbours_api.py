"""``GET /api/runs/{id}/neighbours`` over loopback HTTP, on SQLite and PostgreSQL: the runs
before and after one run are those the listing shows next to it, for every sort and order, on
any page, with the filters applied and the privacy level's filter too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store.browse import SORTS

from ..inspector_kit import AUTH, live_server, registry, settings, write_note
from .conftest import Backend
from .test_browse_api import SCRIPTS

Serve = Callable[[PrivacyLevel], httpx.Client]
CANARY = "marmalade"  # in the echoing runs' call arguments and results, and in no name


@pytest.fixture
def serve(backend: Backend) -> Iterator[Serve]:
    """A live inspector over the test's database keeping runs at a level; an HTTP client."""
    with ExitStack() as stack:

        def make(level: PrivacyLevel) -> httpx.Client:
            tools = registry()
            tools.register(write_note)
            app = create_app(settings(store=backend.open(level), privacy_level=str(level),
                                      scripts=SCRIPTS, state_key=StateKey.generate(),
                                      registry=tools))  # fmt: skip
            base = stack.enter_context(live_server(app))
            return stack.enter_context(httpx.Client(base_url=base, headers=AUTH, timeout=30))

        yield make


def start(client: httpx.Client, provider: str, prompt: str = "orders?") -> str:
    answer = client.post("/api/runs", json={"prompt": prompt, "provider": provider})
    assert answer.status_code == 200, answer.text
    run_id: str = answer.json()["context"]["run_id"]
    return run_id


def listing(client: httpx.Client, **params: Any) -> list[str]:
    page = client.get("/api/runs", params={"limit": 200, **params}).json()
    return [r["id"] for r in page["runs"]]


def neighbours(client: httpx.Client, run_id: str, **params: Any) -> dict[str, Any]:
    answer = client.get(f"/api/runs/{run_id}/neighbours", params=params)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def ids(found: dict[str, Any]) -> tuple[str | None, str | None, int | None, int]:
    near = [None if found[k] is None else found[k]["id"] for k in ("previous", "next")]
    return near[0], near[1], found["position"], found["total"]


def test_neighbours_are_the_listings_in_every_sort_and_order(serve: Serve) -> None:
    client = serve(PrivacyLevel.FULL)
    # No run has a cost (scripts have no price); the waiting one has no duration yet.
    for provider in ("scripted", "echoing", "failing", "approve", "scripted", "echoing"):
        start(client, provider)
    for sort in SORTS:
        for order in ("desc", "asc"):
            listed = listing(client, sort=sort, order=order)
            assert len(listed) == 6
            for at, run_id in enumerate(listed):
                found = neighbours(client, run_id, sort=sort, order=order, limit=1, offset=4)
                expected = (
                    listed[at - 1] if at else None,
                    listed[at + 1] if at + 1 < len(listed) else None,
                    at + 1,
                    6,
                )
                assert ids(found) == expected, (sort, order, at)


def test_the_filters_apply_and_a_run_they_leave_out_still_has_neighbours(serve: Serve) -> None:
    client = serve(PrivacyLevel.FULL)
    a, b, c, d, e = (start(client, p) for p in
                     ("scripted", "echoing", "failing", "scripted", "echoing"))  # fmt: skip
    assert listing(client) == [e, d, c, b, a]
    assert ids(neighbours(client, c)) == (d, b, 3, 5)
    assert ids(neighbours(client, e, provider="echoing")) == (None, b, 1, 2)
    assert ids(neighbours(client, c, provider="echoing")) == (e, b, None, 2)  # between them
    assert ids(neighbours(client, a, has_error="true")) == (c, None, None, 1)
    assert ids(neighbours(client, c, q=CANARY)) == (e, b, None, 2)  # the words full keeps
    found = neighbours(client, c)
    assert found["run_id"] == c
    assert found["previous"]["prompt_preview"] == "orders?"  # as the listing shows it
    assert found["next"]["provider"] == "echoing" and found["next"]["step_count"] == 5


def test_neighbours_keep_only_what_the_privacy_level_kept(serve: Serve) -> None:
    client = serve(PrivacyLevel.METADATA)
    first, middle, last = (start(client, p, prompt=f"{CANARY} orders?")
                           for p in ("echoing", "scripted", "echoing"))  # fmt: skip
    answer = client.get(f"/api/runs/{middle}/neighbours")
    assert ids(answer.json()) == (last, first, 2, 3)
    assert CANARY not in answer.text  # neither the prompt nor the calls' words
    assert answer.json()["previous"]["prompt_preview"] is None
    assert ids(neighbours(client, middle, q=CANARY)) == (None, None, None, 0)  # not searchable
    assert ids(neighbours(client, middle, q="echo")) == (last, first, None, 2)  # a name is kept


def test_bad_input_is_a_clear_error(serve: Serve) -> None:
    client = serve(PrivacyLevel.METADATA)
    run_id = start(client, "scripted")
    cases = {
        f"/api/runs/{'0' * 36}/neighbours": (404, "no stored run has this id"),
        "/api/runs/not a run/neighbours": (422, "run_id"),
        f"/api/runs/{run_id}/neighbours?sort=price": (422, "sort"),
        f"/api/runs/{run_id}/neighbours?since=yesterday": (422, "since"),
    }
    for path, (status, named) in cases.items():
        answer = client.get(path)
        assert answer.status_code == status, (path, answer.text)
        assert named in str(answer.json()["error"]), (path, answer.json())
    assert httpx.get(f"{client.base_url}/api/runs/{run_id}/neighbours").status_code == 401


def test_without_a_store_no_run_has_neighbours() -> None:
    with live_server(create_app(settings())) as base:
        answer = httpx.get(f"{base}/api/runs/{'0' * 36}/neighbours", headers=AUTH)
    assert (answer.status_code, answer.json()["error"]["message"]) == (
        404, "no stored run has this id"
    )  # fmt: skip
