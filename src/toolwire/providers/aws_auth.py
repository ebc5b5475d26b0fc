"""AWS credentials, region and SigV4 signing, all through botocore's own maintained code.

- Credentials come from botocore's credential chain (``botocore.session.Session``): the
  environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), a shared
  profile (``AWS_PROFILE`` or the one named, in ``~/.aws/credentials`` and ``~/.aws/config``,
  role assumption included), a container's or an instance's role. They are resolved once, when
  the adapter is made (none at all is a ``ConfigError`` then, not at the first call), and frozen
  again at each signature (temporary ones refresh there).
- The region is the one given, else the one in an AWS endpoint's host, else ``AWS_REGION``, else
  the profile's (``AWS_DEFAULT_REGION`` or its ``region``); it must look like a region name
  (``eu-west-1``), since it becomes part of a host name.
- Each request is signed by ``botocore.auth.SigV4Auth`` over an ``AWSRequest`` of the exact bytes
  sent, at each attempt (a retry gets a fresh date); what is signed is the host, the content
  type, the date and the session token.

Invariant: no credential is in a repr, an error or a log record. The signer's repr names the
region only; an error says which part of the chain failed and a redacted excerpt of botocore's
words; botocore logs the canonical request (which holds the session token) and the signature at
debug level: those records of ``botocore.auth`` are dropped (``_drop_signing_records``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolwire.core.errors import AuthenticationError, ConfigError
from toolwire.core.reprs import tagged
from toolwire.providers.redact import excerpt

SIGNING_NAME = "bedrock"  # the service model's signingName (bedrock-runtime's service-2.json)
INSTALL_HINT = "pip install 'toolwire[bedrock]'"
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
_AWS_HOST = re.compile(r"https://[a-z0-9-]+\.([a-z]{2}(?:-[a-z]+)+-\d{1,2})\.amazonaws\.com")
# botocore.auth logs these at debug level; each holds the session token or the signature.
_SIGNING_RECORDS = ("CanonicalRequest", "StringToSign", "Signature")


def require_botocore(provider: str) -> None:
    """A ``ConfigError`` saying how to install botocore, unless it is installed."""
    try:
        import botocore.auth  # noqa: F401
    except ImportError:
        raise ConfigError(f"provider {provider} needs botocore: {INSTALL_HINT}") from None


def region_in(base_url: str) -> str | None:
    """The region in an AWS endpoint's host (``bedrock-runtime.eu-west-1.amazonaws.com``)."""
    match = _AWS_HOST.match(base_url)
    return match.group(1) if match else None


def checked_region(region: str) -> str:
    """``region`` when it looks like an AWS region's name; else a ``ValueError`` saying so."""
    region = region.strip()
    if not _REGION.fullmatch(region):
        shown = region if len(region) <= 40 else region[:40] + "…"
        raise ValueError(f"{shown!r} is not an AWS region (eu-west-1)")
    return region


@dataclass(frozen=True, slots=True)
class FrozenCredentials:
    """One moment's key id, secret and token, in the shape ``SigV4Auth`` reads; never shown
    (botocore's own ``ReadOnlyCredentials`` prints them all)."""

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    token: str | None = field(repr=False)

    def __repr__(self) -> str:
        return tagged("FrozenCredentials", token=self.token is not None)


class AwsCredentials:
    """botocore's credentials for one adapter, found by its chain; never shown."""

    def __init__(self, credentials: Any, region: str) -> None:
        self._credentials = credentials
        self.region = region

    def frozen(self) -> FrozenCredentials:
        """The current key, secret and token, refreshed first when they are due."""
        now = self._credentials.get_frozen_credentials()
        return FrozenCredentials(now.access_key, now.secret_key, now.token or None)

    def __repr__(self) -> str:
        return tagged("AwsCredentials", region=self.region)


def resolve(
    provider: str,
    *,
    region: str | None,
    base_url: str | None,
    profile: str | None,
    environ: Mapping[str, str],
) -> AwsCredentials:
    """The credentials and region the chain gives, or a ``ConfigError`` naming what is missing."""
    require_botocore(provider)
    import botocore.session
    from botocore.exceptions import BotoCoreError

    try:
        session = botocore.session.Session(profile=profile or None)
        credentials = session.get_credentials()
        configured = session.get_config_variable("region")
    except BotoCoreError as exc:
        said = excerpt(str(exc))
        raise ConfigError(f"provider {provider}: AWS credentials: {said}") from None
    if credentials is None:
        raise ConfigError(
            f"provider {provider} needs AWS credentials: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where a role gives them"
        )
    chosen = region or (base_url and region_in(base_url)) or environ.get("AWS_REGION")
    chosen = chosen or configured
    if not chosen:
        raise ConfigError(
            f"provider {provider} needs an AWS region: --region, AWS_REGION or the profile's"
        )
    try:
        return AwsCredentials(credentials, checked_region(chosen))
    except ValueError as exc:
        raise ConfigError(f"provider {provider}: {exc}") from None


class SigV4Signer:
    """Signs each request with SigV4 for ``SIGNING_NAME`` in the credentials' region."""

    def __init__(self, provider: str, credentials: AwsCredentials) -> None:
        self._provider = provider
        self._credentials = credentials
        self._secrets: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return tagged("SigV4Signer", region=self._credentials.region)

    def sign(self, url: str, headers: Mapping[str, str], content: bytes) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        frozen = self._frozen()
        signed = {"content-type": headers.get("content-type", "application/json")}
        request = AWSRequest(method="POST", url=url, data=content, headers=signed)
        SigV4Auth(frozen, SIGNING_NAME, self._credentials.region).add_auth(request)
        return {**headers, **dict(request.headers.items())}

    def secrets(self) -> tuple[str, ...]:
        """The key id, secret and token last signed with: masked in every message."""
        return self._secrets

    def _frozen(self) -> FrozenCredentials:
        from botocore.exceptions import BotoCoreError

        try:
            frozen = self._credentials.frozen()
        except BotoCoreError as exc:  # a role's credentials could not be refreshed
            what = f"the AWS credentials could not be refreshed ({type(exc).__name__})"
            raise AuthenticationError(f"{self._provider}: {what}") from None
        self._secrets = tuple(s for s in (frozen.token, frozen.secret_key, frozen.access_key) if s)
        return frozen


class _DropSigningRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(_SIGNING_RECORDS))


def _drop_signing_records() -> None:
    logger = logging.getLogger("botocore.auth")
    if not any(isinstance(f, _DropSigningRecords) for f in logger.filters):
        logger.addFilter(_DropSigningRecords())


_drop_signing_records()
