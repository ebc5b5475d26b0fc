"""The egress ledger as the store keeps it, on a SQLite file and on PostgreSQL: its rows match the
tool-result bytes a loopback model server received, at every privacy level (counts only), over
a run suspended and resumed by another runtime and store, with the limit counting every
segment; and a database at version 12 gains the table."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, text, update

from toolwire import RunOptions, ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ChatMessage, ToolCall
from toolwire.core.sealing import StateKey
from toolwire.policy.charter import ProviderRef
from toolwire.policy.containment import Labels
from toolwire.policy.egress import Ledger
from toolwire.policy.privacy import PrivacyLevel, plain_id
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore, schema
from toolwire.store.migrations import LATEST

from ..providers.servers import FakeModel, loopback
from ..providers.test_egress_ledger import provider_at, received
from .conftest import Backend

SECRET_NOTE = "note-text-7d1e: ünïcode ✓"


@tool(integrity="untrusted", data_class="content")
def read_note(name: str) -> str:
    """Read a note."""
    return f"{name} {SECRET_NOTE}"


@tool(data_class="public", requires_approval=True, integrity="trusted")
def archive(name: str) -> str:
    """Archive a note (needs approval)."""
    return f"archived {name}"


def registry() -> ToolRegistry:
    return ToolRegistry([read_note, archive])


TURNS: list[Any] = [
    [("read_note", {"name": "a"})],
    [("archive", {"name": "a"}), ("read_note", {"name": "b"})],
    "done",
]


def server_total(model: FakeModel) -> Counter[str]:
    out: Counter[str] = Counter()
    for sizes in received(c.json() for c in model.captured):
        out.update(sizes)
    return out


def stored(store: RunStore, run_id: str) -> Counter[str]:
    return Counter({t.tool or "": t.wire_bytes for t in store.egress(run_id=run_id, by=["tool"])})


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_the_stored_ledger_is_what_the_server_received(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    model = FakeModel(turns=[[("read_note", {"name": "a"})], [("read_note", {"name": "b"})],
                             "done"])  # fmt: skip
    with loopback(model) as url:
        request = RunRequest.of("go", provider=provider_at(url), options=RunOptions())
        outcome = Runtime(registry(), recorder=store).run_sync(request)
    assert outcome.status is RunStatus.COMPLETED
    got = server_total(model)
    assert got["read_note"] == 2 * len(f"a {SECRET_NOTE}".encode()) + len(
        f"b {SECRET_NOTE}".encode()
    )
    assert stored(store, outcome.run_id) == got
    [line] = store.egress(run_id=outcome.run_id)
    assert (line.provider, line.tool, line.data_class, line.label) == (
        "openai", "read_note", "content", "untrusted",
    )  # fmt: skip
    assert line.new_bytes == len(f"a {SECRET_NOTE}".encode()) + len(f"b {SECRET_NOTE}".encode())
    if level in (PrivacyLevel.NONE, PrivacyLevel.METADATA):
        assert SECRET_NOTE.encode() not in backend.raw_bytes()


def test_totals_over_a_time_range_sum_every_run(store: RunStore) -> None:
    model = FakeModel(turns=[[("read_note", {"name": "a"})], "done"])
    with loopback(model) as url:
        for _ in range(2):
            model.captured.clear()
            request = RunRequest.of("go", provider=provider_at(url), options=RunOptions())
            Runtime(registry(), recorder=store).run_sync(request)
    one = len(f"a {SECRET_NOTE}".encode())
    now = datetime.now(UTC)
    [total] = store.egress(by=["provider"], since=now - timedelta(hours=1))
    assert (total.provider, total.wire_bytes, total.new_bytes) == ("openai", 2 * one, 2 * one)
    assert store.egress(by=[], until=now - timedelta(hours=1)) == []
    [grand] = store.egress(by=[])
    assert grand.to_dict() == {"new_bytes": 2 * one, "wire_bytes": 2 * one}


def _suspended(store: RunStore, url: str, key: StateKey, options: RunOptions) -> str:
    request = RunRequest.of("go", provider=provider_at(url), options=options)
    outcome = Runtime(registry(), recorder=store, state_key=key).run_sync(request)
    assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
    return outcome.run_id


def _resume(backend: Backend, url: str, key: StateKey, run_id: str) -> Any:
    """Resume in a runtime of its own, on a store opened afresh (as another process would)."""
    store = backend.open()

    def factory(ref: ProviderRef) -> Any:
        return provider_at(url)

    runtime = Runtime(registry(), recorder=store, state_key=key, provider_factory=factory)
    pause = runtime.pending(run_id)
    decision = OperatorDecision(action="approve", digest=pause.digest, actor="operator")
    return store, runtime.resume_sync(run_id, decision)


def test_a_resumed_run_counts_both_segments(backend: Backend) -> None:
    key, model = StateKey.generate(), FakeModel(turns=TURNS)
    with loopback(model) as url:
        run_id = _suspended(backend.open(), url, key, RunOptions())
        again, outcome = _resume(backend, url, key, run_id)
    assert outcome.status is RunStatus.COMPLETED
    assert len(model.captured) == 3
    assert stored(again, run_id) == server_total(model)
    assert again.egress_spent(run_id) == sum(server_total(model).values())


def test_the_limit_counts_what_earlier_segments_sent(backend: Backend) -> None:
    key, model = StateKey.generate(), FakeModel(turns=TURNS)
    first = len(f"a {SECRET_NOTE}".encode())
    # the second request carried one note; the third would carry it again, with another and
    # the archive's answer: more than twice the first in all
    with loopback(model) as url:
        run_id = _suspended(backend.open(), url, key, RunOptions(max_egress_bytes=2 * first))
        again, outcome = _resume(backend, url, key, run_id)
    assert outcome.result is not None and outcome.result.reason == "egress_limit"
    assert len(model.captured) == 2  # the third request never went out
    assert again.egress_spent(run_id) == first


REFUSING: list[Any] = [
    [("read_note", {"name": "a"}), ("read_note", {"name": "b"})],  # the second: past the cap
    [("archive", {"name": "a"})],
    "done",
]


def by_label(model: FakeModel, refused_id: str) -> Counter[tuple[str, str, str]]:
    """What the server received, per tool, data class and label: the call ``refused_id``'s
    result is the runtime's text."""
    out: Counter[tuple[str, str, str]] = Counter()
    for body in (c.json() for c in model.captured):
        names = {call["id"]: call["function"]["name"] for m in body["messages"]
                 for call in m.get("tool_calls") or ()}  # fmt: skip
        for m in (m for m in body["messages"] if m["role"] == "tool"):
            name, size = names[m["tool_call_id"]], len(m["content"].encode())
            if m["tool_call_id"] == refused_id:
                out[name, "public", "runtime"] += size
            elif name == "read_note":
                out[name, "content", "untrusted"] += size
            else:
                out[name, "public", "trusted"] += size
    return out


@pytest.mark.parametrize("level", [PrivacyLevel.METADATA, PrivacyLevel.FULL])
def test_a_refusal_of_an_earlier_segment_stays_the_runtime_s_after_a_resume(
    backend: Backend, level: PrivacyLevel
) -> None:
    key, model = StateKey.generate(), FakeModel(turns=REFUSING)
    options = RunOptions(max_calls_per_turn=1)
    with loopback(model) as url:
        run_id = _suspended(backend.open(level), url, key, options)
        again, outcome = _resume(backend, url, key, run_id)
    assert outcome.status is RunStatus.COMPLETED and len(model.captured) == 3
    run = again.get_run(run_id)
    assert run is not None
    [refused] = [s for s in run.steps if s.get("tool_refused") == "too_many_calls"]
    expected = by_label(model, refused["tool_call_id"])
    assert expected["read_note", "public", "runtime"] > 0  # the refusal went out twice
    lines = again.egress(run_id=run_id, by=["tool", "data_class", "label"])
    got = Counter({(t.tool or "", t.data_class or "", t.label or ""): t.wire_bytes for t in lines})
    assert got == expected


def test_an_earlier_refusal_stored_by_its_digest_is_the_runtime_s() -> None:
    """A call id that is not plain is stored as its digest: the ledger knows it by that."""
    weird = "call 7/ü"
    ledger = Ledger(Labels.of(registry()), registry().__contains__, limit=None,
                    refused=frozenset({plain_id(weird)}))  # fmt: skip
    turn = ChatMessage.assistant("", tool_calls=(ToolCall(id=weird, name="read_note",
                                                          arguments="{}"),))  # fmt: skip
    sent = ledger.outgoing([ChatMessage.user("go"), turn, ChatMessage.tool_result(weird, "no")],
                           "openai")  # fmt: skip
    assert [line[:3] for line in sent.lines] == [("read_note", "public", "runtime")]


def test_a_version_12_database_gains_the_ledger(backend: Backend) -> None:
    store = backend.open()
    model = FakeModel(turns=[[("read_note", {"name": "a"})], "done"])
    with loopback(model) as url:
        old = Runtime(registry(), recorder=store).run_sync(
            RunRequest.of("go", provider=provider_at(url), options=RunOptions())
        )
    store.close()
    engine = create_engine(store.url)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE egress"))
        connection.execute(update(schema.schema_version).values(version=12))
    engine.dispose()
    again = backend.open()
    assert again.get_run(old.run_id) is not None
    assert again.egress(run_id=old.run_id) == []  # never counted: not guessed
    with loopback(model) as url:
        model.captured.clear()
        fresh = Runtime(registry(), recorder=again).run_sync(
            RunRequest.of("go", provider=provider_at(url), options=RunOptions())
        )
    assert stored(again, fresh.run_id) == server_total(model)
    engine = create_engine(again.url)
    with engine.connect() as connection:
        version = connection.execute(text("SELECT version FROM schema_version")).scalars().all()
    engine.dispose()
    assert version == [LATEST] == [15]
