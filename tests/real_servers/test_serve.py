"""``toolwire serve``'s HTTP API against the real servers: a run whole and a run streamed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..fakes import plugin
from ..served import served
from .routes import TIMEOUT_S, forced_call, weather_result
from .servers import MASTER_KEY, MODEL, Server
from .test_cli import WEATHER_PLUGIN

pytestmark = pytest.mark.real_servers

# serve's provider options, per format: (options, the key variable set to LiteLLM's key)
SERVED = {
    "openai-via-llama": ("llama", ["--provider", "openai", "--base-url", "{llama}/v1"], None),
    "anthropic-via-litellm": ("litellm", ["--provider", "anthropic", "--base-url", "{litellm}"],
                              "ANTHROPIC_API_KEY"),
    "gemini-via-litellm": ("litellm", ["--provider", "gemini", "--base-url",
                                       "{litellm}/v1beta"], "GEMINI_API_KEY"),
}  # fmt: skip


@pytest.fixture
def with_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    folder = tmp_path / "site"
    folder.mkdir()
    plugin(folder, WEATHER_PLUGIN, "all = twplugin:all_tools")
    paths = [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    yield


@pytest.fixture
def inspector(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    with_plugin: None,
) -> Iterator[tuple[str, dict[str, str], str]]:  # fmt: skip
    via, options, key = SERVED[request.param]
    server: Server = request.getfixturevalue(via)
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    if key:
        monkeypatch.setenv(key, MASTER_KEY)
    args = ["serve", *(o.format(**{via: server.url}) for o in options),
            "--model", MODEL, "--trust-zone", "local"]  # fmt: skip
    with served(args, tmp_path / "data") as (base, token):
        yield base, {"Authorization": f"Bearer {token}"}, options[1]


def body(provider: str, *, stream: bool) -> dict[str, Any]:
    return {
        "prompt": "What is the weather in Oslo?", "provider": provider, "model": MODEL,
        "allowed_tools": ["weather"], "tool_choice": "weather", "max_rounds": 1,
        "max_tokens": 24, "stream": stream, "trust_zone": "local",
    }  # fmt: skip


CASES = [forced_call(name.split("-")[0], name, via=SERVED[name][0], id=name) for name in SERVED]


@pytest.mark.parametrize("inspector", CASES, indirect=True)
def test_a_run_through_the_api_calls_the_tool_and_ends_at_the_cap(
    inspector: tuple[str, dict[str, str], str],
) -> None:
    base, headers, provider = inspector
    answer = httpx.post(base + "/api/runs", json=body(provider, stream=False), headers=headers,
                        timeout=TIMEOUT_S * 3)  # fmt: skip
    assert answer.status_code == 200, answer.text
    data = answer.json()
    tools = [s for s in data["steps"] if s["kind"] == "tool"]
    answered = weather_result(tools[0]["tool_arguments"]) if tools else None
    assert [(s["tool_name"], s["tool_result"]) for s in tools] == [("weather", answered)]
    end = data["result"]
    assert end["status"] == "completed", end
    assert end["reason"] in ("max_iterations", "max_tokens"), end


@pytest.mark.parametrize("inspector", CASES, indirect=True)
def test_a_streamed_run_sends_deltas_that_assemble_each_answer(
    inspector: tuple[str, dict[str, str], str],
) -> None:
    base, headers, provider = inspector
    with httpx.stream("POST", base + "/api/runs/stream", json=body(provider, stream=True),
                      headers=headers, timeout=TIMEOUT_S * 3) as answer:  # fmt: skip
        assert answer.status_code == 200
        events = [json.loads(line) for line in answer.iter_lines() if line]
    assert events[0]["type"] == "context" and events[-1]["type"] == "end"
    end = events[-1]
    assert end["status"] == "completed", end
    tools = [e["step"] for e in events if e["type"] == "step" and e["step"]["kind"] == "tool"]
    assert [s["tool_name"] for s in tools] == ["weather"]
    # The synthesis streams its answer: its deltas are the answer, piece by piece.
    last_round = max(e["round"] for e in events if e["type"] == "delta")
    pieces = [e["text"] for e in events if e["type"] == "delta" and e["round"] == last_round
              and e["kind"] == "content"]  # fmt: skip
    assert pieces and "".join(pieces) == end["final_content"]
