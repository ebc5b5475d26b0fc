"""The ways the tests reach the model: each adapter, straight to llama-cpp-python or through
LiteLLM, with every request body and response status recorded on the way (a real transport
underneath: nothing is faked)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from toolwire.loop.seam import not_an_object
from toolwire.policy.options import RunOptions
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.wire import HttpProvider

from .servers import MODEL, Server

TIMEOUT_S = 120  # one answer on one thread, behind a machine's other work

# (adapter, server): the OpenAI adapter straight to llama-cpp-python, and each of the three
# through LiteLLM's endpoints for its format.
ROUTES = (
    ("openai", "llama"),
    ("openai", "litellm"),
    ("anthropic", "litellm"),
    ("gemini", "litellm"),
)
ROUTE_IDS = [f"{api}-via-{server}" for api, server in ROUTES]

# Where LiteLLM 1.108.7's translation meets llama-cpp-python 0.3.36, a forced tool call cannot
# complete, whatever the client sends (seen on the wire; the tests stay, expected to fail, so
# that a fixed release shows up as an unexpected pass). The Gemini format carries a tool choice
# to LiteLLM only as functionCallingConfig's mode, which it turns into OpenAI's tool_choice
# (AUTO, ANY, NONE to auto, required, none; allowedFunctionNames is dropped:
# litellm/google_genai/adapters/transformation.py), and llama-cpp-python's
# chatml-function-calling forces a call only for a named tool_choice: "required" fails its
# assertion that a choice is "auto" (HTTP 500; streamed, an empty answer), and "auto" lets
# this model answer without a call (an empty one: that path's grammar allows no text).
LITELLM_TOOL_LIMITS = {
    "gemini": "LiteLLM carries a Gemini tool choice only as tool_choice auto|required|none; "
    'llama-cpp-python\'s chatml-function-calling forces a call only for a named choice ("required" '
    "is an HTTP 500, streamed an empty answer)",
}


def forced_call(api: str, *values: Any, via: str = "litellm", id: str) -> Any:
    """A test case that forces a tool call over ``api``: expected to fail where
    ``LITELLM_TOOL_LIMITS`` says why."""
    marks: tuple[pytest.MarkDecorator, ...] = ()
    if via == "litellm" and api in LITELLM_TOOL_LIMITS:
        marks = (pytest.mark.xfail(strict=True, reason=LITELLM_TOOL_LIMITS[api]),)
    return pytest.param(*values, marks=marks, id=id)


@dataclass
class Recording(httpx.AsyncBaseTransport):
    """A real HTTP transport that keeps each request's path and JSON body, and each status.

    Each request has a connection of its own, closed with its response: toolwire never closes
    a transport it was lent, and a run's event loop ends with the run.
    """

    sent: list[tuple[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.url.path, json.loads(request.content or b"null")))
        inner = httpx.AsyncHTTPTransport()
        try:
            response = await inner.handle_async_request(request)
        except BaseException:
            await inner.aclose()
            raise
        self.statuses.append(response.status_code)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Closing(response, inner),
            extensions=response.extensions,
        )


class _Closing(httpx.AsyncByteStream):
    """A response's body that closes its connection's transport when it is closed."""

    def __init__(self, response: httpx.Response, transport: httpx.AsyncHTTPTransport) -> None:
        self.response = response
        self.transport = transport

    async def __aiter__(self) -> AsyncIterator[bytes]:
        stream = self.response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        async for chunk in stream:
            yield chunk

    async def aclose(self) -> None:
        await self.response.aclose()
        await self.transport.aclose()


def provider(api: str, server: Server, transport: Recording, model: str = MODEL) -> HttpProvider:
    """The ``api`` adapter pointed at ``server``, keyed with LiteLLM's master key (the
    llama-cpp-python server takes none and is sent none)."""
    http = HttpSettings(transport=transport, timeout=TIMEOUT_S, max_attempts=1)
    key = server.key
    if api == "openai":
        return OpenAIProvider(
            model=model, api_key=key, base_url=f"{server.url}/v1", http=http, trust_zone="local"
        )
    if api == "anthropic":
        return AnthropicProvider(
            model=model, api_key=key or "", base_url=server.url, http=http, trust_zone="local"
        )
    url = f"{server.url}/v1beta"
    return GeminiProvider(
        model=model, api_key=key or "", base_url=url, http=http, trust_zone="local"
    )


def options(**settings: Any) -> RunOptions:
    """Run options from keywords (``tool_choice`` among them)."""
    return RunOptions(**settings)


def tool_results(api: str, body: dict[str, Any]) -> list[str]:
    """The tool results a request body carries back to the model, in its format's shape."""
    if api == "openai":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if api == "anthropic":
        return [
            b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_result"
        ]
    return [
        str(p["functionResponse"]["response"].get("output"))
        for c in body["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]


WEATHER = "Oslo: 3 degrees, rain (station 7)"  # what the tool answers, whatever it is asked
# What a forced weather call gets back when the output cap cut the model's arguments short:
# this model at times writes a long text as the city (about one call in 25 at 24 tokens), and
# llama-cpp-python reports such a call finished all the same. The call was still parsed, run
# and answered: the wire held.
CUT_ARGUMENTS = not_an_object("weather")


def weather_result(arguments: Any) -> str:
    """What the weather tool's call with ``arguments`` (as the trace keeps them) gets back."""
    return WEATHER if isinstance(arguments, dict) else CUT_ARGUMENTS


def tool_choice_sent(api: str, body: dict[str, Any]) -> Any:
    """The tool choice a request body carries, in its format's own field."""
    if api == "gemini":
        return body.get("toolConfig")
    return body.get("tool_choice")
