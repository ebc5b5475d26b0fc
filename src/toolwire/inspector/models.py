"""The API's request and response models. Every request field has a limit.

Request models forbid unknown fields and coerce no types, so a misspelt option or a wrong
type is an error, not a silent default.
Response models document the shapes in the OpenAPI document; steps and artifacts are plain
JSON (``RunStep.to_dict()``), described loosely because they are a tagged union of dicts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolwire.loop.loop import MAX_ROUNDS
from toolwire.policy.options import DEFAULT_MAX_REMOTE_CALLS, MAX_CONCURRENCY

MAX_PROMPT_CHARS = 200_000  # a long document pasted as a prompt; the body cap is the real bound
MAX_NAME_CHARS = 200  # tool, group, provider and model names are identifiers
MAX_TOOLS_LISTED = 1_000  # far more tools than any model can be offered usefully
MAX_ARGUMENT_KEYS = 200  # a tool's parameters, with room to spare
MAX_DIGEST_CHARS = 64  # a turn digest is 32 hex characters
MAX_REASON_CHARS = 2_000  # a sentence or two on why a call was approved or denied
MAX_REASONING_TOKENS = 200_000  # a thinking budget beyond every model's output window
MAX_ANSWER_TOKENS = 1_000_000  # an output cap beyond every model's output window
MAX_RUN_TOKENS = 1_000_000_000  # a run budget: a billion tokens is no budget at all
MAX_RUN_DOLLARS = 100_000.0  # a run budget in dollars; more is a typo, not a budget
MAX_CONTEXT_TOKENS = 100_000_000  # a hundred times today's largest context window
MAX_REMOTE_CALLS = 10_000  # remote calls a run may make; more is no budget at all
MAX_EGRESS_BYTES = 10**15  # a petabyte of tool output: more is a typo, not a limit
MAX_RUN_ID_CHARS = 64  # run ids are UUIDs
RUN_ID = r"^[0-9A-Za-z-]+$"
MAX_BASE_URL_CHARS = 2_000  # a URL, not a document

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Effort = Literal["low", "medium", "high"]


class _Strict(BaseModel):
    # Strict: ``0`` is not ``false`` and ``"5"`` is not ``5``; a wrong type is an error.
    model_config = ConfigDict(extra="forbid", strict=True)


class RunBody(_Strict):
    """Start a run. ``allowed_tools`` absent: every enabled tool; ``[]``: no tools at all."""

    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, repr=False)
    system_prompt: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS, repr=False)
    provider: Name = "scripted"
    model: Name | None = None
    allowed_tools: list[Name] | None = Field(default=None, max_length=MAX_TOOLS_LISTED)
    max_rounds: int = Field(default=5, ge=1, le=MAX_ROUNDS)
    temperature: float | None = Field(default=None, ge=0, le=2)
    dry_run: bool = False
    capture_raw: bool = False
    # An effort level, or a thinking budget in tokens; absent: the model's default.
    reasoning: Effort | Annotated[int, Field(ge=1, le=MAX_REASONING_TOKENS)] | None = None
    stream: bool = True
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_ANSWER_TOKENS)
    max_total_tokens: int | None = Field(default=None, ge=1, le=MAX_RUN_TOKENS)
    max_cost: float | None = Field(default=None, gt=0, le=MAX_RUN_DOLLARS, allow_inf_nan=False)
    # The model's context window in tokens; absent: the provider's, or the price table's.
    context_window: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_TOKENS)
    # Calls of one turn in flight at once; absent: the default (8).
    max_concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    # A trust zone name (toolwire.core.trust.TrustZone); absent: the provider's own zone.
    trust_zone: Name | None = None
    # auto, none, required, or the name of one offered tool (toolwire.policy.options).
    tool_choice: Name = "auto"
    # Another server speaking the provider's API; checked server-side, and sent no key from
    # the environment (toolwire.inspector.settings.ServedProviders).
    base_url: str | None = Field(default=None, min_length=1, max_length=MAX_BASE_URL_CHARS)
    max_remote_calls: int = Field(default=DEFAULT_MAX_REMOTE_CALLS, ge=0, le=MAX_REMOTE_CALLS)
    # Bytes of tool output the run may send its providers; absent: the workspace's limit only
    # (a run may ask for less than the workspace allows, never more).
    max_egress_bytes: int | None = Field(default=None, ge=0, le=MAX_EGRESS_BYTES)
    # What passing an egress limit does: the run stops, or waits for approval; absent: the
    # workspace's choice (stop wins where the two differ).
    on_egress_limit: Literal["stop", "approve"] | None = None
    # The stored run this one starts again (see ``toolwire.inspector.rerun``).
    rerun_of: str | None = Field(default=None, max_length=MAX_RUN_ID_CHARS, pattern=RUN_ID)


class ToggleBody(_Strict):
    """Enable (true), disable (false) or reset to the default (null)."""

    enabled: bool | None


class InvokeBody(_Strict):
    """Arguments for one direct tool call, as the model would send them."""

    arguments: dict[str, Any] = Field(
        default_factory=dict, max_length=MAX_ARGUMENT_KEYS, repr=False
    )


class DecisionBody(_Strict):
    """An operator's answer to a waiting run, quoting the digest of the turn it was made on.

    ``values`` is the person's input (``input`` only), checked against the tool's schema."""

    action: Literal["approve", "deny", "input"]
    digest: str = Field(min_length=1, max_length=MAX_DIGEST_CHARS, pattern=r"^[0-9a-f]+$")
    reason: str | None = Field(default=None, max_length=MAX_REASON_CHARS, repr=False)
    values: dict[str, Any] | None = Field(default=None, max_length=MAX_ARGUMENT_KEYS, repr=False)


class ToolRow(BaseModel):
    name: str
    description: str
    group: str
    enabled: bool
    tool_enabled: bool
    group_enabled: bool
    default_enabled: bool
    overridden: bool
    requires_admin: bool
    why: str
    parameters: dict[str, Any]  # the JSON schema of the tool's arguments, as the model sees it
    server: str | None = None  # the MCP server of a remote tool


class GroupRow(BaseModel):
    name: str
    enabled: bool
    overridden: bool


class Defaults(BaseModel):
    prompt: str = Field(repr=False)
    provider: str
    model: str
    reasoning: str | int | None = None
    stream: bool = True
    max_tokens: int | None = None
    max_total_tokens: int | None = None
    max_cost: float | None = None
    context_window: int | None = None
    max_concurrency: int | None = None
    tool_choice: str = "auto"
    base_url: str | None = None
    replay_label: str | None = None  # set when the default provider replays a script
    trust_zones: list[str] = []  # every zone a run may choose, least trusted last


class ToolsList(BaseModel):
    tools: list[ToolRow]
    groups: list[GroupRow]


class Verdict(BaseModel):
    """The gate's answer for one tool, before a run: offered, or refused and why."""

    tool: str
    allowed: bool
    reason: str
    detail: str = ""


class GateResult(BaseModel):
    """What a run with this provider and zone would be offered."""

    provider: str
    trust_zone: str
    tools: list[Verdict]


class Refused(BaseModel):
    reason: str
    detail: str = ""


class InvokeResult(BaseModel):
    """A direct call's outcome. ``refused`` is set (and nothing ran) when the gate said no."""

    tool: str
    content: str | None = Field(repr=False)
    is_error: bool
    artifacts: list[dict[str, Any]] = Field(repr=False)
    refused: Refused | None = None
    duration_ms: float
    original_bytes: int | None = None
    run_id: str | None = None  # the stored run that audits this call, when there is a store


class RunResult(BaseModel):
    """A batch run: the context event, every step, and the terminal event."""

    context: dict[str, Any]
    steps: list[dict[str, Any]] = Field(repr=False)
    result: dict[str, Any] = Field(repr=False)


class QueuedRun(BaseModel):
    """A run queued for the workers (``serve --queue``): follow it at
    ``/api/runs/{run_id}/stream`` or read it at ``/api/runs/{run_id}``."""

    run_id: str
    status: Literal["queued"]


class RunsList(BaseModel):
    """One page of stored runs; ``total`` counts every run the filters match."""

    runs: list[dict[str, Any]] = Field(repr=False)
    stored: bool
    total: int = 0
    limit: int = 50
    offset: int = 0


class RunNeighbours(BaseModel):
    """The stored runs before and after one run in a listing (its filters and order, on any
    page), each as the listing shows it, or None at either end; the run's place in the listing
    (None when the filters leave it out) and how many runs the listing holds."""

    run_id: str
    previous: dict[str, Any] | None = Field(repr=False)
    next: dict[str, Any] | None = Field(repr=False)
    position: int | None
    total: int


class Facets(BaseModel):
    """The values each filter of the stored runs can take, as far as the store holds them."""

    stored: bool
    providers: list[str] = []
    models: list[str] = []
    tools: list[str] = []
    statuses: list[str] = []
    privacy_levels: list[str] = []


class RerunTemplate(BaseModel):
    """The run form for starting a stored run again, or why it cannot be (``reason``).

    ``source`` says where the request came from: ``stored`` (kept at privacy level full) or
    ``sealed`` (a waiting run's state). ``options`` are RunBody fields; empty when the run's
    options were never recorded (``options_recorded`` false). ``provider_problem`` says why
    this server cannot start the run's provider, when it cannot."""

    run_id: str
    available: bool
    reason: str = ""
    source: Literal["stored", "sealed"] | None = None
    prompt: str | None = Field(default=None, repr=False)
    system_prompt: str | None = Field(default=None, repr=False)
    provider: str
    model: str | None = None
    options: dict[str, Any] = {}
    options_recorded: bool = False
    provider_problem: str = ""


class AuditList(BaseModel):
    """The governance log, newest first (``stored`` false: no store, so no log)."""

    decisions: list[dict[str, Any]] = Field(repr=False)
    stored: bool


class PendingResult(BaseModel):
    """What a waiting run waits on: its pending calls, their previews and the turn digest."""

    status: Literal["awaiting_approval", "awaiting_input"]
    digest: str
    calls: list[dict[str, Any]] = Field(repr=False)
    previews: list[dict[str, Any]] = Field(repr=False)
    input_tool: str | None
    input_schema: dict[str, Any] | None
    # Writes whose outcome is unknown (their worker stopped): approving runs them again.
    rerun: list[str] = Field(default_factory=list)
    # "egress": not a turn (``calls`` is empty) but the run's next request, which would pass
    # an egress limit; ``egress`` says where it goes and its bytes against each limit.
    kind: Literal["calls", "egress"] = "calls"
    egress: dict[str, Any] | None = None


class CancelResult(BaseModel):
    run_id: str
    cancelling: bool
    where: Literal["this_process", "store", "none"]
