"""Choosing a provider by name, from arguments and the environment.

Invariant: every configuration mistake (unknown name, missing model, missing key, bad base URL
or trust zone, missing script) is a ``ConfigError`` raised here, before any request is made.
Messages name what is missing and where it may come from; they never echo a key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from toolwire.errors import ConfigError
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import Provider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import DEFAULT_TIMEOUT_SECONDS, HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.scripted import ScriptedProvider
from toolwire.providers.wire import DEFAULT_TRUST_ZONE, HttpProvider, checked_trust_zone

KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}
PROVIDER_NAMES = (*KEY_VARIABLES, "scripted")
_ADAPTERS: dict[str, type[HttpProvider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
}


def create_provider(
    name: str,
    *,
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    script: Path | None = None,
    trust_zone: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    environ: Mapping[str, str] | None = None,
) -> Provider:
    """The provider called ``name``; keys default to the provider's environment variable."""
    if trust_zone is not None:
        checked_trust_zone(trust_zone)
    if name == "scripted":
        return _scripted(script, trust_zone)
    adapter = _ADAPTERS.get(name)
    if adapter is None:
        raise ConfigError(f"unknown provider {name!r}; choose one of {', '.join(PROVIDER_NAMES)}")
    if not model or not model.strip():
        raise ConfigError(f"provider {name} needs a model name (--model)")
    if not timeout > 0:
        raise ConfigError("the provider timeout must be a positive number of seconds")
    return adapter(
        model=model.strip(),
        api_key=_api_key(name, api_key, os.environ if environ is None else environ),
        trust_zone=trust_zone or DEFAULT_TRUST_ZONE,
        http=HttpSettings(timeout=timeout),
        base_url=base_url,
    )


def _api_key(name: str, given: str | None, environ: Mapping[str, str]) -> str:
    key = (given or environ.get(KEY_VARIABLES[name], "")).strip()
    if not key:
        raise ConfigError(f"provider {name} needs an API key: set {KEY_VARIABLES[name]}")
    return key


def _scripted(script: Path | None, trust_zone: str | None) -> Provider:
    if script is None:
        raise ConfigError("the scripted provider needs a script (--script)")
    return ScriptedProvider.from_file(script, trust_zone=trust_zone or "local")
