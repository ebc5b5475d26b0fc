"""The one HTTP layer every provider adapter uses: POST a JSON body, get a JSON object back.

Invariants:
- Every failure is a typed ``ProviderError`` (``toolwire.core.errors``); httpx exceptions never
  escape, and neither does their chain (it holds the request, headers and key included).
- An error message never contains the key: it names the provider, the status, the endpoint, the
  server's own ``code``/``type``/``param`` when its error body gives them (kept on the error as
  well) and at most a short, redacted excerpt of its message (``redact.excerpt``).
- Every error names the endpoint (scheme, host, port and path: never a query or user info,
  where a key may sit); a failure to reach the server also says how many attempts were made.
- Only retryable failures (429, 5xx, timeouts, connection failures) are retried, at most
  ``MAX_ATTEMPTS`` times in all, with jittered exponential backoff capped at
  ``MAX_BACKOFF_SECONDS``. A 429's ``Retry-After`` is honoured exactly when it is not longer than
  ``MAX_RETRY_AFTER_SECONDS``; a longer one fails at once rather than stalling the run. A
  connection refused on a loopback address fails at once: nothing is listening on this machine,
  and backing off will not start it.
- A response body larger than ``MAX_RESPONSE_BYTES`` is refused while it is read. An event
  stream is bounded twice while it is read (:mod:`toolwire.providers.sse`): its bytes in all
  (``MAX_STREAM_BYTES``) and the bytes of the one event not yet ended (``MAX_EVENT_BYTES``), so
  a server streaming bytes that never end an event fails fast with bounded memory.
- A stream request answered with a JSON body (a proxy that does not stream) is read as the
  whole answer, by its content type; any other content type is a protocol error. Protocol
  errors (malformed bodies and streams) are never retried: asking again gets the same answer.
- A stream is server-sent events unless the adapter names another framing (``StreamFormat``:
  AWS's binary event stream for Bedrock), bounded by the same caps; a frame that does not parse
  is a ``MalformedResponse`` naming what was wrong with it.
- A request whose adapter signs it (``Signer``: AWS SigV4) is signed again at every attempt,
  over the exact bytes sent; the signer's secrets are masked in every message as the key is.
- An AWS error names its type in the ``x-amzn-ErrorType`` header; it is kept as the error's
  ``type``.
- An error reported inside a 200 body or event (proxies, OpenRouter-style ``{"error": ...}``,
  the Responses API's ``{"type": "error", "code", "message"}`` event) is a typed
  ``ProviderError`` like a status would be, retried when its code says it is transient.
- A stream is retried only before its first event reached the adapter; after that a failure
  ends the call (the adapter has already shown part of the answer). Its timeout is the longest
  silence between events, not the whole answer's length.
- Cancelling the awaiting task aborts the in-flight request: the client is closed on the way out.

Connections: inside ``session()`` (the loop enters it for the length of a run) every round reuses
one client and its kept-alive connections, so a run pays one TLS handshake, not one per round.
Outside a session a client is opened per call. A client is never kept beyond its session: it is
bound to the event loop that opened it, and ``run_sync`` starts a fresh loop per run.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import cache
from typing import Any, Protocol, TypeVar

import httpx

from toolwire.core import egress
from toolwire.core.errors import (
    AuthenticationError,
    MalformedResponse,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from toolwire.core.reprs import tagged
from toolwire.providers.redact import MASK, excerpt, url_excerpt
from toolwire.providers.sse import (
    MAX_EVENT_BYTES,
    MAX_STREAM_BYTES,
    SSE,
    MalformedStream,
    StreamFormat,
    StreamTooLarge,
)

DEFAULT_TIMEOUT_SECONDS = 120.0  # a long tool-using answer can take a minute; two is generous
MAX_ATTEMPTS = 4  # one call and three retries: rides out a blip, gives up on an outage
BASE_BACKOFF_SECONDS = 0.5  # first retry waits about this long, doubling after
MAX_BACKOFF_SECONDS = 20.0  # no single backoff sleeps longer than this
MAX_RETRY_AFTER_SECONDS = 60.0  # a server asking for a longer pause is better reported than waited
MAX_RESPONSE_BYTES = 8 * 1024 * 1024  # a completion is kilobytes; megabytes mean a broken server

Sleep = Callable[[float], Awaitable[None]]
_E = TypeVar("_E", bound=ProviderError)
# The client of the session the current task is in, with the JsonHttp that opened it.
_SESSION: ContextVar[tuple[JsonHttp, httpx.AsyncClient] | None] = ContextVar(
    "toolwire_http_session", default=None
)


class Signer(Protocol):
    """What signs a request (AWS SigV4): headers to send for ``content`` POSTed to ``url``, and
    the secrets no message may show. A failure to sign is a typed ``ProviderError``."""

    def sign(self, url: str, headers: Mapping[str, str], content: bytes) -> dict[str, str]: ...
    def secrets(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpSettings:
    """How an adapter talks HTTP. ``transport`` replaces the network (tests, proxies)."""

    timeout: float = DEFAULT_TIMEOUT_SECONDS
    transport: httpx.AsyncBaseTransport | None = None
    sleep: Sleep = asyncio.sleep
    max_attempts: int = MAX_ATTEMPTS
    jitter: Callable[[], float] = field(default=random.random)

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError("the provider timeout must be a positive number of seconds")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


class JsonHttp:
    """POSTs JSON to one provider and returns the decoded object, retrying what may be retried."""

    def __init__(
        self,
        provider: str,
        secret: str | None,
        settings: HttpSettings,
        signer: Signer | None = None,
    ) -> None:
        self.provider = provider
        self._secret = secret
        self.settings = settings
        self._signer = signer

    def _excerpt(self, text: str) -> str:
        """``excerpt`` with the key and the signer's secrets masked."""
        for secret in self._signer.secrets() if self._signer is not None else ():
            if secret:
                text = text.replace(secret, MASK)
        return excerpt(text, self._secret)

    def _url_excerpt(self, url: str) -> str:
        """``url_excerpt`` with the key and the signer's secrets masked."""
        for secret in self._signer.secrets() if self._signer is not None else ():
            if secret:
                url = url.replace(secret, MASK)
        return url_excerpt(url, self._secret)

    def _signed(self, url: str, headers: Mapping[str, str], content: bytes) -> Mapping[str, str]:
        return headers if self._signer is None else self._signer.sign(url, headers, content)

    def hide(self, secret: str) -> None:
        """Mask ``secret`` (a bearer token just obtained) in errors from now on, as the key."""
        self._secret = secret

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Share one client (and its connections) between the calls made inside this block."""
        async with self._client() as client:
            token = _SESSION.set((self, client))
            try:
                yield
            finally:
                _SESSION.reset(token)

    async def post(self, url: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Any:
        content = _encode(body)
        headers = {**headers, "content-type": "application/json", "accept": "application/json"}
        attempt = 1
        while True:
            try:
                return await self._attempt(url, headers, content, attempt)
            except ProviderError as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            await self.settings.sleep(delay)
            attempt += 1

    async def stream(
        self,
        url: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        on_event: Callable[[str, Any], None],
        framing: StreamFormat = SSE,
    ) -> Any:
        """POST and hand each event (its name and decoded JSON data) to ``on_event``, in
        order, until the stream ends. Returns None, or the decoded body when the server
        answered with JSON instead of a stream (it did not stream)."""
        content = _encode(body)
        headers = {**headers, "content-type": "application/json", "accept": framing.media_type}
        attempt = 1
        while True:
            call = _StreamCall(url, headers, content, on_event, framing)
            try:
                return await self._stream_attempt(call, attempt)
            except ProviderError as exc:
                delay = None if call.delivered else self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            await self.settings.sleep(delay)
            attempt += 1

    async def _stream_attempt(self, call: _StreamCall, attempt: int) -> Any:
        egress.sending()  # counted, or refused over the run's limit, before it goes out
        try:
            async with asyncio.timeout(self.settings.timeout) as silence:
                async with self._client_in_session() as client:
                    return await self._events(client, call, silence)
        except TimeoutError:
            raise self._timed_out(call.url, attempt) from None
        except httpx.TimeoutException:
            raise self._timed_out(call.url, attempt) from None
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.ConnectError):  # nothing reached the server
                egress.undelivered()
            raise self._unreachable(call.url, exc, attempt) from None

    async def _events(
        self, client: httpx.AsyncClient, call: _StreamCall, silence: asyncio.Timeout
    ) -> Any:
        headers = self._signed(call.url, call.headers, call.content)
        request = client.stream("POST", call.url, headers=headers, content=call.content)
        async with request as response:
            if response.status_code >= 300:
                raw = await self._read_capped(response, call.url)
                raise self._status_error(response, raw.decode("utf-8", "replace"), call.url)
            kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if kind != call.framing.media_type:
                return await self._whole_instead(response, kind, call.url)
            decoder = call.framing.decoder()
            async for chunk in response.aiter_bytes():
                try:
                    events = decoder.feed(chunk)
                except StreamTooLarge as exc:
                    raise self._stream_too_large(exc, call.url) from None
                except MalformedStream as exc:
                    what = f"malformed event stream: {exc}"
                    raise self._fail(MalformedResponse, what, url=call.url) from None
                for event in events:
                    self._deliver(call, event.event, event.data)
                if events:
                    silence.reschedule(asyncio.get_running_loop().time() + self.settings.timeout)
        return None

    def _deliver(self, call: _StreamCall, name: str, text: str) -> None:
        if text.strip() in ("", "[DONE]"):
            return
        data = self._decode(text, call.url)
        self._raise_in_band(data, name, call.url)
        call.delivered += 1
        call.on_event(name, data)

    async def _whole_instead(self, response: httpx.Response, kind: str, url: str) -> Any:
        """A stream request answered with a whole JSON body: that body, as ``post`` reads it."""
        raw = (await self._read_capped(response, url)).decode("utf-8", "replace")
        if kind != "application/json" and not kind.endswith("+json"):
            what = f"answered a stream request with {kind or 'no content type'}, not events or JSON"
            raise self._fail(MalformedResponse, what, url=url, body=raw)
        body = self._decode(raw, url)
        self._raise_in_band(body, "", url)
        return body

    def _stream_too_large(self, exc: StreamTooLarge, url: str) -> MalformedResponse:
        if exc.limit == "MAX_EVENT_BYTES":
            what = f"one event over {MAX_EVENT_BYTES} bytes without its end (MAX_EVENT_BYTES)"
        else:
            what = f"event stream over {MAX_STREAM_BYTES} bytes in all (MAX_STREAM_BYTES)"
        return self._fail(MalformedResponse, what, url=url)

    @asynccontextmanager
    async def _client_in_session(self) -> AsyncIterator[httpx.AsyncClient]:
        current = _SESSION.get()
        if current is not None and current[0] is self:
            yield current[1]
            return
        async with self._client() as client:
            yield client

    def _retry_delay(self, exc: ProviderError, attempt: int) -> float | None:
        if not exc.retryable or attempt >= self.settings.max_attempts:
            return None
        if isinstance(exc, RateLimitError) and exc.retry_after is not None:
            return exc.retry_after if exc.retry_after <= MAX_RETRY_AFTER_SECONDS else None
        ceiling = min(MAX_BACKOFF_SECONDS, BASE_BACKOFF_SECONDS * 2.0 ** (attempt - 1))
        return ceiling * (0.5 + self.settings.jitter() / 2)  # equal jitter: never a stampede

    async def _attempt(
        self, url: str, headers: Mapping[str, str], content: bytes, attempt: int
    ) -> Any:
        egress.sending()  # counted, or refused over the run's limit, before it goes out
        try:
            async with asyncio.timeout(self.settings.timeout):
                return await self._exchange_in_session(url, headers, content)
        except TimeoutError:
            raise self._timed_out(url, attempt) from None
        except httpx.TimeoutException:
            raise self._timed_out(url, attempt) from None
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.ConnectError):  # nothing reached the server
                egress.undelivered()
            # ``from None``: the httpx chain holds the request, and so the key.
            raise self._unreachable(url, exc, attempt) from None

    async def _exchange_in_session(
        self, url: str, headers: Mapping[str, str], content: bytes
    ) -> Any:
        current = _SESSION.get()
        if current is not None and current[0] is self:
            return await self._exchange(current[1], url, headers, content)
        async with self._client() as client:
            return await self._exchange(client, url, headers, content)

    def _timed_out(self, url: str, attempt: int) -> ProviderError:
        what = f"no answer from {self._where(url)} within {self.settings.timeout:g}s"
        error = self._fail(ProviderTimeout, what + _after(attempt))
        error.endpoint = self._where(url)
        return error

    def _unreachable(self, url: str, exc: Exception, attempt: int) -> ProviderError:
        """A transport failure: what failed, where, and after how many attempts."""
        where = self._where(url)
        if isinstance(exc, httpx.ConnectError):
            refused = _refused(exc)
            what = f"cannot connect to {where}" + (" (connection refused)" if refused else "")
            error = self._fail(ProviderConnectionError, what + _after(attempt))
            if refused and _is_loopback(url):
                error.retryable = False  # nothing listens here; waiting will not change that
        else:
            what = f"the connection to {where} failed ({type(exc).__name__})"
            error = self._fail(ProviderConnectionError, what + _after(attempt))
        error.endpoint = where
        return error

    def where(self, url: str) -> str:
        """The endpoint as a message may show it (see ``_where``)."""
        return self._where(url)

    def _where(self, url: str) -> str:
        """The endpoint as a message may show it: no user info, no query, the key masked."""
        parsed = httpx.URL(url)
        shown = str(parsed.copy_with(userinfo=b"", query=None, fragment=None))
        return self._url_excerpt(shown) or "the provider"

    def _client(self) -> httpx.AsyncClient:
        transport = self.settings.transport
        return httpx.AsyncClient(
            transport=_Borrowed(transport) if transport is not None else None,
            timeout=self.settings.timeout,
            verify=_ssl_context(),
            follow_redirects=False,
            trust_env=False,
        )

    async def _exchange(
        self, client: httpx.AsyncClient, url: str, headers: Mapping[str, str], content: bytes
    ) -> Any:
        headers = self._signed(url, headers, content)
        async with client.stream("POST", url, headers=headers, content=content) as response:
            raw = await self._read_capped(response, url)
        text = raw.decode("utf-8", "replace")
        if response.status_code >= 300:
            raise self._status_error(response, text, url)
        body = self._decode(text, url)
        self._raise_in_band(body, "", url)
        return body

    def raise_in_band(self, body: Any, url: str) -> None:
        """The error a body an adapter assembled reports, typed as an in-band one is."""
        self._raise_in_band(body, "", url)

    def _raise_in_band(self, body: Any, event: str, url: str) -> None:
        """An error a server reported inside a 200 body or an ``error`` event: an ``error``
        object, or the event itself (the Responses API's ``{"type": "error", "code",
        "message"}``, named ``error`` or not)."""
        if not isinstance(body, dict):
            return
        error = body.get("error")
        bare = body.get("type") == "error" and not isinstance(error, dict)
        if not error and event != "error" and not bare:
            return
        if isinstance(error, dict):
            detail = error
        else:
            detail = body if error is None and "message" in body else {"message": error}
        code = _code_of(detail)
        what = f"error in the response ({code or 'no code'})"
        raise self._fail(_in_band_kind(code, detail), what, url=url, detail=detail)

    async def _read_capped(self, response: httpx.Response, url: str) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
            raise self._oversized(url)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise self._oversized(url)
            chunks.append(chunk)
        return b"".join(chunks)

    def _oversized(self, url: str) -> MalformedResponse:
        what = f"response body over {MAX_RESPONSE_BYTES} bytes (MAX_RESPONSE_BYTES)"
        return self._fail(MalformedResponse, what, url=url)

    def _decode(self, text: str, url: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            raise self._fail(MalformedResponse, "response is not JSON", url=url,
                             body=text) from None  # fmt: skip
        except RecursionError:  # nested deeper than Python's decoder goes
            raise self._fail(MalformedResponse, "response is nested too deeply", url=url) from None

    def _status_error(self, response: httpx.Response, text: str, url: str) -> ProviderError:
        status = response.status_code
        kind, what = _status_kind(status)
        detail = error_detail(text)
        aws_type = response.headers.get("x-amzn-errortype", "").partition(":")[0].strip()
        if aws_type:  # AWS names the error in a header; its body has only a message
            detail = {**(detail or {}), "type": aws_type}
        error = self._fail(kind, what, status, url=url, body=text, detail=detail)
        if isinstance(error, RateLimitError):
            error.retry_after = parse_retry_after(response.headers.get("retry-after"))
        return error

    def _fail(
        self,
        kind: type[_E],
        what: str,
        status: int | None = None,
        *,
        url: str | None = None,
        body: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> _E:
        """The typed error: provider, status, what, endpoint, the server's code/type/param and
        a short excerpt of its message (of the body when it has no error object)."""
        fields = _fields_of(detail)
        message = detail.get("message") if detail is not None else None
        if message is not None:
            body = message if isinstance(message, str) else json.dumps(message)[:_IN_BAND_CHARS]
        short = self._excerpt(body)
        head = f"HTTP {status} " if status is not None else ""
        where = f" ({self._where(url)})" if url is not None else ""
        said = ", ".join(f"{k} {self._excerpt(v)}" for k, v in fields.items() if v)
        text = f"{self.provider}: {head}{what}{where}" + (f" [{said}]" if said else "")
        return kind(
            text + (f": {short}" if short else ""),
            status=status,
            body=short,
            endpoint=self._where(url) if url is not None else None,
            **{k: self._excerpt(v) if v else None for k, v in fields.items()},
        )


_IN_BAND_CHARS = 2_000  # an error message, not a document; ``excerpt`` shortens it further
_TRANSIENT_TYPES = frozenset({"rate_limit_error", "overloaded_error", "api_error", "server_error"})


def _after(attempt: int) -> str:
    return f" after {attempt} attempt{'' if attempt == 1 else 's'}"


def _refused(exc: BaseException) -> bool:
    """Whether a ``ConnectionRefusedError`` lies anywhere in ``exc``'s chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def _is_loopback(url: str) -> bool:
    host = httpx.URL(url).host.lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _encode(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")


def _status_kind(status: int) -> tuple[type[ProviderError], str]:
    if status in (401, 403):
        return AuthenticationError, "credentials refused"
    if status == 429:
        return RateLimitError, "rate limited"
    if status >= 500:
        return ServerError, "server error"
    return ProviderError, "request refused"


def error_detail(text: str) -> Mapping[str, Any] | None:
    """The error object of an error body: OpenAI's and Gemini's ``{"error": {...}}``,
    Anthropic's ``{"type": "error", "error": {...}}``, a proxy's ``{"error": "text"}``, or a
    bare ``{"message": ...}``; None when the body is not one."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]  # Gemini's stream endpoint answers errors as a list of one
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict):
        return error
    if isinstance(error, str):
        return {"message": error}
    return body if "message" in body else None


_DETAIL_CHARS = 80  # a code, type or parameter name, not prose


def _fields_of(detail: Mapping[str, Any] | None) -> dict[str, str]:
    """``code``, ``type`` and ``param`` as the server wrote them (Gemini's ``status`` is its
    type), each bounded; absent ones empty."""
    if detail is None:
        return {"code": "", "type": "", "param": ""}
    values = {"code": detail.get("code"), "type": detail.get("type") or detail.get("status"),
              "param": detail.get("param")}  # fmt: skip
    return {
        key: str(value)[:_DETAIL_CHARS]
        if isinstance(value, str | int) and not isinstance(value, bool)
        else ""
        for key, value in values.items()
    }


def _code_of(detail: Mapping[str, Any]) -> str:
    """The error's code or type, as the server wrote it (``429``, ``overloaded_error``)."""
    for key in ("code", "status", "type"):
        value = detail.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)[:40]
    return ""


def _in_band_kind(code: str, detail: Mapping[str, Any]) -> type[ProviderError]:
    kind = str(detail.get("type", "")).lower()
    lowered = code.lower()
    if lowered in ("401", "403") or kind in ("authentication_error", "permission_error"):
        return AuthenticationError
    if lowered == "429" or kind == "rate_limit_error" or "rate" in lowered:
        return RateLimitError
    if lowered.startswith("5") or kind in _TRANSIENT_TYPES or "overloaded" in lowered:
        return ServerError
    return ProviderError


@dataclass(slots=True)
class _StreamCall:
    """One streamed POST; ``delivered`` counts the events the adapter has been given."""

    url: str
    headers: Mapping[str, str]
    content: bytes
    on_event: Callable[[str, Any], None]
    framing: StreamFormat = SSE
    delivered: int = 0

    def __repr__(self) -> str:
        # No URL (a key may sit in its query), no headers (the key), no body (the conversation).
        return tagged("_StreamCall", content_bytes=len(self.content), delivered=self.delivered)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT even when it does not say so
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


@cache
def _ssl_context() -> ssl.SSLContext:
    # Built once: loading the trust store is the costly part of opening a client.
    return ssl.create_default_context()


class _Borrowed(httpx.AsyncBaseTransport):
    """An injected transport, lent to one client: closing the client must not close it."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None
