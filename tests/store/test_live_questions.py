"""A server's live question answered from another process through the run store's board.

The run is carried out in a second process (``tests/store/live_run.py``, with a person to ask
as the inspector has), recorded in a real SQLite file or PostgreSQL; while its server's
question is open the run is ``awaiting_input`` and the question is on the board. Then
``toolwire runs pending`` (a third process) lists it and ``toolwire runs input`` answers it:
accepted (a bad answer refused naming the field, the question still open), declined or
cancelled; an inspector app that is not the run's answers it over loopback HTTP, but only
for an admin or the user the run acts for. A question nobody answers expires; a process
killed while it waits leaves its run interrupted. Every way, the question's row goes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from toolwire import RunOptions, ScriptedProvider, ToolRegistry
from toolwire.cli.ask import actor
from toolwire.core.lifecycle import RunStatus, can_move
from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.mcp.asks import Ask, Reply, attending
from toolwire.mcp.board import answer_on_board
from toolwire.mcp.elicit import NOBODY
from toolwire.mcp.hub import HUB
from toolwire.policy.trace import DecisionStep
from toolwire.queue.follow import follow
from toolwire.runs.questions import LiveQuestion
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore, schema
from toolwire.store.interrupted import INTERRUPTED_ERROR
from toolwire.store.questions import NO_KEY, SEALED
from toolwire.tools.api import ToolContext, User

from ..inspector_kit import AUTH, live_server, settings
from ..mcp.kit import PYTHON, remote_registry, script, workspace
from .conftest import Backend

ROOT = Path(__file__).parents[2]
WAIT_S = 60.0
KEY_TEXT = "5e" * 32  # the state key every process of these tests holds (one ignores it)
KEY = StateKey.parse(KEY_TEXT, "test")
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "COLUMNS": "200",
       "TOOLWIRE_STATE_KEY": KEY_TEXT}  # fmt: skip


class LiveRun:
    """The run of ``live_run.py`` in a process of its own (and its server in the same group)."""

    def __init__(self, backend: Backend, folder: Path, wait_s: float, user: str) -> None:
        self.backend = backend
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.store.live_run", backend.url, str(folder),
             str(wait_s), user],
            cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        assert first, self.process.communicate(timeout=30)
        self.run_id: str = json.loads(first)["run_id"]

    def question(self, store: RunStore) -> LiveQuestion:
        """The run's question, once it is on the board."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            found = store.open_questions(self.run_id)
            if found:
                return found[0]
            assert self.process.poll() is None, self.process.communicate()
            time.sleep(0.05)
        raise AssertionError("the run never asked")

    def ended(self) -> dict[str, Any]:
        out, err = self.process.communicate(timeout=WAIT_S)
        assert self.process.returncode == 0, err
        last: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return last

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate(timeout=30)  # reaped: its id names no process now

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@contextmanager
def live_run(
    backend: Backend, folder: Path, wait_s: float = WAIT_S, user: str = "ada"
) -> Iterator[LiveRun]:
    running = LiveRun(backend, folder, wait_s, user)
    try:
        yield running
    finally:
        running.stop()


def toolwire(backend: Backend, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolwire`` in a process of its own, on the backend's store."""
    return subprocess.run([sys.executable, "-m", "toolwire", *args, "--db", backend.url],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def keyed(backend: Backend) -> RunStore:
    """The backend's store in a process holding the tests' state key."""
    store = backend.open()
    store.seal_with(KEY)
    return store


def status(store: RunStore, run_id: str) -> RunStatus:
    found = store.get_run(run_id)
    assert found is not None
    return RunStatus(found.status)


def rows(store: RunStore) -> int:
    with store.engine.connect() as connection:
        found = connection.execute(select(func.count()).select_from(schema.questions)).scalar()
    return int(found or 0)


def told(ended: dict[str, Any]) -> dict[str, Any]:
    said: dict[str, Any] = json.loads(ended["told"])
    return said


def test_a_live_question_is_listed_and_answered_by_another_process(
    backend: Backend, tmp_path: Path
) -> None:
    store = keyed(backend)
    with live_run(backend, tmp_path) as run:
        question = run.question(store)
        assert status(store, run.run_id) is RunStatus.AWAITING_INPUT
        listed = toolwire(backend, "runs", "pending", "--json")
        assert listed.returncode == 0, listed.stderr
        (entry,) = json.loads(listed.stdout)
        assert (entry["id"], entry["status"], entry["pending"]) == (
            run.run_id, "awaiting_input", None)  # fmt: skip
        (shown,) = entry["questions"]
        assert (shown["server"], shown["tool"], shown["message"], shown["live"]) == (
            "asking", "asking__sign_up", "Who are you?", True)  # fmt: skip
        assert [f["name"] for f in shown["fields"]] == ["name", "plan", "age"]
        assert shown["expires_at"] == question.expires_at
        human = toolwire(backend, "runs", "pending")
        assert f"live question {question.id[:8]} · waits until " in human.stdout, human.stdout
        assert "  server asking asks, during asking__sign_up:" in human.stdout

        bad = toolwire(backend, "runs", "input", run.run_id[:8], "--json",
                       '{"name": 5, "plan": "gold"}')  # fmt: skip
        assert bad.returncode == 1
        assert " ".join(bad.stderr.split()) == (
            'error: the answer does not fit the form: name: is not text; plan: "gold" is not '
            "one of the choices offered"
        )
        time.sleep(0.5)  # longer than a poll: the waiting process saw no answer
        assert store.open_questions(run.run_id) == [question]
        assert status(store, run.run_id) is RunStatus.AWAITING_INPUT

        good = toolwire(backend, "runs", "input", run.run_id, "--json", '{"name": "Ada"}')
        assert good.returncode == 0, good.stdout + good.stderr
        assert f"question {question.id[:8]} of run {run.run_id} answered (accept, 2 " in (
            " ".join(good.stdout.split()))  # fmt: skip
        ended = run.ended()
    assert ended["status"] == "completed"
    assert told(ended) == {"action": "accept", "content": {"name": "Ada", "plan": "free"}}
    assert ended["decisions"] == [["elicit:accept", actor()]]
    assert (status(store, run.run_id), rows(store)) == (RunStatus.COMPLETED, 0)
    again = toolwire(backend, "runs", "input", run.run_id, "--decline")
    assert again.returncode == 1
    assert "this run has no live question" in " ".join(again.stderr.split())


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_live_question_is_declined_or_cancelled_from_another_process(
    backend: Backend, tmp_path: Path, action: str
) -> None:
    store = keyed(backend)
    with live_run(backend, tmp_path) as run:
        run.question(store)
        done = toolwire(backend, "runs", "input", run.run_id, f"--{action}")
        assert done.returncode == 0, done.stdout + done.stderr
        ended = run.ended()
    assert told(ended) == {"action": action, "content": None}
    assert ended["decisions"] == [[f"elicit:{action}", actor()]]
    assert (status(store, run.run_id), rows(store)) == (RunStatus.COMPLETED, 0)


def test_a_run_waiting_on_a_live_question_is_cancelled_from_another_process(
    backend: Backend, tmp_path: Path
) -> None:
    store = keyed(backend)
    with live_run(backend, tmp_path) as run:
        run.question(store)
        approve = toolwire(backend, "runs", "approve", run.run_id)
        assert approve.returncode == 1
        assert " ".join(approve.stderr.split()) == (
            "error: this run waits on a live question of its MCP server, not on a paused turn: "
            "answer the question (toolwire runs input, or the inspector's panel)"
        )
        cancelled = toolwire(backend, "runs", "cancel", run.run_id)
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        ended = run.ended()
    assert ended["status"] == "cancelled"
    assert (status(store, run.run_id), rows(store)) == (RunStatus.CANCELLED, 0)


def test_a_run_followed_from_the_store_is_followed_on_through_its_live_question(
    backend: Backend, tmp_path: Path
) -> None:
    """A follower (the inspector's live view of a run another process carries out) does not
    stop at the question: the run is carried on, and its end is the run's real end."""
    store = keyed(backend)
    events: list[dict[str, Any]] = []

    async def following(run_id: str) -> None:
        async for event in follow(store, run_id):
            events.append(event)

    with live_run(backend, tmp_path) as run:
        question = run.question(store)
        follower = threading.Thread(target=asyncio.run, args=(following(run.run_id),))
        follower.start()
        time.sleep(1.0)  # ten polls of the follower
        assert follower.is_alive(), events[-1]
        answer_on_board(store, run.run_id, question.id, action="decline", values=None,
                        operator=User("ops", is_admin=True))  # fmt: skip
        follower.join(WAIT_S)
        run.ended()
    ends = [e for e in events if e["type"] == "end"]
    assert [e["status"] for e in ends] == ["completed"] and events[-1] is ends[0]
    decided = [e["step"].get("decision") for e in events if e["type"] == "step"]
    assert "elicit:decline" in decided


def test_a_question_nobody_answers_expires_and_leaves_no_row(
    backend: Backend, tmp_path: Path
) -> None:
    store = keyed(backend)
    with live_run(backend, tmp_path, wait_s=1.5) as run:
        run.question(store)
        assert status(store, run.run_id) is RunStatus.AWAITING_INPUT
        ended = run.ended()
    assert told(ended) == {"action": "cancel", "content": None}
    assert ended["decisions"] == [["elicit:cancel", "toolwire"]]
    assert (status(store, run.run_id), rows(store)) == (RunStatus.COMPLETED, 0)


def test_a_process_killed_while_it_waits_leaves_its_run_interrupted(
    backend: Backend, tmp_path: Path
) -> None:
    store = keyed(backend)
    with live_run(backend, tmp_path) as run:
        run.question(store)
        run.kill()
    listed = toolwire(backend, "runs", "pending", "--json")
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [])
    found = store.get_run(run.run_id)
    assert found is not None
    assert (found.status, found.error) == ("interrupted", INTERRUPTED_ERROR)
    assert rows(store) == 0
    late = toolwire(backend, "runs", "input", run.run_id, "--json", '{"name": "Ada"}')
    assert late.returncode == 1  # nothing waits for it: refused, not taken


def test_an_inspector_that_is_not_the_runs_answers_only_for_whom_it_may(
    backend: Backend, tmp_path: Path
) -> None:
    store = keyed(backend)
    with live_run(backend, tmp_path, user="ada") as run:
        question = run.question(store)
        path = f"/api/runs/{run.run_id}/questions"
        accept = {"action": "accept", "values": {"name": "Ada", "age": 36}}
        other = create_app(settings(user=User("mallory", is_admin=False), store=store))
        with live_server(other) as base, httpx.Client(base_url=base, headers=AUTH) as client:
            listed = client.get(path).json()["questions"]
            assert [q["id"] for q in listed] == [question.id]
            refused = client.post(f"{path}/{question.id}", json=accept)
            assert (refused.status_code, refused.json()["error"]["message"]) == (
                403,
                "this operator may not answer for this run (it acts for someone else)",
            )
        assert store.open_questions(run.run_id) == [question]
        own = create_app(settings(user=User("ada", is_admin=False), store=store))
        with live_server(own) as base, httpx.Client(base_url=base, headers=AUTH) as client:
            unfit = client.post(f"{path}/{question.id}", json={"action": "accept",
                                                              "values": {"age": -1}})  # fmt: skip
            assert (unfit.status_code, unfit.json()["error"]["message"]) == (
                422, "the answer does not fit the form: name: required, and it has no default; "
                "age: is under the least allowed, 0")  # fmt: skip
            taken = client.post(f"{path}/{question.id}", json=accept)
            assert (taken.status_code, taken.json()) == (200, {"action": "accept", "fields": 3})
            twice = client.post(f"{path}/{question.id}", json={"action": "decline"})
            assert twice.status_code == 404
        ended = run.ended()
    assert told(ended) == {"action": "accept",
                           "content": {"name": "Ada", "plan": "free", "age": 36}}  # fmt: skip
    assert ended["decisions"] == [["elicit:accept", "ada"]]
    assert (status(store, run.run_id), rows(store)) == (RunStatus.COMPLETED, 0)


def test_a_run_with_two_questions_open_is_running_again_only_when_both_are_closed(
    backend: Backend,
) -> None:
    """Two calls of one turn each asked: answering one leaves the run waiting on the other."""
    store = keyed(backend)
    run_id = store.begin(RunRequest.of("x", provider=ScriptedProvider.from_turns(SIGN_UP)))
    asked, expires = "2026-01-01T00:00:00+00:00", "2999-01-01T00:00:00+00:00"
    first, second = (
        LiveQuestion(id=uuid.uuid4().hex, run_id=run_id, server="asking", tool=tool,
                     message=f"{tool}?", fields=(), acting="ada", asked_at=asked,
                     expires_at=expires)
        for tool in ("asking__sign_up", "asking__sign_in")
    )  # fmt: skip
    assert store.open_question(first) and store.open_question(second)
    assert sorted(q.message for q in store.open_questions(run_id)) == [
        "asking__sign_in?", "asking__sign_up?"]  # fmt: skip
    store.close_question(run_id, first.id)
    assert status(store, run_id) is RunStatus.AWAITING_INPUT
    assert [q.id for q in store.open_questions(run_id)] == [second.id]
    store.close_question(run_id, second.id)
    assert (status(store, run_id), rows(store)) == (RunStatus.RUNNING, 0)


def test_a_live_question_moves_its_run_along_the_lifecycle() -> None:
    asking = RunStatus.AWAITING_INPUT
    assert can_move(RunStatus.RUNNING, asking) and can_move(asking, RunStatus.RUNNING)
    assert can_move(asking, RunStatus.INTERRUPTED) and can_move(asking, RunStatus.CANCELLED)


def test_an_answer_on_the_board_first_wins_over_one_given_where_the_run_is(
    backend: Backend, tmp_path: Path
) -> None:
    """A person where the run is carried out answers after another process did: the board's
    answer, written first, is the one the server reads."""
    store = keyed(backend)
    seen: list[RunStatus] = []

    async def here(ask: Ask) -> Reply:
        seen.append(status(store, ask.run_id))
        answer_on_board(store, ask.run_id, ask.id, action="accept", values={"name": "Bo"},
                        operator=User("elsewhere", is_admin=True))  # fmt: skip
        return Reply(action="decline", by="here")

    tools = asking_tools(tmp_path)
    request = RunRequest.of("go", provider=ScriptedProvider.from_turns(SIGN_UP),
                            options=RunOptions(trust_zone="local"),
                            context=ToolContext(user=User("ada")))  # fmt: skip
    try:
        with attending(here):
            outcome = Runtime(tools, recorder=store, state_key=KEY).run_sync(request)
    finally:
        HUB.close()
    assert outcome.result is not None
    assert seen == [RunStatus.AWAITING_INPUT], outcome
    assert outcome.result is not None
    assert json.loads(outcome.result.trace[-1].result) == {
        "action": "accept", "content": {"name": "Bo", "plan": "free"}}  # fmt: skip
    decided = [(s.decision, s.decided_by) for s in outcome.steps if isinstance(s, DecisionStep)]
    assert decided == [("elicit:accept", "elsewhere")]
    assert (status(store, outcome.run_id), rows(store)) == (RunStatus.COMPLETED, 0)


def test_a_questions_words_and_answer_are_never_in_the_store_in_clear(
    backend: Backend, tmp_path: Path
) -> None:
    """The message and the answer's values are sealed on the board while the question is
    open, and gone with its row once it is answered."""
    store = keyed(backend)
    message, value = f"CANARY-message-{uuid.uuid4().hex}", f"CANARY-value-{uuid.uuid4().hex}"
    kept: list[tuple[bytes, list[LiveQuestion]]] = []

    async def here(ask: Ask) -> Reply:
        kept.append((backend.raw_bytes(), store.open_questions(ask.run_id)))
        return Reply(action="accept", content={"name": value}, by="here")

    request = RunRequest.of("go", provider=ScriptedProvider.from_turns(SIGN_UP),
                            options=RunOptions(trust_zone="local"),
                            context=ToolContext(user=User("ada")))  # fmt: skip
    try:
        with attending(here):
            outcome = Runtime(asking_tools(tmp_path, message), recorder=store,
                              state_key=KEY).run_sync(request)  # fmt: skip
    finally:
        HUB.close()
    assert outcome.status is RunStatus.COMPLETED
    ((open_bytes, on_board),) = kept
    assert [q.message for q in on_board] == [message]  # on the board, opened with the key
    assert message.encode() not in open_bytes  # but sealed there
    data = backend.raw_bytes()
    assert [c for c in (message, value) if c.encode() in data] == []
    assert rows(store) == 0


def test_a_process_without_the_key_keeps_no_question_and_cannot_read_or_answer_one(
    backend: Backend, tmp_path: Path
) -> None:
    """A run whose process has no state key asks only where it is carried out; a process
    without the key sees another run's question is open, not its words, and cannot answer."""
    plain = backend.open()
    seen: list[int] = []

    async def here(ask: Ask) -> Reply:
        seen.append(rows(plain))
        return Reply(action="decline", by="here")

    request = RunRequest.of("go", provider=ScriptedProvider.from_turns(SIGN_UP),
                            options=RunOptions(trust_zone="local"),
                            context=ToolContext(user=User("ada")))  # fmt: skip
    try:
        with attending(here):
            outcome = Runtime(asking_tools(tmp_path), recorder=plain).run_sync(request)
    finally:
        HUB.close()
    assert (outcome.status, seen) == (RunStatus.COMPLETED, [0])
    with live_run(backend, tmp_path) as run:
        question = run.question(keyed(backend))
        (without,) = backend.open().open_questions(run.run_id)
        assert (without.id, without.message, without.fields) == (question.id, SEALED, ())
        env = {k: v for k, v in ENV.items() if k != "TOOLWIRE_STATE_KEY"}
        folder = tmp_path / "no-key"  # a data folder with no key file
        answered = subprocess.run(
            [sys.executable, "-m", "toolwire", "runs", "input", run.run_id, "--decline",
             "--db", backend.url, "--data-dir", str(folder)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert answered.returncode == 1, answered
        assert NO_KEY in " ".join(answered.stderr.split()), answered
        assert "Traceback" not in answered.stdout + answered.stderr
        reply = toolwire(backend, "runs", "input", run.run_id, "--decline")
        assert reply.returncode == 0, reply
        assert told(run.ended()) == {"action": "decline", "content": None}


def test_a_run_nobody_attends_still_declines_at_once_and_puts_nothing_on_the_board(
    backend: Backend, tmp_path: Path
) -> None:
    store = keyed(backend)
    request = RunRequest.of("go", provider=ScriptedProvider.from_turns(SIGN_UP),
                            options=RunOptions(trust_zone="local"),
                            context=ToolContext(user=User("ada")))  # fmt: skip
    try:
        outcome = Runtime(asking_tools(tmp_path), recorder=store, state_key=KEY).run_sync(request)
    finally:
        HUB.close()
    assert outcome.result is not None
    assert json.loads(outcome.result.trace[-1].result) == {"action": "decline", "content": None}
    reasons = [s.decision_reason for s in outcome.steps if isinstance(s, DecisionStep)]
    assert reasons == [f"asking__sign_up: 0 of 3 field(s) answered; {NOBODY}"]
    assert (status(store, outcome.run_id), rows(store)) == (RunStatus.COMPLETED, 0)


CALL = {"name": "asking__sign_up", "arguments": {}}
SIGN_UP: list[dict[str, Any]] = [{"tool_calls": [CALL]}, {"content": "done"}]


def asking_tools(folder: Path, message: str = "Who are you?") -> ToolRegistry:
    ws = workspace(folder, f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
pass_env = ["MESSAGE"]
enabled = true
admin_only = false
data_class = "public"
timeout = 20
""", environ={"MESSAGE": message})  # fmt: skip
    tools, problems = remote_registry(ws)
    assert problems == []
    return tools
