"""Shared by the inspector's API and browser tests: tools, scripts and a live loopback server."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Annotated, Any, ClassVar, Literal

import uvicorn
from pydantic import BaseModel, ConfigDict, Field

from toolwire import Artifact, ScriptedProvider, ToolRegistry, ToolResult, tool
from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone
from toolwire.inspector import InspectorSettings
from toolwire.policy.charter import Charter
from toolwire.policy.trace import RunStep
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Delta,
    Provider,
    Usage,
    no_session,
)
from toolwire.runs.runtime import RunOutcome, RunRequest
from toolwire.store.browse import RunPage
from toolwire.tools.registry import Availability

from .served import free_port

TOKEN = "test-token-" + "x" * 32
# A provider's refusal text is untrusted: markup, script and controls that must stay text.
HOSTILE_REFUSAL = (
    '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
    "\u202eI cannot help\x1b[31m</pre>"
)
PIECE_DELAY_S = 0.4  # between streamed pieces: long enough to see each arrive alone
STREAMED = (
    Delta("thinking", "Weighing "),
    Delta("thinking", "<b>the</b> orders."),
    Delta("content", "Ada has "),
    Delta("content", "<i>two</i> orders."),
)
STREAMED_THINKING = "Weighing <b>the</b> orders."
STREAMED_ANSWER = "Ada has <i>two</i> orders."
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TABLE_COLUMNS = ["id", "customer", "total"]
TABLE_ROWS = [["1001", "Ada", "49.90"], ["1002", "Grace", "12.00"]]


@tool(group="records", data_class="public")
def lookup(customer: str) -> ToolResult:
    """Look up a customer's orders."""
    return ToolResult.text(
        f"2 orders for {customer}", Artifact.table("orders", TABLE_COLUMNS, TABLE_ROWS)
    )


@tool(group="records", data_class="public")
def every_artifact() -> ToolResult:
    """Return one artifact of each type."""
    return ToolResult.text(
        "six artifacts",
        Artifact.table("a table", ["k", "v"], [["x", "1"]]),
        Artifact.text("a text", "line one\nline two"),
        Artifact.tree("a tree", [{"label": "root", "children": [{"label": "leaf"}]}]),
        Artifact.key_value("some pairs", [("name", "Ada"), ("role", "admin")]),
        Artifact.code("some code", "x = 1\ny = 2", language="python", first_line=10),
        Artifact.link("a link", "https://example.com/docs", "the docs"),
    )


@tool(group="records", data_class="public")
def odd_artifacts() -> ToolResult:
    """Artifacts whose data does not fit their type, and a link that is not a web link."""
    return ToolResult.text(
        "odd",
        Artifact(Artifact.table("x", [], []).type, "broken table", {"columns": "id", "rows": 3}),
        Artifact.link("script link", "javascript:window.__pwned=1", "click me"),
    )


@tool(group="files", data_class="public")
def echo(text: str) -> ToolResult:
    """Return the text, as content and as a text artifact."""
    return ToolResult.text(text, Artifact.text(text, text))


@tool(group="files", data_class="public", enabled_by_default=False)
def dormant() -> str:
    """A tool that is off unless someone turns it on."""
    return "awake"


@tool(group="admin", data_class="public", requires_admin=True)
def boom() -> str:
    """Always fails."""
    raise RuntimeError("secret-path /etc/shadow leaked in an exception")


WRITES: list[str] = []  # what write_note wrote, in order, across every test of a process


@tool(group="files", data_class="public", requires_approval=True)
def write_note(path: str, text: str) -> str:
    """Write a note; every call waits for an operator's approval."""
    WRITES.append(f"{path}: {text}")
    return f"wrote {len(text)} characters to {path}"


@write_note.previewer
def _preview_note(path: str, text: str) -> list[str]:
    return [f"write {path}", *(f"+ {line}" for line in text.splitlines())]


class TripInput(BaseModel):
    """What a person fills in before a trip is booked."""

    model_config = ConfigDict(extra="forbid")
    city: str = Field(min_length=2, max_length=40, title="City", description="Where to go")
    nights: int = Field(ge=1, le=30, title="Nights")
    window: bool = Field(default=False, title="Window seat")


@tool(group="files", data_class="public", input_model=TripInput)
def book_trip(city: str = "", nights: int = 1, window: bool = False) -> str:
    """Book a trip; a person gives the city and the nights."""
    seat = "window" if window else "aisle"
    return f"booked {nights} nights in {city}, {seat} seat"


def registry() -> ToolRegistry:
    return ToolRegistry([lookup, every_artifact, odd_artifacts, echo, dormant, boom])


def waiting_registry() -> ToolRegistry:
    """The usual tools and two that make a run wait: one for approval, one for input."""
    return ToolRegistry([lookup, echo, write_note, book_trip])


def call(name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "arguments": dict(arguments or {})}


SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "scripted": [
        {"tool_calls": [call("lookup", {"customer": "Ada"})], "prompt_tokens": 10,
         "completion_tokens": 2},
        {"content": "Ada has 2 orders.", "prompt_tokens": 20, "completion_tokens": 5},
    ],
    "slow": [
        {"tool_calls": [call("lookup", {"customer": "Ada"})], "delay_ms": 50},
        {"content": "slowly done", "delay_ms": 1500},
    ],
    "slow_rounds": [{"tool_calls": [call("lookup", {"customer": "Ada"})]}]
    + [{"tool_calls": [call("lookup", {"customer": "Ada"})], "delay_ms": 400}] * 3
    + [{"content": "read slowly", "delay_ms": 400}],
    "every": [{"tool_calls": [call("every_artifact"), call("odd_artifacts")]}, {"content": "ok"}],
    "looping": [{"tool_calls": [call("lookup", {"customer": "Ada"})]}] * 3
    + [{"content": "gave up"}],
    "exhausted": [{"tool_calls": [call("lookup", {"customer": "Ada"})]}],
    "hang": [{"content": "never", "delay_ms": 20_000}],
    "approve": [
        {"tool_calls": [call("write_note", {"path": "notes/a.md", "text": "one\ntwo"})]},
        {"content": "The note is written."},
    ],
    "ask": [{"tool_calls": [call("book_trip", {})]}, {"content": "The trip is booked."}],
    "refusing": [{"stop": "refusal", "refusal": HOSTILE_REFUSAL, "finish_reason": "refusal",
                  "prompt_tokens": 3, "completion_tokens": 1}],
    "blocked": [{"stop": "blocked", "refusal": HOSTILE_REFUSAL, "finish_reason": "SAFETY"}],
    "spendy": [{"tool_calls": [call("lookup", {"customer": "Ada"})], "prompt_tokens": 60,
                "completion_tokens": 10}, {"content": "never reached"}],
}  # fmt: skip


class StreamingModel:
    """A model that streams: thinking, then its answer in pieces, ``PIECE_DELAY_S`` apart, then
    the whole turn. Every request it gets is kept (``requests``), to check the options sent."""

    name = "streaming"
    model = "gpt-4o-mini"
    pricing_family = "openai"  # a model the price table knows: the run has a cost
    requests: ClassVar[list[CompletionRequest]] = []

    trust_zone = TrustZone.EXTERNAL_GLOBAL

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        StreamingModel.requests.append(request)
        if request.on_delta is not None and request.stream:
            for delta in STREAMED:
                await asyncio.sleep(PIECE_DELAY_S)
                request.on_delta(delta)
        await asyncio.sleep(PIECE_DELAY_S)
        return CompletionResponse(
            content=STREAMED_ANSWER, thinking=STREAMED_THINKING, model=self.model,
            usage=Usage(prompt_tokens=1200, completion_tokens=800), finish_reason="stop",
        )  # fmt: skip


def factory(
    extra: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> Any:
    scripts = {**SCRIPTS, **(extra or {})}

    def provider_factory(name: str, model: str | None) -> Provider:
        if name == "streaming":
            return StreamingModel()
        if name not in scripts:
            raise ConfigError(f'unknown provider "{name}"')
        return ScriptedProvider.from_turns(list(scripts[name]), name=name)

    return provider_factory


def settings(**extra: Any) -> InspectorSettings:
    tools = extra.pop("registry", None) or registry()
    return InspectorSettings(
        registry=tools, provider_factory=factory(extra.pop("scripts", None)), token=TOKEN,
        **extra,
    )  # fmt: skip


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a loopback port in a thread; yield its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


class MemoryStore:
    """An in-memory stand-in for the audit store, with the interface the inspector uses."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.steps: dict[str, list[dict[str, Any]]] = {}
        self.cancel_flags: set[str] = set()
        self.availability = Availability()
        self.settled = threading.Event()

    def begin(self, request: RunRequest) -> str:
        run_id = uuid.uuid4().hex
        self.runs[run_id] = {"id": run_id, "status": "running", "provider": request.provider.name}
        self.steps[run_id] = []
        return run_id

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        self.steps[run_id].append({"sequence": sequence, "kind": step.kind})

    def keep(self, run_id: str, charter: Charter) -> None:
        self.runs[run_id]["privacy_level"] = charter.privacy.value

    def settle(self, outcome: RunOutcome) -> bool:
        self.runs[outcome.run_id]["status"] = str(outcome.status)
        self.settled.set()
        return True

    def cancel_requested(self, run_id: str) -> bool:
        return run_id in self.cancel_flags

    def request_cancel(self, run_id: str) -> bool:
        if self.runs.get(run_id, {}).get("status") != "running":
            return False
        self.cancel_flags.add(run_id)
        return True

    def list_runs(self, *, limit: int = 50, offset: int = 0, waiting: bool = False) -> list[Any]:
        runs = [r for r in self.runs.values() if not waiting or r["status"].startswith("awaiting")]
        return [Record(r) for r in runs[offset : offset + limit]]

    def find_runs(self, query: Any, *, total: bool = True) -> Any:
        runs = self.list_runs(limit=query.limit, offset=query.offset, waiting=query.waiting)
        return RunPage(runs=runs, total=len(self.runs))

    def facets(self) -> dict[str, list[str]]:
        return {"providers": sorted({r["provider"] for r in self.runs.values()})}

    def egress(self, **_: Any) -> list[Any]:
        return []  # it keeps no ledger

    def first_requests(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {}

    def get_run(self, run_id: str) -> Any | None:
        run = self.runs.get(run_id)
        return None if run is None else Record({**run, "steps": self.steps[run_id]})

    def load_availability(self) -> Availability:
        return self.availability

    def set_tool_state(self, name: str, enabled: bool | None) -> None:
        self.availability.set_tool(name, enabled)

    def set_group_state(self, name: str, enabled: bool | None) -> None:
        self.availability.set_group(name, enabled)


class Record:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


# Markup and controls in a tool's schema: titles, descriptions and enum values stay text.
HOSTILE_SCHEMA_TEXT = '<img src=x onerror="window.__pwned=1">\u202e'
HostileMode = Literal["plain", '<b onclick="window.__pwned=1">bold</b>']


@tool(group="settings", data_class="configuration")
def tune(
    key: Annotated[
        str,
        Field(
            title=f"Key {HOSTILE_SCHEMA_TEXT}", description=f"Which setting {HOSTILE_SCHEMA_TEXT}"
        ),
    ],
    mode: HostileMode = "plain",
    level: int = 3,
    ratio: float = 0.5,
    dry: bool = False,
    tags: list[str] | None = None,
    extra: dict[str, int] | None = None,
) -> str:
    """Change one setting with ``key`` and :func:`mode`; see :ref:`tuning <tune-ref>`."""
    return f"{key}={mode} level={level} ratio={ratio} dry={dry} tags={tags} extra={extra}"


TUNE_PLAIN = "Change one setting with key and mode; see tuning."


def form_registry() -> ToolRegistry:
    """The usual tools and ``tune``: a configuration-class tool with every kind of field."""
    return ToolRegistry([lookup, echo, dormant, boom, tune])
