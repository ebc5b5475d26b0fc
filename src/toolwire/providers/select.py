"""Choosing a provider by name, from arguments and the environment.

Invariant: every configuration mistake (unknown name, missing model, missing key, bad base URL
or trust zone, missing script) is a ``ConfigError`` raised here, before any request is made.
Messages name what is missing and where it may come from; they never echo a key.

Names: the three vendor APIs, OpenAI's Responses API (``openai-responses``), Amazon Bedrock
(AWS credentials from botocore's chain and a region instead of a key:
:mod:`toolwire.providers.aws_auth`), the OpenAI-compatible presets (``presets.PRESETS``:
llama-server, llama-cpp-python, litellm, ollama, vllm, lmstudio, openrouter, and the hosted
mistral, groq, deepseek, xai, together, fireworks, cerebras), the cloud routes
(``azure-openai``, ``azure-openai-responses``, ``vertex``, ``vertex-anthropic``:
``toolwire.providers.cloud``) and ``scripted``. A server on a loopback or private address needs
no key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.aws_auth import resolve
from toolwire.providers.base import Provider
from toolwire.providers.bedrock import BedrockProvider
from toolwire.providers.cloud import CloudSettings, cloud_provider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import DEFAULT_TIMEOUT_SECONDS, HttpSettings
from toolwire.providers.openai import DEFAULT_BASE_URL, OpenAIProvider
from toolwire.providers.presets import (
    CLOUD_NAMES,
    KEY_VARIABLES,
    OPENAI_QUIRKS,
    OPENAI_RESPONSES,
    PRESETS,
    MaxTokensField,
    Preset,
    check_provider_name,
    hosted_preset,
    is_private_url,
    quirks_for,
)
from toolwire.providers.responses import ResponsesProvider
from toolwire.providers.scripted import ScriptedProvider
from toolwire.providers.wire import DEFAULT_TRUST_ZONE, HttpProvider

_ADAPTERS: dict[str, type[HttpProvider]] = {
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
}
# The OpenAI API itself, as a preset: its own URL, key and quirks (another server's at
# another base URL: ``quirks_for``).
_OPENAI = Preset(
    name="openai",
    base_url=DEFAULT_BASE_URL,
    trust_zone=DEFAULT_TRUST_ZONE,
    key_variable="OPENAI_API_KEY",
    quirks=OPENAI_QUIRKS,
)
_COMPATIBLE = {"openai": _OPENAI, **PRESETS}


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
    max_tokens_field: MaxTokensField | None = None,
    region: str | None = None,
    cloud: CloudSettings | None = None,
) -> Provider:
    """The provider called ``name``; keys default to the provider's environment variable.

    ``max_tokens_field`` names the output cap for OpenAI-compatible servers (``max_tokens`` or
    ``max_completion_tokens``); each preset has its own default. ``region`` is Bedrock's AWS
    region (else the one in ``base_url``'s AWS host, ``AWS_REGION`` or the profile's).
    ``cloud``: what the cloud routes (``azure-openai``, ``vertex``...) take beyond that
    (``toolwire.providers.cloud``).
    """
    if trust_zone is not None:
        TrustZone.parse(trust_zone)  # a misspelt zone fails before anything else
    if name == "scripted":
        return _scripted(script, trust_zone)
    check_provider_name(name)
    if not timeout > 0:
        raise ConfigError("the provider timeout must be a positive number of seconds")
    env = os.environ if environ is None else environ
    http = HttpSettings(timeout=timeout)
    if name in CLOUD_NAMES:
        return cloud_provider(name, model=model, base_url=base_url, api_key=api_key,
                              trust_zone=trust_zone, http=http, environ=env,
                              settings=cloud or CloudSettings())  # fmt: skip
    if cloud is not None:
        _no_cloud_settings(name, cloud)
    if not model or not model.strip():
        raise ConfigError(f"provider {name} needs a model name (--model)")
    if max_tokens_field not in (None, "max_tokens", "max_completion_tokens"):
        raise ConfigError("max_tokens_field must be max_tokens or max_completion_tokens")
    if name == OPENAI_RESPONSES.name:
        return _responses(model.strip(), base_url, api_key, trust_zone, http=http, environ=env)
    if name == "bedrock":
        credentials = resolve(name, region=region, base_url=base_url, profile=None, environ=env)
        return BedrockProvider(model=model.strip(), credentials=credentials, base_url=base_url,
                               trust_zone=trust_zone, http=http)  # fmt: skip
    preset = _COMPATIBLE.get(name)
    if preset is not None:
        return _compatible(
            preset,
            model=model.strip(),
            base_url=base_url,
            api_key=api_key,
            trust_zone=trust_zone,
            http=http,
            environ=env,
            max_tokens_field=max_tokens_field,
        )
    return _ADAPTERS[name](
        model=model.strip(),
        api_key=_api_key(name, api_key, env),
        trust_zone=trust_zone or DEFAULT_TRUST_ZONE,
        http=http,
        base_url=base_url,
    )


def _compatible(
    preset: Preset,
    *,
    model: str,
    base_url: str | None,
    api_key: str | None,
    trust_zone: str | None,
    http: HttpSettings,
    environ: Mapping[str, str],
    max_tokens_field: MaxTokensField | None,
) -> OpenAIProvider:
    url = base_url or preset.base_url
    key = (api_key or (environ.get(preset.key_variable, "") if preset.key_variable else "")).strip()
    if not key and preset.key_variable is not None and not is_private_url(url):
        raise ConfigError(f"provider {preset.name} needs an API key: set {preset.key_variable}")
    return OpenAIProvider(
        model=model,
        api_key=key,
        base_url=url,
        trust_zone=trust_zone or preset.trust_zone,
        http=http,
        name=preset.name,
        quirks=quirks_for(url) if preset is _OPENAI else preset.quirks,
        max_tokens_field=max_tokens_field,
        price_table=_price_table(preset, url),
    )


def _responses(
    model: str,
    base_url: str | None,
    api_key: str | None,
    trust_zone: str | None,
    *,
    http: HttpSettings,
    environ: Mapping[str, str],
) -> ResponsesProvider:
    preset = OPENAI_RESPONSES
    url = base_url or preset.base_url
    variable = preset.key_variable or ""
    key = (api_key or environ.get(variable, "")).strip()
    if not key and not is_private_url(url):
        raise ConfigError(f"provider {preset.name} needs an API key: set {variable}")
    return ResponsesProvider(
        model=model,
        api_key=key,
        base_url=url,
        trust_zone=trust_zone or preset.trust_zone,
        http=http,
    )


def _price_table(preset: Preset, url: str) -> str | None:
    """The preset's price table; for ``openai`` at a hosted preset's URL, that preset's."""
    hosted = hosted_preset(url) if preset is _OPENAI else None
    return preset.price_table if hosted is None else hosted.price_table


def _api_key(name: str, given: str | None, environ: Mapping[str, str]) -> str:
    key = (given or environ.get(KEY_VARIABLES[name], "")).strip()
    if not key:
        raise ConfigError(f"provider {name} needs an API key: set {KEY_VARIABLES[name]}")
    return key


# The cloud routes' own settings, and the option that gives each (a region may come from a
# workspace that serves several providers: it is no mistake elsewhere, only unused).
_CLOUD_OPTIONS = {
    "deployment": "--deployment",
    "api_version": "--api-version",
    "project": "--project",
    "auth": "--auth",
    "credential": "a credential",
}


def _no_cloud_settings(name: str, cloud: CloudSettings) -> None:
    """A cloud route's setting given to another provider is a mistake, named."""
    given = [option for field, option in _CLOUD_OPTIONS.items() if getattr(cloud, field)]
    if given:
        raise ConfigError(f"{given[0]} is for the cloud routes ({', '.join(CLOUD_NAMES)}), "
                          f"not provider {name}")  # fmt: skip


def _scripted(script: Path | None, trust_zone: str | None) -> Provider:
    if script is None:
        raise ConfigError("the scripted provider needs a script (--script)")
    return ScriptedProvider.from_file(script, trust_zone=trust_zone or "local")
