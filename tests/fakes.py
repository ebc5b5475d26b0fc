"""Fakes shared by tests: a provider that records every request it is handed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolwire import CompletionRequest, CompletionResponse, ScriptedProvider


class RecordingProvider:
    """Wraps a provider and keeps every request, for asserting on what would be sent."""

    def __init__(self, inner: Any, trust_zone: str = "local") -> None:
        self.inner = inner
        self.requests: list[CompletionRequest] = []
        self.trust_zone = trust_zone

    @property
    def name(self) -> str:
        return "recording"

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
