"""The queue engine: Procrastinate on the store's PostgreSQL database.

A job names one task, ``toolwire.run``, with one argument: the run's id. Everything else the
worker needs is in the store. Each job carries the run id as its ``lock`` (the engine never
runs two jobs of one run at once) and its ``queueing_lock`` (at most one job of a run waits).

Jobs are added on the caller's own connection, inside the transaction that queues the run
(Procrastinate's ``defer_job(..., connection=...)``), so a run and its job are stored together
or not at all. The engine's tables live in the store's database; migration 8 creates them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection
from sqlalchemy.engine import URL

from toolwire.core.errors import QueueError

if TYPE_CHECKING:
    from procrastinate import App

TASK = "toolwire.run"
QUEUE = "toolwire"
NOT_POSTGRES = (
    "queued runs need a PostgreSQL store (--db postgresql+psycopg://USER@HOST/DB): a SQLite "
    "file cannot be shared by workers on other machines"
)


def require_postgres(url: URL) -> None:
    """``QueueError`` unless ``url`` is a PostgreSQL store."""
    if url.get_backend_name() != "postgresql":
        raise QueueError(NOT_POSTGRES)


def conninfo(url: URL) -> str:
    """The store's URL as libpq reads it (Procrastinate connects with psycopg directly)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def make_app(url: URL, *, connections: int) -> App:
    """A Procrastinate app on the store's database, with a pool of ``connections``."""
    from procrastinate import App, PsycopgConnector

    require_postgres(url)
    connector = PsycopgConnector(conninfo=conninfo(url), min_size=1, max_size=connections)
    return App(connector=connector)


def defer(connection: Connection, run_id: str) -> None:
    """Add the job of ``run_id`` on ``connection``, in its transaction; nothing when one
    already waits for the run (the queueing lock)."""
    from procrastinate import exceptions, jobs

    job = jobs.Job(
        queue=QUEUE,
        task_name=TASK,
        lock=run_id,
        queueing_lock=run_id,
        task_kwargs={"run_id": run_id},
    )
    try:
        with connection.begin_nested():  # a refused job rolls back alone
            _deferrer().defer_job(job, connection=connection.connection.driver_connection)
    except exceptions.AlreadyEnqueued:
        pass


_manager: Any = None


def _deferrer() -> Any:
    """A job manager whose connector never opens: it only writes on the caller's connection."""
    global _manager  # noqa: PLW0603  (one per process, built on first use)
    if _manager is None:
        from procrastinate import PsycopgConnector
        from procrastinate.manager import JobManager

        _manager = JobManager(PsycopgConnector())
    return _manager
