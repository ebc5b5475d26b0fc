"""``toolwire run`` as a subprocess against the real servers, every format, streamed and whole."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from ..fakes import plugin
from .routes import CUT_ARGUMENTS, TIMEOUT_S, WEATHER, forced_call
from .servers import MASTER_KEY, MODEL, Server

pytestmark = pytest.mark.real_servers

WEATHER_PLUGIN = f"""
    from toolwire import tool

    @tool(group="demo", data_class="public")
    def weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return {WEATHER!r}

    def all_tools():
        return [weather]
"""
# How each format is reached: provider options, the key variable set to LiteLLM's key.
TARGETS = {
    "openai-via-llama": ("llama", ["--provider", "openai", "--base-url", "{llama}/v1"], None),
    "preset-via-llama": ("llama", ["--provider", "llama-cpp-python", "--base-url", "{llama}/v1"],
                         None),
    "openai-via-litellm": ("litellm", ["--provider", "openai", "--base-url", "{litellm}/v1"],
                           "OPENAI_API_KEY"),
    "anthropic-via-litellm": ("litellm", ["--provider", "anthropic", "--base-url", "{litellm}"],
                              "ANTHROPIC_API_KEY"),
    "gemini-via-litellm": ("litellm", ["--provider", "gemini", "--base-url", "{litellm}/v1beta"],
                           "GEMINI_API_KEY"),
}  # fmt: skip
ENDING = re.compile(r"^(\w+)(?: \([^)]*\))?(?:; the provider said '[^']*')?; "
                    r"(?:(\d+) tokens|tokens unknown)(?: \([^)]*\))?; cost unknown$")  # fmt: skip


def ending_of(printed: str) -> re.Match[str]:
    """The line saying why the run stopped (a whole answer is printed after it)."""
    endings = [m for line in printed.splitlines() if (m := ENDING.match(line))]
    assert len(endings) == 1, printed
    return endings[0]


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    plugin(folder, WEATHER_PLUGIN, "all = twplugin:all_tools")
    return folder


def toolwire(
    tmp_path: Path, plugin_path: Path, args: Sequence[str], key_variable: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_path), env.get("PYTHONPATH", "")])
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "TOOLWIRE_DB"):
        env.pop(variable, None)
    if key_variable:
        env[key_variable] = MASTER_KEY
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args, "--db", str(tmp_path / "runs.db")],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
        timeout=TIMEOUT_S * 3, check=False,
    )  # fmt: skip


def target(name: str, request: pytest.FixtureRequest) -> tuple[list[str], str | None]:
    """``name``'s provider options, and the variable its key goes in; its server is started
    on first use."""
    via, options, key = TARGETS[name]
    server: Server = request.getfixturevalue(via)
    urls = {via: server.url}
    return [o.format(**urls) for o in options] + ["--model", MODEL, "--trust-zone", "local"], key


@pytest.mark.parametrize(
    ("name", "stream"),
    [
        forced_call(name.split("-")[0], name, stream, via=TARGETS[name][0],
                    id=f"{name}-{'whole' if stream else 'streamed'}")
        for name in TARGETS
        for stream in ([], ["--no-stream"])
    ],
)  # fmt: skip
def test_run_calls_the_forced_tool_and_ends_at_the_round_cap(
    name: str, stream: list[str], tmp_path: Path, plugin_path: Path,
    request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    options, key = target(name, request)
    done = toolwire(tmp_path, plugin_path, [
        "run", *options, *stream, "--tool", "weather", "--tool-choice", "weather",
        "--max-rounds", "1", "--max-tokens", "24", "What is the weather in Oslo?",
    ], key)  # fmt: skip
    shown = done.stdout + done.stderr
    assert done.returncode == 0, shown
    assert "[round 1] ← model calls weather (" in shown
    ran = "tool weather ok (" in shown and WEATHER in shown
    cut = "tool weather error (" in shown and CUT_ARGUMENTS in shown  # see CUT_ARGUMENTS
    assert ran or cut, shown
    ending = ending_of(done.stdout)
    assert ending.group(1) in ("max_iterations", "max_tokens")
    assert ending.group(2) is None or int(ending.group(2)) > 0  # no "0 tokens"


def test_a_token_budget_stops_a_run_whose_stream_has_no_usage(
    tmp_path: Path, plugin_path: Path, request: pytest.FixtureRequest
) -> None:
    """F4: llama-cpp-python streams no usage; the budget counts an estimate and still ends it."""
    options, key = target("openai-via-llama", request)
    done = toolwire(tmp_path, plugin_path, [
        "run", *options, "--tool", "weather", "--tool-choice", "weather",
        "--max-rounds", "3", "--max-tokens", "24", "--max-total-tokens", "1", "Weather in Oslo?",
    ], key)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert ending_of(done.stdout).group(1) == "budget_exhausted", done.stdout


def test_a_server_error_is_shown_in_its_own_words(
    tmp_path: Path, plugin_path: Path, request: pytest.FixtureRequest
) -> None:
    """F9: LiteLLM's answer to an unknown model reaches the person, not only "HTTP 400"."""
    options, key = target("openai-via-litellm", request)
    options[options.index(MODEL)] = "no-such-model"
    done = toolwire(tmp_path, plugin_path, ["run", *options, "--no-tools", "hello"], key)
    shown = done.stdout + done.stderr
    assert done.returncode == 1, shown
    assert "Invalid model name" in shown, shown
