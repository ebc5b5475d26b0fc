"""The provider seam: one async method from a conversation to the model's next turn."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolwire.messages import ChatMessage, ToolCall, ToolSpec


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts. ``None`` would hide a provider that reports nothing; we count 0 instead."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionRequest:
    """One provider call. ``tools`` empty means a plain completion: no tools field is sent."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    capture_raw: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionResponse:
    """The model's turn, normalised. ``raw`` is the decoded body, only when capture was asked."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    thinking: str | None = None
    model: str | None = None
    raw: Mapping[str, Any] | None = None


@runtime_checkable
class Provider(Protocol):
    """Anything that can complete a conversation. ``name`` labels runs and traces.

    A provider may also offer ``session()``, an async context manager the loop enters for the
    length of a run (the HTTP adapters keep one connection pool in it), and ``trust_zone``.
    """

    @property
    def name(self) -> str: ...

    async def complete(self, request: CompletionRequest) -> CompletionResponse: ...


def session_of(provider: Provider) -> AbstractAsyncContextManager[object]:
    """The provider's per-run session, or a no-op for providers without one."""
    opener = getattr(provider, "session", None)
    return opener() if callable(opener) else nullcontext()
