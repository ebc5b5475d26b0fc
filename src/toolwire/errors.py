"""The exception tree.

Two error channels exist. What the model may read is a fixed, generic text built by the invoke
seam (``loop.py``); exceptions below only ever reach the operator's log or the caller's code,
never the model or the inspector's DOM.

    ToolwireError
    ├── ConfigError                 bad configuration or command-line input
    ├── ToolError
    │   ├── DuplicateToolError      two tools registered under one name
    │   └── ToolArgumentError       model arguments failed validation (message is model-readable)
    ├── ProviderError               status and a short, redacted body excerpt
    │   ├── AuthenticationError     401/403: the key is missing or wrong
    │   ├── RateLimitError          429; carries retry_after seconds when given
    │   ├── ServerError             5xx
    │   ├── ProviderTimeout         the request took longer than its timeout
    │   ├── ProviderConnectionError the server could not be reached
    │   ├── MalformedResponse       the body is not what the API documents
    │   └── ScriptExhausted         the scripted provider has no turn left
    ├── RunCancelled                raised from an observer to stop a run at a step boundary
    └── StoreError                  the audit store failed
"""

from __future__ import annotations


class ToolwireError(Exception):
    """Base class of every error toolwire raises on purpose."""


class ConfigError(ToolwireError):
    """Configuration or command-line input that cannot be used."""


class ToolError(ToolwireError):
    """A problem with a tool definition or its arguments."""


class DuplicateToolError(ToolError):
    """Two tools were registered under the same name."""


class ToolArgumentError(ToolError):
    """Model-supplied arguments were invalid.

    Unlike every other exception, its message is written for the model to read: it names the
    argument and the rule it broke, and never carries operator secrets.
    """


class ProviderError(ToolwireError):
    """A provider call failed. ``status`` is the HTTP status when there was one."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class AuthenticationError(ProviderError):
    """The provider refused the credentials."""


class RateLimitError(ProviderError):
    """The provider asked us to slow down."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """The provider failed on its side (5xx)."""

    retryable = True


class ProviderTimeout(ProviderError):
    """The provider did not answer in time."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The provider could not be reached."""

    retryable = True


class MalformedResponse(ProviderError):
    """The provider answered with a body that does not fit its API."""


class ScriptExhausted(ProviderError):
    """The scripted provider was asked for more turns than its script has."""


class RunCancelled(ToolwireError):
    """Raised from a trace observer to stop a run at the next step boundary."""


class StoreError(ToolwireError):
    """The audit store failed to read or write."""
