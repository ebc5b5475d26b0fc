"""``toolwire worker`` and ``toolwire workers``: executing queued runs, and seeing who does.

A worker needs the PostgreSQL store the runs are queued in (``--db``) and the state key every
submitting process uses (``TOOLWIRE_STATE_KEY``); provider keys come from its own environment.
It prints one line when it is ready and runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.keys import read_key
from toolwire.cli.run import registry_for
from toolwire.cli.runs import guard
from toolwire.cli.show import emit_json, error, plural, safe, table
from toolwire.cli.store import DbOption, location, open_or_exit
from toolwire.core.errors import ToolwireError

if TYPE_CHECKING:
    from toolwire.store import RunStore
    from toolwire.store.queued import WorkerRow

RecoverOption = Annotated[
    float,
    typer.Option("--recover-after", min=1.0, help="Seconds within which a stopped worker's "
                 "runs are carried on by another (use the same on every worker)."),
]  # fmt: skip


@app.command()
def worker(
    db: DbOption = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=256, help="Runs executed at once.")
    ] = 1,
    recover_after: RecoverOption = 60.0,
    max_stalls: Annotated[
        int, typer.Option("--max-stalls", min=1, help="A run whose workers stop this often fails.")
    ] = 3,
    grace: Annotated[
        float,
        typer.Option("--grace", min=0.0, help="On Ctrl-C or SIGTERM, seconds running runs get "
                     "to end before they are queued again for another worker."),
    ] = 30.0,
) -> None:  # fmt: skip
    """Execute queued runs from a PostgreSQL store until stopped (Ctrl-C or SIGTERM)."""
    import asyncio

    from toolwire.core.errors import QueueError
    from toolwire.queue import QueueSettings, serve_worker
    from toolwire.queue.engine import require_postgres
    from toolwire.queue.submit import NO_KEY

    console = Console(highlight=False, soft_wrap=True)
    key = read_key(console)
    with open_or_exit(console, db) as store:
        try:
            require_postgres(store.url)
            if key is None:
                raise QueueError(NO_KEY)
            settings = QueueSettings(concurrency=concurrency, recover_seconds=recover_after,
                                     max_stalls=max_stalls, grace_seconds=grace)  # fmt: skip
        except ToolwireError as exc:
            error(console, safe(str(exc), None))
            raise typer.Exit(1) from None
        registry = registry_for(console, store)

        def ready(worker_id: int) -> None:
            console.print(Text(f"worker {worker_id} ready: {concurrency} run(s) at a time from "
                               f"{location(store)}; stop it with Ctrl-C"))  # fmt: skip

        try:
            asyncio.run(serve_worker(store, registry, key, settings, on_ready=ready))
        except KeyboardInterrupt:  # a second Ctrl-C: stop without waiting
            raise typer.Exit(130) from None
        except Exception as exc:  # the database went away, most often: one line, exit 1
            from toolwire.store.engine import reason

            error(console, f"the worker stopped: {safe(reason(exc), None)}")
            raise typer.Exit(1) from None
    console.print(Text("worker stopped"))


@app.command("workers")
def list_workers(
    db: DbOption = None,
    recover_after: RecoverOption = 60.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON, nothing else.")] = False,
) -> None:
    """The workers of a PostgreSQL store, live or stopped, with the runs they execute."""
    console = Console(highlight=False, soft_wrap=True, stderr=as_json)
    with open_or_exit(console, db) as store:
        found = _workers(console, store)
    stalled_after = recover_after / 2
    if as_json:
        emit_json([_worker_json(w, stalled_after) for w in found])
        return
    if not found:
        console.print(Text("no worker is registered"))
        return
    columns = ("worker", "host", "pid", "at_once", "heartbeat", "state", "runs")
    table(console, columns, [_worker_row(row, stalled_after) for row in found])


def _worker_row(row: WorkerRow, stalled_after: float) -> list[str]:
    runs = ", ".join(f"{run_id} {status} ({plural(steps, 'step')})"
                     for run_id, status, steps in row.runs)  # fmt: skip
    return [
        str(row.id),
        safe(row.host or "?", 80),
        str(row.pid or "?"),
        str(row.concurrency or "?"),
        f"{row.heartbeat_age:.1f} s ago",
        _state(row, stalled_after),
        runs or "idle",
    ]


def _workers(console: Console, store: RunStore) -> list[WorkerRow]:
    from toolwire.core.errors import QueueError
    from toolwire.queue.engine import require_postgres
    from toolwire.store.queued import QueuedRuns

    try:
        require_postgres(store.url)
    except QueueError as exc:
        error(console, str(exc))
        raise typer.Exit(1) from None
    found: list[WorkerRow] = guard(console, lambda: QueuedRuns(store).workers())
    return found


def _state(row: WorkerRow, stalled_after: float) -> str:
    return "stopped?" if row.heartbeat_age > stalled_after else "live"


def _worker_json(row: WorkerRow, stalled_after: float) -> dict[str, object]:
    return {
        "id": row.id,
        "host": row.host,
        "pid": row.pid,
        "concurrency": row.concurrency,
        "heartbeat_age_s": round(row.heartbeat_age, 3),
        "live": row.heartbeat_age <= stalled_after,
        "runs": [{"id": r, "status": s, "steps": n} for r, s, n in row.runs],
    }
