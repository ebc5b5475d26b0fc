"""The inspector: a FastAPI app serving the playground page and its token-guarded API.

``create_app(settings)`` builds everything from ``InspectorSettings``; nothing is global. The
page (``static/``) is public, holds no data and needs no build step; all data comes from
``/api``, which needs the admin token on every call (see ``security``). Runs stream as NDJSON
(see ``stream``); errors share one shape (see ``errors``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles

from toolwire.core.trust import TrustZone
from toolwire.inspector import errors, queued, service, stored
from toolwire.inspector.errors import ERROR_RESPONSES, ApiError, json_response
from toolwire.inspector.models import (
    MAX_NAME_CHARS,
    RUN_ID,
    AuditList,
    CancelResult,
    DecisionBody,
    Defaults,
    GateResult,
    InvokeBody,
    InvokeResult,
    PendingResult,
    QueuedRun,
    RunBody,
    RunResult,
    ToggleBody,
    ToolsList,
)
from toolwire.inspector.questions import question_routes
from toolwire.inspector.security import SecurityMiddleware, token_guard
from toolwire.inspector.settings import InspectorSettings
from toolwire.inspector.stream import (
    NDJSON,
    STREAM_HEADERS,
    RunChannel,
    RunTasks,
    delta_steps,
    ndjson,
)
from toolwire.loop.governance import Gate
from toolwire.policy.trace import DeltaObserver, Observer
from toolwire.runs.runtime import Runtime

if TYPE_CHECKING:
    from toolwire.queue import RunQueue

STATIC = Path(__file__).parent / "static"
MAX_RUN_ID_CHARS = 100  # ids are uuid hex; anything longer is not an id
MAX_AUDIT_PAGE = 1_000  # the store's page of the governance log
MAX_SINCE_CHARS = 64  # a duration or an ISO 8601 time
MAX_LOGGED_NAME_CHARS = 255  # what the store keeps of a tool name or an actor
# A streaming route's answers: NDJSON lines, or an error before the first line.
_STREAMED: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/x-ndjson": {}}},
    **ERROR_RESPONSES,
}
RunId = Annotated[str, PathParam(min_length=1, max_length=MAX_RUN_ID_CHARS, pattern=RUN_ID)]


# The audit's gates, as the API document names them: a request naming another is answered
# with a 400 that names these (see ``service.audit``), not a validation error.
GATES: dict[str, Any] = {"enum": [str(gate) for gate in Gate]}


def create_app(settings: InspectorSettings) -> FastAPI:
    """The inspector app for ``settings``."""
    if settings.store is not None:
        settings.registry.availability = settings.store.load_availability()
    runtime = Runtime(
        settings.registry,
        recorder=settings.store,
        state_key=settings.state_key,
        provider_factory=lambda ref: service.provider_of(settings, ref),
    )
    tasks = RunTasks(runtime.cancel, runtime.running)
    queue = queued.queue_of(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await tasks.stop()  # running runs settle as cancelled, not left running

    app = FastAPI(
        lifespan=lifespan,
        title="toolwire inspector",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, behind the token like every other /api path
    )
    app.state.settings = settings
    app.state.runtime = runtime
    errors.install(app)
    app.add_middleware(SecurityMiddleware, allow_remote=settings.allow_remote)
    app.include_router(_api(settings, runtime, tasks, queue))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get(
        "/api/openapi.json",
        include_in_schema=False,
        dependencies=[Depends(token_guard(settings.token))],
    )
    def openapi_document() -> dict[str, Any]:
        return app.openapi()

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    return app


def _api(
    settings: InspectorSettings, runtime: Runtime, tasks: RunTasks, queue: RunQueue | None
) -> APIRouter:
    api = APIRouter(prefix="/api", dependencies=[Depends(token_guard(settings.token))])
    queuing = queue if settings.queue_runs else None  # where new runs go; None: here

    @api.get("/defaults", response_model=Defaults, responses=ERROR_RESPONSES)
    def defaults() -> Defaults:
        return Defaults(
            **dataclasses.asdict(settings.defaults),
            replay_label=service.replay_label(settings),
            trust_zones=[str(zone) for zone in TrustZone],
        )

    @api.get("/gate", response_model=GateResult, responses=ERROR_RESPONSES)
    def gate(
        provider: Annotated[str, Query(min_length=1, max_length=MAX_NAME_CHARS)] = "scripted",
        model: Annotated[str | None, Query(min_length=1, max_length=MAX_NAME_CHARS)] = None,
        trust_zone: Annotated[str | None, Query(min_length=1, max_length=MAX_NAME_CHARS)] = None,
    ) -> GateResult:
        """Which tools a run with this provider (or this trust zone) would be offered."""
        return service.gate_verdicts(settings, runtime, provider, model, trust_zone)

    @api.get("/tools", response_model=ToolsList, responses=ERROR_RESPONSES)
    def tools() -> ToolsList:
        return service.list_tools(settings)

    @api.put("/tools/{name}", response_model=ToolsList, responses=ERROR_RESPONSES)
    def toggle_tool(name: str, body: ToggleBody) -> ToolsList:
        service.set_tool(settings, name, body.enabled)
        return service.list_tools(settings)

    @api.put("/groups/{name}", response_model=ToolsList, responses=ERROR_RESPONSES)
    def toggle_group(name: str, body: ToggleBody) -> ToolsList:
        service.set_group(settings, name, body.enabled)
        return service.list_tools(settings)

    @api.post("/tools/{name}/invoke", response_model=InvokeResult, responses=ERROR_RESPONSES)
    async def invoke(name: str, body: InvokeBody) -> Response:
        if name not in settings.registry:
            raise ApiError(404, f'no tool is named "{name}"')
        return json_response(
            (await service.invoke_tool(settings, runtime, name, body)).model_dump()
        )

    @api.post(
        "/runs", response_model=RunResult, responses={202: {"model": QueuedRun}, **ERROR_RESPONSES}
    )
    async def run_batch(body: RunBody) -> Response:
        """Run, and answer with every step and the outcome; with ``serve --queue``, queue the
        run and answer 202 at once with its id."""
        live = service.prepare_run(settings, runtime, body)
        if queuing is not None:
            run_id = await queued.submit(queuing, live)
            return json_response(QueuedRun(run_id=run_id, status="queued").model_dump(), 202)
        channel = RunChannel()
        _start(live, channel)
        events = [event async for event in channel.events()]
        steps = [e["step"] for e in events if e["type"] == "step"]
        return json_response({"context": events[0], "steps": steps, "result": events[-1]})

    @api.post(
        "/runs/stream",
        response_class=StreamingResponse,
        responses=_STREAMED,
    )
    async def run_stream(body: RunBody) -> StreamingResponse:
        """Run, streaming its events; with ``serve --queue``, queue it and stream it as a
        worker records it."""
        live = service.prepare_run(settings, runtime, body)
        if queuing is not None:
            run_id = await queued.submit(queuing, live)
            return queued.response(settings, runtime, run_id, context=live.context)
        channel = RunChannel()
        _start(live, channel)
        return StreamingResponse(ndjson(channel), media_type=NDJSON, headers=STREAM_HEADERS)

    def _start(live: service.LiveRun, channel: RunChannel) -> None:
        def segment(on_step: Observer, on_start: Any, on_delta: DeltaObserver) -> Any:
            return runtime.run(live.request, observers=[on_step], on_start=on_start,
                               deltas=[on_delta])  # fmt: skip

        tasks.start(segment, live.context, channel)

    @api.post(
        "/runs/{run_id}/decision",
        response_class=StreamingResponse,
        responses=_STREAMED,
    )
    async def decide(run_id: RunId, body: DecisionBody) -> StreamingResponse:
        """Approve, deny or answer a waiting run; stream its resumed segment.

        Every refusal (not waiting, a stale digest, input that does not fit, a state that
        cannot be opened) is answered before the stream starts, and nothing ran. A queued
        run's decision is queued: any worker carries it on, and the stream follows it."""
        decision = service.decision_of(settings, body)
        waiting = await asyncio.to_thread(runtime.recorder.waiting, run_id)
        if waiting is not None and waiting.queued:
            return await queued.decide(settings, runtime, queue, waiting, decision)
        context, provider = await asyncio.to_thread(
            service.resume_context, settings, runtime, run_id
        )
        lent = service.lent(settings)

        def segment(on_step: Observer, on_start: Any, on_delta: DeltaObserver) -> Any:
            return runtime.resume(run_id, decision, observers=[on_step], provider=provider,
                                  context=lent, on_start=on_start, deltas=[on_delta])  # fmt: skip

        channel = RunChannel()
        started = tasks.start(segment, context, channel, refusable=True)
        try:
            await started
        except Exception as exc:
            raise service.refusal(exc) from None
        return StreamingResponse(ndjson(channel), media_type=NDJSON, headers=STREAM_HEADERS)

    @api.get("/runs/{run_id}/pending", response_model=PendingResult, responses=ERROR_RESPONSES)
    async def pending(run_id: RunId) -> Response:
        pause = await asyncio.to_thread(service.pending, runtime, run_id)
        return json_response(pause.to_dict())

    _stored_runs(api, settings, runtime)
    question_routes(api, settings)
    return api


def _stored_runs(api: APIRouter, settings: InspectorSettings, runtime: Runtime) -> None:
    stored.install(api, settings, runtime)

    @api.get("/runs/{run_id}", responses=ERROR_RESPONSES)
    def run(run_id: RunId, requests: Literal["whole", "delta"] = "whole") -> Response:
        """A stored run and its steps; with ``requests=delta``, each request step after the
        first carries only the messages new since the one before (see ``RequestDeltas``)."""
        found = stored.stored_run(settings, run_id).to_dict()
        if requests == "delta":
            found["steps"] = delta_steps(found["steps"])
        return json_response(found)

    @api.get("/audit", response_model=AuditList, responses=ERROR_RESPONSES)
    def audit(
        *,
        since: Annotated[str | None, Query(min_length=1, max_length=MAX_SINCE_CHARS)] = None,
        gate: Annotated[str | None, Query(json_schema_extra=GATES)] = None,
        tool: Annotated[str | None, Query(min_length=1, max_length=MAX_LOGGED_NAME_CHARS)] = None,
        reason: Annotated[str | None, Query(min_length=1, max_length=MAX_NAME_CHARS)] = None,
        run_id: Annotated[
            str | None,
            Query(min_length=1, max_length=MAX_RUN_ID_CHARS, pattern=RUN_ID),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_AUDIT_PAGE)] = 100,
        offset: Annotated[int, Query(ge=0, le=stored.MAX_OFFSET)] = 0,
    ) -> Response:
        """The governance log, newest first: every gate decision that refused or changed
        something (``since``: a duration such as 24h, or an ISO 8601 time; ``gate``: offer,
        call, approval, context, budget or rounds)."""
        found = service.audit(settings, since=since, gate=gate, tool=tool, reason=reason,
                              run_id=run_id, limit=limit, offset=offset)  # fmt: skip
        return json_response(found)

    @api.get(
        "/runs/{run_id}/stream",
        response_class=StreamingResponse,
        responses=_STREAMED,
    )
    async def follow(run_id: RunId) -> StreamingResponse:
        """Follow a stored run live, wherever it executes (a queue worker, another process):
        its stored steps as they are stored, then its terminal event."""
        await queued.check_stored(settings, run_id)
        return queued.response(settings, runtime, run_id)

    @api.post("/runs/{run_id}/cancel", response_model=CancelResult, responses=ERROR_RESPONSES)
    def cancel(run_id: RunId) -> CancelResult:
        if runtime.cancel(run_id):
            return CancelResult(run_id=run_id, cancelling=True, where="this_process")
        if runtime.cancel_anywhere(run_id):
            where: Literal["store", "this_process"] = (
                "store" if settings.store is not None else "this_process"
            )
            return CancelResult(run_id=run_id, cancelling=True, where=where)
        raise ApiError(404, "no running or waiting run has this id")
