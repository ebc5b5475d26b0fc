"""A queued run that waits for approval and is carried on by another worker: the second
worker's segment is a resumed one, linked to the span of the first worker's segment, read from
what both workers exported over OTLP to a loopback receiver."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolwire.core.lifecycle import RunStatus

from ..otlp_receiver import Received, receiver
from .kit import Queue, with_write


def roots(received: Received) -> list[Any]:
    """The ``invoke_agent`` spans the receiver was sent, in arrival order."""
    found = []
    for path, body in received.requests:
        if path != "/v1/traces":
            continue
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found += [span for resource in request.resource_spans for scope in resource.scope_spans
                  for span in scope.spans if span.name.startswith("invoke_agent")]  # fmt: skip
    return found


def segment(span: Any) -> str:
    (found,) = [a.value.string_value for a in span.attributes if a.key == "toolwire.segment"]
    return str(found)


def test_the_worker_that_carries_a_decided_run_on_links_to_the_segment_that_paused_it(
    queue: Queue,
) -> None:
    with receiver() as received:
        (first,) = queue.start(1, OTEL_EXPORTER_OTLP_ENDPOINT=received.url)
        (run_id,) = queue.submit(queue.script(with_write()))
        (run,) = queue.wait([run_id])
        assert run.status == RunStatus.AWAITING_APPROVAL
        assert first.stop() == 0  # its spans are sent as it exits
        (second,) = queue.start(1, OTEL_EXPORTER_OTLP_ENDPOINT=received.url)
        queue.approve(run_id)
        (run,) = queue.wait([run_id], done=lambda r: RunStatus(r.status).terminal)
        assert run.status == "completed"
        assert second.stop() == 0
    paused, carried_on = roots(received)
    assert (segment(paused), segment(carried_on)) == ("run", "resume")
    (link,) = carried_on.links
    assert (link.trace_id, link.span_id) == (paused.trace_id, paused.span_id)
    assert [(a.key, a.value.string_value) for a in link.attributes] == [
        ("toolwire.link", "previous_segment")
    ]
    assert not paused.links
