"""Finding stored runs: filters, sorts, pages, search and the batched reads around them.

A ``RunQuery`` says which runs (status, provider, model, a tool used, a time range, with an
error or not, a privacy level, a search over the kept text, the run they re-run) and in which
order; ``page`` and ``count`` turn it into SQL that walks an index (see
``schema.VIEWER_INDEXES``). Every sort ends with the run's ``uid``, so pages never overlap or
skip, and runs without a value (no cost yet) come last in either direction. ``neighbour`` and
``before`` find, from one run, the runs next to it in that order, on any page: a keyset step
from the run's own sort value and ``uid``, which needs no offset.

Values are checked here, before any SQL: an unknown sort or status is a ``ValueError`` that
names the choices, and a search with no word in it matches nothing rather than everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, false, func, or_, select
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql.elements import ColumnElement

from toolwire.core.lifecycle import WAITING, RunStatus, as_strings
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import schema, search
from toolwire.store.statements import STEP_COUNT, TOKENS_UNKNOWN

_runs, _steps = schema.runs, schema.steps
MAX_PAGE = 1_000  # one page of a listing; more is a query, not a page
MAX_FACETS = 200  # distinct values offered as filter choices; more are typed, not picked
MAX_SEARCH_CHARS = 500  # a search box's worth
SORTS: Mapping[str, Any] = {
    "created_at": _runs.c.created_at,
    "cost": _runs.c.cost,
    "tokens": schema.TOKENS,
    "duration": _runs.c.duration_ms,
    "rounds": _runs.c.rounds,
}
NULLABLE_SORTS = frozenset({"cost", "duration"})  # a run without them yet sorts last
STATUSES = frozenset(str(s) for s in RunStatus)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunQuery:
    """Which runs, in which order, which page. Empty filters match every run."""

    limit: int = 50
    offset: int = 0
    statuses: tuple[str, ...] = ()
    waiting: bool = False  # only runs waiting for a person
    provider: str | None = None
    model: str | None = None
    tool: str | None = None  # a tool the run called
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created before
    has_error: bool | None = None  # the run failed, or one of its calls returned an error
    privacy_level: str | None = None
    search: str | None = None  # words that must begin words the store kept of the run
    rerun_of: str | None = None
    sort: str = "created_at"
    descending: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {self.limit}")
        if self.offset < 0:
            raise ValueError(f"offset must be 0 or more, not {self.offset}")
        if self.sort not in SORTS:
            raise ValueError(f"unknown sort {self.sort!r}: choose one of {', '.join(SORTS)}")
        unknown = [s for s in self.statuses if s not in STATUSES]
        if unknown:
            raise ValueError(
                f"unknown status {unknown[0][:40]!r}: choose from {', '.join(sorted(STATUSES))}"
            )
        if self.privacy_level not in (None, *(str(level) for level in PrivacyLevel)):
            choices = ", ".join(str(level) for level in PrivacyLevel)
            shown = str(self.privacy_level)[:40]
            raise ValueError(f"unknown privacy level {shown!r}: choose one of {choices}")
        if self.search is not None and len(self.search) > MAX_SEARCH_CHARS:
            raise ValueError(f"a search is at most {MAX_SEARCH_CHARS} characters")

    @property
    def words(self) -> list[str]:
        return search.query_words(self.search or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPage:
    """One page of runs (``RunSummary`` each) and how many runs match in all (-1: not
    counted)."""

    runs: list[Any] = field(repr=False)
    total: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Neighbours:
    """The runs before and after one run in a listing's order (``RunSummary`` each, or None at
    either end), its place in the listing (1 for the first; None when the filters leave it
    out) and how many runs the listing holds."""

    previous: Any = field(repr=False)
    next: Any = field(repr=False)
    position: int | None
    total: int


def conditions(query: RunQuery, dialect: Dialect) -> list[ColumnElement[bool]]:
    """The WHERE clauses of ``query``."""
    found: list[ColumnElement[bool]] = []
    statuses = set(query.statuses)
    if query.waiting:
        waiting = set(as_strings(WAITING))
        statuses = statuses & waiting if statuses else waiting
    if statuses or query.waiting:
        found.append(_runs.c.status.in_(sorted(statuses)))
    for column, value in (
        (_runs.c.provider, query.provider),
        (_runs.c.model, query.model),
        (_runs.c.privacy_level, query.privacy_level),
        (_runs.c.rerun_of, query.rerun_of),
    ):
        if value is not None:
            found.append(column == value)
    if query.since is not None:
        found.append(_runs.c.created_at >= query.since)
    if query.until is not None:
        found.append(_runs.c.created_at < query.until)
    if query.tool is not None:
        used = select(_steps.c.run_id).where(_steps.c.tool_name == query.tool)
        found.append(_runs.c.id.in_(used))
    if query.has_error is not None:
        failed = or_(_runs.c.error.is_not(None), func.coalesce(_runs.c.tool_errors, 0) > 0)
        found.append(failed if query.has_error else ~failed)
    if query.search is not None:
        found.append(search.matching(dialect, query.words) if query.words else false())
    return found


def page(query: RunQuery, dialect: Dialect) -> Select[Any]:
    """The rows of one page, each with its step count and whether its tokens are known."""
    statement = select(_runs, STEP_COUNT, TOKENS_UNKNOWN).where(*conditions(query, dialect))
    return statement.order_by(*order(query, dialect)).limit(query.limit).offset(query.offset)


def order(query: RunQuery, dialect: Dialect) -> list[Any]:
    """The ORDER BY of ``query``, NULL last both ways, each walking an index where it can:
    SQLite sorts NULL smallest (last when descending); PostgreSQL is told NULLS LAST, which
    its indexes (``schema.PG_SORT_INDEXES`` for descending) are built in."""
    key = SORTS[query.sort]
    uid = _runs.c.uid.desc() if query.descending else _runs.c.uid.asc()
    if query.sort not in NULLABLE_SORTS:
        return [key.desc() if query.descending else key.asc(), uid]
    if dialect.name == "postgresql":
        return [(key.desc() if query.descending else key.asc()).nulls_last(), uid]
    if query.descending:
        return [key.desc(), uid]
    return [key.is_(None), key.asc(), uid]


def anchor(query: RunQuery, run_id: str) -> Select[Any]:
    """Run ``run_id``'s place in ``query``'s order: whether it has no sort value, its uid."""
    key = SORTS[query.sort]
    return select(key.is_(None).label("unvalued"), _runs.c.uid).where(_runs.c.id == run_id)


def before(query: RunQuery, run_id: str, unvalued: bool, uid: int) -> ColumnElement[bool]:
    """The runs that come before run ``run_id`` (``unvalued`` and ``uid`` from ``anchor``) in
    ``query``'s order; NULL sort values come last in either direction."""
    return _beyond(query, run_id, unvalued, uid, after=False)


def neighbour(
    query: RunQuery, dialect: Dialect, run_id: str, unvalued: bool, uid: int, *, after: bool
) -> Select[Any]:
    """The run right after run ``run_id`` in ``query``'s order (``after``), or right before."""
    wanted = _beyond(query, run_id, unvalued, uid, after=after)
    statement = select(_runs, STEP_COUNT, TOKENS_UNKNOWN).where(*conditions(query, dialect), wanted)
    if after:
        return statement.order_by(*order(query, dialect)).limit(1)
    backwards = order(replace(query, descending=not query.descending), dialect)
    if query.sort in NULLABLE_SORTS:  # walking back, the runs without a value come first
        backwards = [SORTS[query.sort].is_(None).desc(), *backwards]
    return statement.order_by(*backwards).limit(1)


def _beyond(
    query: RunQuery, run_id: str, unvalued: bool, uid: int, *, after: bool
) -> ColumnElement[bool]:
    key = SORTS[query.sort]
    value = select(key).where(_runs.c.id == run_id).scalar_subquery()
    smaller = after == query.descending  # the way the listing goes from the run
    uid_beyond = _runs.c.uid < uid if smaller else _runs.c.uid > uid
    if unvalued:  # among the runs without a value, at the end, by uid
        same = and_(key.is_(None), uid_beyond)
        return same if after else or_(key.is_not(None), same)
    valued = or_(key < value if smaller else key > value, and_(key == value, uid_beyond))
    if after and query.sort in NULLABLE_SORTS:
        return or_(valued, key.is_(None))
    return valued


def count(query: RunQuery, dialect: Dialect) -> Select[Any]:
    return select(func.count()).select_from(_runs).where(*conditions(query, dialect))


def facets() -> dict[str, Select[Any]]:
    """The distinct values each filter can take, as far as the store holds them."""
    return {
        "providers": _distinct(_runs.c.provider),
        "models": _distinct(_runs.c.model),
        "tools": _distinct(_steps.c.tool_name),
        "statuses": _distinct(_runs.c.status),
        "privacy_levels": _distinct(_runs.c.privacy_level),
    }


def _distinct(column: Any) -> Select[Any]:
    """The column's distinct values, smallest first, each found by one seek of its index (a
    loose index scan): a few hundred seeks instead of a pass over every row."""
    found = select(func.min(column).label("value")).cte("found", recursive=True)
    following = select(func.min(column)).where(column > found.c.value).scalar_subquery()
    found = found.union_all(select(following).where(found.c.value.is_not(None)))
    return select(found.c.value).where(found.c.value.is_not(None)).limit(MAX_FACETS)


def first_requests(run_ids: Sequence[str]) -> Select[Any]:
    """The first request step of each run: its payload, for a prompt preview or a re-run."""
    first = (
        select(_steps.c.run_id, func.min(_steps.c.sequence).label("sequence"))
        .where(_steps.c.run_id.in_(list(run_ids)), _steps.c.kind == "request")
        .group_by(_steps.c.run_id)
        .subquery()
    )
    return select(_steps.c.run_id, _steps.c.payload).join(
        first, and_(_steps.c.run_id == first.c.run_id, _steps.c.sequence == first.c.sequence)
    )


def export_batch(
    query: RunQuery, dialect: Dialect, after: tuple[datetime, int] | None
) -> Select[Any]:
    """The next runs to export, oldest first, after ``(created_at, uid)``: a walk over the
    creation index that needs no offset, however many runs there are."""
    statement = select(_runs, STEP_COUNT, TOKENS_UNKNOWN).where(*conditions(query, dialect))
    if after is not None:
        created, uid = after
        statement = statement.where(
            or_(_runs.c.created_at > created, and_(_runs.c.created_at == created,
                                                   _runs.c.uid > uid))
        )  # fmt: skip
    return statement.order_by(_runs.c.created_at, _runs.c.uid).limit(query.limit)


def steps_of(run_ids: Sequence[str]) -> Select[Any]:
    return (
        select(_steps.c.run_id, _steps.c.sequence, _steps.c.payload)
        .where(_steps.c.run_id.in_(list(run_ids)))
        .order_by(_steps.c.run_id, _steps.c.sequence)
    )


def ids_starting(prefix: str) -> Select[Any]:
    """Run ids that begin with ``prefix`` (a few: ids are random)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return select(_runs.c.id).where(_runs.c.id.like(f"{escaped}%", escape="\\")).limit(100)
