"""A toolwire run's trace read back from a real MLflow tracking server (``mlflow server`` on
loopback, its own telemetry off, a SQLite store in a temporary folder): MLflow's OTLP endpoint
takes the spans, and its REST API shows them as a person would see them in its UI: the span
types MLflow derives from the GenAI conventions (AGENT, CHAT_MODEL, TOOL), the tree, the model,
the tokens, the tools, the errors as errors, the run as the trace's session, and no content at
the default level."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .backends import AGENT, CANARY, exported, failing, free_port, serving, three_rounds

EXPERIMENT = "0"  # the experiment a new MLflow store starts with


@pytest.fixture(scope="module")
def mlflow_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An MLflow tracking server on a free loopback port, stopped when the module is done."""
    folder = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    environ = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1",
               "--port", str(port), "--workers", "1",
               "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
               "--default-artifact-root", str(folder / "artifacts")]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with serving(command, environ, f"{url}/health", folder):
        yield url


def sent(url: str, request: Any) -> Any:
    return exported(f"{url}/v1/traces", request, {"x-mlflow-experiment-id": EXPERIMENT})


def trace_of(url: str, run_id: str) -> dict[str, Any]:
    """The MLflow trace whose session is ``run_id``, with its spans (MLflow's REST API)."""
    found = httpx.post(f"{url}/api/3.0/mlflow/traces/search", timeout=60, json={
        "locations": [{"type": "MLFLOW_EXPERIMENT",
                       "mlflow_experiment": {"experiment_id": EXPERIMENT}}],
        "max_results": 100,
    })  # fmt: skip
    found.raise_for_status()
    infos = [t for t in found.json().get("traces", [])
             if t.get("trace_metadata", {}).get("mlflow.trace.session") == run_id]  # fmt: skip
    assert len(infos) == 1, found.text
    got = httpx.get(f"{url}/api/3.0/mlflow/traces/batchGet", timeout=60,
                    params={"trace_ids": infos[0]["trace_id"]})  # fmt: skip
    got.raise_for_status()
    (trace,) = got.json()["traces"]
    return dict(trace)


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: value(a["value"]) for a in span.get("attributes", [])}


def value(any_value: dict[str, Any]) -> Any:
    """An OTLP AnyValue (as MLflow's JSON gives it) as a plain value."""
    if "array_value" in any_value:
        return [value(v) for v in any_value["array_value"].get("values", [])]
    ((kind, found),) = any_value.items()
    return int(found) if kind == "int_value" else found


def span_type(span: dict[str, Any]) -> str:
    return str(plain(attributes(span)["mlflow.spanType"]))


def plain(shown: Any) -> Any:
    """An attribute MLflow wrote: JSON text, or (for some) the text itself."""
    try:
        return json.loads(shown)
    except (TypeError, ValueError):
        return shown


def test_mlflow_shows_the_run_as_an_agent_over_its_model_and_tool_calls(mlflow_url: str) -> None:
    outcome = sent(mlflow_url, three_rounds())
    assert outcome.status == "completed"
    trace = trace_of(mlflow_url, outcome.run_id)
    info, spans = trace["trace_info"], trace["spans"]
    (root,) = [s for s in spans if not s.get("parent_span_id")]
    children = sorted((s for s in spans if s is not root),
                      key=lambda s: int(s["start_time_unix_nano"]))  # fmt: skip
    assert all(s["parent_span_id"] == root["span_id"] for s in children)
    assert all(s["trace_id"] == root["trace_id"] for s in children)
    assert (root["name"], span_type(root)) == (f"invoke_agent {AGENT}", "AGENT")
    assert [(s["name"], span_type(s)) for s in children] == [
        ("chat gpt-4o-mini", "CHAT_MODEL"), ("execute_tool lookup", "TOOL"),
        ("chat gpt-4o-mini", "CHAT_MODEL"), ("execute_tool boom", "TOOL"),
        ("chat gpt-4o-mini", "CHAT_MODEL"),
    ]  # fmt: skip
    shown = attributes(root)
    assert shown["gen_ai.agent.name"] == AGENT
    assert shown["gen_ai.request.model"] == "gpt-4o-mini"
    chats = [attributes(s) for s in children if span_type(s) == "CHAT_MODEL"]
    assert {plain(c["mlflow.llm.model"]) for c in chats} == {"scripted"}  # as it answered
    assert [c["gen_ai.usage.input_tokens"] for c in chats] == [100, 120, 140]
    usage = json.loads(info["trace_metadata"]["mlflow.trace.tokenUsage"])
    assert (usage["input_tokens"], usage["output_tokens"]) == (360, 35)  # counted once
    assert info["trace_metadata"]["mlflow.trace.session"] == outcome.run_id
    tools = [s for s in children if span_type(s) == "TOOL"]
    assert [attributes(s)["gen_ai.tool.name"] for s in tools] == ["lookup", "boom"]
    ok, failed = tools
    assert ok.get("status", {}).get("code") in (None, "STATUS_CODE_UNSET")
    assert failed["status"] == {"code": "STATUS_CODE_ERROR",
                                "message": "the tool answered with an error"}  # fmt: skip
    (event,) = failed["events"]
    assert event["name"] == "exception"
    assert attributes(event)["exception.type"] == "tool_error"
    assert info["state"] == "OK"  # the run itself completed
    # The default level exports no content: no prompt, argument, result or answer.
    assert CANARY not in json.dumps(trace)
    assert not any(k in attributes(s) for s in spans
                   for k in ("mlflow.spanInputs", "mlflow.spanOutputs"))  # fmt: skip


def test_mlflow_shows_a_failed_run_as_an_error_trace(mlflow_url: str) -> None:
    outcome = sent(mlflow_url, failing())
    assert outcome.status == "failed" and outcome.error is not None
    trace = trace_of(mlflow_url, outcome.run_id)
    assert trace["trace_info"]["state"] == "ERROR"
    (root,) = [s for s in trace["spans"] if not s.get("parent_span_id")]
    assert root["status"] == {"code": "STATUS_CODE_ERROR", "message": outcome.error}
    failed = [s for s in trace["spans"] if s.get("status", {}).get("code") == "STATUS_CODE_ERROR"
              and s is not root]  # fmt: skip
    assert [(s["name"], attributes(s)["error.type"]) for s in failed] == [
        ("chat gpt-4o-mini", "503")
    ]
    assert [e["name"] for e in failed[0]["events"]] == ["exception"]
