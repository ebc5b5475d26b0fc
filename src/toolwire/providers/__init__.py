"""Provider adapters. Each turns a :class:`CompletionRequest` into one API call."""

from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import CompletionRequest, CompletionResponse, Provider, Usage
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.scripted import ScriptedProvider
from toolwire.providers.select import create_provider

__all__ = [
    "AnthropicProvider",
    "CompletionRequest",
    "CompletionResponse",
    "GeminiProvider",
    "HttpSettings",
    "OpenAIProvider",
    "Provider",
    "ScriptedProvider",
    "Usage",
    "create_provider",
]
