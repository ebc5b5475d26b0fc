"""Real tracing backends on loopback for the telemetry read-back tests: a server process
started on free ports and stopped afterwards, and toolwire runs whose spans are exported to it.

A server gets a folder of its own and its own telemetry off; it must answer its health check
within ``STARTUP_SECONDS`` (they import a great deal, and a loaded machine is slow)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from toolwire import (
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    tool,
)
from toolwire.core.errors import ServerError
from toolwire.providers.base import CompletionRequest, Stop
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.telemetry.otel import Telemetry

from .fakes import PricedModel

STARTUP_SECONDS = 300
CANARY = "canary-7Qx"  # in the prompt, the arguments, the results and the answer
AGENT = "orders agent"


@tool(data_class="public")
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query} {CANARY}"


@tool(data_class="public")
def boom() -> str:
    """A tool that fails."""
    raise RuntimeError(f"down {CANARY}")


class Failing(PricedModel):
    """Answers the first request with a tool call, then fails with HTTP 503."""

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        if self.requests:
            self.requests.append(request)
            raise ServerError("upstream down", status=503)
        return await super().complete(request)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(
    command: Sequence[str], environ: Mapping[str, str], health: str, folder: Path
) -> Iterator[None]:
    """``command`` running until the block ends, once ``health`` (a URL) answers 200."""
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT,
                                  env=dict(environ), cwd=folder)  # fmt: skip
        try:
            wait_until_up(health, server, log_path)
            yield
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the server did not start: {log.read_text(errors='replace')[-2000:]}")


def exported(endpoint: str, request: RunRequest, headers: Mapping[str, str] = {}) -> RunOutcome:
    """``request`` run under telemetry that exports to ``endpoint`` (an OTLP/HTTP traces URL),
    every span sent on return."""
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=120, headers=dict(headers))
    provider = TracerProvider(resource=Resource.create({"service.name": "toolwire"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    runtime = Runtime(ToolRegistry([lookup, boom]), telemetry=Telemetry(tracer_provider=provider))
    outcome = runtime.run_sync(request)
    assert provider.force_flush(timeout_millis=120_000)
    provider.shutdown()
    return outcome


def three_rounds() -> RunRequest:
    """A lookup, then a tool that fails, then the answer: three rounds, 360 tokens in and 35
    out, canaries everywhere content goes."""
    script = ScriptedProvider.from_turns([
        {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"query": CANARY}}],
         "prompt_tokens": 100, "completion_tokens": 20},
        {"tool_calls": [{"id": "c2", "name": "boom", "arguments": {}}],
         "prompt_tokens": 120, "completion_tokens": 10},
        {"content": f"the answer {CANARY}", "prompt_tokens": 140, "completion_tokens": 5},
    ])  # fmt: skip
    return RunRequest.of(f"find {CANARY}", provider=script, system=f"be brief {CANARY}",
                         model="gpt-4o-mini", options=RunOptions(name=AGENT))  # fmt: skip


def failing() -> RunRequest:
    """A run whose provider fails (HTTP 503) at its second call."""
    call = ToolCall.of("c1", "lookup", {"query": "x"})
    provider = Failing(CompletionResponse(tool_calls=(call,), stop=Stop.TOOL_CALLS))
    return RunRequest.of("go", provider=provider, model="gpt-4o-mini")
