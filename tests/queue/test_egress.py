"""A queued run whose egress limit asks a person: it waits before the request that would pass
the limit, a decision from another process is queued, and a worker process sends that request
and carries the run on (approve) or ends it ``egress_limit`` having sent nothing (deny). Real
worker processes on a real PostgreSQL."""

from __future__ import annotations

from typing import Any

from .kit import Queue, call

READ_BYTES = len("read 1")  # what each slow_read answers: "read 1", "read 2"


def turns() -> list[dict[str, Any]]:
    return [
        {"tool_calls": [call("slow_read", n=1)]},
        {"tool_calls": [call("slow_read", n=2)]},
        {"content": "read both"},
    ]


def _waiting(queue: Queue) -> str:
    queue.start(1)
    [run_id] = queue.submit(queue.script(turns()), max_egress_bytes=READ_BYTES,
                            on_egress_limit="approve")  # fmt: skip
    [found] = queue.wait([run_id])
    assert found.status == "awaiting_approval"
    pause = queue.runtime.pending(run_id)
    assert pause.egress is not None and pause.calls == ()
    assert pause.to_dict()["egress"]["request_bytes"] == 2 * READ_BYTES
    assert queue.store.egress_spent(run_id) == READ_BYTES  # the third request was not sent
    return run_id


def test_a_queued_run_approved_elsewhere_sends_the_held_request(queue: Queue) -> None:
    run_id = _waiting(queue)
    queue.approve(run_id)
    [done] = queue.wait([run_id], done=lambda r: r.status == "completed")
    assert done.status == "completed"
    assert queue.store.egress_spent(run_id) == 3 * READ_BYTES
    stored = queue.store.get_run(run_id)
    assert stored is not None
    assert [s["kind"] for s in stored.steps].count("decision") == 1


def test_a_queued_run_denied_elsewhere_ends_with_nothing_more_sent(queue: Queue) -> None:
    run_id = _waiting(queue)
    queue.deny(run_id)
    [done] = queue.wait([run_id], done=lambda r: r.status not in ("awaiting_approval", "queued",
                                                                   "running"))  # fmt: skip
    stored = queue.store.get_run(run_id)
    assert stored is not None and stored.termination_reason == "egress_limit", done
    assert queue.store.egress_spent(run_id) == READ_BYTES
