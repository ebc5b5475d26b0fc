"""A run suspended for approval and resumed is two ``invoke_agent`` spans: each carries its own
segment's tokens, cost and rounds (so spans add up to the run), and the whole run's totals
under ``toolwire.run.*``; metrics count every model call once."""

from __future__ import annotations

from typing import Any

import pytest

from .segments import USAGES, Ending, TwoSegments, two_segments
from .telemetry_kit import Captured, attributes

OWN = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "toolwire.cost_usd",
       "toolwire.rounds")  # fmt: skip
RUN = ("toolwire.run.input_tokens", "toolwire.run.output_tokens", "toolwire.run.cost_usd",
       "toolwire.run.rounds")  # fmt: skip


def watched(ending: Ending, fail_at: int = 3) -> tuple[Captured, TwoSegments]:
    captured = Captured()
    return captured, two_segments(ending, telemetry=captured.telemetry, fail_at=fail_at)


def segments(captured: Captured) -> list[dict[str, Any]]:
    return [attributes(s) for s in captured.named("invoke_agent")]


def spent(run: TwoSegments, rounds: slice) -> tuple[int, int, float, int]:
    """Input and output tokens, cost and rounds of the model calls of ``rounds`` (1-based)."""
    calls = [c for c in run.calls if c.round in range(rounds.start, rounds.stop)]
    return (sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls),
            sum(c.cost or 0.0 for c in calls), len(calls))  # fmt: skip


def test_each_segment_carries_its_own_share_and_the_run_its_totals() -> None:
    captured, run = watched("completed")
    first, second = segments(captured)
    assert (first["toolwire.segment"], second["toolwire.segment"]) == ("run", "resume")
    result = run.ended.result
    assert result is not None
    assert [c.round for c in run.calls] == [1, 2, 3]
    own = [tuple(s[k] for k in OWN) for s in (first, second)]
    assert own == [pytest.approx(spent(run, slice(1, 2))), pytest.approx(spent(run, slice(2, 4)))]
    assert (own[0][0], own[1][0]) == (100, 330)  # not 430 for the resumed segment
    totals = (result.usage.prompt_tokens, result.usage.completion_tokens, result.cost.shown,
              result.iterations)  # fmt: skip
    assert totals[:2] == (sum(u.prompt_tokens for u in USAGES),
                          sum(u.completion_tokens for u in USAGES))  # fmt: skip
    summed = tuple(sum(values) for values in zip(*own, strict=True))
    assert summed == pytest.approx(totals)
    assert tuple(second[k] for k in RUN) == pytest.approx(totals)
    assert tuple(first[k] for k in RUN) == pytest.approx(own[0])  # the run so far
    waiting = run.waiting.result
    assert waiting is not None and first["toolwire.run.input_tokens"] == waiting.usage.prompt_tokens


def test_metrics_count_each_model_call_once_across_segments() -> None:
    captured, run = watched("completed")
    result = run.ended.result
    assert result is not None
    tokens = histogram_sums(captured, "gen_ai.client.token.usage", "gen_ai.token.type")
    assert tokens == {"input": result.usage.prompt_tokens, "output": result.usage.completion_tokens}
    (cost,) = [value for _, value in captured.points("toolwire.cost")]
    assert cost == pytest.approx(result.cost.shown)
    durations = captured.points("gen_ai.client.operation.duration")
    assert sum(count for _, count in durations) == 3


@pytest.mark.parametrize(("ending", "fail_at", "rounds"),
                         [("failed", 2, 1), ("failed", 3, 2), ("cancelled", 3, 2)])  # fmt: skip
def test_a_resumed_segment_that_fails_or_is_cancelled_carries_its_own_share_and_the_runs(
    ending: Ending, fail_at: int, rounds: int
) -> None:
    captured, run = watched(ending, fail_at)
    first, second = segments(captured)
    assert second["toolwire.run.status"] == ending
    assert tuple(second[k] for k in OWN) == pytest.approx(spent(run, slice(2, rounds + 1)))
    summed = [first[k] + second[k] for k in OWN]
    assert summed == pytest.approx(spent(run, slice(1, rounds + 1)))
    # Where the run stood when the segment began, plus what the segment spent: the whole run.
    assert tuple(second[k] for k in RUN) == pytest.approx(spent(run, slice(1, rounds + 1)))
    tokens = histogram_sums(captured, "gen_ai.client.token.usage", "gen_ai.token.type")
    assert tokens == {"input": summed[0], "output": summed[1]}


def histogram_sums(captured: Captured, metric: str, key: str) -> dict[str, float]:
    """The sum of each series of a histogram, by the value of its attribute ``key``."""
    out: dict[str, float] = {}
    data = captured.reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for found in scope.metrics:
                if found.name == metric:
                    for point in found.data.data_points:
                        name = str(dict(point.attributes or {})[key])
                        out[name] = out.get(name, 0) + getattr(point, "sum", 0)
    return out
