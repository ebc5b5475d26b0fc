"""The OpenTelemetry SDK side: providers built from the environment, and :class:`Telemetry`.

Providers are made once per process and shared by every runtime in it; each flushes at exit.
An application that already installed an SDK tracer or meter provider globally (by code, or
``opentelemetry-instrument``) keeps it: toolwire's spans and metrics go there instead.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import TracerProvider

from toolwire.core.version import installed_version
from toolwire.loop.run import RunOutcome
from toolwire.policy.charter import ProviderRef
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import RunStep
from toolwire.telemetry import Carried, Segment, SegmentWatch, Signal, ToolSpecs, warn_once
from toolwire.telemetry.metrics import Instruments, QueueDepth
from toolwire.telemetry.spans import RunSpans

log = logging.getLogger("toolwire.telemetry")
SERVICE_NAME = "toolwire"  # unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names one
_lock = threading.Lock()
_providers: dict[Signal, object] = {}


class Unwatched:
    """A segment nobody watches."""

    def step(self, step: RunStep) -> None:
        pass

    def end(self, outcome: RunOutcome | None, failure: BaseException | None) -> None:
        pass


class Telemetry:
    """Spans and metrics for runs, each at its run's privacy level under ``level`` (a cap).
    Give it providers (an application's
    own, or in-memory ones in a test); without a tracer provider there are no spans, and
    without a meter provider no metrics."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        level: PrivacyLevel = PrivacyLevel.METADATA,
    ) -> None:
        version = installed_version()
        provider = tracer_provider or trace.NoOpTracerProvider()
        self.tracer = provider.get_tracer("toolwire", version)
        self.instruments = None if meter_provider is None else Instruments(meter_provider, version)
        self.level = level

    def watch(
        self,
        run_id: str,
        provider: ProviderRef,
        options: RunOptions,
        segment: Segment,
        *,
        privacy: PrivacyLevel | None = None,
        before: Carried | None = None,
        tools: ToolSpecs | None = None,
    ) -> SegmentWatch:
        """The watch of one segment, at its run's ``privacy`` under this telemetry's level
        (the cap); one that watches nothing if its span cannot start."""
        level = min(privacy or PrivacyLevel.METADATA, self.level)
        try:
            return RunSpans(self.tracer, self.instruments, level, run_id=run_id,
                            provider=provider, options=options, segment=segment,
                            before=before, tools=tools)  # fmt: skip
        except Exception:
            log.exception("telemetry could not watch a run; the run goes on")
            return Unwatched()

    def observe_queue_depth(self, depth: QueueDepth) -> None:
        """Report ``depth()`` as ``toolwire.queue.depth`` (for a process that queues runs)."""
        if self.instruments is not None:
            self.instruments.observe_queue_depth(depth)


def configured(signals: Mapping[Signal, str], *, level: PrivacyLevel) -> Telemetry:
    """Telemetry for the signals the environment turned on (see :mod:`toolwire.telemetry`)."""
    tracer = _tracer_provider(signals["traces"]) if "traces" in signals else None
    meter = _meter_provider(signals["metrics"]) if "metrics" in signals else None
    return Telemetry(tracer_provider=tracer, meter_provider=meter, level=level)


def _tracer_provider(exporter: str) -> TracerProvider:
    installed = trace.get_tracer_provider()
    if isinstance(installed, SdkTracerProvider):
        return installed
    with _lock:
        made = _providers.get("traces")
        if made is None:
            made = SdkTracerProvider(resource=_resource())
            made.add_span_processor(BatchSpanProcessor(_span_exporter(exporter)))
            _providers["traces"] = made
    assert isinstance(made, SdkTracerProvider)
    return made


def _meter_provider(exporter: str) -> MeterProvider:
    installed = metrics.get_meter_provider()
    if isinstance(installed, SdkMeterProvider):
        return installed
    with _lock:
        made = _providers.get("metrics")
        if made is None:
            reader = PeriodicExportingMetricReader(_metric_exporter(exporter))
            made = SdkMeterProvider(resource=_resource(), metric_readers=[reader])
            _providers["metrics"] = made
    assert isinstance(made, SdkMeterProvider)
    return made


def _span_exporter(name: str) -> SpanExporter:
    if name == "console":  # on stderr: stdout is what a command prints for a script
        return ConsoleSpanExporter(out=sys.stderr)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    class Spans(OTLPSpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            result = super().export(spans)
            if result is SpanExportResult.FAILURE:
                _refused("traces")
            return result

    _quiet(OTLP_LOGGERS["traces"])
    return Spans()


def _metric_exporter(name: str) -> MetricExporter:
    if name == "console":
        return ConsoleMetricExporter(out=sys.stderr)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    class Metrics(OTLPMetricExporter):
        def export(
            self, metrics_data: MetricsData, timeout_millis: float | None = 10_000, **kwargs: Any
        ) -> MetricExportResult:
            result = super().export(metrics_data, timeout_millis, **kwargs)
            if result is MetricExportResult.FAILURE:
                _refused("metrics")
            return result

    _quiet(OTLP_LOGGERS["metrics"])
    return Metrics()


# The OTLP exporters' loggers, which log an error for every failed export; toolwire's own
# warning (once per signal) stands in for them where toolwire made the exporter.
OTLP_LOGGERS: dict[Signal, str] = {
    "traces": "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "metrics": "opentelemetry.exporter.otlp.proto.http.metric_exporter",
}
_TURN_OFF: dict[Signal, str] = {
    "traces": "OTEL_TRACES_EXPORTER=none",
    "metrics": "OTEL_METRICS_EXPORTER=none, or unset OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
}


class _Failures(logging.Filter):
    """Keeps the exporter's records below errors: its failures are told once, by toolwire."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


def _quiet(name: str) -> None:
    logger = logging.getLogger(name)
    if not any(isinstance(f, _Failures) for f in logger.filters):
        logger.addFilter(_Failures())


def _refused(signal: Signal) -> None:
    warn_once(f"refused:{signal}", f"the OTLP endpoint did not take toolwire's {signal} (it may "
              f"not accept them; the run is not affected): set {_TURN_OFF[signal]} to stop "
              f"sending them")  # fmt: skip


def _resource() -> Resource:
    """The SDK's resource from the environment; named ``toolwire`` unless it names itself."""
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    return Resource.create({} if named else {"service.name": SERVICE_NAME})
