"""Fakes shared by tests: a provider that records every request it is handed, and small helpers
for reading what a run produced."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from toolwire import CompletionRequest, CompletionResponse, ScriptedProvider, ToolResult
from toolwire.core.trust import TrustZone
from toolwire.policy.trace import RunStep
from toolwire.providers.base import no_session

S = TypeVar("S")


def only(step: RunStep, kind: type[S]) -> S:
    """``step`` as the kind it must be: the assertion fails on any other kind."""
    assert isinstance(step, kind), f"expected a {kind.__name__}, got {type(step).__name__}"
    return step


def leaves(value: Any) -> Iterator[str]:
    """Every string reachable through the value's fields, items and keys."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8")
    elif isinstance(value, BaseModel):
        yield from leaves(value.model_dump())
    elif isinstance(value, ToolResult):
        yield from leaves((value.content, value.artifacts))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from leaves(getattr(value, field.name))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(key)
            yield from leaves(item)
    elif isinstance(value, list | tuple | set | frozenset):  # NamedTuples too
        for item in value:
            yield from leaves(item)


class PricedModel:
    """A model the price table knows (OpenAI's), answering with ``responses`` in turn; the
    last one answers every later request. Every request is kept."""

    name = "openai"
    pricing_family = "openai"
    trust_zone = TrustZone.EXTERNAL_GLOBAL

    def __init__(self, *responses: CompletionResponse, model: str = "gpt-4o-mini") -> None:
        self.responses = responses
        self.model = model
        self.requests: list[CompletionRequest] = []

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        return self.responses[min(len(self.requests), len(self.responses)) - 1]


class RecordingProvider:
    """Wraps a provider and keeps every request, for asserting on what would be sent."""

    def __init__(self, inner: Any, trust_zone: str = "local") -> None:
        self.inner = inner
        self.requests: list[CompletionRequest] = []
        self.trust_zone = TrustZone.parse(trust_zone)

    @property
    def name(self) -> str:
        return "recording"

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    @classmethod
    def of(cls, turns: Sequence[Mapping[str, Any]]) -> RecordingProvider:
        return cls(ScriptedProvider.from_turns(turns))

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        response: CompletionResponse = await self.inner.complete(request)
        return response


def call(name: str, arguments: Any = None, id: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if id is not None:
        out["id"] = id
    return out


def plugin(folder: Path, body: str, entry: str) -> None:
    """A real installed distribution in ``folder``, with a ``toolwire.tools`` entry point."""
    (folder / "twplugin.py").write_text(textwrap.dedent(body))
    dist = folder / "twplugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: twplugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[toolwire.tools]\n{entry}\n")


PLUGIN = """
    from toolwire import tool

    @tool(group="plugin", data_class="public")
    def greet(name: str) -> str:
        return f"hello {name}"

    @tool(group="plugin", data_class="public")
    def wave() -> str:
        return "wave"

    def all_tools():
        return [greet, wave]

    broken = 42
"""
