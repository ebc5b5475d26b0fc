"""Azure OpenAI: the OpenAI adapters at an Azure resource's endpoint, with Azure's auth.

Two URL shapes, as openai-python's ``AzureOpenAI`` (openai/lib/azure.py) builds them:
- the v1 API, when no API version is set: ``{endpoint}/openai/v1/{path}``;
- the deployment shape, when one is (``api_version``, ``OPENAI_API_VERSION``):
  ``{endpoint}/openai/deployments/{deployment}/{path}?api-version={version}`` for the paths
  the SDK scopes to a deployment (``DEPLOYMENT_PATHS``: ``chat/completions`` among them), and
  ``{endpoint}/openai/{path}?api-version={version}`` for the others (``responses``).
The body's ``model`` is the deployment's name in both. :class:`AzureEndpoint` builds either
for any ``path``, so every OpenAI adapter (Chat Completions, Responses) reaches Azure alike.

Auth, one of: the resource's key in an ``api-key`` header (``AZURE_OPENAI_API_KEY``), or a
Microsoft Entra ID bearer token (``tokens.EntraToken``: ``DefaultAzureCredential`` for the
``cognitiveservices`` scope unless a credential is given), cached and refreshed before expiry.

The trust zone follows the resource's region when settings name one (``--region``,
``AZURE_OPENAI_REGION``): an EU region is ``external_eu`` (``core.trust.region_zone``); no
region is ``external_global``. The endpoint's hostname is never read for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote, unquote, urlencode

from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.presets import OPENAI_QUIRKS
from toolwire.providers.responses import ResponsesProvider
from toolwire.providers.tokens import TokenSource
from toolwire.providers.wire import DEFAULT_TRUST_ZONE, checked_base_url

NAME = "azure-openai"
RESPONSES_NAME = "azure-openai-responses"
NAMES = (NAME, RESPONSES_NAME)
# openai/lib/azure.py ``_deployments_endpoints``: the paths Azure serves under a deployment.
DEPLOYMENT_PATHS = frozenset({
    "completions", "chat/completions", "embeddings", "audio/transcriptions",
    "audio/translations", "audio/speech", "images/generations", "images/edits",
})  # fmt: skip
# The variables openai-python's AzureOpenAI reads, and the region's.
ENDPOINT_VARIABLE = "AZURE_OPENAI_ENDPOINT"
KEY_VARIABLE = "AZURE_OPENAI_API_KEY"
API_VERSION_VARIABLE = "OPENAI_API_VERSION"
REGION_VARIABLE = "AZURE_OPENAI_REGION"


@dataclass(frozen=True, slots=True, kw_only=True)
class AzureEndpoint:
    """An Azure OpenAI resource's endpoint, a deployment on it, and the API version (None:
    the v1 API). ``url(path)`` is where a request for ``path`` goes."""

    endpoint: str
    deployment: str
    api_version: str | None = None

    @classmethod
    def of(cls, endpoint: str, deployment: str, api_version: str | None = None) -> AzureEndpoint:
        """Checked and normalised. An endpoint pasted with its ``/openai`` suffix is the
        resource's; one ending ``/openai/v1`` names the v1 API, and one ending
        ``/openai/deployments/{name}`` that deployment's URL (the forms ``base_url`` gives,
        so a stored run reaches the same shape and deployment)."""
        url = checked_base_url(NAME, endpoint)
        version = (api_version or "").strip() or None
        head, scoped, named = url.rpartition("/openai/deployments/")
        if url.endswith("/openai/v1"):
            url, version = url.removesuffix("/openai/v1"), None
        elif scoped and named and "/" not in named:
            url, deployment = head, unquote(named)
            if version is None:
                raise ConfigError(f"{NAME}: a deployment's URL needs an API version: "
                                  f"--api-version or set {API_VERSION_VARIABLE}")  # fmt: skip
        url = url.removesuffix("/openai")
        if not deployment.strip():
            raise ConfigError(f"{NAME}: a deployment name is required (--deployment or --model)")
        return cls(endpoint=url, deployment=deployment.strip(), api_version=version)

    @property
    def base_url(self) -> str:
        """The shape's own base: ``/openai/v1``, or the deployment's ``/openai/deployments/
        {name}`` (its API version is a setting of the process that calls it)."""
        if self.api_version is None:
            return f"{self.endpoint}/openai/v1"
        return f"{self.endpoint}/openai/deployments/{quote(self.deployment, safe='')}"

    def url(self, path: str) -> str:
        path = path.strip("/")
        if self.api_version is None:
            return f"{self.endpoint}/openai/v1/{path}"
        if path in DEPLOYMENT_PATHS:
            deployment = quote(self.deployment, safe="")
            base = f"{self.endpoint}/openai/deployments/{deployment}/{path}"
        else:
            base = f"{self.endpoint}/openai/{path}"
        return f"{base}?{urlencode({'api-version': self.api_version})}"

    def headers(self, api_key: str) -> dict[str, str]:
        """A key goes in ``api-key`` (a bearer token is the adapter's ``token_source``)."""
        return {"api-key": api_key} if api_key else {}


def one_credential(name: str, api_key: str | None, token_source: TokenSource | None) -> str:
    """The key given (``""`` for none); a ``ConfigError`` when a token source is given too."""
    key = (api_key or "").strip()
    if key and token_source is not None:
        raise ConfigError(f"{name}: give an API key or a bearer token, not both")
    return key


class _OnAzure:
    """What both Azure adapters are: a resource's endpoint, one credential at a time (an API
    key or a bearer token's source, never both), and no price table (a deployment's name is
    not a model's). The adapter's own ``_open`` starts the OpenAI adapter under it."""

    default_name: ClassVar[str]

    def __init__(
        self,
        *,
        endpoint: AzureEndpoint,
        api_key: str | None = None,
        token_source: TokenSource | None = None,
        trust_zone: TrustZone | str = DEFAULT_TRUST_ZONE,
        http: HttpSettings | None = None,
        context_window: int | None = None,
    ) -> None:
        """One of ``api_key`` and ``token_source``: Azure takes one credential at a time."""
        key = one_credential(self.default_name, api_key, token_source)
        self.endpoint = endpoint
        self.token_source = token_source
        self._open(model=endpoint.deployment, api_key=key or None, base_url=endpoint.base_url,
                   trust_zone=trust_zone, http=http, context_window=context_window)  # fmt: skip

    def _open(self, **given: Any) -> None:
        """Start the OpenAI adapter under this one with what was ``given`` and its own."""
        raise NotImplementedError

    def needs_key(self) -> bool:
        return self.token_source is None

    @property
    def pricing_family(self) -> str | None:
        return None  # no price table can know a deployment's name


class AzureOpenAIProvider(_OnAzure, OpenAIProvider):
    """Chat Completions on an Azure OpenAI deployment."""

    default_name = NAME

    def _open(self, **given: Any) -> None:
        # OpenAI's own API behind Azure's door
        OpenAIProvider.__init__(self, **given, quirks=OPENAI_QUIRKS)

    def url(self) -> str:
        return self.endpoint.url("chat/completions")

    def headers(self, api_key: str) -> dict[str, str]:
        return self.endpoint.headers(api_key)


class AzureResponsesProvider(_OnAzure, ResponsesProvider):
    """The Responses API on an Azure OpenAI resource (``{endpoint}/openai/v1/responses``, or
    ``{endpoint}/openai/responses?api-version=...``), the deployment as the body's model."""

    default_name = RESPONSES_NAME

    def _open(self, **given: Any) -> None:
        ResponsesProvider.__init__(self, **given, auth="api-key")

    def url(self) -> str:
        return self.endpoint.url("responses")
