"""Telemetry in memory for tests: spans and metrics of runs, read back as plain values."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwire.policy.privacy import PrivacyLevel
from toolwire.telemetry.otel import Telemetry


@dataclass
class Captured:
    """A ``Telemetry`` whose spans and metrics stay in memory."""

    level: PrivacyLevel = PrivacyLevel.METADATA
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)

    def __post_init__(self) -> None:
        tracer = TracerProvider()
        tracer.add_span_processor(SimpleSpanProcessor(self.exporter))
        meter = MeterProvider(metric_readers=[self.reader])
        self.telemetry = Telemetry(tracer_provider=tracer, meter_provider=meter, level=self.level)

    @property
    def spans(self) -> list[ReadableSpan]:
        """Finished spans, by start time."""
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """Each data point of ``metric``: its attributes and its value (sum, or count for a
        histogram)."""
        return list(self._points(metric))

    def _points(self, metric: str) -> Iterator[tuple[dict[str, Any], Any]]:
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for found in scope.metrics:
                    if found.name != metric:
                        continue
                    for point in found.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = getattr(point, "count", None)
                        yield dict(point.attributes or {}), value


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [{"name": e.name, **dict(e.attributes or {})} for e in span.events]
