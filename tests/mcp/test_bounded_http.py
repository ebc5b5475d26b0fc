"""A streamable-HTTP server's answers are read within the limit of one message: a JSON answer
or one server-sent event over it fails its call in bounded memory, and the next call answers;
many events under the limit, together far over it, are all read."""

from __future__ import annotations

import asyncio
import logging
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest

from toolwire.loop.seam import remote_oversized
from toolwire.mcp.http_client import BodyTooLarge, BoundedHttp
from toolwire.mcp.stdio import STDOUT_LINE_BYTES

from .kit import answers, http_server, remote_registry, run, workspace

FLOOD_MB = 200  # without a bound the SDK reads all of it before looking at it


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with http_server("flooding_http.py", str(FLOOD_MB)) as url:
        yield url


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": f"flooding__{name}", "arguments": arguments}


def flooding(url: str) -> str:
    return f"""
[mcp_servers.flooding]
url = "{url}"
enabled = true
data_class = "public"
timeout = 60
"""


@pytest.mark.parametrize("tool", ["flood_answer", "flood_event"])
def test_an_answer_over_the_limit_fails_its_call_in_bounded_memory(
    server: str, tmp_path: Path, tool: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolwire.mcp")
    registry, problems = remote_registry(workspace(tmp_path, flooding(server)))
    assert problems == []
    tracemalloc.start()
    try:
        began = time.monotonic()
        result = run(registry, [[call(tool)], [call("add", a=2, b=3)]])
        took = time.monotonic() - began
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answers(result) == [
        (f"flooding__{tool}", remote_oversized(f"flooding__{tool}", STDOUT_LINE_BYTES), True),
        ("flooding__add", "5", False),
    ]
    assert peak < 48 * 2**20, f"peak {peak / 2**20:.1f} MiB while {FLOOD_MB} MB went by"
    assert took < 30  # refused at the limit, not after the call's 60 s timeout
    what = "an event" if tool == "flood_event" else "an answer"
    warning = f"MCP server 'flooding' sent {what} over {STDOUT_LINE_BYTES} bytes"
    assert any(r.getMessage().startswith(warning) for r in caplog.records)


def body(chunks: list[bytes], headers: dict[str, str]) -> httpx2.MockTransport:
    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    class Stream(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in stream():
                yield chunk

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, stream=Stream())

    return httpx2.MockTransport(answer)


async def read(bound: BoundedHttp, chunks: list[bytes], headers: dict[str, str]) -> bytes:
    async with (
        bound.client({}, inner=body(chunks, headers)) as web,
        web.stream("POST", "http://127.0.0.1:9/mcp") as response,
    ):
        return await response.aread()


SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("end", [b"\n\n", b"\r\n\r\n", b"\r\r"])
def test_events_are_counted_one_by_one_wherever_the_chunks_cut_them(end: bytes) -> None:
    event = b"data: " + b"x" * 80 + end  # 100 bytes at most; 50 of them are 5 times the limit
    stream = event * 50
    for size in (1, 3, 7, 64, 1000):
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert asyncio.run(read(BoundedHttp("s", max_bytes=100), chunks, SSE)) == stream


def test_one_event_over_the_limit_is_refused_even_unfinished() -> None:
    bound = BoundedHttp("s", max_bytes=100)
    chunks = [b"data: ok\n\n", b"data: " + b"x" * 60, b"x" * 60]
    with pytest.raises(BodyTooLarge, match=r"^s: sent an event over 100 bytes"):
        asyncio.run(read(bound, chunks, SSE))
    assert bound.refused is not None and bound.refused.limit == 100


def test_a_json_answer_is_counted_whole_and_refused_past_the_limit() -> None:
    assert asyncio.run(read(BoundedHttp("s", max_bytes=100), [b"x" * 50] * 2, JSON)) == b"x" * 100
    with pytest.raises(BodyTooLarge, match=r"^s: sent an answer over 100 bytes"):
        asyncio.run(read(BoundedHttp("s", max_bytes=100), [b"x" * 50] * 3, JSON))


def test_an_announced_length_over_the_limit_is_refused_before_reading() -> None:
    read_any: list[bytes] = []

    class Watched(list[bytes]):
        def __iter__(self) -> Iterator[bytes]:
            read_any.append(b"")
            return super().__iter__()

    headers = {**JSON, "content-length": "101"}
    with pytest.raises(BodyTooLarge):
        asyncio.run(read(BoundedHttp("s", max_bytes=100), Watched([b"x" * 101]), headers))
    assert read_any == []
