"""The provider seam: one async method from a conversation to the model's next turn.

Every adapter normalises what its API says into these values:
- ``Usage``: ``prompt_tokens`` counts every input token (cache reads and writes included) and
  ``completion_tokens`` every output token (reasoning included); the other fields say how many
  of those were cache reads, cache writes and reasoning.
- ``Stop``: why the turn ended, in one vocabulary; ``finish_reason`` keeps the API's own word.
- ``ProviderState``: provider-opaque model state of an assistant turn (thinking signatures,
  thought signatures) that the same provider must get back verbatim. It is model output, never
  tool output, and an adapter replays only the state its own family wrote.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from toolwire.core.errors import ProviderError
from toolwire.core.messages import ChatMessage, ProviderState, ToolCall, ToolSpec
from toolwire.core.output import OutputSchema
from toolwire.core.reprs import count, ident, shape, size, tagged
from toolwire.core.slots import setters
from toolwire.core.trust import TrustZone

__all__ = [
    "TOOL_CHOICE_MODES",
    "BaseProvider",
    "CompletionRequest",
    "CompletionResponse",
    "Delta",
    "DeltaSink",
    "FailedAttempt",
    "FailureSink",
    "Provider",
    "ProviderState",
    "Reasoning",
    "Stop",
    "ToolChoice",
    "TrustZone",
    "Usage",
    "checked_provider",
    "no_session",
    "parse_tool_choice",
    "session_of",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts. ``known`` False: the provider reported none for at least one turn (a
    server that sends no usage in its streams); the counts then hold only what was reported,
    and every view says "tokens unknown" rather than showing a count that looks real."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0  # of prompt_tokens
    cache_write_tokens: int = 0  # of prompt_tokens
    reasoning_tokens: int = 0  # of completion_tokens
    known: bool = True

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not (other.prompt_tokens or other.completion_tokens or other.cache_read_tokens
                or other.cache_write_tokens or other.reasoning_tokens):  # fmt: skip
            return self  # a model that reports nothing adds nothing (values are frozen)
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.known and other.known,
        )


UNKNOWN_USAGE = Usage(known=False)  # a turn whose provider reported no usage at all

# What a run may ask of the model about tools: let it choose, forbid calls, require one, or
# (any other value) require the tool of that name.
TOOL_CHOICE_MODES = ("auto", "none", "required")
ToolChoice = str
_TOOL_NAME_CHARS = 128  # the longest tool name any of the three APIs takes (Gemini: 128)


def parse_tool_choice(value: str) -> ToolChoice:
    """``value`` as a tool choice: a mode, or a tool's name; ``ValueError`` when neither."""
    choice = value.strip()
    if choice in TOOL_CHOICE_MODES:
        return choice
    if not choice or len(choice) > _TOOL_NAME_CHARS or not choice.isprintable() or " " in choice:
        raise ValueError("tool_choice must be auto, none, required or the name of one offered tool")
    return choice


class Stop(StrEnum):
    """Why a model turn ended, whatever the API called it."""

    END = "end"  # the model finished its answer
    TOOL_CALLS = "tool_calls"  # the model asked for tools
    MAX_TOKENS = "max_tokens"  # the output cap cut the turn
    CONTEXT_WINDOW = "context_window"  # the conversation no longer fits the model's window
    REFUSAL = "refusal"  # the model declined to answer
    BLOCKED = "blocked"  # a safety filter stopped the prompt or the answer
    PAUSED = "paused"  # a long turn paused; asking again continues it (Anthropic pause_turn)
    MALFORMED_CALL = "malformed_call"  # the model produced a tool call the API could not parse
    OTHER = "other"  # a reason the adapter does not know; the API's word is in finish_reason


@dataclass(frozen=True, slots=True)
class Reasoning:
    """How hard the model should think: an effort level, or a token budget, or both."""

    effort: Literal["low", "medium", "high"] | None = None
    budget_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.effort is None and self.budget_tokens is None:
            raise ValueError("reasoning needs an effort or a budget")
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise ValueError("a reasoning budget must be at least 1 token")

    @property
    def budget(self) -> int:
        """A token budget, from the effort when none was given."""
        if self.budget_tokens is not None:
            return self.budget_tokens
        return EFFORT_BUDGETS[self.effort or "medium"]


# Thinking budgets for the APIs that take tokens rather than an effort level.
EFFORT_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of a streamed turn, for a live view: answer text or thinking."""

    kind: Literal["content", "thinking"]
    text: str

    def __repr__(self) -> str:
        return tagged("Delta", kind=self.kind, text_bytes=size(self.text))


DeltaSink = Callable[[Delta], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedAttempt:
    """One provider of a fallback chain failed a request: which one (its ``name``), how
    (``error``, already bounded and redacted where it was raised), how long it took, and the
    provider asked next (None: the chain ends with this error)."""

    provider: str
    error: ProviderError
    duration_ms: float
    next: str | None = None

    def __repr__(self) -> str:
        return tagged("FailedAttempt", provider=ident(self.provider),
                      error=type(self.error).__name__, status=self.error.status,
                      next=ident(self.next))  # fmt: skip


FailureSink = Callable[[FailedAttempt], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRequest:
    """One provider call. ``tools`` empty means a plain completion: no tools field is sent.

    ``tool_choice`` is always sent when there are tools: ``"auto"`` (the model decides),
    ``"none"`` (tools sent, none may be called: the synthesis at the round cap, since an API
    may refuse a history with tool calls and no tool definitions), ``"required"`` (some call
    must be made) or a tool's name (that call must be made).
    ``stream`` asks for server-sent events when the adapter can stream; ``on_delta`` then gets
    each piece as it arrives. Neither changes the normalised response. ``on_failure`` gets each
    failed attempt of a provider that tries several (:mod:`toolwire.providers.fallback`), as
    it fails.
    """

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: Reasoning | None = None
    capture_raw: bool = False
    stream: bool = False
    on_delta: DeltaSink | None = field(default=None, compare=False, repr=False)
    # Assistant turns the run dropped from ``messages`` to fit the context window: a model
    # that replays a script counts them as played.
    dropped_turns: int = 0
    # The JSON Schema the final answer must match, asked of the API natively (None: any);
    # ``output_forced``: this request must answer in it now (the run asks again after an
    # answer that did not match; an adapter that offers the schema as a tool forces it).
    output: OutputSchema | None = None
    output_forced: bool = False
    on_failure: FailureSink | None = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        """Counts and settings; the conversation stays out of logs and tracebacks."""
        return tagged(
            "CompletionRequest",
            messages=count(self.messages),
            tools=count(self.tools),
            tool_choice=self.tool_choice,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            reasoning=self.reasoning,
            capture_raw=self.capture_raw or None,
            stream=self.stream or None,
            output=None if self.output is None else ident(self.output.name),
        )


_new_object = object.__new__


def new_request(  # noqa: PLR0917 (the fields in order: the point is a cheap call)
    messages: tuple[ChatMessage, ...],
    tools: tuple[ToolSpec, ...],
    tool_choice: ToolChoice,
    temperature: float | None,
    max_tokens: int | None,
    reasoning: Reasoning | None,
    capture_raw: bool,
    stream: bool,
    on_delta: DeltaSink | None,
    dropped_turns: int,
    output: OutputSchema | None = None,
    output_forced: bool = False,
    on_failure: FailureSink | None = None,
) -> CompletionRequest:
    """A ``CompletionRequest`` from all its fields, in order: what the loop builds for every
    round, at less than half the keyword form's cost (it has no ``__post_init__`` to skip;
    tests/providers/test_requests.py holds the two forms equal)."""
    request: CompletionRequest = _new_object(CompletionRequest)
    _messages(request, messages)
    _tools(request, tools)
    _tool_choice(request, tool_choice)
    _temperature(request, temperature)
    _max_tokens(request, max_tokens)
    _reasoning(request, reasoning)
    _capture_raw(request, capture_raw)
    _stream(request, stream)
    _on_delta(request, on_delta)
    _dropped_turns(request, dropped_turns)
    _output(request, output)
    _output_forced(request, output_forced)
    _on_failure(request, on_failure)
    return request


(_messages, _tools, _tool_choice, _temperature, _max_tokens, _reasoning, _capture_raw, _stream,
 _on_delta, _dropped_turns, _output, _output_forced, _on_failure) = setters(CompletionRequest,
                                      *(f.name for f in fields(CompletionRequest)))  # fmt: skip


NO_USAGE = Usage()  # a turn that used nothing, or whose adapter counts nothing: the default


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class CompletionResponse:
    """The model's turn, normalised. ``raw`` is the decoded body, only when capture was asked."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = NO_USAGE  # frozen, so one shared default is safe
    stop: Stop = Stop.END
    finish_reason: str | None = None  # the API's own word for ``stop``
    refusal: str | None = None  # what the provider said when it refused or blocked
    thinking: str | None = None
    model: str | None = None
    provider_state: ProviderState | None = None
    raw: Mapping[str, Any] | None = None
    response_id: str | None = None  # the API's id of this answer, when it gives one
    provider: str | None = None  # the provider that answered, when a chain chose one of several

    def __init__(
        self,
        *,
        content: str = "",
        tool_calls: tuple[ToolCall, ...] = (),
        usage: Usage = NO_USAGE,
        stop: Stop = Stop.END,
        finish_reason: str | None = None,
        refusal: str | None = None,
        thinking: str | None = None,
        model: str | None = None,
        provider_state: ProviderState | None = None,
        raw: Mapping[str, Any] | None = None,
        response_id: str | None = None,
        provider: str | None = None,
    ) -> None:
        """Written out rather than generated (see :mod:`toolwire.core.slots`): every model
        turn makes one."""
        _r_content(self, content)
        _r_tool_calls(self, tool_calls)
        _r_usage(self, usage)
        _r_stop(self, stop)
        _r_finish_reason(self, finish_reason)
        _r_refusal(self, refusal)
        _r_thinking(self, thinking)
        _r_model(self, model)
        _r_provider_state(self, provider_state)
        _r_raw(self, raw)
        _r_response_id(self, response_id)
        _r_provider(self, provider)

    def __repr__(self) -> str:
        """How the turn ended and its sizes; no answer, thinking or raw body."""
        state = self.provider_state
        return tagged(
            "CompletionResponse",
            stop=self.stop,
            finish_reason=ident(self.finish_reason),
            content_bytes=size(self.content),
            tool_calls=count(self.tool_calls) or None,
            thinking_bytes=size(self.thinking),
            refusal_bytes=size(self.refusal),
            tokens=self.usage.total_tokens,
            model=ident(self.model),
            provider_state=None if state is None else ident(state.provider),
            raw=None if self.raw is None else shape(self.raw),
            response_id=ident(self.response_id),
            provider=ident(self.provider),
        )


(_r_content, _r_tool_calls, _r_usage, _r_stop, _r_finish_reason, _r_refusal, _r_thinking, _r_model,
 _r_provider_state, _r_raw, _r_response_id, _r_provider) = setters(CompletionResponse,
                                      *(f.name for f in fields(CompletionResponse)))  # fmt: skip


@runtime_checkable
class Provider(Protocol):
    """Anything that can complete a conversation.

    ``name`` labels runs and traces; ``trust_zone`` says where the model runs, which bounds
    the tools a run may offer it; ``session()`` is an async context manager the loop enters for
    the length of a run (the HTTP adapters keep one connection pool in it; others return
    ``no_session()``).
    """

    @property
    def name(self) -> str: ...

    @property
    def trust_zone(self) -> TrustZone: ...

    def session(self) -> AbstractAsyncContextManager[object]: ...

    async def complete(self, request: CompletionRequest) -> CompletionResponse: ...


def no_session() -> AbstractAsyncContextManager[None]:
    """The session of a provider with nothing to keep open between rounds."""
    return nullcontext()


class BaseProvider(ABC):
    """The base of a provider of your own: subclass it and write :meth:`complete`.

    It gives the rest of what the loop needs: a ``name`` for runs and traces (the class's
    name unless one is given), a ``trust_zone`` (the least trusted, ``external_global``,
    unless one is given: say where the model runs, since the zone bounds the tools a run
    offers it) and a ``session()`` with nothing to keep open. Override ``session()`` to keep
    a connection pool open for the length of a run.
    """

    name: str
    trust_zone: TrustZone

    def __init__(self, *, name: str | None = None, trust_zone: TrustZone | str | None = None):
        self.name = name or getattr(type(self), "name", None) or type(self).__name__
        given = trust_zone if trust_zone is not None else getattr(type(self), "trust_zone", None)
        self.trust_zone = TrustZone.parse(given)  # None: the least trusted zone

    def session(self) -> AbstractAsyncContextManager[object]:
        return no_session()

    @abstractmethod
    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """The model's next turn for ``request``."""

    def __repr__(self) -> str:
        return tagged(type(self).__name__, name=ident(self.name), trust_zone=self.trust_zone)


_NEEDS = (("name", False), ("trust_zone", False), ("session", True), ("complete", True))


def checked_provider(provider: object) -> Provider:
    """``provider`` when it has what the loop needs; else a ``TypeError`` that names what it
    lacks, when it is handed over rather than deep inside a run. A provider written before
    ``session()`` was part of the protocol fails here, with the way to fix it."""
    missing = [
        f"{name}()" if method else name
        for name, method in _NEEDS
        if not (callable(getattr(provider, name, None)) if method else hasattr(provider, name))
    ]
    if missing:
        raise TypeError(
            f"{type(provider).__name__} is not a provider: it has no {', '.join(missing)}. "
            "Subclass toolwire.BaseProvider, which gives name, trust_zone and session() "
            "(nothing kept open), and write async complete(request)."
        )
    TrustZone.parse(provider.trust_zone)  # type: ignore[attr-defined]  # a ConfigError names it
    return provider  # type: ignore[return-value]


def session_of(provider: Provider) -> AbstractAsyncContextManager[object]:
    """The provider's per-run session."""
    return provider.session()
