"""A worker process: Procrastinate's worker executing runs, plus the search for stopped workers.

``serve_worker`` runs until SIGINT or SIGTERM. It registers with the engine (which keeps its
heartbeat), names its host and process in ``queue_workers`` (for ``toolwire workers``), and
executes up to ``concurrency`` runs at once on one event loop. On a stop signal it takes no
new job, gives running runs ``grace_seconds`` to end, and queues the others again, each from
its last checkpoint.

Every ``reap_seconds`` each worker also looks for runs that no live worker carries (see
:mod:`toolwire.store.queued`): the jobs of workers with no heartbeat for ``stalled_after``
seconds (killed, or hung), and runs left without a job. Each such run is queued again with one
stall more, or fails after ``max_stalls``; of several workers finding it, one does it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolwire.core.errors import StoreError
from toolwire.core.sealing import StateKey
from toolwire.queue import engine
from toolwire.queue.executor import Executor
from toolwire.queue.settings import QueueSettings
from toolwire.runs.runtime import ProviderFactory, Runtime, provider_from_ref
from toolwire.store.queued import QueuedRuns
from toolwire.store.runs import RunStore
from toolwire.tools.registry import ToolRegistry

log = logging.getLogger("toolwire.queue")
# Connections of the engine's own pool: fetching and finishing jobs, heartbeats, the listener.
ENGINE_CONNECTIONS = 4
FETCH_POLL_SECONDS = 1.0  # new jobs arrive by NOTIFY at once; this is the fallback
Ready = Callable[[int], None]


async def serve_worker(
    store: RunStore,
    registry: ToolRegistry,
    key: StateKey,
    settings: QueueSettings,
    *,
    provider_factory: ProviderFactory = provider_from_ref,
    on_ready: Ready | None = None,
    install_signal_handlers: bool = True,
) -> None:
    """Execute queued runs from ``store`` until stopped; ``on_ready`` gets the worker's id."""
    from procrastinate.job_context import JobContext
    from procrastinate.worker import Worker

    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(settings.concurrency * 2 + 4, thread_name_prefix="toolwire-worker")
    )
    runtime = Runtime(registry, recorder=store, state_key=key, provider_factory=provider_factory)
    executor = Executor(store, runtime, key)
    app = engine.make_app(store.url, connections=ENGINE_CONNECTIONS)

    async def run(context: JobContext, run_id: str) -> None:
        assert context.job.id is not None
        await executor.execute(run_id, context.job.id)

    app.task(name=engine.TASK, queue=engine.QUEUE, pass_context=True)(run)
    async with app.open_async():
        worker = Worker(
            app,
            queues=[engine.QUEUE],
            name="toolwire",
            concurrency=settings.concurrency,
            update_heartbeat_interval=settings.heartbeat_seconds,
            stalled_worker_timeout=settings.stalled_after,
            shutdown_graceful_timeout=settings.grace_seconds,
            fetch_job_polling_interval=FETCH_POLL_SECONDS,
            abort_job_polling_interval=FETCH_POLL_SECONDS,
            delete_jobs="successful",
            install_signal_handlers=install_signal_handlers,
        )
        side = asyncio.ensure_future(_alongside(worker, app, store, settings, on_ready))
        try:
            await worker.run()  # type: ignore[no-untyped-call]  # the engine has no hints here
        finally:
            side.cancel()
            await asyncio.gather(side, return_exceptions=True)


async def _alongside(
    worker: Any, app: Any, store: RunStore, settings: QueueSettings, on_ready: Ready | None
) -> None:
    """Name this worker once the engine has registered it, then look for stopped workers."""
    while worker.worker_id is None:  # noqa: ASYNC110  (the engine sets it; no event tells)
        await asyncio.sleep(0.01)
    runs = QueuedRuns(store)
    await asyncio.to_thread(runs.register_worker, worker.worker_id, settings.concurrency)
    if on_ready is not None:
        on_ready(worker.worker_id)
    while True:
        await asyncio.sleep(settings.reap_seconds)
        try:
            await reap(app, runs, settings)
        except Exception:
            log.warning("looking for stopped workers' runs failed; trying again", exc_info=True)


async def reap(app: Any, runs: QueuedRuns, settings: QueueSettings) -> int:
    """Carry on the runs of stopped workers, and runs with no job; how many moved."""
    stalled = await app.job_manager.get_stalled_jobs(
        queue=engine.QUEUE, task_name=engine.TASK, seconds_since_heartbeat=settings.stalled_after
    )
    found = [(str(job.task_kwargs.get("run_id")), job.id) for job in stalled]
    found += [(run_id, None) for run_id in await asyncio.to_thread(runs.orphans)]
    moved = 0
    for run_id, job_id in found:
        try:
            done = await asyncio.to_thread(
                runs.recover, run_id, job_id, settings.max_stalls, engine.defer
            )
        except StoreError:  # another worker recovered it first (its job is finished)
            log.debug("run %s was recovered elsewhere", run_id, exc_info=True)
            continue
        if done != "none":
            log.warning("run %s: its worker stopped; %s", run_id, done)
            moved += 1
    return moved
