"""``toolwire run`` with reasoning, streaming, budgets and stop reasons, through real
``python -m toolwire`` processes: a scripted model, and a priced one over loopback HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from toolwire.cli.outcome import ending_line
from toolwire.cli.show import dollars
from toolwire.loop.loop import LoopResult, TerminationReason
from toolwire.policy.pricing import Cost
from toolwire.providers.base import CompletionResponse, Usage
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.tools.registry import ToolRegistry

from .fakes import PricedModel
from .providers.servers import FakeModel, loopback
from .served import served

PRICED = CompletionResponse(
    content="priced",
    usage=Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000, cache_read_tokens=250_000),
    model="gpt-4o-mini",
    finish_reason="stop",
)


HOSTILE = "\x1b[2J\x1b[31mI will not [bold]help[/bold]\x07 <img src=x onerror=alert(1)>"
SHOWN_HOSTILE = "\\x1b[2J\\x1b[31mI will not [bold]help[/bold]\\x07 <img src=x onerror=alert(1)>"


def tw(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")},
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "200",
        "TOOLWIRE_STATE_KEY": "",
        "OPENAI_API_KEY": "sk-test-cli-0000",
    }
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args, "--db", str(tmp_path / "runs.sqlite")],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def scripted(
    tmp_path: Path, *turns: Mapping[str, object], extra: tuple[str, ...] = ("--no-tools",)
) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    done = tw(tmp_path, "run", "--script", str(path), *extra, "q")
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


ANSWER = {"content": "The answer is forty-two, exactly.", "thinking": "Let me count slowly.",
          "prompt_tokens": 4, "completion_tokens": 6}  # fmt: skip


def test_a_streamed_answer_is_printed_as_it_arrives_and_only_once(tmp_path: Path) -> None:
    out = scripted(tmp_path, ANSWER)
    lines = out.splitlines()
    assert lines[0] == "[round 1] → request: 1 messages, 0 tools"
    assert lines[1] == "  thinking: Let me count slowly."  # a line of its own, never the answer
    assert lines[2] == "The answer is forty-two, exactly."
    assert lines[3].startswith("[round 1] ← model answers (")
    assert "completed; 10 tokens; cost unknown" in out
    assert out.count("forty-two") == 1


def test_no_stream_prints_the_answer_once_at_the_end_and_no_thinking(tmp_path: Path) -> None:
    out = scripted(tmp_path, ANSWER, extra=("--no-tools", "--no-stream"))
    lines = out.splitlines()
    assert lines[1].startswith("[round 1] ← model answers (")
    assert lines[-1] == "The answer is forty-two, exactly."
    assert "thinking" not in out and out.count("forty-two") == 1


@pytest.mark.parametrize(
    ("stop", "reason", "said"),
    [("refusal", "refused", "the model refused"), ("blocked", "blocked", "blocked")],
)
def test_a_refusal_shows_its_reason_and_the_providers_words_safely(
    tmp_path: Path, stop: str, reason: str, said: str
) -> None:
    turn = {"stop": stop, "refusal": HOSTILE, "finish_reason": "content_filter"}
    out = scripted(tmp_path, turn)
    assert f"{reason}; the provider said 'content_filter'; 0 tokens; cost unknown" in out
    assert f"{said}: {SHOWN_HOSTILE}" in out.splitlines()
    assert "\x1b" not in out and "\x07" not in out


@pytest.mark.parametrize(
    ("stop", "words"),
    [
        ("max_tokens", "max_tokens (answer cut by the output cap); the provider said 'length'"),
        ("context_window", "context_window (the conversation outgrew the model's window)"),
    ],
)
def test_a_cut_answer_says_why(tmp_path: Path, stop: str, words: str) -> None:
    out = scripted(tmp_path, {"content": "Half an ans", "stop": stop, "finish_reason": "length"})
    assert words in out
    assert out.count("Half an ans") == 1


def test_a_token_budget_ends_the_run_after_the_round_that_crossed_it(tmp_path: Path) -> None:
    call = {"tool_calls": [{"name": "nope"}], "prompt_tokens": 30, "completion_tokens": 5}
    out = scripted(tmp_path, call, ANSWER, extra=("--admin", "--tool", "list_packages",
                                                  "--max-total-tokens", "20"))  # fmt: skip
    assert "budget_exhausted (the run's token or dollar budget was spent); 35 tokens" in out
    assert "[round 2]" not in out


def test_a_small_context_window_drops_old_exchanges_and_says_so(tmp_path: Path) -> None:
    call = {"content": "Let me look. " * 50, "tool_calls": [{"name": "nope"}]}
    out = scripted(tmp_path, *[call] * 8, ANSWER, extra=(
        "--admin", "--tool", "list_packages", "--context-window", "900", "--max-tokens", "10",
        "--max-rounds", "8"))  # fmt: skip
    lines = out.splitlines()
    dropped = re.compile(r"\[round (\d+)\] ✂ context: dropped 1 old exchange \(2 messages\), "
                         r"about ([\d,]+) → ([\d,]+) tokens of a 900-token window")  # fmt: skip
    found = [(i, m) for i, line in enumerate(lines) if (m := dropped.fullmatch(line))]
    assert found
    for index, match in found:  # each just before its round's request, and below the window
        assert lines[index + 1].startswith(f"[round {match[1]}] → request: ")
        before, after = (int(n.replace(",", "")) for n in match.group(2, 3))
        assert before > 890 >= after


def test_a_conversation_that_cannot_fit_ends_the_run_before_any_call(tmp_path: Path) -> None:
    out = scripted(tmp_path, ANSWER, extra=("--no-tools", "--context-window", "5"))
    assert "context_full (the conversation cannot fit the model's context window, even " in out
    assert "[round" not in out  # nothing was sent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--reasoning", "extreme"), "'extreme' is neither low, medium, high nor a token budget"),
        (("--reasoning", "0"), "'0' is neither low, medium, high nor a token budget"),
        (("--max-cost", "0"), "a budget in dollars must be a positive number"),
        (("--max-cost", "nan"), "a budget in dollars must be a positive number"),
        (
            ("--max-total-tokens", "0"),
            "'--max-total-tokens': Input should be greater than or equal to 1",
        ),
        (
            ("--max-tokens", "-5"),
            "'--max-tokens': Input should be greater than or equal to 1",
        ),
        (
            ("--context-window", "0"),
            "'--context-window': Input should be greater than or equal to 1",
        ),
        (
            ("--max-concurrency", "33"),
            "'--max-concurrency': Input should be less than or equal to 32",
        ),
    ],
)
def test_bad_run_options_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [ANSWER]}))
    done = tw(tmp_path, "run", "--script", str(path), *args, "q")
    assert done.returncode == 2
    assert message in " ".join(done.stderr.replace("│", " ").split())
    assert "Traceback" not in done.stderr


def test_the_model_gets_reasoning_and_the_output_cap(tmp_path: Path) -> None:
    model = FakeModel(["An answer."])
    with loopback(model) as base:
        done = tw(tmp_path, "run", "--provider", "openai", "--model", "gpt-4o-mini",
                  "--base-url", f"{base}/v1", "--no-stream", "--reasoning", "high",
                  "--max-tokens", "321", "--no-tools", "q")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    body = model.captured[0].json()
    assert body["reasoning_effort"] == "high"
    assert 321 in (body.get("max_tokens"), body.get("max_completion_tokens"))
    assert body.get("stream", False) is False
    # A compatible server at another address runs another model at another price.
    assert "completed; 18 tokens; cost unknown" in done.stdout


def test_runs_list_and_show_give_a_stored_runs_cost(tmp_path: Path) -> None:
    with RunStore.open(str(tmp_path / "runs.sqlite")) as store:
        outcome = Runtime(ToolRegistry(), recorder=store).run_sync(
            RunRequest.of("q", provider=PricedModel(PRICED), model="gpt-4o-mini")
        )
    assert outcome.result is not None
    shown_cost = dollars(float(outcome.result.cost.usd))
    assert re.fullmatch(r"\$0\.\d{4}", shown_cost)
    listed = tw(tmp_path, "runs", "list").stdout
    assert re.search(rf"  2000000  +{re.escape(shown_cost)}  +2  +metadata\n", listed), listed
    shown = tw(tmp_path, "runs", "show", outcome.run_id).stdout.splitlines()
    assert f"  cost: {shown_cost}" in shown
    assert "  status: completed" in shown
    assert "  stop: end" in shown and "  finish_reason: stop" in shown
    assert "  cache_read_tokens: 250000" in shown


def test_the_ending_line_prices_exact_floor_and_unknown() -> None:
    def line(cost: Cost) -> str:
        result = LoopResult(
            final_content="", trace=(), iterations=1, truncated=False, cost=cost,
            reason=TerminationReason.COMPLETED, usage=Usage(3, 4),
        )  # fmt: skip
        return ending_line(result).plain

    assert line(Cost(Decimal("0.0123"))) == "completed; 7 tokens; $0.0123"
    assert line(Cost(Decimal("0.000045"))) == "completed; 7 tokens; $0.000045"
    assert line(Cost(Decimal("0.5"), complete=False)) == "completed; 7 tokens; at least $0.5000"
    assert line(Cost(Decimal(0), complete=False)) == "completed; 7 tokens; cost unknown"


@pytest.mark.parametrize(
    ("toml", "flag", "sent"),
    [
        ('max_tokens_field = "max_tokens"\n', (), "max_tokens"),
        ('max_tokens_field = "max_completion_tokens"\n', (), "max_completion_tokens"),
        ('max_tokens_field = "max_tokens"\n', ("--max-tokens-field", "max_completion_tokens"),
         "max_completion_tokens"),
        ("", ("--max-tokens-field", "max_tokens"), "max_tokens"),
    ],
)  # fmt: skip
def test_the_output_cap_field_comes_from_the_flag_or_the_workspace(
    tmp_path: Path, toml: str, flag: tuple[str, ...], sent: str
) -> None:
    workspace = tmp_path / "workspace.toml"
    workspace.write_text(toml)
    model = FakeModel(["Capped."])
    with loopback(model) as base:
        done = tw(tmp_path, "run", "--provider", "openai", "--model", "local-model",
                  "--base-url", f"{base}/v1", "--no-stream", "--max-tokens", "64",
                  "--workspace", str(workspace), *flag, "--no-tools", "q")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    body = model.captured[0].json()
    other = {"max_tokens", "max_completion_tokens"} - {sent}
    assert body[sent] == 64 and not other & body.keys()


def test_a_bad_output_cap_field_in_the_workspace_is_a_clear_error(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace.toml"
    workspace.write_text('max_tokens_field = "max_output_tokens"\n')
    done = tw(tmp_path, "run", "--script", str(workspace), "--workspace", str(workspace), "q")
    assert done.returncode == 1
    assert f"error: {workspace}: max_tokens_field: Input should be 'max_tokens' or " in done.stderr
    assert "Traceback" not in done.stderr


def test_demo_run_options_fill_the_run_form(tmp_path: Path) -> None:
    args = ["demo", "--reasoning", "2048", "--no-stream", "--max-tokens", "500",
            "--max-total-tokens", "40000", "--max-cost", "0.75",
            "--context-window", "64000", "--max-concurrency", "3"]  # fmt: skip
    with served(args, tmp_path / "data") as (base, token):
        headers = {"Authorization": f"Bearer {token}"}
        defaults = httpx.get(base + "/api/defaults", headers=headers, timeout=10).json()
    shown = {
        k: v for k, v in defaults.items() if k not in ("prompt", "replay_label", "trust_zones")
    }
    assert shown == {
        "provider": "scripted", "model": "", "reasoning": 2048, "stream": False,
        "max_tokens": 500, "max_total_tokens": 40000, "max_cost": 0.75, "context_window": 64000,
        "max_concurrency": 3, "tool_choice": "auto", "base_url": None,
    }  # fmt: skip


def test_demo_refuses_a_bad_run_option_before_serving(tmp_path: Path) -> None:
    done = tw(tmp_path, "demo", "--reasoning", "max", "--port", "1")
    assert done.returncode == 2
    assert "'max' is neither low, medium, high nor a token budget" in " ".join(
        done.stderr.replace("│", " ").split()
    )
