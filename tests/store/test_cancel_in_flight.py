"""A cancel made in another process aborts the model call a run has in flight in this one.

The run executes here, on a runtime around a real store (a SQLite file, a PostgreSQL schema);
its model is a real HTTP server on loopback that holds its answer to one request. The cancel
comes from elsewhere: a second store on the same database (another process's view of it, with
its own cancel watch) or ``toolwire runs cancel`` as a process of its own. The server must see
the connection closed before it sent that answer, and the run must settle ``cancelled`` with
exactly the steps recorded before the call, none for the answer it never got.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from toolwire import RunOptions, ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.loop.run import OperatorDecision, RunOutcome, RunRequest
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.runs.runtime import Runtime
from toolwire.store import RunStore

from ..providers.servers import SlowModel, Turn, slow_loopback
from .conftest import Backend
from .helpers import lookup

KEY = StateKey(b"c" * 32)
# Generous: the cancel is seen within a poll (0.02 s); a run that is not aborted ends when the
# server answers after its hold (15 s), and then fails the ordering asserted below.
WAIT_SECONDS = 30
LOOKUP: Turn = [("lookup", {"query": "orders"})]


@tool(data_class="public", requires_approval=True)
def stamp(n: int) -> str:
    """Stamp a number (needs approval)."""
    return f"stamped {n}"


Cancel = Callable[[Backend, str], None]  # cancel the run of this id from elsewhere


def through_another_store(backend: Backend, run_id: str) -> None:
    other = backend.open()  # its own engine and cancel watch, as another process has
    assert other.request_cancel(run_id)


def with_the_command(backend: Backend, run_id: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "runs", "cancel", run_id, "--db", backend.url],
        capture_output=True, text=True, env=env, timeout=WAIT_SECONDS, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, f"run {run_id} cancelled\n"), done.stderr


CANCELS = [pytest.param(through_another_store, id="store"),
           pytest.param(with_the_command, id="command")]  # fmt: skip


def provider(base: str) -> OpenAIProvider:
    http = HttpSettings(timeout=WAIT_SECONDS)
    return OpenAIProvider(model="m", api_key="sk-test", base_url=base, http=http)


def cancelled_while_asked(
    model: SlowModel, cancel: Callable[[], None], segment: Coroutine[Any, Any, RunOutcome]
) -> RunOutcome:
    """Run ``segment`` here; once the model holds its answer, ``cancel`` from another thread."""
    failures: list[BaseException] = []

    def cancel_when_asked() -> None:
        try:
            assert model.asked.wait(WAIT_SECONDS), "the slow request never came"
            cancel()
        except BaseException as exc:  # reported by the test, not lost in a thread
            failures.append(exc)

    canceller = threading.Thread(target=cancel_when_asked)
    canceller.start()
    try:
        return asyncio.run(segment)
    finally:
        canceller.join(WAIT_SECONDS)
        assert failures == []


def assert_aborted(model: SlowModel, outcome: RunOutcome, kinds: list[str]) -> None:
    """The held answer was never sent, and the segment ended cancelled with ``kinds``."""
    assert model.ended.wait(WAIT_SECONDS)
    assert model.events == ["asked", "closed"]
    assert outcome.status is RunStatus.CANCELLED
    assert [s.kind for s in outcome.steps] == kinds


def stored_kinds(store: RunStore, run_id: str) -> list[str]:
    stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.status, stored.termination_reason) == ("cancelled", "cancelled")
    assert [s["sequence"] for s in stored.steps] == list(range(1, len(stored.steps) + 1))
    return [s["kind"] for s in stored.steps]


@pytest.mark.parametrize("cancel", CANCELS)
def test_a_cancel_from_elsewhere_aborts_a_runs_model_call(backend: Backend, cancel: Cancel) -> None:
    store = backend.open()
    model = SlowModel(turns=[LOOKUP, "all done"], slow_request=1)
    runtime = Runtime(ToolRegistry([lookup]), recorder=store)
    run_ids: list[str] = []
    with slow_loopback(model) as base:
        request = RunRequest.of("q", provider=provider(base), options=RunOptions(stream=False))
        segment = runtime.run(request, on_start=run_ids.append)
        outcome = cancelled_while_asked(model, lambda: cancel(backend, run_ids[0]), segment)
    kinds = ["request", "llm", "tool", "request"]  # none for the answer it never got
    assert_aborted(model, outcome, kinds)
    assert stored_kinds(store, outcome.run_id) == kinds


def test_a_cancel_from_elsewhere_aborts_a_resumed_runs_model_call(backend: Backend) -> None:
    store = backend.open()
    model = SlowModel(turns=[[("stamp", {"n": 1})], "stamped"], slow_request=1)
    runtime = Runtime(ToolRegistry([stamp]), recorder=store, state_key=KEY)
    with slow_loopback(model) as base:
        request = RunRequest.of("q", provider=provider(base), options=RunOptions(stream=False))
        waiting = runtime.run_sync(request)
        assert waiting.status is RunStatus.AWAITING_APPROVAL and waiting.pause is not None
        decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ops")
        segment = runtime.resume(waiting.run_id, decision, provider=provider(base))
        cancel = lambda: through_another_store(backend, waiting.run_id)  # noqa: E731
        outcome = cancelled_while_asked(model, cancel, segment)
    assert_aborted(model, outcome, ["decision", "tool", "request"])
    kinds = ["request", "llm", "decision", "tool", "request"]
    assert stored_kinds(store, outcome.run_id) == kinds
