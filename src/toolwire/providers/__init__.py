"""Provider adapters. Each turns a :class:`CompletionRequest` into one API call.

The adapters load on first use (PEP 562): the provider-neutral types in
:mod:`toolwire.providers.base` must not pull the HTTP client into every import.

Layer: just above ``core``. May import ``core`` only; the loop and everything above
it build on the providers, never the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.core.lazy import lazy_names

if TYPE_CHECKING:
    from toolwire.providers.anthropic import AnthropicProvider
    from toolwire.providers.azure import AzureOpenAIProvider
    from toolwire.providers.base import CompletionRequest, CompletionResponse, Provider, Usage
    from toolwire.providers.bedrock import BedrockProvider
    from toolwire.providers.cloud import CloudSettings
    from toolwire.providers.gemini import GeminiProvider
    from toolwire.providers.http import HttpSettings
    from toolwire.providers.openai import OpenAIProvider
    from toolwire.providers.responses import ResponsesProvider
    from toolwire.providers.scripted import ScriptedProvider
    from toolwire.providers.select import create_provider
    from toolwire.providers.vertex import VertexAnthropicProvider, VertexGeminiProvider

_HOMES = {
    "AnthropicProvider": "toolwire.providers.anthropic",
    "AzureOpenAIProvider": "toolwire.providers.azure",
    "BedrockProvider": "toolwire.providers.bedrock",
    "CloudSettings": "toolwire.providers.cloud",
    "CompletionRequest": "toolwire.providers.base",
    "CompletionResponse": "toolwire.providers.base",
    "GeminiProvider": "toolwire.providers.gemini",
    "HttpSettings": "toolwire.providers.http",
    "OpenAIProvider": "toolwire.providers.openai",
    "Provider": "toolwire.providers.base",
    "ResponsesProvider": "toolwire.providers.responses",
    "ScriptedProvider": "toolwire.providers.scripted",
    "Usage": "toolwire.providers.base",
    "VertexAnthropicProvider": "toolwire.providers.vertex",
    "VertexGeminiProvider": "toolwire.providers.vertex",
    "create_provider": "toolwire.providers.select",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "AnthropicProvider",
    "AzureOpenAIProvider",
    "BedrockProvider",
    "CloudSettings",
    "CompletionRequest",
    "CompletionResponse",
    "GeminiProvider",
    "HttpSettings",
    "OpenAIProvider",
    "Provider",
    "ResponsesProvider",
    "ScriptedProvider",
    "Usage",
    "VertexAnthropicProvider",
    "VertexGeminiProvider",
    "create_provider",
]
