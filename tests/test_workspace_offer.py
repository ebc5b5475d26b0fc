"""A run offers only tools that can work: without a workspace, the tools that work only on one
are not offered, and the run says so once; with one, every tool is offered as before. Through
the real runtime and loop, and through ``python -m toolwire run`` processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolwire import RunOptions, RunStep, ScriptedProvider, ToolContext, ToolRegistry, User, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.policy.trace import RequestStep, ToolStep
from toolwire.runs.runtime import MemoryRecorder, RunRequest, Runtime
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.policy import Refusal
from toolwire.workspace.config import Workspace

from .fakes import call, only

ADMIN = User("root", is_admin=True)
NOTE = "; 32 tools not offered: no workspace"  # an admin's run: every built-in but one


@tool(group="plugin", data_class="public")
def shout(text: str) -> str:
    """A tool that needs no workspace."""
    return text.upper()


def registry() -> ToolRegistry:
    return ToolRegistry([*builtin_tools(), shout])


def run(workspace: Workspace | None, *turns: dict[str, object]) -> list[RunStep]:
    """The steps of one admin run, in ``workspace`` (None: without one)."""
    steps: list[RunStep] = []
    runtime = Runtime(registry(), recorder=MemoryRecorder())
    provider = ScriptedProvider.from_turns(list(turns) or [{"content": "done"}])
    request = RunRequest.of("q", provider=provider, options=RunOptions(),
                            context=ToolContext(user=ADMIN, workspace=workspace))  # fmt: skip
    outcome = runtime.run_sync(request, observers=[steps.append])
    assert outcome.status is RunStatus.COMPLETED
    return steps


def test_without_a_workspace_only_the_tools_that_need_none_are_offered() -> None:
    steps = run(None)
    request = only(steps[0], RequestStep)
    assert request.tool_specs == ("list_packages", "shout")
    refused = {r["tool"]: r["reason"] for r in request.refusals or ()}
    assert refused == {
        t.spec.name: Refusal.NO_WORKSPACE
        for t in builtin_tools() if t.spec.name != "list_packages" and t.enabled_by_default
    }  # fmt: skip
    assert "read_records" in refused and "shout" not in refused


def test_a_call_of_a_tool_not_offered_for_want_of_a_workspace_is_refused_at_the_seam() -> None:
    steps = run(None, {"tool_calls": [call("read_records", {"table": "t"}), call("shout",
                {"text": "hi"})]}, {"content": "done"})  # fmt: skip
    tools = [s for s in steps if isinstance(s, ToolStep)]
    assert [(t.tool_name, t.tool_refused, t.tool_result) for t in tools] == [
        ("read_records", "not_permitted", 'Error: tool "read_records" not permitted'),
        ("shout", None, "HI"),
    ]  # fmt: skip


def test_with_a_workspace_every_enabled_tool_is_offered_as_before() -> None:
    request = only(run(Workspace())[0], RequestStep)
    enabled = registry().enabled_names()
    assert list(request.tool_specs) == enabled and "read_records" in enabled
    assert not request.refusals


def tw(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")},
           "XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "200"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args, "--db", str(tmp_path / "runs.sqlite")],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text('turns:\n  - tool_calls: [{name: list_packages}]\n  - content: "done"\n')
    return path


def test_the_command_line_says_once_which_tools_a_run_without_a_workspace_is_not_offered(
    tmp_path: Path,
) -> None:
    done = tw(tmp_path, "run", "--admin", "--script", str(script(tmp_path)), "q")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[round 1] → request: 1 messages, 1 tools" + NOTE
    assert "tool list_packages ok" in done.stdout  # a tool needing no workspace still works
    again = [line for line in lines if line.startswith("[round 2] →")]
    assert again == ["[round 2] → request: 3 messages, 1 tools"]  # said once, not per round
    assert done.stdout.count("not offered") == 1 and "Traceback" not in done.stderr


def test_the_command_line_with_a_workspace_offers_every_tool_and_says_nothing(
    tmp_path: Path,
) -> None:
    from toolwire.demo import prepare_demo

    shop = prepare_demo(tmp_path / "demo")
    workspace = str(shop.root / "workspace.toml")
    done = tw(tmp_path, "run", "--admin", "--workspace", workspace, "--script",
              str(script(tmp_path)), "q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    enabled = len(ToolRegistry(builtin_tools()).enabled_names())
    assert done.stdout.splitlines()[0] == f"[round 1] → request: 1 messages, {enabled} tools"
    assert "not offered" not in done.stdout


def test_a_stored_run_says_so_once_as_the_live_run_did(tmp_path: Path) -> None:
    from toolwire.cli.queued import stored_step_line
    from toolwire.cli.show import step_line
    from toolwire.store import RunStore

    store = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        steps: list[RunStep] = []
        provider = ScriptedProvider.from_turns([{"content": "done"}])
        request = RunRequest.of("q", provider=provider,
                                context=ToolContext(user=ADMIN))  # fmt: skip
        outcome = Runtime(registry(), recorder=store).run_sync(request, observers=[steps.append])
        stored = store.get_run(outcome.run_id)
        assert stored is not None
        lines = [stored_step_line(step).plain for step in stored.steps]
    finally:
        store.close()
    live = step_line(steps[0]).plain
    assert lines[0] == live == "[round 1] → request: 1 messages, 2 tools" + NOTE
    assert sum("not offered" in line for line in lines) == 1
