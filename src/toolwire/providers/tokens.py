"""Bearer tokens for the cloud routes: Microsoft Entra ID (Azure OpenAI) and Google's
Application Default Credentials (Vertex AI).

A :class:`TokenSource` gives the token a request carries in ``Authorization: Bearer``. Each
source keeps its token and asks its credential again only when the token is missing or within
``REFRESH_MARGIN_SECONDS`` of its expiry, so a run of many rounds asks once, and a run longer
than a token's life (an hour, for both clouds) is never sent a token about to lapse.

Invariants:
- A credential's call (blocking: it may talk HTTP to a token endpoint) runs in a worker
  thread, never on the event loop, and one source refreshes once for all the calls waiting.
- A failure to get a token is an ``AuthenticationError`` naming the provider and the
  credential's exception type with a redacted excerpt of its message, raised ``from None``: the
  credential library's chain (its requests, a refresh token) never rides along.
- A source has no string form of its token: ``repr`` names the credential's type only.
- The cloud SDKs are optional extras (``toolwire[azure]``, ``toolwire[vertex]``): they are
  imported only when a default credential is asked for, and a missing one is a
  ``ConfigError`` naming the extra.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from toolwire.core.errors import AuthenticationError, ConfigError
from toolwire.core.reprs import tagged
from toolwire.providers.redact import excerpt

# Azure's BearerTokenCredentialPolicy refreshes a token five minutes before it lapses; so do
# we (a request may wait behind a long tool call before it is sent).
REFRESH_MARGIN_SECONDS = 300.0
# The scope of every Azure AI services resource (openai/lib/azure.py's docs and the Azure
# OpenAI quickstarts: get_bearer_token_provider(credential, this scope)).
COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default"
# The scope google-genai asks ADC for when it calls Vertex (google/genai/_api_client.py
# load_auth).
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_LIFE = 3600.0  # a Google access token's documented life, when its expiry is unknown

Clock = Callable[[], float]


@runtime_checkable
class TokenCredential(Protocol):
    """What azure-identity's credentials are: ``get_token(scope)`` gives an ``AccessToken``
    (``token``, and ``expires_on`` in Unix seconds)."""

    def get_token(self, *scopes: str) -> Any: ...


@runtime_checkable
class GoogleCredentials(Protocol):
    """What google-auth's credentials are: a ``token``, whether it ``expired``, and
    ``refresh(request)``."""

    token: Any

    @property
    def expired(self) -> bool: ...

    def refresh(self, request: Any) -> None: ...


class TokenSource:
    """A cached bearer token, refreshed near its expiry (see the module)."""

    def __init__(self, provider: str, clock: Clock = time.time) -> None:
        self.provider = provider
        self._clock = clock
        self._token = ""
        self._expires = 0.0
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.fetches = 0  # how often the credential was asked: once per token's life

    def __repr__(self) -> str:  # never the token
        return tagged(type(self).__name__, provider=self.provider, fetches=self.fetches)

    async def token(self) -> str:
        if self._fresh():
            return self._token
        async with self._lock_here():
            if not self._fresh():
                await asyncio.to_thread(self._refresh_guarded)
        return self._token

    def _lock_here(self) -> asyncio.Lock:
        """The lock of the running event loop (``run_sync`` starts a fresh loop per run, and
        an asyncio lock belongs to one loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    def _fresh(self) -> bool:
        return bool(self._token) and self._clock() < self._expires - REFRESH_MARGIN_SECONDS

    def _refresh_guarded(self) -> None:
        failure: AuthenticationError | None = None
        try:
            token, expires = self.fetch()
        except (AuthenticationError, ConfigError):
            raise
        except Exception as exc:  # any credential library's failure, of any type
            failure = self._failure(exc)
        if failure is not None:
            raise failure  # outside the handler: no chain, not even a suppressed context
        if not token:
            raise AuthenticationError(f"{self.provider}: the credential gave an empty token")
        self._token, self._expires = token, expires
        self.fetches += 1

    def _failure(self, exc: Exception) -> AuthenticationError:
        said = excerpt(str(exc), self._token or None)
        what = f"{self.provider}: could not get a bearer token ({type(exc).__name__})"
        return AuthenticationError(what + (f": {said}" if said else ""))

    def fetch(self) -> tuple[str, float]:
        """A new token and its expiry in Unix seconds (blocking; run in a thread)."""
        raise NotImplementedError


class EntraToken(TokenSource):
    """A Microsoft Entra ID token for Azure OpenAI from an azure-identity credential
    (``DefaultAzureCredential`` unless one is given)."""

    def __init__(
        self,
        credential: TokenCredential | None = None,
        *,
        scope: str = COGNITIVE_SERVICES_SCOPE,
        provider: str = "azure-openai",
        clock: Clock = time.time,
    ) -> None:
        super().__init__(provider, clock)
        self._credential = credential
        self.scope = scope

    def fetch(self) -> tuple[str, float]:
        if self._credential is None:
            self._credential = default_azure_credential()
        access = self._credential.get_token(self.scope)
        return str(access.token), float(access.expires_on)


class GoogleToken(TokenSource):
    """An OAuth access token for Vertex AI from google-auth credentials (Application Default
    Credentials unless some are given). A token without an expiry is taken to last the hour
    Google's access tokens last."""

    def __init__(
        self,
        credentials: GoogleCredentials | None = None,
        *,
        provider: str = "vertex",
        clock: Clock = time.time,
    ) -> None:
        super().__init__(provider, clock)
        self._credentials = credentials

    def fetch(self) -> tuple[str, float]:
        if self._credentials is None:
            self._credentials = application_default_credentials()
        credentials = self._credentials
        if credentials.expired or not credentials.token or credentials.token == self._token:
            credentials.refresh(_google_request())  # the one we hold is stale: a new one
        expiry = getattr(credentials, "expiry", None)
        if expiry is None:
            return str(credentials.token or ""), self._clock() + GOOGLE_TOKEN_LIFE
        return str(credentials.token or ""), unix_time(expiry)


def unix_time(expiry: datetime) -> float:
    """google-auth keeps ``expiry`` as a naive UTC datetime: its Unix time, read as UTC."""
    moment = expiry if expiry.tzinfo is not None else expiry.replace(tzinfo=UTC)
    return float(moment.timestamp())


def default_azure_credential() -> TokenCredential:
    """azure-identity's ``DefaultAzureCredential`` (environment, workload or managed identity,
    the Azure CLI...); a ``ConfigError`` naming the extra when azure-identity is missing."""
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise ConfigError(
            "Microsoft Entra ID sign-in needs azure-identity: pip install 'toolwire[azure]'"
        ) from None
    return DefaultAzureCredential()


def application_default_credentials() -> GoogleCredentials:
    """google-auth's Application Default Credentials for the cloud-platform scope; a
    ``ConfigError`` naming the extra, or saying none were found."""
    try:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:
        raise ConfigError("Vertex AI needs google-auth: pip install 'toolwire[vertex]'") from None
    try:
        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except DefaultCredentialsError:
        raise AuthenticationError(
            "vertex: no Application Default Credentials: run `gcloud auth application-default "
            "login` or set GOOGLE_APPLICATION_CREDENTIALS"
        ) from None
    if not isinstance(credentials, GoogleCredentials):
        raise AuthenticationError("vertex: the default credentials cannot give a token")
    return credentials


def _google_request() -> Any:
    from google.auth.transport.requests import Request

    return Request()
