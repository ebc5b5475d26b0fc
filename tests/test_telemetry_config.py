"""Telemetry is configured by the standard ``OTEL_*`` variables alone, and costs nothing when
they do not turn it on: no watch is attached and OpenTelemetry is never imported."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolwire
from toolwire import ScriptedProvider, ToolRegistry
from toolwire import telemetry as config
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.telemetry import otel
from toolwire.telemetry.otel import Telemetry

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "_warned", set())


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, {}),
        # The shared endpoint turns traces on; metrics only where asked for (trace backends
        # refuse them).
        (ENDPOINT, {"traces": "otlp"}),
        ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, {"metrics": "otlp"}),
        (ENDPOINT | {"OTEL_METRICS_EXPORTER": "otlp"}, {"traces": "otlp", "metrics": "otlp"}),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, {"traces": "otlp"}),
        ({"OTEL_TRACES_EXPORTER": "console"}, {"traces": "console"}),
        ({"OTEL_TRACES_EXPORTER": "otlp,console", "OTEL_METRICS_EXPORTER": "OTLP"},
         {"traces": "otlp", "metrics": "otlp"}),
        (ENDPOINT | {"OTEL_METRICS_EXPORTER": "none"}, {"traces": "otlp"}),
        (ENDPOINT | {"OTEL_SDK_DISABLED": "true"}, {}),
        (ENDPOINT | {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, {"traces": "otlp"}),
    ],
)  # fmt: skip
def test_the_environment_decides_which_signals_are_on(
    environ: dict[str, str], expected: dict[str, str]
) -> None:
    assert config.signals(environ) == expected


def test_what_toolwire_cannot_export_is_refused_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    grpc = ENDPOINT | {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with caplog.at_level(logging.WARNING, logger="toolwire.telemetry"):
        assert config.signals(grpc) == {}
        assert config.signals(grpc) == {}
        assert config.signals({"OTEL_TRACES_EXPORTER": "zipkin"}) == {}
    assert caplog.messages == [
        "OTLP protocol 'grpc' is not supported: toolwire exports OTLP over HTTP (http/protobuf):"
        " no traces",
        "OTEL_TRACES_EXPORTER='zipkin' is not otlp or console: no traces",
    ]


def test_content_needs_the_store_level_and_the_operators_opt_in() -> None:
    console = {"OTEL_TRACES_EXPORTER": "console"}
    opted = console | {config.CONTENT_OPT_IN: "true"}

    def level(ceiling: object, environ: dict[str, str]) -> PrivacyLevel:
        found = config.from_environment(ceiling, environ)
        assert isinstance(found, Telemetry)
        return found.level

    assert level(PrivacyLevel.FULL, console) is PrivacyLevel.METADATA
    assert level(PrivacyLevel.REDACTED, opted) is PrivacyLevel.REDACTED
    assert level(PrivacyLevel.NONE, opted) is PrivacyLevel.NONE
    assert level(None, opted) is PrivacyLevel.FULL  # the cap: each run exports at its own level
    assert level(None, console) is PrivacyLevel.METADATA
    assert level(PrivacyLevel.FULL, console | {config.CONTENT_OPT_IN: "SPAN_ONLY"}) == "full"
    assert level(PrivacyLevel.FULL, console | {config.CONTENT_OPT_IN: "NO_CONTENT"}) == "metadata"


def test_without_configuration_there_is_no_telemetry() -> None:
    assert config.from_environment(PrivacyLevel.FULL, {}) is None
    assert Runtime(ToolRegistry()).telemetry is None


def test_without_the_extra_there_is_a_warning_and_no_telemetry(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "toolwire.telemetry.otel", None)  # as if not installed
    with caplog.at_level(logging.WARNING, logger="toolwire.telemetry"):
        assert config.from_environment(None, ENDPOINT) is None
    assert caplog.messages == ["OTEL_* is set but toolwire[otel] is not installed: no telemetry"]


def test_a_run_without_configuration_never_imports_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from toolwire import ScriptedProvider, ToolRegistry\n"
        "from toolwire.runs.runtime import RunRequest, Runtime\n"
        "provider = ScriptedProvider.from_turns([{'content': 'hi'}])\n"
        "outcome = Runtime(ToolRegistry()).run_sync(RunRequest.of('q', provider=provider))\n"
        "assert outcome.status == 'completed'\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    source = str(Path(toolwire.__file__).resolve().parents[1])
    environ = {"PATH": os.environ["PATH"], "PYTHONPATH": source}  # and no OTEL_* at all
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=environ)  # fmt: skip
    assert done.stdout == "[]\n"


def test_a_configured_runtime_watches_its_runs(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    made: dict[str, Any] = {}
    monkeypatch.setattr(otel, "_providers", made)  # this test's own, shut down below
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    runtime = Runtime(ToolRegistry())
    assert isinstance(runtime.telemetry, Telemetry)
    provider = ScriptedProvider.from_turns([{"content": "hi"}])
    assert runtime.run_sync(RunRequest.of("q", provider=provider)).status == "completed"
    made["traces"].shutdown()
    printed = capfd.readouterr().err  # stdout stays a command's output
    assert '"name": "invoke_agent"' in printed and '"name": "chat"' in printed
