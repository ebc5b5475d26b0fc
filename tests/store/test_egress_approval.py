"""Egress limits that ask a person, and a workspace's limit across its runs, on a real SQLite
file and a real PostgreSQL, against an OpenAI-compatible server over loopback: the bytes the
server received are the ones counted, a request that would pass a limit never reaches it
before a person approves, and a decision from a store opened afresh (as another process's)
carries the run on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, update

from toolwire import RunOptions, ToolRegistry, tool
from toolwire.core.errors import RunNotWaiting, StoreError
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.loop.state import RunState
from toolwire.policy.charter import CharterRefused, ProviderRef
from toolwire.runs.runtime import (
    WORKSPACE_EGRESS_UNREAD,
    OperatorDecision,
    RunOutcome,
    RunRequest,
    Runtime,
)
from toolwire.store import RunStore, schema
from toolwire.tools.api import ToolContext, User
from toolwire.workspace.config import load_workspace

from ..providers.servers import FakeModel, loopback
from ..providers.test_egress_ledger import provider_at, received
from .conftest import Backend

NOTE = "note-4b7e: ünïcode ✓"


@tool(integrity="untrusted", data_class="content")
def read_note(name: str) -> str:
    """Read a note."""
    return f"{name} {NOTE}"


def registry() -> ToolRegistry:
    return ToolRegistry([read_note])


ONE = len(f"a {NOTE}".encode())  # one note's bytes: every name below is one letter
READS = [[("read_note", {"name": n})] for n in "abc"]  # requests carry 0, 1, 2, then 3 notes


def sent_by_server(model: FakeModel) -> list[int]:
    return [sum(sizes.values()) for sizes in received(c.json() for c in model.captured)]


def runtime(store: RunStore, key: StateKey, url: str) -> Runtime:
    def factory(ref: ProviderRef) -> Any:
        return provider_at(url)

    return Runtime(registry(), recorder=store, state_key=key, provider_factory=factory)


def start(
    store: RunStore,
    key: StateKey,
    url: str,
    options: RunOptions,
    context: ToolContext | None = None,
) -> RunOutcome:
    request = RunRequest.of("go", provider=provider_at(url), options=options,
                            context=context or ToolContext())  # fmt: skip
    return runtime(store, key, url).run_sync(request)


def decide(
    backend: Backend, key: StateKey, url: str, run_id: str, action: Any, **who: Any
) -> RunOutcome:
    """Decide in a runtime of its own, on a store opened afresh (as another process would)."""
    again = runtime(backend.open(), key, url)
    pause = again.pending(run_id)
    decision = OperatorDecision(action=action, digest=pause.digest, actor=who.get("actor", "op"),
                                admin=who.get("admin", True))  # fmt: skip
    return again.resume_sync(run_id, decision)


def test_a_crossing_waits_then_approving_sends_it_and_the_next_one_asks_again(
    backend: Backend,
) -> None:
    key, model = StateKey.generate(), FakeModel(turns=[*READS, "done"])
    options = RunOptions(max_egress_bytes=ONE, on_egress_limit="approve")
    with loopback(model) as url:
        first = start(backend.open(), key, url, options)
        assert first.status is RunStatus.AWAITING_APPROVAL and first.pause is not None
        assert sent_by_server(model) == [0, ONE]  # the third request (two notes) never left
        shown = first.pause.to_dict()
        assert (shown["kind"], shown["calls"], shown["previews"]) == ("egress", [], [])
        assert {k: v for k, v in shown["egress"].items() if k != "limits"} == {
            "provider": "openai", "scope": "run", "sent_bytes": ONE, "request_bytes": 2 * ONE,
            "limit_bytes": ONE,
        }  # fmt: skip
        # approved: sent; the run may send one more limit's worth past it, and then asks again
        second = decide(backend, key, url, first.run_id, "approve")
        assert sent_by_server(model) == [0, ONE, 2 * ONE]
        assert second.status is RunStatus.AWAITING_APPROVAL and second.pause is not None
        egress = second.pause.to_dict()["egress"]
        assert (egress["sent_bytes"], egress["request_bytes"], egress["limit_bytes"]) == (
            3 * ONE, 3 * ONE, ONE + 3 * ONE,
        )  # fmt: skip
        denied = decide(backend, key, url, first.run_id, "deny")
    assert denied.result is not None and denied.result.reason == "egress_limit"
    assert sent_by_server(model) == [0, ONE, 2 * ONE]  # denied: nothing more went out
    store = backend.open()
    assert store.egress_spent(first.run_id) == 3 * ONE
    stored = store.get_run(first.run_id)
    assert stored is not None and stored.termination_reason == "egress_limit"
    decisions = [s for s in stored.steps if s["kind"] == "decision"]
    assert [(d["decision"], d["decided_by"]) for d in decisions] == [
        ("approve", "op"), ("deny", "op"),
    ]  # fmt: skip


def test_only_who_the_charter_allows_decides_and_a_pause_takes_no_input(backend: Backend) -> None:
    key, model = StateKey.generate(), FakeModel(turns=[*READS[:2], "done"])
    options = RunOptions(max_egress_bytes=ONE, on_egress_limit="approve")
    with loopback(model) as url:
        waiting = start(backend.open(), key, url, options, ToolContext(user=User("ann")))
        with pytest.raises(CharterRefused):
            decide(backend, key, url, waiting.run_id, "approve", actor="mallory", admin=False)
        with pytest.raises(RunNotWaiting, match="waits for approve or deny, not input"):
            decide(backend, key, url, waiting.run_id, "input")
        assert sent_by_server(model) == [0, ONE]
        done = decide(backend, key, url, waiting.run_id, "approve", actor="ann", admin=False)
    assert done.status is RunStatus.COMPLETED
    assert sent_by_server(model) == [0, ONE, 2 * ONE]


def test_the_sealed_egress_pause_opens_as_it_was_sealed(backend: Backend) -> None:
    key, model = StateKey.generate(), FakeModel(turns=[*READS, "done"])
    options = RunOptions(max_egress_bytes=ONE, on_egress_limit="approve")
    with loopback(model) as url:
        waiting = start(backend.open(), key, url, options)
    assert waiting.pause is not None
    state = runtime(backend.open(), key, "http://127.0.0.1:9").suspended(waiting.run_id)
    assert state.pause == waiting.pause
    assert RunState.from_json(state.to_json()) == state
    assert state.egress_granted == (0, 0)


def workspace_file(tmp_path: Path, egress: str) -> Path:
    path = tmp_path / "workspace.toml"
    path.write_text(f"[egress]\n{egress}\n")
    return path


def test_a_workspace_limit_counts_every_run_of_it_within_its_window(
    backend: Backend, tmp_path: Path
) -> None:
    path = workspace_file(tmp_path, f'max_workspace_bytes = {4 * ONE}\nwindow = "1h"')
    context = ToolContext(workspace=load_workspace(path))
    key, model = StateKey.generate(), FakeModel(turns=[*READS[:2], "done"])  # 0, 1, 2 notes
    with loopback(model) as url:
        one = start(backend.open(), key, url, RunOptions(), context)
        assert one.status is RunStatus.COMPLETED and sent_by_server(model) == [0, ONE, 2 * ONE]
        model.captured.clear()
        two = start(backend.open(), key, url, RunOptions(), context)
        # 3 ONE sent by the first; the second's 1 ONE fits, its 2 ONE more would not
        assert two.result is not None and two.result.reason == "egress_limit"
        assert sent_by_server(model) == [0, ONE]
        alone = start(backend.open(), key, url, RunOptions())  # no workspace: no limit
        assert alone.status is RunStatus.COMPLETED
        store = backend.open()
        assert store.workspace_egress(_key(path)) == 4 * ONE
        _age(store, timedelta(hours=2))  # every row so far: out of the window now
        model.captured.clear()
        three = start(backend.open(), key, url, RunOptions(), context)
    assert three.status is RunStatus.COMPLETED
    assert sent_by_server(model) == [0, ONE, 2 * ONE]


def test_a_workspace_that_asks_waits_and_approving_raises_only_that_run(
    backend: Backend, tmp_path: Path
) -> None:
    egress = f'max_workspace_bytes = {2 * ONE}\non_limit = "approve"'
    context = ToolContext(workspace=load_workspace(workspace_file(tmp_path, egress)))
    key, model = StateKey.generate(), FakeModel(turns=[*READS[:2], "done"])
    with loopback(model) as url:
        one = start(backend.open(), key, url, RunOptions(), context)
        assert one.status is RunStatus.AWAITING_APPROVAL and one.pause is not None
        egress_shown = one.pause.to_dict()["egress"]
        assert (egress_shown["scope"], egress_shown["sent_bytes"]) == ("workspace", ONE)
        assert decide(backend, key, url, one.run_id, "approve").status is RunStatus.COMPLETED
        model.captured.clear()
        two = start(backend.open(), key, url, RunOptions(), context)  # 3 ONE sent already
    assert two.status is RunStatus.AWAITING_APPROVAL and two.pause is not None
    assert two.pause.to_dict()["egress"]["sent_bytes"] == 3 * ONE
    assert sent_by_server(model) == [0]  # its first request carried no tool output


def test_a_run_stop_wins_over_a_workspace_that_asks(backend: Backend, tmp_path: Path) -> None:
    egress = f'max_run_bytes = {ONE}\non_limit = "approve"'
    context = ToolContext(workspace=load_workspace(workspace_file(tmp_path, egress)))
    key, model = StateKey.generate(), FakeModel(turns=[*READS, "done"])
    with loopback(model) as url:
        stopped = start(backend.open(), key, url, RunOptions(on_egress_limit="stop"), context)
    assert stopped.result is not None and stopped.result.reason == "egress_limit"
    assert sent_by_server(model) == [0, ONE]


def test_a_workspace_limit_its_store_cannot_read_sends_nothing_and_fails_saying_why(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace's total unknown, the limit is not taken as unreached: nothing is sent."""
    path = workspace_file(tmp_path, f'max_workspace_bytes = {100 * ONE}\nwindow = "1h"')
    context = ToolContext(workspace=load_workspace(path))
    store = backend.open()

    def broken(*args: Any, **kwargs: Any) -> int:
        raise StoreError("the run store is unreachable")

    monkeypatch.setattr(store, "workspace_egress", broken)
    key, model = StateKey.generate(), FakeModel(turns=[*READS[:2], "done"])
    with loopback(model) as url:
        failed = start(store, key, url, RunOptions(), context)
    assert failed.status is RunStatus.FAILED
    assert failed.error is not None and WORKSPACE_EGRESS_UNREAD in failed.error
    assert model.captured == []


def _key(path: Path) -> str:
    from toolwire.policy.egress import workspace_key

    return workspace_key(path)


def _age(store: RunStore, by: timedelta) -> None:
    engine = create_engine(store.url)
    with engine.begin() as connection:
        connection.execute(update(schema.egress).values(at=datetime.now(UTC) - by))
    engine.dispose()


PG_INDEXES = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"


def test_a_version_13_database_gains_the_runs_workspace(backend: Backend, tmp_path: Path) -> None:
    from sqlalchemy import text

    from toolwire.store.migrations import LATEST

    path = workspace_file(tmp_path, f"max_workspace_bytes = {100 * ONE}")
    context = ToolContext(workspace=load_workspace(path))
    key, model = StateKey.generate(), FakeModel(turns=[*READS[:1], "done"])
    with loopback(model) as url:
        old = start(backend.open(), key, url, RunOptions(), context)
        for store in backend.stores:
            store.close()
        engine = create_engine(backend.stores[0].url)
        with engine.begin() as connection:
            connection.execute(text("DROP INDEX ix_runs_workspace"))
            connection.execute(text("ALTER TABLE runs DROP COLUMN workspace"))
            connection.execute(update(schema.schema_version).values(version=13))
        engine.dispose()
        again = backend.open()
        assert again.workspace_egress(_key(path)) == 0  # stored before: counted nowhere
        fresh = start(again, key, url, RunOptions(), context)
    assert old.status is fresh.status is RunStatus.COMPLETED
    assert again.workspace_egress(_key(path)) == ONE
    engine = create_engine(again.url)
    with engine.connect() as connection:
        listed = (PG_INDEXES if backend.kind == "postgresql"
                  else "SELECT name FROM sqlite_master WHERE type = 'index'")  # fmt: skip
        names = set(connection.execute(text(listed)).scalars())
        version = connection.execute(text("SELECT version FROM schema_version")).scalar()
    engine.dispose()
    assert "ix_runs_workspace" in names and version == LATEST == 15


def test_runs_racing_a_workspace_budget_pass_it_by_at_most_one_request_each(
    backend: Backend, tmp_path: Path
) -> None:
    import asyncio

    limit = 5 * ONE
    path = workspace_file(tmp_path, f"max_workspace_bytes = {limit}")
    context = ToolContext(workspace=load_workspace(path))
    key, model = StateKey.generate(), FakeModel(turns=[*READS, "done"])  # 6 ONE each, alone
    store = backend.open()
    with loopback(model) as url:
        runner = runtime(store, key, url)

        async def both() -> list[RunOutcome]:
            requests = [RunRequest.of("go", provider=provider_at(url), options=RunOptions(),
                                      context=context) for _ in range(3)]  # fmt: skip
            return list(await asyncio.gather(*(runner.run(r) for r in requests)))

        outcomes = asyncio.run(both())
    reasons = [o.result.reason for o in outcomes if o.result is not None]
    assert "egress_limit" in reasons  # 18 ONE wanted, 5 allowed
    total = sum(sent_by_server(model))
    assert total == store.workspace_egress(_key(path))
    largest = 3 * ONE  # the most one request of these runs carries
    assert total <= limit + 2 * largest  # one request in flight per other run, at most
