"""A toolwire run's trace read back from Arize Phoenix (``phoenix serve`` on loopback, its own
telemetry off, a SQLite store in a temporary folder), through its REST and GraphQL APIs: the
span kinds Phoenix derives from the GenAI conventions (AGENT, LLM, TOOL), the tree, the model,
the tokens counted once, the tools, the errors as errors, no content at the default level.

Phoenix's own pins clash with toolwire's dev extra (``anthropic<2``, ``graphql-core>=3.3``), so
it is installed apart and named to pytest, which otherwise leaves these tests out:
``python -m venv /tmp/phoenix && /tmp/phoenix/bin/pip install arize-phoenix==20.26.1``, then
``pytest --phoenix /tmp/phoenix/bin/phoenix tests/test_telemetry_phoenix.py``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .backends import AGENT, CANARY, exported, failing, free_port, serving, three_rounds

pytestmark = pytest.mark.phoenix
INGEST_SECONDS = 60


@pytest.fixture(scope="module")
def phoenix_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[str]:  # fmt: skip
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    environ = {**os.environ, "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()),
               "PHOENIX_WORKING_DIR": str(folder)}  # fmt: skip
    command = [str(Path(request.config.getoption("--phoenix"))), "serve"]
    url = f"http://127.0.0.1:{port}"
    with serving(command, environ, f"{url}/healthz", folder):
        yield url


def spans_of(url: str, run_id: str, count: int) -> list[dict[str, Any]]:
    """The spans Phoenix holds of the run ``run_id`` (its REST API), once it holds ``count``:
    Phoenix stores what it is sent a moment after it answers."""
    deadline = time.monotonic() + INGEST_SECONDS
    while True:
        found = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 1000}, timeout=60)
        found.raise_for_status()
        spans = [s for s in found.json()["data"]
                 if s["attributes"].get("gen_ai.conversation.id") == run_id]  # fmt: skip
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


def tokens(url: str) -> tuple[float, float]:
    """The prompt and completion tokens Phoenix counts for its default project (GraphQL)."""
    query = "{ projects { edges { node { name tokenCountPrompt tokenCountCompletion } } } }"
    answer = httpx.post(f"{url}/graphql", json={"query": query}, timeout=60)
    answer.raise_for_status()
    edges = answer.json()["data"]["projects"]["edges"]
    found = [e["node"] for e in edges if e["node"]["name"] == "default"]
    if not found:  # no project before its first span
        return (0.0, 0.0)
    return (float(found[0]["tokenCountPrompt"]), float(found[0]["tokenCountCompletion"]))


def test_phoenix_shows_the_run_as_an_agent_over_its_model_and_tool_calls(phoenix_url: str) -> None:
    before = tokens(phoenix_url)
    outcome = exported(f"{phoenix_url}/v1/traces", three_rounds())
    assert outcome.status == "completed"
    spans = spans_of(phoenix_url, outcome.run_id, 6)
    assert len(spans) == 6
    (root,) = [s for s in spans if not s.get("parent_id")]
    children = sorted((s for s in spans if s is not root), key=lambda s: s["start_time"])
    assert all(s["parent_id"] == root["context"]["span_id"] for s in children)
    assert {s["context"]["trace_id"] for s in spans} == {root["context"]["trace_id"]}
    assert (root["name"], root["span_kind"]) == (f"invoke_agent {AGENT}", "AGENT")
    assert [(s["name"], s["span_kind"]) for s in children] == [
        ("chat gpt-4o-mini", "LLM"), ("execute_tool lookup", "TOOL"),
        ("chat gpt-4o-mini", "LLM"), ("execute_tool boom", "TOOL"),
        ("chat gpt-4o-mini", "LLM"),
    ]  # fmt: skip
    chats = [s["attributes"] for s in children if s["span_kind"] == "LLM"]
    assert {c["gen_ai.request.model"] for c in chats} == {"gpt-4o-mini"}
    assert {c["gen_ai.response.model"] for c in chats} == {"scripted"}
    assert [c["llm.token_count.prompt"] for c in chats] == [100, 120, 140]
    tools = [s for s in children if s["span_kind"] == "TOOL"]
    assert [s["attributes"]["tool.name"] for s in tools] == ["lookup", "boom"]
    ok, failed = tools
    assert ok["status_code"] == "UNSET"
    assert (failed["status_code"], failed["status_message"]) == (
        "ERROR", "the tool answered with an error",
    )  # fmt: skip
    assert [e["name"] for e in failed["events"]] == ["exception"]
    # The agent's tokens are its calls': Phoenix counts each call once.
    added = [now - then for now, then in zip(tokens(phoenix_url), before, strict=True)]
    assert added == [360, 35]
    # The default level exports no content: no prompt, argument, result or answer.
    assert CANARY not in repr(spans)
    assert not any(k.startswith(("input.", "llm.input_messages", "llm.output_messages"))
                   for s in spans for k in s["attributes"])  # fmt: skip


def test_phoenix_shows_a_failed_run_as_an_error(phoenix_url: str) -> None:
    outcome = exported(f"{phoenix_url}/v1/traces", failing())
    assert outcome.status == "failed" and outcome.error is not None
    spans = spans_of(phoenix_url, outcome.run_id, 4)
    assert len(spans) == 4  # the agent, a model call, its tool call, the call that failed
    (root,) = [s for s in spans if not s.get("parent_id")]
    assert (root["status_code"], root["status_message"]) == ("ERROR", outcome.error)
    failed = [s for s in spans if s["status_code"] == "ERROR" and s is not root]
    assert [(s["name"], s["attributes"]["error.type"]) for s in failed] == [
        ("chat gpt-4o-mini", "503")
    ]
