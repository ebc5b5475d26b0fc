"""The scripted provider: a model that replays a script, for tests and offline use.

Which turn comes next is a function of the conversation, not of hidden state: turn ``n`` is
played when the conversation already holds ``n`` assistant turns. One instance therefore serves
any number of runs, concurrently, and a resumed run picks up where it stopped.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolwire.core.errors import ConfigError, ScriptExhausted
from toolwire.core.messages import ChatMessage, ToolCall
from toolwire.core.text import read_capped
from toolwire.core.trust import TrustZone
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Delta,
    DeltaSink,
    Stop,
    Usage,
)

MAX_SCRIPT_BYTES = 5_000_000  # a script is hand-written; anything larger is a mistake


class ScriptedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict, repr=False)
    id: str | None = None


class Turn(BaseModel):
    """One model turn of a script."""

    model_config = ConfigDict(extra="forbid")
    content: str = Field(default="", repr=False)
    thinking: str | None = Field(default=None, repr=False)
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    finish_reason: str | None = None
    stop: Stop | None = None  # None: tool_calls when the turn calls tools, else end
    refusal: str | None = Field(default=None, repr=False)
    delay_ms: float = Field(default=0, ge=0, le=600_000)


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "scripted"
    turns: list[Turn]


Responder = Callable[[Sequence[ChatMessage]], CompletionResponse | Turn]


class ScriptedProvider:
    """Replays ``turns`` in order, or asks ``respond(messages)`` for each turn."""

    def __init__(
        self,
        turns: Sequence[Turn] | Responder,
        *,
        name: str = "scripted",
        trust_zone: TrustZone | str = TrustZone.LOCAL,
        script_path: str | None = None,
    ) -> None:
        self._turns: tuple[Turn, ...] | None = None
        self._respond: Responder | None = None
        if callable(turns):
            self._respond = turns
        else:
            self._turns = tuple(turns)
        self._name = name
        self._trust_zone = TrustZone.parse(trust_zone)
        self.script_path = script_path  # where the turns came from, so another process can resume

    @property
    def name(self) -> str:
        return self._name

    @property
    def trust_zone(self) -> TrustZone:
        """``local`` by default: a script runs in this process and nothing leaves the machine."""
        return self._trust_zone

    def session(self) -> AbstractAsyncContextManager[None]:
        """Nothing to keep open between the rounds of a run."""
        return nullcontext()

    @classmethod
    def from_turns(
        cls, turns: Sequence[Mapping[str, Any]], *, name: str = "scripted"
    ) -> ScriptedProvider:
        """Build from plain dicts, validated like a script file."""
        return cls(_parse({"turns": list(turns), "name": name}).turns, name=name)

    @classmethod
    def from_file(
        cls, path: str | Path, *, trust_zone: TrustZone | str = TrustZone.LOCAL
    ) -> ScriptedProvider:
        """Load a JSON or YAML script: ``{"name": ..., "turns": [...]}`` or a bare list."""
        path = Path(path)
        raw = read_capped(path, MAX_SCRIPT_BYTES, "script")
        try:
            data = yaml.safe_load(raw.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"script {path} is not valid JSON or YAML: {exc}") from None
        if isinstance(data, list):
            data = {"turns": data}
        script = _parse(data, str(path))
        return cls(
            script.turns, name=script.name, trust_zone=trust_zone, script_path=str(path.resolve())
        )

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        if self._respond is not None:
            answer = self._respond(request.messages)
            if isinstance(answer, CompletionResponse):
                return answer
            return await _play(answer, _assistant_turns(request), _callable(request),
                               _sink(request))  # fmt: skip
        assert self._turns is not None
        index = _assistant_turns(request)
        if index >= len(self._turns):
            raise ScriptExhausted(
                f"the script has {len(self._turns)} turns; turn {index + 1} was asked for"
            )
        return await _play(self._turns[index], index, _callable(request), _sink(request))


def _callable(request: CompletionRequest) -> bool:
    """Whether the model may call a tool: tools were sent, and not with the choice "none"."""
    return bool(request.tools) and request.tool_choice != "none"


def _assistant_turns(request: CompletionRequest) -> int:
    """Turns played so far: those in the conversation and those dropped to fit the window."""
    return sum(1 for m in request.messages if m.role == "assistant") + request.dropped_turns


def _sink(request: CompletionRequest) -> DeltaSink | None:
    return request.on_delta if request.stream else None


async def _play(
    turn: Turn, index: int, offered: bool, sink: DeltaSink | None = None
) -> CompletionResponse:
    if turn.delay_ms:
        await asyncio.sleep(turn.delay_ms / 1000)
    if sink is not None:  # streamed like a real model: thinking first, then the answer by words
        for piece in _PIECES.findall(turn.thinking or ""):
            sink(Delta("thinking", piece))
        for piece in _PIECES.findall(turn.content):
            sink(Delta("content", piece))
    return _response(turn, index, offered=offered)


_PIECES = re.compile(r"\s*\S+\s*|\s+")  # words with their spaces: joined, the whole text


def _parse(data: object, source: str = "script") -> Script:
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'script'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{source} is not a valid script: {problems}") from None


def _response(turn: Turn, index: int, *, offered: bool) -> CompletionResponse:
    # A request in which no tool may be called (the synthesis at the round cap) gets the
    # turn's text only.
    calls = (
        tuple(
            ToolCall.of(c.id or f"call_{index + 1}_{n + 1}", c.name, c.arguments)
            for n, c in enumerate(turn.tool_calls)
        )
        if offered
        else ()
    )
    return CompletionResponse(
        content=turn.content,
        tool_calls=calls,
        usage=Usage(turn.prompt_tokens, turn.completion_tokens),
        stop=turn.stop or (Stop.TOOL_CALLS if calls else Stop.END),
        finish_reason=turn.finish_reason or ("tool_calls" if calls else "stop"),
        refusal=turn.refusal,
        thinking=turn.thinking,
        model="scripted",
    )
