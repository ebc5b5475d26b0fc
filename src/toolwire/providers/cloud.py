"""The cloud routes by name: ``azure-openai`` and ``vertex``, from settings and the
environment.

Invariant (as ``select``'s): every missing or bad setting is a ``ConfigError`` raised here,
before any request, naming the setting, its option and its variable; none echoes a key.

- ``azure-openai``: the endpoint (``--base-url``, ``AZURE_OPENAI_ENDPOINT``), the deployment
  (``--deployment``, else the model's name), the API version (``--api-version``,
  ``OPENAI_API_VERSION``; none: the v1 API), and a key (``AZURE_OPENAI_API_KEY``) or Microsoft
  Entra ID (``auth="entra"``, or a ``credential`` given: an object with ``get_token``).
- ``vertex`` (Gemini) and ``vertex-anthropic`` (Claude): the project (``--project``,
  ``GOOGLE_CLOUD_PROJECT``), the region (``--region``, ``GOOGLE_CLOUD_LOCATION``) and the
  model; Application Default Credentials unless a ``credential`` (google-auth's) is given.
- The zone: the caller's, else the region's (``core.trust.region_zone``); for Azure the region
  is only a setting (``--region``, ``AZURE_OPENAI_REGION``), never read off the endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone, region_zone
from toolwire.providers import azure, vertex
from toolwire.providers.azure import AzureEndpoint, AzureOpenAIProvider, AzureResponsesProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.presets import CLOUD_NAMES
from toolwire.providers.tokens import EntraToken, GoogleCredentials, GoogleToken, TokenCredential
from toolwire.providers.vertex import (
    VertexAnthropicProvider,
    VertexGeminiProvider,
    VertexLocation,
)

Auth = Literal["key", "entra"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CloudSettings:
    """What a cloud route needs beyond a model and a base URL. ``credential``: an object
    standing in for the default one (azure-identity's ``get_token``, google-auth's
    credentials); never shown."""

    deployment: str | None = None
    api_version: str | None = None
    region: str | None = None
    project: str | None = None
    auth: str | None = None
    credential: object | None = None

    def __repr__(self) -> str:  # the credential may hold a token
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("deployment", "api_version",
                          "region", "project", "auth"))  # fmt: skip
        return f"CloudSettings({shown})"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Asked:
    """Everything a cloud route was given, settings and environment alike."""

    model: str
    base_url: str | None
    api_key: str | None
    trust_zone: str | None
    http: HttpSettings
    environ: Mapping[str, str]
    settings: CloudSettings

    def setting(self, given: str | None, variable: str) -> str:
        """``given``, else the environment's ``variable``; stripped ("" when neither)."""
        return (given or self.environ.get(variable, "")).strip()


def cloud_provider(
    name: str,
    *,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    trust_zone: str | None,
    http: HttpSettings,
    environ: Mapping[str, str],
    settings: CloudSettings,
) -> AzureOpenAIProvider | AzureResponsesProvider | VertexGeminiProvider | VertexAnthropicProvider:
    """The cloud route called ``name`` (one of ``CLOUD_NAMES``)."""
    assert name in CLOUD_NAMES
    if settings.auth is not None:
        parse_auth(settings.auth)
    asked = _Asked(model=(model or "").strip(), base_url=base_url, api_key=api_key,
                   trust_zone=trust_zone, http=http, environ=environ,
                   settings=settings)  # fmt: skip
    if name in azure.NAMES:
        return _azure(name, asked)
    if settings.auth is not None or settings.deployment or settings.api_version:
        option = "--auth" if settings.auth is not None else "--deployment or --api-version"
        raise ConfigError(f"provider {name} signs in with Application Default Credentials; "
                          f"{option} is for azure-openai")  # fmt: skip
    return _vertex(name, asked)


def parse_auth(value: str) -> Auth:
    """``key`` or ``entra``; anything else a ``ConfigError`` naming the choices."""
    if value in {"key", "entra"}:
        return value  # type: ignore[return-value]  # narrowed by the check
    raise ConfigError(f"unknown auth {value[:40]!r}: choose key or entra")


def _azure(name: str, asked: _Asked) -> AzureOpenAIProvider | AzureResponsesProvider:
    settings = asked.settings
    if settings.project:
        raise ConfigError(f"--project is for the Google Cloud routes, not {name}")
    where = asked.setting(asked.base_url, azure.ENDPOINT_VARIABLE)
    if not where:
        raise ConfigError(f"provider {name} needs the resource's endpoint: --base-url "
                          f"or set {azure.ENDPOINT_VARIABLE}")  # fmt: skip
    deployment = (settings.deployment or asked.model).strip()
    if not deployment:
        raise ConfigError(f"provider {name} needs a deployment name: --deployment "
                          "(or --model)")  # fmt: skip
    version = asked.setting(settings.api_version, azure.API_VERSION_VARIABLE)
    endpoint = AzureEndpoint.of(where, deployment, version or None)
    region = asked.setting(settings.region, azure.REGION_VARIABLE)
    zone = asked.trust_zone or region_zone(region or None)
    adapter = AzureResponsesProvider if name == azure.RESPONSES_NAME else AzureOpenAIProvider
    entra = settings.auth == "entra" or settings.credential is not None
    if entra and settings.auth != "key":
        token = EntraToken(_azure_credential(settings.credential), provider=name)
        return adapter(endpoint=endpoint, token_source=token, trust_zone=zone, http=asked.http)
    key = asked.setting(asked.api_key, azure.KEY_VARIABLE)
    if not key:
        raise ConfigError(f"provider {name} needs an API key: set {azure.KEY_VARIABLE}, "
                          "or sign in with Microsoft Entra ID (--auth entra)")  # fmt: skip
    return adapter(endpoint=endpoint, api_key=key, trust_zone=zone, http=asked.http)


def _azure_credential(given: object | None) -> TokenCredential | None:
    if given is None or isinstance(given, TokenCredential):
        return given
    raise ConfigError(f"{azure.NAME}: a credential must have get_token (azure-identity's do)")


def _vertex(name: str, asked: _Asked) -> VertexGeminiProvider | VertexAnthropicProvider:
    named = VertexLocation.parse(asked.base_url) if asked.base_url else None
    location = named or _vertex_location(name, asked)
    if not asked.model:
        raise ConfigError(f"provider {name} needs a model name (--model)")
    settings = asked.settings
    credential = settings.credential
    if credential is not None and not isinstance(credential, GoogleCredentials):
        raise ConfigError(f"{name}: credentials must be google-auth credentials")
    zone: TrustZone | str = asked.trust_zone or region_zone(location.region)
    adapter = VertexAnthropicProvider if name == vertex.ANTHROPIC_NAME else VertexGeminiProvider
    return adapter(model=asked.model, location=location,
                   token_source=GoogleToken(credential, provider=name), trust_zone=zone,
                   http=asked.http)  # fmt: skip


def _vertex_location(name: str, asked: _Asked) -> VertexLocation:
    project = asked.setting(asked.settings.project, vertex.PROJECT_VARIABLE)
    if not project:
        raise ConfigError(f"provider {name} needs a Google Cloud project: --project or "
                          f"set {vertex.PROJECT_VARIABLE}")  # fmt: skip
    region = asked.setting(asked.settings.region, vertex.REGION_VARIABLE)
    if not region:
        raise ConfigError(f"provider {name} needs a region (europe-west4, us-central1, "
                          f"global...): --region or set {vertex.REGION_VARIABLE}")  # fmt: skip
    return VertexLocation.of(project, region, asked.base_url)
