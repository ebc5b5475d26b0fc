"""Forward-only schema migrations, applied when a store opens.

``schema_version`` holds the number of the last migration applied. Opening a store applies
every later migration, in order, each in its own transaction together with the version bump,
so a crash between two migrations leaves a database that the next open finishes. Migrating an
up-to-date database does nothing, and a database newer than this code is refused rather than
guessed at. Two processes opening a fresh database at once may race on the first migration;
the loser re-reads the version and finds nothing left to do. On PostgreSQL, where many workers
may start together, migrating holds an advisory lock, so they migrate one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, inspect, select, text, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.schema import CreateIndex

from toolwire.core.errors import StoreError
from toolwire.store import schema, search
from toolwire.store.backfill import backfill

Migration = Callable[[Connection], None]
MIGRATION_LOCK = 0x746F6F6C77697265  # "toolwire": the advisory lock migrating holds on PostgreSQL


def _v1_initial(connection: Connection) -> None:
    schema.metadata.create_all(
        connection,
        tables=[schema.runs, schema.steps, schema.tool_state, schema.tool_group_state],
    )


def _v2_suspension(connection: Connection) -> None:
    """Columns for resumable runs: the provider's address and the sealed suspended state.

    A database created by this code's v1 step already has them (it builds today's tables).
    """
    _add_run_columns(connection, schema.ADDED_RUN_COLUMNS)


def _v3_cost(connection: Connection) -> None:
    """A run's cost in US dollars and whether every call had a price. Older runs keep NULL:
    their cost was never known."""
    _add_run_columns(connection, schema.COST_COLUMNS)


def _v4_output_cap_field(connection: Connection) -> None:
    """Which output-cap field the run's OpenAI-compatible server takes, so a resume keeps it."""
    _add_run_columns(connection, schema.PROVIDER_FIELD_COLUMNS)


def _v5_step_kind_width(connection: Connection) -> None:
    """Room for longer step kinds (``context_truncated``). SQLite does not enforce a VARCHAR
    length, so only PostgreSQL's column changes."""
    if connection.dialect.name == "postgresql":
        kind = schema.steps.c.kind.type.compile(dialect=connection.dialect)
        connection.execute(text(f"ALTER TABLE {schema.steps.name} ALTER COLUMN kind TYPE {kind}"))


def _v6_held_answer(connection: Connection) -> None:
    """The sealed answer of a held call, kept for the caller that waits for it."""
    _add_run_columns(connection, schema.HELD_ANSWER_COLUMNS)


def _v7_governance_log(connection: Connection) -> None:
    """The governance log's table (``gate_decisions``); older runs have no rows in it."""
    schema.gate_decisions.create(connection, checkfirst=True)


def _v8_queue(connection: Connection) -> None:
    """Queued runs: their sealed request and checkpoint, claim, job and stall count. On
    PostgreSQL also the queue engine's own tables (Procrastinate's schema, when absent) and
    the table of live workers."""
    _add_run_columns(connection, schema.QUEUE_COLUMNS)
    if connection.dialect.name != "postgresql":
        return
    if connection.exec_driver_sql("SELECT to_regclass('procrastinate_jobs')").scalar() is None:
        from procrastinate.schema import SchemaManager

        # Without parameters psycopg still reads % as a placeholder: double them.
        connection.exec_driver_sql(SchemaManager.get_schema().replace("%", "%%"))
    workers = schema.queue_workers
    connection.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {workers.name} ("
        "id bigint PRIMARY KEY REFERENCES procrastinate_workers(id) ON DELETE CASCADE, "
        f"host varchar({schema.NAME_CHARS}) NOT NULL, pid integer NOT NULL, "
        "concurrency integer NOT NULL, started_at timestamp with time zone NOT NULL)"
    )


def _v9_runs_browser(connection: Connection) -> None:
    """What the runs browser filters, sorts and searches on: the run's options, the run it
    re-runs, its failed calls and duration; each tool step's name and error flag; the indexes
    over them; and the search index. Runs stored before get them all (see ``backfill``)."""
    _add_run_columns(connection, schema.VIEWER_RUN_COLUMNS)
    _add_columns(connection, schema.steps, schema.VIEWER_STEP_COLUMNS)
    for index in schema.VIEWER_INDEXES:  # IF NOT EXISTS: a new database has them from v1
        connection.execute(CreateIndex(index, if_not_exists=True))
    if connection.dialect.name == "postgresql":
        for name, columns in schema.PG_SORT_INDEXES.items():
            connection.execute(text(f"CREATE INDEX IF NOT EXISTS {name} ON {columns}"))
    fresh = not inspect(connection).has_table(search.TABLE)
    search.create(connection)
    if fresh:
        backfill(connection)


def _v10_charter(connection: Connection) -> None:
    """A run's charter and the version of its sealed values. Older runs keep NULL: their
    charter is read from the columns they were stored with (see :mod:`toolwire.policy.charter`)."""
    _add_run_columns(connection, schema.CHARTER_COLUMNS)


def _v11_gate_counts(connection: Connection) -> None:
    """How many decisions a governance row stands for. The rows older runs have for the tools
    they were not offered, one per tool, become one per reason (see ``gates.merge_offer_rows``)."""
    from toolwire.store.gates import merge_offer_rows  # the governance rules load the loop

    _add_columns(connection, schema.gate_decisions, schema.GATE_COUNT_COLUMNS)
    merge_offer_rows(connection)


def _v12_call_counts(connection: Connection) -> None:
    """The rows older runs have for a call refused again for the same reason, tool and actor,
    one per call, become one with their count (see ``gates.merge_call_rows``)."""
    from toolwire.store.gates import merge_call_rows  # the governance rules load the loop

    merge_call_rows(connection)


def _v13_egress_ledger(connection: Connection) -> None:
    """The egress ledger's table (``egress``); runs stored before have no rows in it: what
    they sent was never counted."""
    schema.egress.create(connection, checkfirst=True)


def _v14_live_questions(connection: Connection) -> None:
    """The table of live questions (``questions``): MCP servers' questions open while their
    runs' processes wait in the call, for any process to answer."""
    schema.questions.create(connection, checkfirst=True)


def _v15_run_workspace(connection: Connection) -> None:
    """The workspace each run was given (``runs.workspace``, indexed), so that a workspace's
    egress is summed over its runs. Older runs keep NULL: they count toward no workspace."""
    _add_run_columns(connection, schema.WORKSPACE_COLUMNS)
    index = next(i for i in schema.runs.indexes if i.name == "ix_runs_workspace")
    connection.execute(CreateIndex(index, if_not_exists=True))


def _add_run_columns(connection: Connection, names: tuple[str, ...]) -> None:
    """Add the ``runs`` columns in ``names`` that the table lacks (nullable, no default)."""
    _add_columns(connection, schema.runs, names)


def _add_columns(connection: Connection, table: Any, names: tuple[str, ...]) -> None:
    present = {c["name"] for c in inspect(connection).get_columns(table.name)}
    for name in names:
        if name not in present:
            kind = table.c[name].type.compile(dialect=connection.dialect)
            connection.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {name} {kind}"))


MIGRATIONS: tuple[Migration, ...] = (
    _v1_initial, _v2_suspension, _v3_cost, _v4_output_cap_field, _v5_step_kind_width,
    _v6_held_answer, _v7_governance_log, _v8_queue, _v9_runs_browser, _v10_charter,
    _v11_gate_counts, _v12_call_counts, _v13_egress_ledger, _v14_live_questions,
    _v15_run_workspace,
)  # fmt: skip
LATEST = len(MIGRATIONS)


def migrate(engine: Engine) -> int:
    """Bring the schema to ``LATEST``; return the version found before migrating."""
    with _exclusive(engine):
        try:
            return _migrate_once(engine)
        except SQLAlchemyError:
            # Another process may have migrated between our read and our write: look again.
            return _migrate_once(engine)


@contextmanager
def _exclusive(engine: Engine) -> Iterator[None]:
    """On PostgreSQL, one migrating process at a time (per database)."""
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})


def current_version(engine: Engine) -> int:
    with engine.connect() as connection:
        if not inspect(connection).has_table(schema.schema_version.name):
            return 0
        found = connection.execute(select(func.max(schema.schema_version.c.version))).scalar()
        return int(found or 0)


def _migrate_once(engine: Engine) -> int:
    found = current_version(engine)
    if found > LATEST:
        raise StoreError(
            f"the store's schema is version {found}, newer than this toolwire knows ({LATEST}); "
            "upgrade toolwire"
        )
    for number in range(found + 1, LATEST + 1):
        with engine.begin() as connection:
            schema.schema_version.create(connection, checkfirst=True)
            MIGRATIONS[number - 1](connection)
            _set_version(connection, number)
    return found


def _set_version(connection: Connection, number: int) -> None:
    table = schema.schema_version
    changed = connection.execute(update(table).values(version=number)).rowcount
    if not changed:
        connection.execute(insert(table).values(version=number))
