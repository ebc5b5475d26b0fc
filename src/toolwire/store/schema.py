"""The store's tables, on SQLAlchemy Core, the same on SQLite and PostgreSQL.

- ``runs``: one row per run. ``id`` is a UUID minted by the store; ``uid`` only orders rows.
  ``final_answer`` holds the answer as the run's privacy level allows (NULL when withheld,
  with its length in ``final_answer_length``). ``owner_host``/``owner_pid``/``owner_started``
  name the process running it, so a later open can tell a dead run from a live one.
  ``settled`` is set by the one settle that counts. ``provider``, ``model``, ``base_url``,
  ``trust_zone`` and ``script`` say how to reach the run's provider again (never a key).
  ``suspended_state`` holds a waiting run's sealed state (AES-GCM, see ``toolwire.core.sealing``;
  never plaintext) and ``pending_digest`` names its pending turn; both are erased when the run
  is claimed for a resume or ends. ``held_answer`` holds a held call's answer, sealed for the
  caller that waits for it (see :mod:`toolwire.runs.held`), until that caller takes it. ``cost`` is
  the run's price in US dollars (NULL: not settled yet) and ``cost_complete`` is false when a
  call had no known price, so ``cost`` is a lower bound; both are metadata, kept at every
  privacy level. ``options`` holds the run's options as JSON (limits, sampling, the tools it
  asked for: metadata, never a prompt), ``rerun_of`` the run it was started again from,
  ``tool_errors`` how many of its calls returned an error and ``duration_ms`` the time from
  its start to its end (both NULL until it ends); added by migration 9.
  ``charter`` holds the run's charter (who it acts for, where, under which policy: see
  :mod:`toolwire.policy.charter`), sealed when the store's process has a state key; ``seal_version``
  counts the sealed values written for the run, each bound to its count, so that only the
  latest opens. Both added by migration 10. ``workspace`` names the workspace the run was
  given, as a digest of its file's path (see :func:`toolwire.policy.egress.workspace_key`;
  NULL: none), so that a workspace's egress is summed over its runs; added by migration 15.
  A queued run (executed by workers, see :mod:`toolwire.queue`) has ``queued`` set; its
  request waits sealed in ``queued_request`` and its progress in ``checkpoint`` (both AES-GCM
  like the suspended state, both erased when the run ends). ``claim`` names the segment that
  holds it (a worker's writes are guarded by it), ``job_id`` the engine's job that runs it,
  ``stalls`` how often its worker stopped, ``queued_at`` when it last started waiting.
- ``steps``: one row per recorded step; ``(run_id, sequence)`` is the key, so a sequence number
  is unique within its run. ``payload`` is the privacy-filtered step as canonical JSON text;
  ``tool_name`` and ``is_error`` repeat a tool step's (filtered) name and error flag, so that
  runs can be found by the tools they used (migration 9).
- ``run_text`` (see :mod:`toolwire.store.search`): the words of each step's kept text, for
  search; created with dialect-specific SQL, so it is not declared here (migration 9).
- ``gate_decisions``: the governance log (see :mod:`toolwire.loop.governance`): a row per gate
  decision that refused or changed something (the tools a run was not offered: a row per
  reason), derived from the filtered steps and the run's ending. ``sequence`` names the step it
  came from (NULL: the run's ending); ``detail`` holds metadata only. Added by migration 7;
  ``count``, how many decisions a row stands for, by migration 11 (NULL in older rows: one).
- ``egress``: the egress ledger (see :mod:`toolwire.policy.egress`): a row per provider, tool,
  data class and integrity label of each request that carried tool output, derived from its
  ``llm`` or ``provider_failed`` step and written beside it (``sequence``), at every privacy
  level: counts only. ``copies`` is how many times the request was sent there; ``new_bytes``
  and ``wire_bytes`` count every copy. Added by migration 13.
- ``tool_state`` and ``tool_group_state``: sparse enable/disable overrides (no row: default).
- ``queue_workers`` (PostgreSQL only): the host, process and concurrency of each live worker,
  keyed by the engine's worker id (and dropped with it).
- ``schema_version``: one row, the last migration applied.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

ID_CHARS = 36  # a UUID in its canonical text form
NAME_CHARS = 255  # tool and group names, provider and model labels
DIGEST_CHARS = 64  # a pending turn's digest (32 hex characters today)
# Columns added after the first schema, in the order migrations added them.
ADDED_RUN_COLUMNS = ("base_url", "trust_zone", "script", "suspended_state", "pending_digest")
COST_COLUMNS = ("cost", "cost_complete")  # added by migration 3
PROVIDER_FIELD_COLUMNS = ("max_tokens_field",)  # added by migration 4
KIND_CHARS = 32  # a step kind ("context_truncated"); 16 until migration 5
HELD_ANSWER_COLUMNS = ("held_answer",)  # added by migration 6
CLAIM_CHARS = 32  # a segment's claim: 32 hex characters
QUEUE_COLUMNS = (
    "queued", "queued_request", "checkpoint", "claim", "job_id", "stalls", "queued_at",
)  # fmt: skip  # added by migration 8
VIEWER_RUN_COLUMNS = ("options", "rerun_of", "tool_errors", "duration_ms")  # migration 9
VIEWER_STEP_COLUMNS = ("tool_name", "is_error")  # migration 9
CHARTER_COLUMNS = ("charter", "seal_version")  # migration 10
GATE_COUNT_COLUMNS = ("count",)  # migration 11
WORKSPACE_COLUMNS = ("workspace",)  # migration 15
WORKSPACE_CHARS = 32  # a workspace's key: 32 hex characters of a digest of its file's path

runs = Table(
    "runs",
    metadata,
    Column("uid", Integer, primary_key=True, autoincrement=True),
    Column("id", String(ID_CHARS), nullable=False, unique=True),
    Column("status", String(32), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("provider", String(NAME_CHARS)),
    Column("model", String(NAME_CHARS)),
    Column("privacy_level", String(16), nullable=False),
    Column("termination_reason", String(32)),
    Column("truncated", Boolean, nullable=False, default=False),
    Column("rounds", Integer, nullable=False, default=0),
    Column("prompt_tokens", Integer, nullable=False, default=0),
    Column("completion_tokens", Integer, nullable=False, default=0),
    Column("final_answer", Text),
    Column("final_answer_length", Integer),
    Column("error", Text),
    Column("cancel_requested", Boolean, nullable=False, default=False),
    Column("settled", Boolean, nullable=False, default=False),
    Column("owner_host", String(NAME_CHARS)),
    Column("owner_pid", Integer),
    Column("owner_started", String(32)),
    Column("base_url", Text),
    Column("trust_zone", String(32)),
    Column("script", Text),
    Column("max_tokens_field", String(32)),
    Column("suspended_state", Text),
    Column("pending_digest", String(DIGEST_CHARS)),
    Column("held_answer", Text),
    Column("cost", Float),
    Column("cost_complete", Boolean),
    Column("queued", Boolean),
    Column("queued_request", Text),
    Column("checkpoint", Text),
    Column("claim", String(CLAIM_CHARS)),
    Column("job_id", BigInteger),
    Column("stalls", Integer),
    Column("queued_at", DateTime(timezone=True)),
    Column("options", Text),
    Column("rerun_of", String(ID_CHARS)),
    Column("tool_errors", Integer),
    Column("duration_ms", Float),
    Column("charter", Text),
    Column("seal_version", Integer),
    Column("workspace", String(WORKSPACE_CHARS)),
    Index("ix_runs_created_at", "created_at"),
    Index("ix_runs_status", "status"),
    Index("ix_runs_workspace", "workspace"),
)

steps = Table(
    "steps",
    metadata,
    Column(
        "run_id",
        String(ID_CHARS),
        ForeignKey("runs.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("sequence", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(KIND_CHARS), nullable=False),
    Column("round", Integer, nullable=False),
    Column("duration_ms", Float, nullable=False),
    Column("payload", Text, nullable=False),
    Column("tool_name", String(NAME_CHARS)),
    Column("is_error", Boolean),
)

# The runs browser's filters and sorts, each walking an index instead of the table (migration
# 9). A filter on one column pairs it with the creation time, the default order.
TOKENS = runs.c.prompt_tokens + runs.c.completion_tokens  # the "tokens" sort
VIEWER_INDEXES = (
    Index("ix_runs_status_created", runs.c.status, runs.c.created_at),
    Index("ix_runs_provider_created", runs.c.provider, runs.c.created_at),
    Index("ix_runs_model_created", runs.c.model, runs.c.created_at),
    Index("ix_runs_privacy_created", runs.c.privacy_level, runs.c.created_at),
    Index("ix_runs_cost", runs.c.cost, runs.c.uid),
    Index("ix_runs_tokens", TOKENS, runs.c.uid),
    Index("ix_runs_duration", runs.c.duration_ms, runs.c.uid),
    Index("ix_runs_rounds", runs.c.rounds, runs.c.uid),
    Index("ix_runs_rerun_of", runs.c.rerun_of),
    Index("ix_steps_tool_name", steps.c.tool_name, steps.c.run_id),
)
# PostgreSQL sorts NULL first when descending; the browser wants runs without a cost (still
# running, or stored before costs) last either way, which a descending sort walks only in an
# index built that way. SQLite already sorts NULL smallest, and cannot declare it.
PG_SORT_INDEXES = {
    "ix_runs_cost_desc": "runs (cost DESC NULLS LAST, uid DESC)",
    "ix_runs_duration_desc": "runs (duration_ms DESC NULLS LAST, uid DESC)",
}

GATE_CHARS = 16  # a gate's name ("approval")
REASON_CHARS = 32  # a reason code ("no_longer_permitted")

gate_decisions = Table(
    "gate_decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(ID_CHARS), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sequence", Integer),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("round", Integer),
    Column("gate", String(GATE_CHARS), nullable=False),
    Column("reason", String(REASON_CHARS), nullable=False),
    Column("actor", String(NAME_CHARS), nullable=False),
    Column("tool", String(NAME_CHARS)),
    Column("detail", Text),
    Column("count", Integer),
    Index("ix_gate_decisions_at", "at"),
    Index("ix_gate_decisions_run_id", "run_id"),
    Index("ix_gate_decisions_tool", "tool"),
    Index("ix_gate_decisions_reason", "reason"),
)

LABEL_CHARS = 16  # an integrity label ("untrusted", "runtime")
CLASS_CHARS = 32  # a data class ("system_diagnostics")

egress = Table(
    "egress",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(ID_CHARS), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sequence", Integer, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("round", Integer, nullable=False),
    Column("provider", String(NAME_CHARS), nullable=False),
    Column("tool", String(NAME_CHARS), nullable=False),
    Column("data_class", String(CLASS_CHARS), nullable=False),
    Column("label", String(LABEL_CHARS), nullable=False),
    Column("copies", Integer, nullable=False),
    Column("new_bytes", BigInteger, nullable=False),
    Column("wire_bytes", BigInteger, nullable=False),
    Index("ix_egress_run_id", "run_id"),
    Index("ix_egress_at", "at"),
)

QUESTION_ID_CHARS = 32  # a live question's id: 32 hex characters

# Migration 14: the questions MCP servers have open during live runs' calls (see
# toolwire.runs.questions). A row lives only while its question is open.
questions = Table(
    "questions",
    metadata,
    Column("id", String(QUESTION_ID_CHARS), primary_key=True),
    Column("run_id", String(ID_CHARS), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("server", String(NAME_CHARS), nullable=False),
    Column("tool", String(NAME_CHARS), nullable=False),
    Column("message", Text, nullable=False),
    Column("fields", Text, nullable=False),  # JSON: the form's fields
    Column("acting", String(NAME_CHARS)),  # the user the run acts for
    Column("asked_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("answer", Text),  # JSON: action, content, by; NULL until answered
    Index("ix_questions_run_id", "run_id"),
)

tool_state = Table(
    "tool_state",
    metadata,
    Column("name", String(NAME_CHARS), primary_key=True),
    Column("enabled", Boolean, nullable=False),
)

tool_group_state = Table(
    "tool_group_state",
    metadata,
    Column("name", String(NAME_CHARS), primary_key=True),
    Column("enabled", Boolean, nullable=False),
)

# Created by migration 8 on PostgreSQL only, with a foreign key to the engine's own table of
# workers (procrastinate_workers), so a row goes when its worker is pruned or stops.
queue_workers = Table(
    "queue_workers",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("host", String(NAME_CHARS), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("concurrency", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
)

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, nullable=False),
)
