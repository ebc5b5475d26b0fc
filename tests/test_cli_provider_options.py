"""The provider options through real ``python -m toolwire`` processes against OpenAI-compatible
servers on loopback: ``run --tool-choice`` on the wire, ``serve`` taking the same provider
options as ``run`` and ``demo`` (checked before it serves, and filling the run form), and a
server that reports no usage shown as "tokens unknown" by ``run``, ``runs list`` and ``runs
show``, as text and as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolwire.demo import prepare_demo

from .providers.servers import FakeModel, loopback
from .served import free_port, served
from .test_cli_run_options import tw

LOCAL = ("--provider", "llama-cpp-python", "--model", "smollm2")  # a local server: no key
CALL_THEN_ANSWER: list[Any] = [[("list_tables", {})], "Four tables."]
ESTIMATE = r"tokens unknown \(about (\d+) estimated\)"


def _workspace(tmp_path: Path) -> str:
    return str(prepare_demo(tmp_path / "shop").root / "workspace.toml")


@pytest.mark.parametrize(
    ("choice", "first"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("list_tables", {"type": "function", "function": {"name": "list_tables"}}),
    ],
)
def test_run_sends_the_tool_choice_and_a_forced_one_only_in_the_first_round(
    tmp_path: Path, choice: str, first: object
) -> None:
    model = FakeModel(CALL_THEN_ANSWER)
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  _workspace(tmp_path), "--tool-choice", choice, "q")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [c.json() for c in model.captured]
    assert [b["tool_choice"] for b in sent] == [first, "auto"]
    assert all("list_tables" in [t["function"]["name"] for t in b["tools"]] for b in sent)
    assert "Four tables." in done.stdout


def test_run_tool_choice_none_offers_the_tools_and_lets_none_be_called(tmp_path: Path) -> None:
    model = FakeModel(["No call needed."])
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  _workspace(tmp_path), "--tool-choice", "none", "q")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (body,) = [c.json() for c in model.captured]
    assert body["tool_choice"] == "none" and body["tools"]


def test_run_refuses_a_tool_choice_naming_no_tool_before_any_call(tmp_path: Path) -> None:
    model = FakeModel(["never"])
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  _workspace(tmp_path), "--tool-choice", "list_table", "q")  # fmt: skip
    assert done.returncode == 1
    assert "error: no tool is named 'list_table'; did you mean list_tables" in done.stderr
    assert model.captured == []


@pytest.mark.parametrize("command", ["run", "serve", "demo"])
def test_a_tool_choice_that_is_no_mode_and_no_name_is_a_usage_error(
    tmp_path: Path, command: str
) -> None:
    args = ["q"] if command == "run" else ["--port", "1"]
    done = tw(tmp_path, command, "--tool-choice", "two words", *args)
    assert done.returncode == 2
    assert (
        "'--tool-choice': tool_choice must be auto, none, required or the name of one offered tool"
        in " ".join(done.stderr.replace("│", " ").split())
    )


def test_serve_fills_the_run_form_with_its_provider_options_and_runs_with_them(
    tmp_path: Path,
) -> None:
    model = FakeModel(CALL_THEN_ANSWER)
    with loopback(model) as root:
        url = f"{root}/v1"
        args = ["serve", *LOCAL, "--base-url", url, "--trust-zone", "local", "--tool-choice",
                "list_tables", "--workspace", _workspace(tmp_path)]  # fmt: skip
        with served(args, tmp_path / "home") as (base, token):
            headers = {"Authorization": f"Bearer {token}"}
            defaults = httpx.get(base + "/api/defaults", headers=headers, timeout=10).json()
            body = {"prompt": "q", "provider": defaults["provider"], "model": defaults["model"],
                    "tool_choice": defaults["tool_choice"]}  # fmt: skip
            with httpx.stream("POST", base + "/api/runs/stream", json=body, headers=headers,
                              timeout=30) as live:  # fmt: skip
                events = [json.loads(line) for line in live.iter_lines() if line.strip()]
    chosen = {k: defaults[k] for k in ("provider", "model", "base_url", "tool_choice")}
    assert chosen == {"provider": "llama-cpp-python", "model": "smollm2", "base_url": url,
                      "tool_choice": "list_tables"}  # fmt: skip
    assert (events[-1]["type"], events[-1]["status"]) == ("end", "completed")
    assert [c.path for c in model.captured] == ["/v1/chat/completions"] * 2
    named = {"type": "function", "function": {"name": "list_tables"}}
    assert [c.json()["tool_choice"] for c in model.captured] == [named, "auto"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--provider", "openai"), "error: provider openai needs a model name (--model)"),
        ((*LOCAL, "--tool-choice", "list_table"),
         "error: --tool-choice: no tool is named 'list_table'; did you mean list_tables,"),
        ((*LOCAL, "--base-url", "ftp://127.0.0.1/v1"),
         "error: llama-cpp-python: base URL must be an http:// or https:// URL with a host"),
    ],
)  # fmt: skip
def test_serve_refuses_a_provider_it_cannot_serve_before_printing_a_url(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = tw(tmp_path, "serve", *args, "--port", str(free_port()))
    assert done.returncode == 1, done.stdout + done.stderr
    assert message in " ".join((done.stdout + done.stderr).split())
    assert "#token=" not in done.stdout and "Traceback" not in done.stderr


def test_demo_refuses_a_tool_choice_naming_no_tool_before_serving(tmp_path: Path) -> None:
    args = ["--tool-choice", "list_table", "--data-dir", str(tmp_path / "d")]
    done = tw(tmp_path, "demo", *args, "--port", str(free_port()))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: --tool-choice: no tool is named 'list_table'; did you mean list_tables," in (
        done.stderr
    )
    assert "#token=" not in done.stdout


def test_demo_fills_the_run_form_with_its_base_url_and_tool_choice(tmp_path: Path) -> None:
    args = ["demo", "--base-url", "http://127.0.0.1:9/v1", "--tool-choice", "required"]
    with served(args, tmp_path / "data") as (base, token):
        headers = {"Authorization": f"Bearer {token}"}
        defaults = httpx.get(base + "/api/defaults", headers=headers, timeout=10).json()
    assert (defaults["base_url"], defaults["tool_choice"]) == ("http://127.0.0.1:9/v1", "required")


def test_a_server_reporting_no_usage_is_tokens_unknown_in_run_and_runs(tmp_path: Path) -> None:
    model = FakeModel(["An answer."])  # streamed, and llama-cpp-python takes no usage option
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--no-tools", "q")
        as_json = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--no-tools",
                     "--json", "q")  # fmt: skip
    assert all(c.json()["stream"] is True and "stream_options" not in c.json()
               for c in model.captured)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ending = re.search(rf"completed; {ESTIMATE}; cost unknown", done.stdout)
    assert ending is not None, done.stdout
    usage = json.loads(as_json.stdout)["usage"]
    assert usage["tokens_known"] is False and usage["total_tokens"] > 0
    assert usage["prompt_tokens"] + usage["completion_tokens"] == usage["total_tokens"]

    listed = tw(tmp_path, "runs", "list", "--json")
    runs = json.loads(listed.stdout)
    assert [r["tokens_known"] for r in runs] == [False, False]
    first = runs[-1]
    total = first["prompt_tokens"] + first["completion_tokens"]
    assert total == int(ending[1])
    table = tw(tmp_path, "runs", "list").stdout
    assert f"  unknown (about {total})  " in table
    shown = tw(tmp_path, "runs", "show", first["id"]).stdout.splitlines()
    assert (
        f"  tokens: tokens unknown (about {total} estimated): {first['prompt_tokens']} "
        f"prompt, {first['completion_tokens']} completion" in shown
    )
    detail = json.loads(tw(tmp_path, "runs", "show", first["id"], "--json").stdout)
    assert detail["tokens_known"] is False
    assert [s.get("tokens_estimated") for s in detail["steps"] if s["kind"] == "llm"] == [True]


def test_a_server_reporting_usage_is_counted_as_reported(tmp_path: Path) -> None:
    model = FakeModel(["An answer."])
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--no-tools",
                  "--no-stream", "q")  # fmt: skip
    assert "completed; 18 tokens; cost unknown" in done.stdout
    (run,) = json.loads(tw(tmp_path, "runs", "list", "--json").stdout)
    assert run["tokens_known"] is True
    shown = tw(tmp_path, "runs", "show", run["id"]).stdout.splitlines()
    assert "  tokens: 11 prompt, 7 completion" in shown


class _Unreported(FakeModel):
    """A priced model's server that reports no usage, whole or streamed."""

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        answer, kind = super().respond(path, headers, body)
        if kind == "application/json":
            return json.dumps({k: v for k, v in json.loads(answer).items()
                               if k != "usage"}).encode(), kind  # fmt: skip
        events = answer.decode().split("\n\n")
        return "\n\n".join(e for e in events if '"usage"' not in e).encode(), kind


# OpenRouter's own price table prices its models at any base URL (a loopback one here).
PRICED = ("--provider", "openrouter", "--model", "openai/gpt-4o-mini")
COST_ESTIMATE = r"\$0\.[0-9]+ \(estimated\)"


@pytest.mark.parametrize("stream", [[], ["--no-stream"]], ids=["streamed", "whole"])
def test_a_cost_priced_from_estimated_tokens_says_estimated_in_run_and_runs(
    tmp_path: Path, stream: list[str]
) -> None:
    model = _Unreported(["An answer."])
    with loopback(model) as base:
        args = ("run", *PRICED, "--base-url", f"{base}/v1", "--no-tools", *stream)
        done = tw(tmp_path, *args, "q")
        as_json = json.loads(tw(tmp_path, *args, "--json", "q").stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"completed; {ESTIMATE}; {COST_ESTIMATE}$", done.stdout, re.M), done.stdout
    cost = as_json["cost"]
    assert (cost["estimated"], cost["complete"], cost["usd"] > 0) == (True, True, True)

    runs = json.loads(tw(tmp_path, "runs", "list", "--json").stdout)
    assert [(r["cost_estimated"], r["cost"] > 0) for r in runs] == [(True, True)] * 2
    assert re.search(COST_ESTIMATE, tw(tmp_path, "runs", "list").stdout)
    shown = tw(tmp_path, "runs", "show", runs[0]["id"]).stdout
    assert re.search(rf"^  cost: {COST_ESTIMATE}$", shown, re.M), shown


def test_a_cost_priced_from_reported_tokens_is_exact(tmp_path: Path) -> None:
    model = FakeModel(["An answer."])
    with loopback(model) as base:
        done = tw(tmp_path, "run", *PRICED, "--base-url", f"{base}/v1", "--no-tools", "q")
    assert re.search(r"completed; 18 tokens; \$0\.[0-9]+$", done.stdout, re.M), done.stdout
    (run,) = json.loads(tw(tmp_path, "runs", "list", "--json").stdout)
    assert (run["cost_estimated"], run["cost"] > 0) == (False, True)
    assert "estimated" not in tw(tmp_path, "runs", "show", run["id"]).stdout


def test_the_api_says_a_cost_priced_from_estimated_tokens_is_estimated(tmp_path: Path) -> None:
    model = _Unreported(["An answer."])
    with loopback(model) as root:
        args = ["serve", *PRICED, "--base-url", f"{root}/v1", "--trust-zone", "local"]
        with served(args, tmp_path / "home") as (base, token):
            headers = {"Authorization": f"Bearer {token}"}
            body = {"prompt": "q", "provider": "openrouter", "model": PRICED[-1],
                    "allowed_tools": []}  # fmt: skip
            with httpx.stream("POST", base + "/api/runs/stream", json=body, headers=headers,
                              timeout=30) as live:  # fmt: skip
                end = [json.loads(line) for line in live.iter_lines() if line.strip()][-1]
            whole = httpx.post(base + "/api/runs", json={**body, "stream": False},
                               headers=headers, timeout=30).json()  # fmt: skip
            listed = httpx.get(base + "/api/runs", headers=headers, timeout=10).json()
    assert (end["status"], end["cost_estimated"], end["cost"] > 0) == ("completed", True, True)
    assert whole["result"]["cost_estimated"] is True
    rows = listed["runs"] if isinstance(listed, dict) else listed
    assert [r["cost_estimated"] for r in rows] == [True, True]
