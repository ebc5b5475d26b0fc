"""The stored runs through the API: a filtered, sorted page, filter values, export, re-run.

``GET /api/runs`` takes the filters of :class:`toolwire.store.browse.RunQuery` as query
parameters (``status`` may repeat; ``since``/``until`` are a duration back from now, ``7d``, or
ISO 8601, UTC when no offset is given; ``q`` searches the words the privacy level kept) and
answers one page with the total the filters match. ``GET /api/runs/{id}/neighbours`` takes the
same parameters and answers the runs before and after that run in the listing, on whichever page
they are (the page's ``limit`` and ``offset`` are ignored). ``GET /api/runs/{id}/export`` is the
run's export record (see :mod:`toolwire.store.export`), ``GET /api/runs/{id}/rerun`` the run
form to start it again (see :mod:`toolwire.inspector.rerun`), ``GET /api/runs/{id}/egress`` its
egress ledger and ``GET /api/egress`` the ledger's totals over ``since``/``until``, split ``by``
(see :mod:`toolwire.store.egress`), ``GET /api/facets`` the values each filter can take.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Depends, Query
from fastapi import Path as PathParam
from fastapi.responses import Response

from toolwire.core.moments import parse_moment
from toolwire.inspector import previews, rerun
from toolwire.inspector.errors import ERROR_RESPONSES, ApiError, json_response
from toolwire.inspector.models import (
    MAX_NAME_CHARS,
    MAX_RUN_ID_CHARS,
    RUN_ID,
    Facets,
    RerunTemplate,
    RunNeighbours,
    RunsList,
)
from toolwire.inspector.settings import InspectorSettings
from toolwire.runs.runtime import Runtime
from toolwire.store.browse import MAX_SEARCH_CHARS, SORTS, RunQuery
from toolwire.store.egress import GROUPS, EgressTotal, Group
from toolwire.store.export import run_record

MAX_RUNS_PAGE = 200  # one screen of the runs browser, with room to spare
MAX_OFFSET = 10_000_000  # far past any page a person reads; bounds the query
MAX_STATUSES = 20  # more than there are statuses
Name = Annotated[str | None, Query(min_length=1, max_length=MAX_NAME_CHARS)]
# An ISO 8601 date or time: a string, so that a bare number is not taken as a Unix time.
Moment = Annotated[str | None, Query(min_length=1, max_length=40)]  # read by parse_moment
RunId = Annotated[str, PathParam(min_length=1, max_length=MAX_RUN_ID_CHARS, pattern=RUN_ID)]
Sort = Literal["created_at", "cost", "tokens", "duration", "rounds"]
assert set(SORTS) == set(get_args(Sort))  # the API offers exactly the store's sorts


def install(api: APIRouter, settings: InspectorSettings, runtime: Runtime) -> None:
    """Add the stored-runs routes to ``api`` (``GET /runs/{id}`` stays with the others)."""

    @api.get("/facets", response_model=Facets, responses=ERROR_RESPONSES)
    def facets() -> Facets:
        if settings.store is None:
            return Facets(stored=False)
        return Facets(stored=True, **settings.store.facets())

    @api.get("/runs/{run_id}/export", responses=ERROR_RESPONSES)
    def export(run_id: RunId) -> Response:
        """The run's export record (schema ``toolwire.run``), as a file to save."""
        stored = stored_run(settings, run_id)
        disposition = f'attachment; filename="toolwire-run-{stored.id}.json"'
        return json_response(run_record(stored), headers={"Content-Disposition": disposition})

    @api.get("/runs/{run_id}/rerun", response_model=RerunTemplate, responses=ERROR_RESPONSES)
    def rerun_form(run_id: RunId) -> Response:
        template = rerun.template(settings, runtime, stored_run(settings, run_id))
        return json_response(template.model_dump())

    @api.get("/runs/{run_id}/neighbours", response_model=RunNeighbours,
             responses=ERROR_RESPONSES)  # fmt: skip
    def neighbours(run_id: RunId, query: Annotated[RunQuery, Depends(query_of)]) -> Response:
        """The runs before and after ``run_id`` in the listing ``GET /api/runs`` answers for
        the same filters and order, as it lists them (privacy-filtered, with previews)."""
        return neighbours_of(settings, query, run_id)

    @api.get("/runs/{run_id}/egress", responses=ERROR_RESPONSES)
    def egress(run_id: RunId) -> Response:
        """The run's egress ledger: bytes of tool output sent, per provider, tool, data class
        and integrity label (counts only: kept at every privacy level)."""
        stored_run(settings, run_id)  # 404 for a run the store does not have
        assert settings.store is not None
        return json_response(ledger_of(settings.store.egress(run_id=run_id), run_id=run_id))

    @api.get("/egress", responses=ERROR_RESPONSES)
    def egress_totals(
        since: Moment = None,
        until: Moment = None,
        by: Annotated[list[Group] | None, Query(max_length=4)] = None,
    ) -> Response:
        """Bytes of tool output sent by every stored run in ``[since, until)``, summed per
        ``by`` (provider, tool, data_class, label; all when not given)."""
        if settings.store is None:
            return json_response(ledger_of([]))
        found = settings.store.egress(by=GROUPS if by is None else by,
                                      since=moment(since, "since"),
                                      until=moment(until, "until"))  # fmt: skip
        return json_response(ledger_of(found))

    @api.get("/runs", response_model=RunsList, responses=ERROR_RESPONSES)
    def runs(query: Annotated[RunQuery, Depends(query_of)]) -> Response:
        """One page of stored runs: filtered, sorted, searched (see ``inspector.stored``)."""
        return list_page(settings, query)


def ledger_of(found: list[EgressTotal], **about: str) -> dict[str, Any]:
    """The ledger's lines and their sums, as the API answers them."""
    return {**about, "lines": [line.to_dict() for line in found],
            "new_bytes": sum(line.new_bytes for line in found),
            "wire_bytes": sum(line.wire_bytes for line in found)}  # fmt: skip


def stored_run(settings: InspectorSettings, run_id: str) -> Any:
    """The store's run ``run_id`` (a ``StoredRun``); 404 when there is none, or no store."""
    found = None if settings.store is None else settings.store.get_run(run_id)
    if found is None:
        raise ApiError(404, "no stored run has this id")
    return found


def list_page(settings: InspectorSettings, query: RunQuery) -> Response:
    """One page of stored runs, each with its prompt preview, and the total."""
    if settings.store is None:
        return json_response({"runs": [], "stored": False, "total": 0, "limit": query.limit,
                              "offset": query.offset})  # fmt: skip
    found = settings.store.find_runs(query)
    runs = [run.to_dict() for run in found.runs]
    return json_response({
        "runs": previews.with_previews(settings.store, runs), "stored": True,
        "total": found.total, "limit": query.limit, "offset": query.offset,
    })  # fmt: skip


def neighbours_of(settings: InspectorSettings, query: RunQuery, run_id: str) -> Response:
    """The runs next to ``run_id`` in the listing; 404 when there is no such run, or no store."""
    store = settings.store
    found = None if store is None else store.neighbours(query, run_id)
    if store is None or found is None:
        raise ApiError(404, "no stored run has this id")
    near = [run.to_dict() for run in (found.previous, found.next) if run is not None]
    shown = {run["id"]: run for run in previews.with_previews(store, near)}
    return json_response({
        "run_id": run_id,
        "previous": None if found.previous is None else shown[found.previous.id],
        "next": None if found.next is None else shown[found.next.id],
        "position": found.position, "total": found.total,
    })  # fmt: skip


def query_of(
    *,
    limit: Annotated[int, Query(ge=1, le=MAX_RUNS_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    waiting: bool = False,
    status: Annotated[list[str] | None, Query(max_length=MAX_STATUSES)] = None,
    provider: Name = None,
    model: Name = None,
    tool: Name = None,
    since: Moment = None,
    until: Moment = None,
    has_error: bool | None = None,
    privacy_level: Annotated[str | None, Query(max_length=16)] = None,
    q: Annotated[str | None, Query(max_length=MAX_SEARCH_CHARS)] = None,
    rerun_of: Annotated[str | None, Query(max_length=MAX_RUN_ID_CHARS, pattern=RUN_ID)] = None,
    sort: Sort = "created_at",
    order: Literal["asc", "desc"] = "desc",
) -> RunQuery:
    """The query parameters of ``GET /api/runs`` as a ``RunQuery`` (422 for a bad value)."""
    try:
        return RunQuery(
            limit=limit, offset=offset, waiting=waiting, statuses=tuple(status or ()),
            provider=provider, model=model, tool=tool, since=moment(since, "since"),
            until=moment(until, "until"),
            has_error=has_error, privacy_level=privacy_level, search=q or None,
            rerun_of=rerun_of, sort=sort, descending=order == "desc",
        )  # fmt: skip
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None


def moment(value: str | None, name: str) -> datetime | None:
    """A duration back from now (``7d``) or an ISO 8601 date or time (``2024-05-01``,
    ``2024-05-01T12:00:00+02:00``; UTC when it names no offset), as the command line reads
    them (:func:`toolwire.core.moments.parse_moment`). A ``ValueError`` names the parameter."""
    if value is None:
        return None
    try:
        return parse_moment(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
