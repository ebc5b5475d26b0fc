"""Vertex AI: Gemini through Google Cloud's regional endpoints, with Application Default
Credentials.

Wire shape: ``POST {root}/v1/projects/{project}/locations/{region}/publishers/google/models/
{model}:generateContent`` (``:streamGenerateContent?alt=sse`` when the request streams), with
``Authorization: Bearer`` an OAuth token (``tokens.GoogleToken``: ``google.auth.default`` for
the cloud-platform scope unless credentials are given, refreshed when it nears expiry). The
body and the answer are the Gemini adapter's, unchanged: Vertex takes the same
``GenerateContentRequest``.

The root is the region's, as google-genai builds it (google/genai/_api_client.py):
``https://{region}-aiplatform.googleapis.com``; ``global`` is ``https://aiplatform.googleapis.com``
and the multi-regions ``us`` and ``eu`` are ``https://aiplatform.{region}.rep.googleapis.com``.
A base URL replaces the root (a private endpoint, a test server); the path stays, and so do
Google's own quirks. The adapter's own ``base_url`` is its location's URL,
``{root}/v1/projects/{project}/locations/{region}``: a run stores it, and a base URL of that
form names the project and region itself, so a run resumed or queued elsewhere reaches the
same place whatever that process's environment says.

Claude on Vertex (``--provider vertex-anthropic``) is the Anthropic adapter the same way, as
anthropic-sdk-python's ``AnthropicVertex`` sends it (lib/vertex/_client.py): ``POST .../
publishers/anthropic/models/{model}:rawPredict`` (``:streamRawPredict`` when it streams, an
event stream of the Messages API's events), the body the Messages API's without ``model`` and
with ``anthropic_version: "vertex-2023-10-16"``.

Project and region come from settings or the environment (``GOOGLE_CLOUD_PROJECT``,
``GOOGLE_CLOUD_LOCATION``, as google-genai reads them); the region also sets the trust zone
(``core.trust.region_zone``: an EU region is ``external_eu``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import CompletionRequest
from toolwire.providers.gemini import FAMILY, GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.presets import Quirks
from toolwire.providers.tokens import TokenSource
from toolwire.providers.wire import DEFAULT_TRUST_ZONE, HttpProvider, checked_base_url

NAME = "vertex"
ANTHROPIC_NAME = "vertex-anthropic"
# The Messages API version Vertex takes in the body (anthropic-sdk-python lib/vertex/_client.py).
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
PROJECT_VARIABLE = "GOOGLE_CLOUD_PROJECT"
REGION_VARIABLE = "GOOGLE_CLOUD_LOCATION"
API_VERSION = "v1"
MULTI_REGIONS = frozenset({"us", "eu"})  # google-genai's _MULTI_REGIONAL_LOCATIONS
# A project id or a region: letters, digits and hyphens (a domain-scoped project has a colon).
_NAME = re.compile(r"[a-z0-9][a-z0-9:.-]{0,62}")
_LOCATION_URL = re.compile(
    r"(?P<root>https?://[^/?#]+)/v1/projects/(?P<project>[^/?#]+)/locations/(?P<region>[^/?#]+)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class VertexLocation:
    """A Google Cloud project and region, and the root its requests go to."""

    project: str
    region: str
    root: str

    @classmethod
    def of(cls, project: str, region: str, base_url: str | None = None) -> VertexLocation:
        project, region = project.strip(), region.strip().lower()
        for what, value in (("project", project), ("region", region)):
            if not _NAME.fullmatch(value):
                raise ConfigError(f"{NAME}: {what} {value[:40]!r} is not a Google Cloud {what}")
        root = checked_base_url(NAME, base_url) if base_url else regional_root(region)
        return cls(project=project, region=region, root=root)

    @classmethod
    def parse(cls, base_url: str) -> VertexLocation | None:
        """The location a base URL names whole (``{root}/v1/projects/{p}/locations/{r}``, the
        adapter's own ``base_url``, as a run stored it), or None for a bare root."""
        found = _LOCATION_URL.fullmatch(base_url.strip().rstrip("/"))
        if found is None:
            return None
        return cls.of(found["project"], found["region"], found["root"])

    @property
    def base_url(self) -> str:
        """The location's URL: what a run stores, so another process reaches the same one."""
        project = quote(self.project, safe=":")
        return f"{self.root}/{API_VERSION}/projects/{project}/locations/{self.region}"

    def model_url(self, publisher: str, model: str, method: str) -> str:
        """Where ``method`` (``generateContent``, ``rawPredict``...) of a publisher's model
        is called."""
        name = f"publishers/{publisher}/models/{quote(model, safe='@')}"
        return f"{self.base_url}/{name}:{method}"


def regional_root(region: str) -> str:
    if region == "global":
        return "https://aiplatform.googleapis.com"
    if region in MULTI_REGIONS:
        return f"https://aiplatform.{region}.rep.googleapis.com"
    return f"https://{region}-aiplatform.googleapis.com"


class _OnVertex(HttpProvider):
    """What a family's adapter is on Vertex AI: its URL at a project's location, a bearer
    token from the token source instead of a key, the vendor's own quirks, no price table."""

    def __init__(
        self,
        *,
        model: str,
        location: VertexLocation,
        token_source: TokenSource,
        trust_zone: TrustZone | str = DEFAULT_TRUST_ZONE,
        http: HttpSettings | None = None,
        context_window: int | None = None,
    ) -> None:
        self.location = location
        self.token_source = token_source
        super().__init__(
            model=model,
            api_key="",
            base_url=location.base_url,
            trust_zone=trust_zone,
            http=http,
            context_window=context_window,
            quirks=Quirks(),  # the vendor's own API, behind Vertex's door (at any root)
        )

    @property
    def pricing_family(self) -> str | None:
        return None  # Vertex's prices are not the vendor's own API's table


class VertexGeminiProvider(_OnVertex, GeminiProvider):
    """Gemini on Vertex AI. It speaks the Gemini family's API, so a turn's provider state
    (thought signatures) replays to it as to the Gemini adapter."""

    default_name = NAME

    @property
    def family(self) -> str:
        return FAMILY

    def url(self) -> str:
        return self.location.model_url("google", self.model, "generateContent")

    def stream_url(self) -> str:
        return self.location.model_url("google", self.model, "streamGenerateContent") + "?alt=sse"


class VertexAnthropicProvider(_OnVertex, AnthropicProvider):
    """Claude on Vertex AI. It speaks the Anthropic family's API: thinking signatures replay
    to it as to the Anthropic adapter."""

    default_name = ANTHROPIC_NAME

    @property
    def family(self) -> str:
        return "anthropic"

    def url(self) -> str:
        return self.location.model_url("anthropic", self.model, "rawPredict")

    def stream_url(self) -> str:
        return self.location.model_url("anthropic", self.model, "streamRawPredict")

    def headers(self, api_key: str) -> dict[str, str]:
        return {}  # the version travels in the body; the token is the token source's

    def encode(self, request: CompletionRequest) -> dict[str, Any]:
        body = super().encode(request)
        del body["model"]  # the URL names it
        return {"anthropic_version": VERTEX_ANTHROPIC_VERSION, **body}
