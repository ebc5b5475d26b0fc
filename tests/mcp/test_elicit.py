"""A server's question during one of its tools' calls, through a real run: the call waits,
a person answers it through the process's open questions (what the inspector serves), and
the server reads the answer; nobody there, a wait run out, a form that is not flat, a
switched-off server and an answer that does not fit the form each end as they say."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from toolwire.core.errors import InvalidInput, RunNotWaiting
from toolwire.mcp.asks import ASKS, Ask, attending
from toolwire.mcp.elicit import MESSAGE_CHARS, NOBODY, SWITCHED_OFF
from toolwire.policy.trace import DecisionStep, RunTrace
from toolwire.tools.api import ToolContext, User

from .kit import PYTHON, remote_registry, run, script, workspace

CONTEXT = ToolContext(user=User("ops", is_admin=True), run_id="run-1")
WAIT_S = 30.0


def registry(folder: Path, extra: str = "", environ: dict[str, str] | None = None) -> Any:
    ws = workspace(folder, f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
enabled = true
data_class = "public"
timeout = 20
{extra}
""", environ=environ)  # fmt: skip
    tools, problems = remote_registry(ws)
    assert problems == []
    return tools


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": f"asking__{name}", "arguments": arguments}


def first_ask(run_id: str = "run-1") -> Ask:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = ASKS.pending(run_id)
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("no question was asked")


@contextmanager
def person(answer: Any) -> Iterator[list[Ask]]:
    """A person at the inspector: each question is handed to ``answer`` once it is open."""
    seen: list[Ask] = []

    def attend() -> None:
        ask = first_ask()
        seen.append(ask)
        answer(ask)

    with attending():
        helper = threading.Thread(target=attend, daemon=True)
        helper.start()
        yield seen
        helper.join(WAIT_S)


def told(result: Any) -> dict[str, Any]:
    (invocation,) = result.trace
    assert not invocation.is_error, invocation.result
    said: dict[str, Any] = json.loads(invocation.result)
    return said


def decisions(trace: RunTrace) -> list[tuple[str, str, str | None]]:
    return [(s.decision, s.decided_by, s.decision_reason) for s in trace.of_kind(DecisionStep)]


def test_a_question_is_answered_by_a_person_and_the_server_reads_the_answer(
    tmp_path: Path,
) -> None:
    tools, trace = registry(tmp_path), RunTrace()

    def accept(ask: Ask) -> None:
        ASKS.answer("run-1", ask.id, "accept", {"name": "Ada", "age": 36}, "ops")

    with person(accept) as seen:
        result = run(tools, [[call("sign_up")]], context=CONTEXT, trace=trace)
    assert told(result) == {"action": "accept",
                            "content": {"name": "Ada", "plan": "free", "age": 36}}  # fmt: skip
    (ask,) = seen
    assert (ask.run_id, ask.server, ask.tool, ask.message) == (
        "run-1", "asking", "asking__sign_up", "Who are you?")  # fmt: skip
    assert [(f.name, f.kind, f.required, f.default, f.choices) for f in ask.fields] == [
        ("name", "string", True, None, ()),
        ("plan", "choice", False, "free", ("free", "pro")),
        ("age", "integer", False, None, ()),
    ]
    assert ask.fields[1].labels == ("Free", "Pro")
    assert decisions(trace) == [
        ("elicit:accept", "ops", "asking__sign_up: 3 of 3 field(s) answered")
    ]
    assert ASKS.pending() == []


def test_an_answer_that_does_not_fit_the_form_is_refused_and_a_fitting_one_taken(
    tmp_path: Path,
) -> None:
    tools, refusals = registry(tmp_path), []

    def answer(ask: Ask) -> None:
        try:
            ASKS.answer("run-1", ask.id, "accept", {"name": 7, "age": -1, "plan": "gold",
                                                     "admin": True}, "ops")  # fmt: skip
        except InvalidInput as exc:
            refusals.append(str(exc))
        ASKS.answer("run-1", ask.id, "accept", {"name": "Bo"}, "ops")

    with person(answer):
        result = run(tools, [[call("sign_up")]], context=CONTEXT)
    assert refusals == [
        "the answer does not fit the form: admin: the form does not ask for it; name: is not "
        'text; plan: "gold" is not one of the choices offered; age: is under the least '
        "allowed, 0"
    ]
    assert told(result) == {"action": "accept", "content": {"name": "Bo", "plan": "free"}}


def test_an_answer_is_taken_only_for_the_run_that_asked(tmp_path: Path) -> None:
    tools, refusals = registry(tmp_path), []

    def answer(ask: Ask) -> None:
        for run_id, ask_id in (("run-2", ask.id), ("run-1", "0" * 32)):
            try:
                ASKS.answer(run_id, ask_id, "accept", {"name": "Eve"}, "eve")
            except RunNotWaiting as exc:
                refusals.append(str(exc))
        ASKS.answer("run-1", ask.id, "decline", None, "ops")

    with person(answer):
        result = run(tools, [[call("sign_up")]], context=CONTEXT)
    assert refusals == ["this run has no open question with this id"] * 2
    assert told(result) == {"action": "decline", "content": None}


def test_a_question_nobody_can_answer_is_declined_with_the_reason_in_the_steps(
    tmp_path: Path,
) -> None:
    trace = RunTrace()
    result = run(registry(tmp_path), [[call("sign_up")]], context=CONTEXT, trace=trace)
    assert told(result) == {"action": "decline", "content": None}
    assert decisions(trace) == [
        ("elicit:decline", "toolwire", f"asking__sign_up: 0 of 3 field(s) answered; {NOBODY}")
    ]


def test_a_server_the_workspace_does_not_let_ask_is_declined(tmp_path: Path) -> None:
    trace = RunTrace()
    tools = registry(tmp_path, "elicitation = false")
    with attending():
        result = run(tools, [[call("sign_up")]], context=CONTEXT, trace=trace)
    assert told(result) == {"action": "decline", "content": None}
    assert decisions(trace)[0][2] == f"asking__sign_up: 0 of 3 field(s) answered; {SWITCHED_OFF}"


def test_a_question_left_unanswered_is_cancelled_when_its_wait_ends(tmp_path: Path) -> None:
    trace = RunTrace()
    tools = registry(tmp_path, "elicitation_timeout = 0.5")
    with attending():
        result = run(tools, [[call("sign_up")]], context=CONTEXT, trace=trace)
    assert told(result) == {"action": "cancel", "content": None}
    assert decisions(trace) == [("elicit:cancel", "toolwire",
                                 "asking__sign_up: 0 of 3 field(s) answered; nobody answered "
                                 "within 0.5 s")]  # fmt: skip
    assert ASKS.pending() == []


def test_a_form_that_is_not_flat_is_refused_and_the_call_fails_with_the_reason_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    trace = RunTrace()
    with attending():
        result = run(registry(tmp_path), [[call("odd_form")]], context=CONTEXT, trace=trace)
    (invocation,) = result.trace
    assert (invocation.result, invocation.is_error) == (
        'Error: the server of tool "asking__odd_form" refused the call.', True)  # fmt: skip
    assert "toolwire cannot show this form: field 'address': type \"object\" is not a flat " \
           "primitive" in caplog.text  # fmt: skip
    assert decisions(trace)[0][0] == "elicit:decline"
    assert ASKS.pending() == []


def test_the_servers_message_is_cut_to_its_bound(tmp_path: Path) -> None:
    message = "<b>hi</b>" + "é" * 5000
    tools = registry(tmp_path, 'pass_env = ["MESSAGE"]', environ={"MESSAGE": message})

    def decline(ask: Ask) -> None:
        ASKS.answer("run-1", ask.id, "cancel", None, "ops")

    with person(decline) as seen:
        run(tools, [[call("sign_up")]], context=CONTEXT)
    (ask,) = seen
    assert len(ask.message) == MESSAGE_CHARS
    assert ask.message == "<b>hi</b>" + "é" * (MESSAGE_CHARS - 10) + "…"


def test_the_client_declares_elicitation_and_not_sampling_by_default(tmp_path: Path) -> None:
    result = run(registry(tmp_path), [[call("capabilities")]], context=CONTEXT)
    assert told(result) == {"sampling": False, "elicitation": True}


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
def test_an_answer_to_a_question_no_longer_open_is_refused(action: str) -> None:
    with pytest.raises(RunNotWaiting, match="no open question"):
        ASKS.answer("run-1", "f" * 32, action, {}, "ops")
