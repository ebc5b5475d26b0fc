"""A run of several segments is stored with the whole run's rounds, tokens and cost, however
its last segment ended: completed, failed (a provider error) or cancelled; on SQLite and
PostgreSQL."""

from __future__ import annotations

import pytest

from ..segments import USAGES, Ending, two_segments
from .conftest import Backend


@pytest.mark.parametrize(
    ("ending", "fail_at", "rounds"),
    [("completed", 0, 3), ("failed", 2, 1), ("failed", 3, 2), ("cancelled", 0, 2)],
)
def test_the_row_holds_the_whole_runs_totals(
    backend: Backend, ending: Ending, fail_at: int, rounds: int
) -> None:
    store = backend.open()
    run = two_segments(ending, recorder=store, fail_at=fail_at)
    calls = run.calls
    assert [c.round for c in calls] == list(range(1, rounds + 1))  # every call that answered
    stored = store.get_run(run.ended.run_id)
    assert stored is not None and stored.status == ending
    assert (stored.rounds, stored.prompt_tokens, stored.completion_tokens) == (
        rounds,
        sum(u.prompt_tokens for u in USAGES[:rounds]),
        sum(u.completion_tokens for u in USAGES[:rounds]),
    )
    costs = [c.cost for c in calls]
    assert all(cost is not None and cost > 0 for cost in costs)
    assert stored.cost == pytest.approx(sum(c for c in costs if c is not None))
    assert stored.cost_complete is True
    listed = store.list_runs(limit=1)[0]
    assert (listed.rounds, listed.prompt_tokens) == (stored.rounds, stored.prompt_tokens)
