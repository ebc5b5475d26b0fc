"""A tool name the model made up leaves the process only as ``unknown:`` and a digest below
``redacted``: in no span name, span attribute, event or metric. Registered names leave as they
are. Checked at the byte level (a real process exporting OTLP over HTTP to a loopback
receiver) and per attribute (in memory)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from toolwire import RunOptions, ScriptedProvider, ToolRegistry, tool
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel, tool_name
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime

from .fakes import call
from .otlp_receiver import receiver
from .telemetry_kit import Captured, attributes, events
from .test_telemetry_egress import SOURCE

CANARY = f"exfil{uuid.uuid4().hex[:10]}"
UNKNOWN, PAST_LIMIT, DENIED = (f"{CANARY}{n}" for n in ("one", "two", "three"))
RUN = textwrap.dedent(
    """
    import sys
    from toolwire import RunOptions, ScriptedProvider, ToolRegistry, tool
    from toolwire.policy.privacy import PrivacyLevel
    from toolwire.runs.runtime import RunRequest, Runtime
    from toolwire.store import RunStore

    unknown, past_limit = sys.argv[3:5]

    @tool(data_class="public")
    def lookup(query: str) -> str:
        return "found"

    calls = [{"id": "c1", "name": "lookup", "arguments": {"query": "a"}},
             {"id": "c2", "name": unknown, "arguments": {}},
             {"id": "c3", "name": past_limit, "arguments": {}}]
    provider = ScriptedProvider.from_turns([{"tool_calls": calls}, {"content": "done"}])
    with RunStore.open(sys.argv[1], privacy=PrivacyLevel(sys.argv[2])) as store:
        runtime = Runtime(ToolRegistry([lookup]), recorder=store)
        request = RunRequest.of("go", provider=provider, options=RunOptions(max_calls_per_turn=2))
        outcome = runtime.run_sync(request)
    assert outcome.status == "completed", outcome
    """
)


@pytest.mark.parametrize("level", ["metadata", "none"])
def test_no_invented_name_leaves_over_otlp_below_redacted(tmp_path: Path, level: str) -> None:
    with receiver() as received:
        environ = {
            "PATH": os.environ["PATH"],
            "PYTHONPATH": SOURCE,
            "OTEL_EXPORTER_OTLP_ENDPOINT": received.url,
            "OTEL_METRICS_EXPORTER": "otlp",  # the shared endpoint alone sends traces only
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",  # metrics go once, when the process ends
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",  # the store's level
        }
        store = str(tmp_path / "runs.db")
        done = subprocess.run([sys.executable, "-c", RUN, store, level, UNKNOWN, PAST_LIMIT],
                              check=False, capture_output=True, text=True, env=environ,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
    spans, metrics = received.bodies("/v1/traces"), received.bodies("/v1/metrics")
    assert b"execute_tool lookup" in spans and b"toolwire.tool.calls" in metrics
    assert b"lookup" in metrics
    for name in (UNKNOWN, PAST_LIMIT):
        assert f"execute_tool {tool_name(name, frozenset())}".encode() in spans
    assert CANARY.encode() not in received.everything


def governed(level: PrivacyLevel) -> Captured:
    """A run that calls a registered tool, an unknown one, one past the turn's limit, and (in a
    turn a person denies) a fourth: two segments, watched in memory at ``level``."""

    @tool(data_class="public")
    def lookup(query: str) -> str:
        return "found"

    @tool(data_class="public", requires_approval=True)
    def delete_row(n: int) -> str:
        return "deleted"

    captured = Captured(level)
    provider = ScriptedProvider.from_turns([
        {"tool_calls": [call("lookup", {"query": "a"}), call(UNKNOWN), call(PAST_LIMIT)]},
        {"tool_calls": [call("delete_row", {"n": 1}), call(DENIED)]},
        {"content": "done"},
    ])  # fmt: skip
    runtime = Runtime(ToolRegistry([lookup, delete_row]), telemetry=captured.telemetry,
                      state_key=StateKey.generate())  # fmt: skip
    options = RunOptions(max_calls_per_turn=2)
    request = RunRequest.of("go", provider=provider, options=options, privacy=level)
    waiting = runtime.run_sync(request)
    assert waiting.pause is not None
    decision = OperatorDecision(action="deny", digest=waiting.pause.digest, actor="ann")
    assert runtime.resume_sync(waiting.run_id, decision, provider=provider).status == "completed"
    return captured


COUNTED = [("delete_row", "denied", 1), ("lookup", "", 1), ("unknown", "denied", 1),
           ("unknown", "too_many_calls", 1), ("unknown", "unknown_tool", 1)]  # fmt: skip


def tool_calls(captured: Captured) -> list[tuple[str, str, int]]:
    """Each series of ``toolwire.tool.calls``: tool, error type, count."""
    points = captured.points("toolwire.tool.calls")
    return sorted((a["gen_ai.tool.name"], a.get("error.type", ""), n) for a, n in points)


@pytest.mark.parametrize("level", [PrivacyLevel.NONE, PrivacyLevel.METADATA])
def test_spans_events_and_metrics_carry_a_digest_below_redacted(level: PrivacyLevel) -> None:
    captured = governed(level)
    shown = {name: tool_name(name, frozenset()) for name in (UNKNOWN, PAST_LIMIT, DENIED)}
    tools = captured.named("execute_tool")
    names = ["lookup", shown[UNKNOWN], shown[PAST_LIMIT], "delete_row", shown[DENIED]]
    assert [s.name for s in tools] == [f"execute_tool {name}" for name in names]
    assert [attributes(s)["gen_ai.tool.name"] for s in tools] == names
    gates = [(e["toolwire.reason"], e.get("gen_ai.tool.name"))
             for s in captured.named("invoke_agent") for e in events(s)]  # fmt: skip
    assert gates == [
        ("unknown_tool", shown[UNKNOWN]), ("too_many_calls", shown[PAST_LIMIT]), ("denied", None),
        ("denied", "delete_row"), ("denied", shown[DENIED]),
    ]  # fmt: skip
    # A metric counts every name no tool has as "unknown": a model cannot add a series.
    assert tool_calls(captured) == COUNTED
    spans = [(s.name, s.attributes, [e.attributes for e in s.events]) for s in captured.spans]
    everything = repr(spans) + repr(captured.reader.get_metrics_data())
    assert CANARY not in everything


@pytest.mark.parametrize("level", [PrivacyLevel.REDACTED, PrivacyLevel.FULL])
def test_redacted_and_full_spans_keep_the_name_and_metrics_still_say_unknown(
    level: PrivacyLevel,
) -> None:
    captured = governed(level)
    names = [attributes(s)["gen_ai.tool.name"] for s in captured.named("execute_tool")]
    assert names == ["lookup", UNKNOWN, PAST_LIMIT, "delete_row", DENIED]
    assert tool_calls(captured) == COUNTED
