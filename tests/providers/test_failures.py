"""Failures on the wire: each is a typed error or a retry, never a crash and never the key."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from toolwire import ChatMessage, CompletionRequest, CompletionResponse
from toolwire.core.errors import (
    AuthenticationError,
    MalformedResponse,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from toolwire.providers.http import (
    MAX_ATTEMPTS,
    MAX_RESPONSE_BYTES,
    HttpSettings,
    parse_retry_after,
)
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.wire import HttpProvider

from .servers import ADAPTERS, KEY, make_provider

REQUEST = CompletionRequest(messages=(ChatMessage.user("hi"),))
OK = {"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]}


class Sleeps:
    """An injectable sleep that records the delays it was asked for, and waits for none."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def scripted(*responses: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[Any]]:
    """A transport answering with ``responses`` in order; it records each request."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = responses[min(len(seen), len(responses)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handle), seen


def openai(transport: httpx.AsyncBaseTransport | None, sleeps: Sleeps, **kw: Any) -> HttpProvider:
    settings = HttpSettings(transport=transport, sleep=sleeps, jitter=lambda: 1.0, **kw)
    return OpenAIProvider(model="gpt-test", api_key=KEY, http=settings)


def fail(provider: HttpProvider) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        asyncio.run(provider.complete(REQUEST))
    error = caught.value
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert KEY not in error.body
    assert error.__cause__ is None
    assert error.__suppress_context__ or error.__context__ is None
    return error


def succeed(provider: HttpProvider) -> CompletionResponse:
    return asyncio.run(provider.complete(REQUEST))


ECHOED_KEY = f'{{"error": {{"message": "Incorrect API key provided: {KEY}", "code": 401}}}}'


def test_401_is_an_authentication_error_with_the_echoed_key_masked() -> None:
    sleeps = Sleeps()
    transport, _ = scripted(httpx.Response(401, text=ECHOED_KEY))
    error = fail(openai(transport, sleeps))
    assert type(error) is AuthenticationError
    assert error.status == 401
    assert str(error) == (
        "openai: HTTP 401 credentials refused "
        "(https://api.openai.com/v1/chat/completions) [code 401]: "
        "Incorrect API key provided: [redacted]"
    )
    assert (error.code, error.endpoint) == ("401", "https://api.openai.com/v1/chat/completions")
    assert KEY not in str(error)


def test_403_is_an_authentication_error_and_is_not_retried() -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.Response(403, text="forbidden"))
    error = fail(openai(transport, sleeps))
    assert (type(error), str(error), len(seen)) == (
        AuthenticationError,
        "openai: HTTP 403 credentials refused "
        "(https://api.openai.com/v1/chat/completions): forbidden",
        1,
    )


def test_429_waits_exactly_the_retry_after_seconds_then_succeeds() -> None:
    sleeps = Sleeps()
    limited = httpx.Response(429, headers={"retry-after": "7"}, text="slow down")
    transport, seen = scripted(limited, httpx.Response(200, json=OK))
    assert succeed(openai(transport, sleeps)).content == "fine"
    assert (len(seen), sleeps.delays) == (2, [7.0])


def test_429_with_an_http_date_waits_until_that_date() -> None:
    sleeps = Sleeps()
    when = datetime.fromtimestamp(time.time() + 30, UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
    limited = httpx.Response(429, headers={"retry-after": when})
    transport, _ = scripted(limited, httpx.Response(200, json=OK))
    succeed(openai(transport, sleeps))
    assert len(sleeps.delays) == 1
    assert 27 <= sleeps.delays[0] <= 30


def test_429_asking_for_longer_than_the_cap_fails_at_once() -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.Response(429, headers={"retry-after": "3600"}))
    error = fail(openai(transport, sleeps))
    assert isinstance(error, RateLimitError)
    assert (error.retry_after, error.status, str(error)) == (
        3600.0,
        429,
        "openai: HTTP 429 rate limited (https://api.openai.com/v1/chat/completions)",
    )
    assert (len(seen), sleeps.delays) == (1, [])


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("12", 12.0),
        ("1.5", 1.5),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: go now
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
    ],
)
def test_retry_after_parsing(header: str | None, seconds: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after(header, now) == seconds


def test_500_then_success_retries_after_a_backoff() -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.Response(500, text="oops"), httpx.Response(200, json=OK))
    assert succeed(openai(transport, sleeps)).content == "fine"
    assert (len(seen), sleeps.delays) == (2, [0.5])


def test_a_failing_server_is_tried_max_attempts_times_with_growing_capped_backoff() -> None:
    sleeps = Sleeps()
    page = "Bad gateway. " * 400
    html = f"<html><head><title>502 Bad Gateway</title></head><body>{page}</body>"
    transport, seen = scripted(httpx.Response(502, text=html))
    error = fail(openai(transport, sleeps))
    assert type(error) is ServerError
    assert len(seen) == MAX_ATTEMPTS
    assert sleeps.delays == [0.5, 1.0, 2.0]
    assert str(error).startswith(
        "openai: HTTP 502 server error (https://api.openai.com/v1/chat/completions): "
        "<html><head><title>502 Bad"
    )
    assert len(error.body) == 200
    assert error.body.endswith("…")


def test_jitter_keeps_each_backoff_between_half_and_all_of_its_ceiling() -> None:
    sleeps = Sleeps()
    transport, _ = scripted(httpx.Response(503))
    settings = HttpSettings(transport=transport, sleep=sleeps, jitter=lambda: 0.0)
    fail(OpenAIProvider(model="m", api_key=KEY, http=settings))
    assert sleeps.delays == [0.25, 0.5, 1.0]


def test_a_timeout_is_typed_and_retried() -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.ReadTimeout("read timed out"))
    error = fail(openai(transport, sleeps, timeout=5))
    assert (type(error), str(error), len(seen)) == (
        ProviderTimeout,
        "openai: no answer from https://api.openai.com/v1/chat/completions within 5s"
        f" after {MAX_ATTEMPTS} attempts",
        MAX_ATTEMPTS,
    )


def test_a_connection_failure_is_typed() -> None:
    sleeps = Sleeps()
    transport, _ = scripted(httpx.ConnectError(f"refused https://x/?key={KEY}"))
    error = fail(openai(transport, sleeps, max_attempts=2))
    assert (type(error), str(error), sleeps.delays) == (
        ProviderConnectionError,
        "openai: cannot connect to https://api.openai.com/v1/chat/completions after 2 attempts",
        [0.5],
    )


def test_a_broken_connection_names_the_endpoint_and_its_failure() -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.RemoteProtocolError("peer closed the connection"))
    error = fail(openai(transport, sleeps, max_attempts=1))
    assert (type(error), str(error), len(seen)) == (
        ProviderConnectionError,
        "openai: the connection to https://api.openai.com/v1/chat/completions failed"
        " (RemoteProtocolError) after 1 attempt",
        1,
    )


def test_the_endpoint_in_a_message_carries_no_user_info_nor_query() -> None:
    sleeps = Sleeps()
    transport, _ = scripted(httpx.ConnectError("refused"))
    settings = HttpSettings(transport=transport, sleep=sleeps, jitter=lambda: 1.0, max_attempts=1)
    base = f"https://user:{KEY}@proxy.example/{KEY}/v1"
    provider = OpenAIProvider(model="m", api_key=KEY, base_url=base, http=settings)
    assert str(fail(provider)) == (
        "openai: cannot connect to https://proxy.example/[redacted]/v1/chat/completions"
        " after 1 attempt"
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_closed_loopback_port_fails_at_once_and_says_where(host: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    settings = HttpSettings(sleep=sleeps, timeout=5)  # four attempts allowed
    provider = OpenAIProvider(
        model="m", api_key=KEY, base_url=f"http://{host}:{port}/v1", http=settings
    )
    error = fail(provider)
    assert (type(error), str(error), sleeps.delays) == (
        ProviderConnectionError,
        f"openai: cannot connect to http://{host}:{port}/v1/chat/completions"
        " (connection refused) after 1 attempt",
        [],
    )


def test_a_refused_connection_elsewhere_is_retried() -> None:
    refused = httpx.ConnectError("refused")
    refused.__cause__ = ConnectionRefusedError(111, "Connection refused")
    sleeps = Sleeps()
    transport, seen = scripted(refused)
    error = fail(openai(transport, sleeps, max_attempts=3))
    assert (str(error), len(seen)) == (
        "openai: cannot connect to https://api.openai.com/v1/chat/completions"
        " (connection refused) after 3 attempts",
        3,
    )


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ('{"choices": [{"message": {"content": "cut', "application/json"),
        ("<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>", "text/html"),
        ("", "application/json"),
    ],
)
def test_a_body_that_is_not_json_is_malformed_and_not_retried(body: str, content_type: str) -> None:
    sleeps = Sleeps()
    headers = {"content-type": content_type}
    transport, seen = scripted(httpx.Response(200, text=body, headers=headers))
    error = fail(openai(transport, sleeps))
    assert type(error) is MalformedResponse
    assert str(error).startswith("openai: response is not JSON")
    assert (len(seen), sleeps.delays) == (1, [])


WRONG_SHAPES = [[], {"choices": [], "content": 3, "candidates": 1}]


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("body", WRONG_SHAPES)
def test_json_of_the_wrong_shape_is_malformed(name: str, body: Any) -> None:
    transport, _ = scripted(httpx.Response(200, json=body))
    error = fail(make_provider(name, transport=transport))
    assert type(error) is MalformedResponse
    assert str(error).startswith(f"{name}: response has no ")


IN_BAND = [
    # (the 200 body, the error type, whether it is retried)
    ({"error": {"message": "Upstream overloaded", "code": 503}}, ServerError, True),
    ({"error": {"message": "Rate limit reached", "code": 429}}, RateLimitError, True),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}, ServerError, True),
    ({"error": {"message": f"No auth credentials found: {KEY}", "code": 401}}, AuthenticationError,
     False),
    ({"error": {"message": "model not found", "code": 400}}, ProviderError, False),
    ({"error": "x"}, ProviderError, False),
]  # fmt: skip


@pytest.mark.parametrize(("body", "kind", "retried"), IN_BAND)
def test_an_error_inside_a_200_body_is_typed_masked_and_retried_when_transient(
    body: dict[str, Any], kind: type[ProviderError], retried: bool
) -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.Response(200, json=body))
    error = fail(openai(transport, sleeps))
    assert type(error) is kind
    assert str(error).startswith("openai: error in the response (")
    assert len(seen) == (MAX_ATTEMPTS if retried else 1)


def test_an_in_band_error_that_passes_is_followed_by_the_answer() -> None:
    transport, seen = scripted(
        httpx.Response(200, json={"error": {"message": "overloaded", "code": 529}}),
        httpx.Response(200, json=OK),
    )
    assert succeed(openai(transport, Sleeps())).content == "fine"
    assert len(seen) == 2


def test_an_oversized_body_with_a_declared_length_is_refused() -> None:
    body = b" " * (MAX_RESPONSE_BYTES + 1)
    transport, _ = scripted(httpx.Response(200, content=body))
    error = fail(openai(transport, Sleeps()))
    assert (type(error), str(error)) == (
        MalformedResponse,
        f"openai: response body over {MAX_RESPONSE_BYTES} bytes (MAX_RESPONSE_BYTES) (https://api.openai.com/v1/chat/completions)",
    )


def test_an_oversized_streamed_body_is_refused_while_it_is_read() -> None:
    chunk = b"[" * 65536
    sent: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        while True:  # never ends: only the cap can stop the read
            sent.append(len(chunk))
            yield chunk

    transport, _ = scripted(httpx.Response(200, content=endless()))
    error = fail(openai(transport, Sleeps()))
    assert type(error) is MalformedResponse
    assert MAX_RESPONSE_BYTES < sum(sent) <= MAX_RESPONSE_BYTES + len(chunk)


def test_other_4xx_are_provider_errors_with_their_status_and_are_not_retried() -> None:
    sleeps = Sleeps()
    transport, seen = scripted(httpx.Response(400, json={"error": {"message": "bad tools"}}))
    error = fail(openai(transport, sleeps))
    assert (type(error), error.status, len(seen)) == (ProviderError, 400, 1)
    endpoint = "https://api.openai.com/v1/chat/completions"
    assert str(error) == f"openai: HTTP 400 request refused ({endpoint}): bad tools"


@pytest.fixture
def silent_server() -> Iterator[tuple[int, threading.Event, threading.Event]]:
    """A loopback server that accepts, reads, and never answers; it notes when the peer hangs up."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted, closed = threading.Event(), threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        accepted.set()
        with conn:
            while conn.recv(65536):
                pass
        closed.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], accepted, closed
    listener.close()
    thread.join(timeout=5)


def test_cancelling_the_task_aborts_the_request_in_flight(
    silent_server: tuple[int, threading.Event, threading.Event],
) -> None:
    port, accepted, closed = silent_server
    settings = HttpSettings(timeout=60, max_attempts=1)
    provider = OpenAIProvider(
        model="m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", http=settings
    )

    async def scenario() -> None:
        task = asyncio.create_task(provider.complete(REQUEST))
        for _ in range(500):
            if accepted.is_set():
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # let the request bytes go out
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.perf_counter()
    asyncio.run(scenario())
    assert closed.wait(5), "the server never saw the connection close"
    assert time.perf_counter() - started < 5


def test_a_server_that_never_answers_times_out(
    silent_server: tuple[int, threading.Event, threading.Event],
) -> None:
    port, _, closed = silent_server
    settings = HttpSettings(timeout=0.3, max_attempts=1)
    provider = OpenAIProvider(
        model="m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", http=settings
    )
    error = fail(provider)
    assert (type(error), str(error)) == (
        ProviderTimeout,
        f"openai: no answer from http://127.0.0.1:{port}/v1/chat/completions within 0.3s"
        " after 1 attempt",
    )
    assert closed.wait(5)


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_adapter_masks_an_echoed_key(name: str) -> None:
    transport, seen = scripted(httpx.Response(401, text=ECHOED_KEY))
    error = fail(make_provider(name, transport=transport))
    assert type(error) is AuthenticationError
    assert str(error).startswith(f"{name}: HTTP 401 credentials refused (https://")
    assert "[redacted]" in str(error)
    assert len(seen) == 1


def test_a_body_nested_too_deeply_is_malformed_not_a_recursion_error() -> None:
    transport, seen = scripted(httpx.Response(200, content=b"[" * 200_000 + b"]" * 200_000))
    error = fail(openai(transport, Sleeps()))
    assert (type(error), str(error)) == (
        MalformedResponse, "openai: response is nested too deeply (https://api.openai.com/v1/chat/completions)"
    )  # fmt: skip
    assert len(seen) == 1
