from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the commands)
from toolwire.cli.app import app
from toolwire.cli.show import safe

from .fakes import PLUGIN, plugin

runner = CliRunner(env={"COLUMNS": "200"})

SCRIPT = """
name: cli test
turns:
  - content: "checking"
    tool_calls:
      - {name: greet, arguments: {name: "\\x1b[2J ann"}}
      - {name: missing_tool, arguments: {q: 1}}
  - content: "All done: \\x1b[31mred\\x1b[0m and [bold]markup[/bold]"
    prompt_tokens: 5
    completion_tokens: 3
"""


def script(tmp_path: Path, text: str = SCRIPT) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(text)
    return path


def test_run_shows_each_step_then_the_answer(tmp_path: Path, on_path: Path) -> None:
    plugin(on_path, PLUGIN, "all = twplugin:all_tools")
    only_plugin = ["--tool", "greet", "--tool", "wave"]
    result = runner.invoke(app, ["run", "--script", str(script(tmp_path)), *only_plugin, "q"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "[round 1] → request: 1 messages, 2 tools"
    assert lines[1] == "checking"  # the model's words as they stream
    assert lines[2].startswith("[round 1] ← model calls greet, missing_tool (")
    assert lines[3].startswith("[round 1]   tool greet ok (")
    assert lines[3].endswith("0 artifacts): hello \\x1b[2J ann")
    assert lines[4].startswith("[round 1]   tool missing_tool error (")
    assert lines[4].endswith('0 artifacts): Error: unknown tool "missing_tool"')
    assert lines[5] == "[round 2] → request: 4 messages, 2 tools"
    assert lines[6] == "All done: \\x1b[31mred\\x1b[0m and [bold]markup[/bold]"
    assert lines[7].startswith("[round 2] ← model answers (")
    assert lines[-1] == "completed; 8 tokens; cost unknown"  # streamed: not printed twice
    assert result.output.count("All done") == 1
    assert "\x1b" not in result.output


def test_a_bad_script_is_a_clear_error_without_traceback(tmp_path: Path) -> None:
    path = script(tmp_path, "turns: [{contnt: x}]")
    result = runner.invoke(app, ["run", "--script", str(path), "q"])
    assert result.exit_code == 1
    assert "turns.0.contnt: Extra inputs are not permitted" in result.output
    assert "Traceback" not in result.output


def test_an_exhausted_script_is_a_clear_error(tmp_path: Path, on_path: Path) -> None:
    plugin(on_path, PLUGIN, "wave = twplugin:wave")
    path = script(tmp_path, "turns: [{tool_calls: [{name: wave}]}]")
    result = runner.invoke(app, ["run", "--script", str(path), "q"])
    assert result.exit_code == 1
    # The run is settled as failed with a safe reason; the details go to the operator's log.
    assert "error: the provider call failed: ScriptExhausted" in result.output


def test_max_rounds_is_checked_at_the_edge(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "--script", str(script(tmp_path)), "--max-rounds", "1001", "q"]
    )
    assert result.exit_code == 2
    assert "less than or equal to 1000" in result.output


def test_tools_lists_registered_tools(on_path: Path) -> None:
    plugin(on_path, PLUGIN, "all = twplugin:all_tools")
    result = runner.invoke(app, ["tools"])
    assert result.exit_code == 0
    rows = [" ".join(line.split()) for line in result.output.splitlines()]
    assert rows[0] == "TOOL GROUP STATE WHY DATA_CLASS DESCRIPTION"
    assert "greet plugin enabled default public" in rows
    assert "wave plugin enabled default public" in rows


def test_safe_escapes_terminal_controls_and_folds_lines() -> None:
    assert safe("a\x1b[2Jb\x07\nc\u009bd") == "a\\x1b[2Jb\\x07 c\\x9bd"
    assert safe("x" * 200).endswith("…") and len(safe("x" * 200)) == 161
    assert safe("keep\nlines", None) == "keep\nlines"


def test_the_module_entry_point_runs_with_a_discovered_plugin(
    tmp_path: Path, on_path: Path
) -> None:
    plugin(on_path, PLUGIN, "all = twplugin:all_tools")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(on_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "run", "--script", str(script(tmp_path)), "q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "tool greet ok" in done.stdout
    assert "All done" in done.stdout


def test_run_over_a_workspace_with_the_example_script(tmp_path: Path) -> None:
    from toolwire.demo import prepare_demo

    shop = prepare_demo(tmp_path)
    example = Path(__file__).parent.parent / "examples" / "shop.yaml"
    workspace = str(shop.root / "workspace.toml")
    result = runner.invoke(app, ["run", "--workspace", workspace, "--script", str(example), "q"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    records = next(line for line in lines if "tool read_records" in line)
    assert " ok (" in records and "1 artifacts" in records
    assert "tool count_records ok" in result.output
    assert "$pbkdf2" not in result.output and "password_hash:" not in result.output
    answer = "There are four customers; their password hashes are withheld by the tool."
    assert lines.count(answer) == 1  # streamed as it came, then not printed again
    assert lines[-1] == "completed; 0 tokens; cost unknown"


def test_a_missing_workspace_file_is_a_clear_error(tmp_path: Path) -> None:
    args = [
        "run",
        "--workspace",
        str(tmp_path / "none.toml"),
        "--script",
        str(script(tmp_path)),
        "q",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "none.toml" in result.output and "Traceback" not in result.output


def test_a_decision_step_names_who_and_why_never_the_input() -> None:
    from toolwire.cli.show import step_line
    from toolwire.policy.trace import DecisionStep

    def line(decision: str, reason: str | None) -> str:
        step = DecisionStep(round=2, decision=decision, decided_by="ann\x1b[2J",
                            decision_reason=reason, turn_digest="d" * 32,
                            decided_at="2026-12-01T10:00:00+00:00")  # fmt: skip
        return step_line(step).plain

    assert line("approve", "looks right") == "[round 2]   approved by ann\\x1b[2J: looks right"
    assert line("deny", None) == "[round 2]   denied by ann\\x1b[2J"
    assert line("input", None) == "[round 2]   answered by ann\\x1b[2J"


def test_a_context_step_says_what_left_and_the_tokens_before_and_after() -> None:
    from toolwire.cli.show import step_line
    from toolwire.policy.trace import ContextStep

    step = ContextStep(round=12, dropped_exchanges=3, dropped_messages=7,
                       tokens_before=131_000, tokens_after=118_250, context_window=128_000,
                       reserved_tokens=4096)  # fmt: skip
    assert step_line(step).plain == (
        "[round 12] ✂ context: dropped 3 old exchanges (7 messages), about 131,000 → 118,250 "
        "tokens of a 128,000-token window"
    )
    one = step._replace(dropped_exchanges=1, dropped_messages=2)
    assert "dropped 1 old exchange (2 messages)," in step_line(one).plain


def test_a_pause_shows_every_previewed_call_and_the_input_it_asks_for() -> None:
    from toolwire.cli.show import WHITESPACE_LEGEND, pause_lines
    from toolwire.core.lifecycle import RunStatus
    from toolwire.core.messages import ToolCall
    from toolwire.loop.state import CallPreview, Pause

    pause = Pause(
        status=RunStatus.AWAITING_INPUT,
        calls=(ToolCall("c1", "paint", "{}"),),
        previews=(CallPreview(index=0, tool="paint", lines=("paint:", "  colour: \x1b[31m")),),
        digest="f" * 32,
        input_tool="paint",
        input_schema={"type": "object"},
    )
    assert [t.plain for t in pause_lines(pause)] == [
        f"waiting for input · turn {'f' * 32}",
        "  call 1: paint",
        "    paint:",
        "    ··colour: \\x1b[31m",
        "  " + WHITESPACE_LEGEND,
        '  input for paint: {"type":"object"}',
    ]


WHERE = """
    import threading
    from toolwire import tool

    threads = []

    @tool(group="plugin", data_class="public")
    def where() -> str:
        threads.append(threading.get_ident())
        return "here"
"""


def test_run_runs_a_plain_def_tool_on_the_thread_of_its_event_loop(
    tmp_path: Path, on_path: Path
) -> None:
    import threading

    plugin(on_path, WHERE, "where = twplugin:where")
    text = "turns:\n  - tool_calls: [{name: where}]\n  - content: done\n"
    result = runner.invoke(app, ["run", "--script", str(script(tmp_path, text)), "q"])
    assert result.exit_code == 0, result.output
    import twplugin  # type: ignore[import-not-found]  # written by the test

    # The command's run has its event loop to itself, on this thread: no hand-off to a worker.
    assert twplugin.threads == [threading.get_ident()]
