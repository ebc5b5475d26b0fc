"""Provider adapters. Each turns a :class:`CompletionRequest` into one API call."""

from toolwire.providers.base import CompletionRequest, CompletionResponse, Provider, Usage
from toolwire.providers.scripted import ScriptedProvider

__all__ = ["CompletionRequest", "CompletionResponse", "Provider", "ScriptedProvider", "Usage"]
