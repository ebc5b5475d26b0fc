"""Queued runs: submitted anywhere, executed by worker processes on any number of machines.

With a PostgreSQL store, a run can be queued instead of run in-process: its request is sealed
in the store (never a key; the job carries only the run's id) and a worker executes it on
Procrastinate, PostgreSQL's task queue. A worker checkpoints the run after each round and
fences each write; when a worker stops (killed, or unresponsive: its heartbeats cease) another
carries its runs on from their checkpoints. See ``toolwire worker`` and the README's
deployment section.

``RunQueue`` submits and decides; ``serve_worker`` executes. Both load on first use.

Layer: above ``store`` and ``mcp``. May import every layer up to them; never the inspector
or the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.core.lazy import lazy_names

if TYPE_CHECKING:
    from toolwire.queue.settings import QueueSettings
    from toolwire.queue.submit import RunQueue
    from toolwire.queue.worker import serve_worker

_HOMES = {
    "QueueSettings": "toolwire.queue.settings",
    "RunQueue": "toolwire.queue.submit",
    "serve_worker": "toolwire.queue.worker",
}

__getattr__ = lazy_names(__name__, _HOMES)

__all__ = ["QueueSettings", "RunQueue", "serve_worker"]
