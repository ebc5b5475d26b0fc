"""The metrics of runs: runs by status, tool calls by tool and outcome, tokens, cost and
latency by model, and the queue's depth for a process that queues runs."""

from __future__ import annotations

import pytest

from toolwire.policy.privacy import PrivacyLevel

from .telemetry_kit import Captured
from .test_telemetry_spans import three_rounds, traced

MODEL = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
         "gen_ai.request.model": "gpt-4o-mini"}  # fmt: skip


def test_runs_are_counted_by_status() -> None:
    captured, _ = traced(three_rounds())
    assert captured.points("toolwire.runs") == [
        ({"toolwire.run.status": "completed", "gen_ai.provider.name": "openai"}, 1)
    ]


def test_tool_calls_are_counted_by_tool_and_outcome_and_a_made_up_name_is_unknown() -> None:
    captured, _ = traced(three_rounds())
    counted = sorted(
        (a["gen_ai.tool.name"], a["toolwire.tool.outcome"], a.get("error.type", ""), n)
        for a, n in captured.points("toolwire.tool.calls")
    )
    assert counted == [
        ("boom", "error", "", 1),
        ("lookup", "ok", "", 1),
        ("unknown", "refused", "unknown_tool", 1),
    ]


def test_tokens_cost_and_latency_are_recorded_by_model() -> None:
    captured, outcome = traced(three_rounds())
    tokens = sorted((a["gen_ai.token.type"], n) for a, n in
                    captured.points("gen_ai.client.token.usage"))  # fmt: skip
    assert tokens == [("input", 3), ("output", 3)]  # one measurement per call and kind
    for attributes, _ in captured.points("gen_ai.client.token.usage"):
        assert {k: v for k, v in attributes.items() if k != "gen_ai.token.type"} == MODEL
    ((attributes, cost),) = captured.points("toolwire.cost")
    assert attributes == MODEL
    assert outcome.result is not None and outcome.result.cost.shown > 0
    assert cost == pytest.approx(outcome.result.cost.shown)
    assert captured.points("gen_ai.client.operation.duration") == [(MODEL, 3)]


def test_the_queue_depth_is_observed_when_a_process_reports_it() -> None:
    captured = Captured(PrivacyLevel.METADATA)
    depth = iter([4, 2])
    captured.telemetry.observe_queue_depth(lambda: next(depth))
    assert captured.points("toolwire.queue.depth") == [({}, 4)]
    assert captured.points("toolwire.queue.depth") == [({}, 2)]


def test_tool_output_sent_is_counted_in_bytes_by_provider_tool_class_and_label() -> None:
    from toolwire.policy.trace import ToolStep

    captured, outcome = traced(three_rounds())
    counted = {(a["gen_ai.provider.name"], a["gen_ai.tool.name"], a["toolwire.data_class"],
                a["toolwire.integrity"]): n
               for a, n in captured.points("toolwire.egress.bytes")}  # fmt: skip
    results = {s.tool_name: len(s.tool_result.encode()) for s in outcome.steps
               if isinstance(s, ToolStep)}  # fmt: skip
    # round 2's request carries round 1's results; round 3's carries those again, and boom's
    assert counted == {
        ("openai", "lookup", "public", "untrusted"): 2 * results["lookup"],
        ("openai", "(unregistered)", "public", "runtime"): 2 * results["nope"],
        ("openai", "boom", "public", "untrusted"): results["boom"],
    }
