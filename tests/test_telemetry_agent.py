"""The run as an agent: its segments' spans are ``invoke_agent {name}`` with
``gen_ai.agent.name`` (the run's name, else its workspace's), and a resumed segment's span
links to the span of the segment before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolwire import CompletionResponse, RunOptions, ToolContext, ToolRegistry
from toolwire.core.errors import ConfigError
from toolwire.core.sealing import StateKey
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.workspace.config import load_workspace

from .fakes import PricedModel
from .otlp_receiver import receiver, run_exported
from .segments import TURNS, mark, note, two_segments
from .telemetry_kit import Captured, attributes


def agent_span(
    name: str | None, workspace_toml: str | None, tmp_path: Path
) -> tuple[str, dict[str, Any]]:
    captured = Captured()
    runtime = Runtime(ToolRegistry([]), telemetry=captured.telemetry)
    context = ToolContext()
    if workspace_toml is not None:
        path = tmp_path / "workspace.toml"
        path.write_text(workspace_toml)
        context = ToolContext(workspace=load_workspace(path))
    request = RunRequest.of("hi", provider=PricedModel(CompletionResponse(content="hello")),
                            options=RunOptions(name=name), context=context)  # fmt: skip
    assert runtime.run_sync(request).status == "completed"
    (root,) = [s for s in captured.spans if s.parent is None]
    return root.name, attributes(root)


@pytest.mark.parametrize(
    ("name", "workspace", "expected"),
    [
        ("billing helper", None, "billing helper"),
        (None, 'name = "ops desk"\n', "ops desk"),
        ("billing helper", 'name = "ops desk"\n', "billing helper"),  # the run's own first
    ],
)
def test_the_agent_span_is_named_for_the_run_else_its_workspace(
    name: str | None, workspace: str | None, expected: str, tmp_path: Path
) -> None:
    span_name, shown = agent_span(name, workspace, tmp_path)
    assert span_name == f"invoke_agent {expected}"
    assert shown["gen_ai.agent.name"] == expected


def test_a_run_nobody_named_is_a_plain_invoke_agent_span(tmp_path: Path) -> None:
    span_name, shown = agent_span(None, "", tmp_path)
    assert span_name == "invoke_agent" and "gen_ai.agent.name" not in shown


@pytest.mark.parametrize("bad", ["", "   ", "two\nlines", "x" * 129])
def test_a_name_that_is_no_name_is_refused_saying_what_a_name_is(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a run's name must be 1 to 128 printable characters"):
        RunOptions(name=bad)
    path = tmp_path / "workspace.toml"
    path.write_text(f"name = {bad!r}\n".replace("'", '"').replace('\n"', '\\n"'))
    with pytest.raises(ConfigError, match=r"workspace\.toml: name must be 1 to 128"):
        load_workspace(path)


def test_both_segments_of_a_resumed_run_carry_its_name() -> None:
    captured = Captured()
    two_segments(telemetry=captured.telemetry, name="approver")
    roots = [s for s in captured.spans if s.parent is None]
    assert [s.name for s in roots] == ["invoke_agent approver"] * 2
    assert [attributes(s)["gen_ai.agent.name"] for s in roots] == ["approver"] * 2


def test_the_command_line_names_the_run_in_its_trace(tmp_path: Path) -> None:
    with receiver() as received:
        done = run_exported(tmp_path, received, "--name", "night shift")
    assert done.returncode == 0, done.stderr
    assert b"invoke_agent night shift" in received.bodies("/v1/traces")


def test_the_command_line_refuses_a_name_that_is_no_name(tmp_path: Path) -> None:
    with receiver() as received:
        done = run_exported(tmp_path, received, "--name", " ")
    assert done.returncode == 1
    assert "--name must be 1 to 128 printable characters on one line" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr and received.requests == []


def test_a_resumed_segment_links_to_the_span_of_the_segment_before_it() -> None:
    captured = Captured()
    two_segments(telemetry=captured.telemetry)
    first, second = [s for s in captured.spans if s.parent is None]
    assert first.context is not None and second.context is not None
    assert first.links == ()
    (link,) = second.links
    assert (link.context.trace_id, link.context.span_id) == (
        first.context.trace_id, first.context.span_id,
    )  # fmt: skip
    assert dict(link.attributes or {}) == {"toolwire.link": "previous_segment"}
    assert second.context.trace_id != first.context.trace_id  # each segment is its own trace


def test_the_link_is_kept_with_the_paused_run_for_a_process_that_resumes_it(
    tmp_path: Path,
) -> None:
    """Two runtimes on one store, as two processes: the one that resumes links to the span of
    the one that paused, read from the run's sealed state."""
    key = StateKey.generate()
    store = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}")
    pausing, resuming = Captured(), Captured()
    registry = ToolRegistry([mark, note])
    provider = PricedModel(*TURNS)
    first = Runtime(registry, recorder=store, telemetry=pausing.telemetry, state_key=key)
    waiting = first.run_sync(RunRequest.of("mark it", provider=provider, model="gpt-4o-mini"))
    assert waiting.pause is not None
    second = Runtime(registry, recorder=store, telemetry=resuming.telemetry, state_key=key)
    decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ann")
    ended = second.resume_sync(waiting.run_id, decision, provider=provider)
    store.close()
    assert ended.status == "completed"
    (paused,) = [s for s in pausing.spans if s.parent is None]
    (resumed,) = [s for s in resuming.spans if s.parent is None]
    assert paused.context is not None
    (link,) = resumed.links
    assert (link.context.trace_id, link.context.span_id) == (
        paused.context.trace_id, paused.context.span_id,
    )  # fmt: skip
    assert link.context.is_remote


def test_a_paused_state_with_a_span_that_is_not_one_is_refused() -> None:
    from toolwire.core.errors import StateError
    from toolwire.loop.state import RunState

    captured = Captured()
    run = two_segments(telemetry=captured.telemetry)
    assert run.waiting.pause is not None
    text = RunState(messages=(), pause=run.waiting.pause).to_json()
    assert '"span": null' in text or '"span":null' in text
    broken = text.replace('"span":null', '"span":"not-a-span"').replace(
        '"span": null', '"span": "not-a-span"'
    )
    with pytest.raises(StateError, match="expected shape"):
        RunState.from_json(broken)
