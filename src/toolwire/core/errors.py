"""The exception tree.

Two error channels exist. What the model may read is a fixed, generic text built by the invoke
seam (``loop.py``); exceptions below only ever reach the operator's log or the caller's code,
never the model or the inspector's DOM.

    ToolwireError
    ├── ConfigError                 bad configuration or command-line input
    ├── ToolError
    │   └── DuplicateToolError      two tools registered under one name
    ├── ToolRefusal                 a tool refuses a call; its message is written for the model
    ├── ProviderError               status, endpoint, the server's code/type/param and a
    │   │                           short, redacted message
    │   ├── AuthenticationError     401/403: the key is missing or wrong
    │   ├── RateLimitError          429; carries retry_after seconds when given
    │   ├── ServerError             5xx
    │   ├── ProviderTimeout         the request took longer than its timeout
    │   ├── ProviderConnectionError the server could not be reached
    │   ├── MalformedResponse       the body (or event stream) is not what the API documents
    │   ├── EmptyCompletion         a turn with no text and no tool calls
    │   ├── CircuitOpen             every provider of a fallback chain is resting after
    │   │                           failing again and again (its circuit is open)
    │   └── ScriptExhausted         the scripted provider has no turn left
    ├── RunCancelled                raised from an observer to stop a run at a step boundary
    ├── StateError                  a suspended run's sealed state cannot be used
    │   ├── StateKeyMissing         no key to seal or open it: the run cannot suspend or resume
    │   └── StateUnreadable         tampered, foreign or sealed under another key
    │       └── StateNotLatest      authentic, but not the run's latest sealed value (replayed)
    ├── DecisionError               an operator's decision on a waiting run cannot be taken
    │   ├── RunNotWaiting           no such run, or it is not waiting for this decision
    │   ├── StaleDecision           the decision was made on another turn (or lost a race)
    │   └── InvalidInput            the input does not fit the tool's input schema
    ├── StoreError                  the audit store failed
    └── QueueError                  queued runs cannot be used here (a SQLite store, no state
                                    key) or the queue failed
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


class ToolRefusal(ToolwireError):
    """Raised by a tool (built-in or third-party) to refuse a call with a readable reason.

    Unlike every other exception, its message is written for the model to read: the seam hands
    it on as ``Error: <message>``. It must name the rule the call broke and never carry data
    the model may not see or an operator's secret.
    """


class ProviderError(ToolwireError):
    """A provider call failed. ``status`` is the HTTP status when there was one; ``endpoint``
    the URL called (no user info, no query); ``code``, ``type`` and ``param`` what the
    server's error body said, when it said it; ``body`` a short, redacted excerpt."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str = "",
        endpoint: str | None = None,
        code: str | None = None,
        type: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.endpoint = endpoint
        self.code = code
        self.type = type
        self.param = param


class AuthenticationError(ProviderError):
    """The provider refused the credentials."""


class RateLimitError(ProviderError):
    """The provider asked us to slow down."""

    retryable = True

    retry_after: float | None = None  # seconds the server asked us to wait, when it said


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


class EmptyCompletion(ProviderError):
    """The model's turn held nothing: no text and no tool calls. Never a completed run."""


class CircuitOpen(ProviderError):
    """No provider of a fallback chain may be asked now: each one's circuit opened after
    consecutive failures and has not cooled down yet (:mod:`toolwire.providers.fallback`)."""

    retryable = True


class ScriptExhausted(ProviderError):
    """The scripted provider was asked for more turns than its script has."""


class RunCancelled(ToolwireError):
    """Raised from a trace observer to stop a run at the next step boundary."""


class StateError(ToolwireError):
    """A suspended run's sealed state cannot be sealed or opened."""


class StateKeyMissing(StateError):
    """No state key is configured, so nothing can be sealed or opened."""


class StateUnreadable(StateError):
    """The sealed state failed authentication: tampered, of another run, or another key."""


class StateNotLatest(StateUnreadable):
    """The sealed value is not the run's latest: an earlier one put back (see
    :mod:`toolwire.core.latest`). Nothing of it is used."""


class DecisionError(ToolwireError):
    """An operator's decision on a waiting run cannot be taken. The message is safe to show."""


class RunNotWaiting(DecisionError):
    """The run does not exist, or is not waiting for this kind of decision."""


class StaleDecision(DecisionError):
    """The decision names a turn the run is no longer waiting on."""


class InvalidInput(DecisionError):
    """A person's input does not validate against the tool's input schema."""


class StoreError(ToolwireError):
    """The audit store failed to read or write."""


class QueueError(ToolwireError):
    """Queued runs cannot be used (a SQLite store, no state key) or the queue failed."""
