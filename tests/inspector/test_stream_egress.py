"""The live stream's ``egress`` lines, over loopback HTTP to a loopback model server: one after
each step whose request sent tool output, counts and registered names only at every privacy
level; summed, they are what the server received and what the store's ledger holds; retries
and a fallback chain's failed attempt are counted; the other lines are as they were; and the
run followed from the store streams the same lines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolwire.core.jsonenc import loads
from toolwire.inspector import InspectorSettings, create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Provider
from toolwire.providers.fallback import FallbackProvider
from toolwire.store import RunStore

from ..inspector_kit import AUTH, TOKEN, live_server
from ..providers.servers import FakeModel, loopback
from ..providers.test_egress_ledger import provider_at, received
from ..providers.test_fallback import Endpoint, openai_at, serving
from ..store.test_egress_ledger import SECRET_NOTE, registry

TURNS: list[Any] = [[("read_note", {"name": "a"})], [("read_note", {"name": "b"})], "done"]
LINE_KEYS = ["tool", "data_class", "label", "new_bytes", "wire_bytes"]


def streamed(
    tmp_path: Path, level: PrivacyLevel, provider: Provider
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], RunStore]:
    """The events of one run of ``provider`` streamed by an inspector over a store at ``level``,
    and those of the run followed from the store once it ended (as a queued run is)."""
    store = RunStore.open(str(tmp_path / "runs.db"), privacy=level)

    def factory(name: str, model_name: str | None) -> Provider:
        return provider

    app = create_app(InspectorSettings(registry=registry(), provider_factory=factory,
                                       token=TOKEN, store=store,
                                       privacy_level=str(level)))  # fmt: skip
    with live_server(app) as base:
        body = {"prompt": "go", "provider": "openai", "allowed_tools": ["read_note"]}
        answer = httpx.post(f"{base}/api/runs/stream", json=body, headers=AUTH, timeout=60)
        assert answer.status_code == 200
        events = lines_of(answer.content)
        followed = httpx.get(f"{base}/api/runs/{events[0]['run_id']}/stream", headers=AUTH)
    return events, lines_of(followed.content), store


def lines_of(body: bytes) -> list[dict[str, Any]]:
    return [loads(line) for line in body.split(b"\n") if line]


def kinds_of(events: list[dict[str, Any]]) -> list[str]:
    """Each line's type, a step's kind in its place (the pieces of streamed answers left out)."""
    return [e["step"]["kind"] if e["type"] == "step" else e["type"] for e in events
            if e["type"] != "delta"]  # fmt: skip


def summed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream's egress lines summed per provider, tool, data class and label, as the
    store's ledger answers: most bytes first."""
    sums: dict[tuple[str, ...], Counter[str]] = {}
    for event in (e for e in events if e["type"] == "egress"):
        for line in event["lines"]:
            key = (event["provider"], line["tool"], line["data_class"], line["label"])
            sums.setdefault(key, Counter()).update(
                {"new_bytes": line["new_bytes"], "wire_bytes": line["wire_bytes"]}
            )
    rows = [dict(zip(("provider", "tool", "data_class", "label"), key, strict=True))
            | {"new_bytes": c["new_bytes"], "wire_bytes": c["wire_bytes"]}
            for key, c in sums.items()]  # fmt: skip
    return sorted(rows, key=lambda r: -r["wire_bytes"])


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_each_request_that_sent_tool_output_is_followed_by_its_egress_line(
    tmp_path: Path, level: PrivacyLevel
) -> None:
    model = FakeModel(turns=TURNS)
    with loopback(model) as url:
        events, followed, store = streamed(tmp_path, level, provider_at(url))
    try:
        run_id = events[0]["run_id"]
        stored = [t.to_dict() for t in store.egress(run_id=run_id)]
    finally:
        store.close()
    kinds = kinds_of(events)
    assert kinds == ["context", "request", "llm", "tool", "request", "llm", "egress", "tool",
                     "request", "llm", "egress", "end"]  # fmt: skip
    first, second = (e for e in events if e["type"] == "egress")
    one, two = len(f"a {SECRET_NOTE}".encode()), len(f"b {SECRET_NOTE}".encode())
    assert first == {
        "type": "egress",
        "round": 2,
        "provider": "openai",
        "copies": 1,
        "lines": [
            {
                "tool": "read_note",
                "data_class": "content",
                "label": "untrusted",
                "new_bytes": one,
                "wire_bytes": one,
            }
        ],
    }
    assert second["round"] == 3 and second["lines"] == [
        {"tool": "read_note", "data_class": "content", "label": "untrusted", "new_bytes": two,
         "wire_bytes": one + two}
    ]  # fmt: skip
    assert all(list(line) == LINE_KEYS for e in (first, second) for line in e["lines"])
    server = Counter[str]()
    for sizes in received(c.json() for c in model.captured):
        server.update(sizes)
    assert summed(events) == stored and stored[0]["wire_bytes"] == server["read_note"]
    assert all(SECRET_NOTE not in str(e) for e in events if e["type"] == "egress")
    assert kinds_of(followed) == kinds
    assert [e for e in followed if e["type"] == "egress"] == [first, second]


def test_a_chain_s_failed_attempt_and_its_retries_have_their_line(tmp_path: Path) -> None:
    # the first server fails round 3 twice (retried: two copies), then the chain moves on to
    # the second, which answers it
    first = Endpoint(plan=[None, None, 503, 503], model=FakeModel(turns=TURNS))
    second = Endpoint(model=FakeModel(turns=TURNS[2:]))
    with serving(first) as first_url, serving(second) as second_url:
        chain = FallbackProvider([provider_at(first_url, attempts=2, name="primary"),
                                  openai_at(second_url, name="backup")])  # fmt: skip
        events, followed, store = streamed(tmp_path, PrivacyLevel.NONE, chain)
    try:
        stored = [t.to_dict() for t in store.egress(run_id=events[0]["run_id"])]
    finally:
        store.close()
    kinds = kinds_of(events)
    assert kinds[-6:] == ["request", "provider_failed", "egress", "llm", "egress", "end"]
    failed, answered = (e for e in events if e["type"] == "egress" and e["round"] == 3)
    one, two = len(f"a {SECRET_NOTE}".encode()), len(f"b {SECRET_NOTE}".encode())
    assert (failed["provider"], failed["copies"]) == ("primary", 2)
    assert failed["lines"][0]["wire_bytes"] == 2 * (one + two)
    assert (answered["provider"], answered["copies"]) == ("backup", 1)
    assert answered["lines"][0]["wire_bytes"] == one + two
    assert summed(events) == stored
    assert [e for e in followed if e["type"] == "egress"] == [
        e for e in events if e["type"] == "egress"
    ]
    assert {r["provider"]: r["wire_bytes"] for r in stored} == {
        "primary": sum(sum(s.values()) for s in received(first.bodies)),
        "backup": sum(sum(s.values()) for s in received(second.bodies)),
    }


def test_the_other_lines_are_what_they_were(tmp_path: Path) -> None:
    """A reader that knows only the first lines' types reads the same steps as before: the
    steps carry no ledger of their own, and each is the one the store kept."""
    with loopback(FakeModel(turns=TURNS)) as url:
        events, _, store = streamed(tmp_path, PrivacyLevel.FULL, provider_at(url))
    try:
        run = store.get_run(events[0]["run_id"])
    finally:
        store.close()
    assert run is not None
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert all("egress" not in step for step in steps)
    assert [s["kind"] for s in steps] == [s["kind"] for s in run.steps]
    assert {e["type"] for e in events} == {"context", "step", "delta", "egress", "end"}
