"""The ways the tests reach the model: each adapter, straight to llama-cpp-python or through
LiteLLM, with every request body and response status recorded on the way (a real transport
underneath: nothing is faked)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

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


@dataclass
class Recording(httpx.AsyncBaseTransport):
    """A real HTTP transport that keeps each request's path and JSON body, and each status."""

    sent: list[tuple[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    inner: httpx.AsyncHTTPTransport = field(default_factory=httpx.AsyncHTTPTransport)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.url.path, json.loads(request.content or b"null")))
        response = await self.inner.handle_async_request(request)
        self.statuses.append(response.status_code)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


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


def tool_choice_sent(api: str, body: dict[str, Any]) -> Any:
    """The tool choice a request body carries, in its format's own field."""
    if api == "gemini":
        return body.get("toolConfig")
    return body.get("tool_choice")
