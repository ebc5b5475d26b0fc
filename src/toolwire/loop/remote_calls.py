"""The per-run budget of calls to remote tools (an MCP server's, :func:`is_remote`).

A remote call costs another process's work and may reach further (a fetch, a repository), so a
run may make at most ``RunOptions.max_remote_calls`` of them over all its rounds and segments.
The budget is spent when a turn's jobs are made, before any runs, in the order the model asked
for the calls: which call is over the budget never depends on which finishes first when the
calls of a turn run concurrently. A call that will not run anyway (refused, not offered, not
registered) spends nothing; a call over the budget is answered with
:func:`toolwire.loop.seam.remote_budget_spent` and never runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolwire.loop.seam import Refused, refusal, remote_budget_spent
from toolwire.loop.turn import Job
from toolwire.tools.api import is_remote
from toolwire.tools.registry import ToolRegistry


def spend(
    jobs: Sequence[Job],
    registry: ToolRegistry,
    offered: frozenset[str],
    *,
    spent: int,
    limit: int,
) -> tuple[list[Job], int]:
    """``jobs`` with the remote calls past ``limit`` refused, and the calls spent after them."""
    out = []
    for job in jobs:
        tool = registry.get(job.call.name)
        counts = job.refused is None and job.call.name in offered
        if counts and tool is not None and is_remote(tool):
            if spent >= limit:
                spent_out = refusal(remote_budget_spent(limit), Refused.REMOTE_BUDGET)
                out.append(Job(job.call, job.arguments, spent_out))
                continue
            spent += 1
        out.append(job)
    return out, spent
