"""``GET /api/audit?gate=`` over loopback HTTP, on SQLite and PostgreSQL: only that gate's
decisions, each with its count; a value that is no gate is a 400 naming the gates."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from toolwire.inspector import create_app
from toolwire.store import RunStore

from ..governed import governed_run
from ..inspector_kit import AUTH, live_server, settings
from .test_gate_counts import ADMIN_ONLY, WORKSPACE_ONLY, plain_run


@pytest.fixture
def served(store: RunStore) -> Iterator[tuple[str, str, str]]:
    """The base URL of an inspector over ``store``, with the governed and the plain run's ids."""
    _, governed = governed_run(store)
    plain = plain_run(store)
    with live_server(create_app(settings(store=store, privacy_level="metadata"))) as url:
        yield url, governed.run_id, plain


def audit(url: str, **params: str) -> httpx.Response:
    return httpx.get(f"{url}/api/audit", params=params, headers=AUTH, timeout=30)


def test_the_gate_parameter_lists_only_that_gate(served: tuple[str, str, str]) -> None:
    url, governed, plain = served
    offers = audit(url, gate="offer").json()["decisions"]
    assert [(d["run_id"], d["reason"], d["tool"], d["count"]) for d in offers] == [
        (plain, "requires_admin", None, len(ADMIN_ONLY)),
        (plain, "no_workspace", None, len(WORKSPACE_ONLY)),
        (governed, "not_registered", "ghost", 1),
        (governed, "disabled", "off_tool", 1),
        (governed, "requires_admin", "admin_tool", 1),
        (governed, "trust_zone", "vault", 1),
    ]
    calls = audit(url, gate="call", run_id=governed).json()["decisions"]
    assert {d["gate"] for d in calls} == {"call"} and len(calls) == 5
    budget = audit(url, gate="budget", reason="budget_exhausted").json()["decisions"]
    assert [(d["gate"], d["detail"]) for d in budget] == [("budget", "after 4 rounds, 110 tokens")]
    assert audit(url, gate="rounds").json() == {"decisions": [], "stored": True}


@pytest.mark.parametrize("value", ["offers", "OFFER", " call", "0"])
def test_a_value_that_is_no_gate_is_a_400_naming_the_gates(
    served: tuple[str, str, str], value: str
) -> None:
    response = audit(served[0], gate=value)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "bad_request", "message": (
        f"gate: {value!r} is not a gate; choose one of offer, call, approval, context, budget, "
        "egress, rounds")}}  # fmt: skip


def test_the_api_document_names_the_gates(served: tuple[str, str, str]) -> None:
    document = httpx.get(f"{served[0]}/api/openapi.json", headers=AUTH, timeout=30).json()
    (gate,) = [p for p in document["paths"]["/api/audit"]["get"]["parameters"]
               if p["name"] == "gate"]  # fmt: skip
    assert gate["schema"]["enum"] == [
        "offer", "call", "approval", "context", "budget", "egress", "rounds",
    ]  # fmt: skip
