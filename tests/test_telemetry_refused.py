"""An OTLP endpoint that takes traces but refuses metrics (as Phoenix and MLflow do): the
shared endpoint alone sends no metrics, and a refusal is one warning, not an error per export.
Checked through ``toolwire run`` in a real process against a loopback receiver."""

from __future__ import annotations

from pathlib import Path

import pytest

from .otlp_receiver import receiver, run_exported


def test_the_shared_endpoint_alone_sends_traces_and_no_metrics(tmp_path: Path) -> None:
    with receiver(refused=frozenset({"/v1/metrics"})) as received:
        done = run_exported(tmp_path, received)
    assert done.returncode == 0, done.stderr
    assert [path for path, _ in received.requests] == ["/v1/traces"]
    assert b"invoke_agent" in received.bodies("/v1/traces")
    assert "metrics" not in done.stderr and "ERROR" not in done.stderr


@pytest.mark.parametrize("status", [404, 405])
def test_metrics_asked_for_and_refused_are_one_warning_naming_how_to_stop_them(
    tmp_path: Path, status: int
) -> None:
    with receiver(refused=frozenset({"/v1/metrics"}), status=status) as received:
        done = run_exported(tmp_path, received, OTEL_METRICS_EXPORTER="otlp")
    assert done.returncode == 0, done.stderr
    assert "/v1/metrics" in [path for path, _ in received.requests]  # it was tried
    assert b"invoke_agent" in received.bodies("/v1/traces")  # and traces still went
    warned = [line for line in done.stderr.splitlines() if "did not take" in line]
    assert len(warned) == 1, done.stderr
    assert "toolwire's metrics" in warned[0] and "OTEL_METRICS_EXPORTER=none" in warned[0]
    assert "Failed to export" not in done.stderr and "Traceback" not in done.stderr
    assert "ERROR" not in done.stderr and str(status) not in done.stderr.replace(received.url, "")
