"""``toolwire egress`` through the real entry point: a ``toolwire run`` against a loopback model
server, then the run's ledger and the totals, as a table and as JSON, match the tool-result
bytes the server received; ``--max-egress-bytes`` stops the run before the request that would
pass it; bad values are usage errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from toolwire.demo import prepare_demo

from .providers.servers import FakeModel, Turn, loopback
from .providers.test_egress_ledger import received
from .test_cli_run_options import tw

LOCAL = ("--provider", "llama-cpp-python", "--model", "smollm2")  # a local server: no key
TURNS: list[Turn] = [[("list_tables", {})], [("list_tables", {})], "There are four tables."]


def _workspace(tmp_path: Path) -> str:
    return str(prepare_demo(tmp_path / "shop").root / "workspace.toml")


def _run(tmp_path: Path, model: FakeModel, *args: str) -> dict[str, object]:
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  _workspace(tmp_path), "--tool", "list_tables", "--json", *args,
                  "How many tables?")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    outcome: dict[str, object] = json.loads(done.stdout)
    return outcome


def test_a_runs_ledger_is_what_the_server_received(tmp_path: Path) -> None:
    model = FakeModel(TURNS)
    outcome = _run(tmp_path, model)
    sizes = received(c.json() for c in model.captured)
    one = sizes[1]["list_tables"]
    assert [s.get("list_tables", 0) for s in sizes] == [0, one, 2 * one]
    done = tw(tmp_path, "egress", str(outcome["run_id"])[:8], "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"provider": "llama-cpp-python", "tool": "list_tables", "data_class": "configuration",
         "label": "trusted", "new_bytes": 2 * one, "wire_bytes": 3 * one},
    ]  # fmt: skip
    table = tw(tmp_path, "egress", str(outcome["run_id"])).stdout.splitlines()
    assert table[0].split() == ["PROVIDER", "TOOL", "CLASS", "LABEL", "NEW", "WIRE"]
    assert re.split(r"  +", table[1].strip()) == [
        "llama-cpp-python", "list_tables", "configuration", "trusted", str(2 * one), str(3 * one),
    ]  # fmt: skip


def test_totals_over_a_time_range_add_up_every_run(tmp_path: Path) -> None:
    first, second = FakeModel(TURNS), FakeModel(TURNS)
    _run(tmp_path, first)
    _run(tmp_path, second)
    sent = sum(sum(s.values()) for m in (first, second) for s in received(c.json()
               for c in m.captured))  # fmt: skip
    done = tw(tmp_path, "egress", "--since", "1h", "--by", "provider", "--json")
    assert json.loads(done.stdout) == [
        {"provider": "llama-cpp-python", "new_bytes": sent * 2 // 3, "wire_bytes": sent}
    ]
    by_none = tw(tmp_path, "egress", "--by", "none", "--json")
    assert [t["wire_bytes"] for t in json.loads(by_none.stdout)] == [sent]
    none_yet = tw(tmp_path, "egress", "--until", "2000-01-01")
    assert (none_yet.returncode, none_yet.stdout) == (0, "no tool output sent that matches\n")


def test_the_limit_stops_the_run_before_it_sends_more(tmp_path: Path) -> None:
    model = FakeModel(TURNS)
    outcome = _run(tmp_path, model, "--max-egress-bytes", "1")
    assert outcome["reason"] == "egress_limit"
    assert [sum(s.values()) for s in received(c.json() for c in model.captured)] == [0]
    done = tw(tmp_path, "egress", str(outcome["run_id"]), "--json")
    assert json.loads(done.stdout) == []


def test_bad_values_are_usage_errors(tmp_path: Path) -> None:
    by = tw(tmp_path, "egress", "--by", "colour")
    assert by.returncode == 2 and by.stderr.startswith(
        "error: invalid value for '--by': 'colour' is not a grouping"
    )
    since = tw(tmp_path, "egress", "--since", "30")
    assert since.returncode == 2 and "'--since'" in since.stderr
    limit = tw(tmp_path, "run", "--max-egress-bytes", "-1", "q")
    assert limit.returncode == 2 and "'--max-egress-bytes'" in limit.stderr
    missing = tw(tmp_path, "egress", "0000")
    assert (missing.returncode, missing.stderr) == (1, "error: no run with id 0000\n")


def test_a_workspace_limit_holds_whatever_the_run_asks(tmp_path: Path) -> None:
    workspace = Path(_workspace(tmp_path))
    model = FakeModel(TURNS)
    with loopback(model) as base:
        once = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  str(workspace), "--tool", "list_tables", "--json", "q")  # fmt: skip
    one = received([model.captured[1].json()])[0]["list_tables"]
    assert json.loads(once.stdout)["reason"] == "completed"
    with workspace.open("a") as handle:
        handle.write(f"\n[egress]\nmax_run_bytes = {2 * one}\n")  # room for round 2 only
    model = FakeModel(TURNS)
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  str(workspace), "--tool", "list_tables", "--json",
                  "--max-egress-bytes", str(100 * one), "q")  # fmt: skip
    assert json.loads(done.stdout)["reason"] == "egress_limit"
    assert [sum(s.values()) for s in received(c.json() for c in model.captured)] == [0, one]


def test_a_bad_workspace_limit_names_the_file_and_key(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace.toml"
    workspace.write_text("[egress]\nmax_run_bytes = -1\n")
    done = tw(tmp_path, "run", "--workspace", str(workspace), "q")
    assert done.returncode == 1, done.stderr  # as every workspace file's error
    assert f"{workspace}: egress.max_run_bytes: Input should be greater than or equal to 0" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def keyed(tmp_path: Path, *args: str, db: bool = True) -> subprocess.CompletedProcess[str]:
    """``toolwire`` in a process of its own, with a state key: a run may wait and resume."""
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")},
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "200",
        "TOOLWIRE_STATE_KEY": "cd" * 32,
    }
    where = ["--db", str(tmp_path / "runs.sqlite")] if db else []
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args, *where],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def test_a_limit_that_asks_waits_and_an_approval_from_another_process_sends_it(
    tmp_path: Path,
) -> None:
    workspace = Path(_workspace(tmp_path))
    model = FakeModel(TURNS)
    with loopback(model) as base:
        probe = keyed(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--tool",
                      "list_tables", "--workspace", str(workspace), "q")  # fmt: skip
        assert probe.returncode == 0, probe.stdout + probe.stderr
        one = received([model.captured[1].json()])[0]["list_tables"]
        with workspace.open("a") as handle:
            handle.write(f'\n[egress]\nmax_run_bytes = {one}\non_limit = "approve"\n'
                         f"max_workspace_bytes = {100 * one}\n")  # fmt: skip
        model.captured.clear()
        waiting = keyed(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--tool",
                        "list_tables", "--workspace", str(workspace), "q")  # fmt: skip
        assert waiting.returncode == 3, waiting.stdout + waiting.stderr
        assert [sum(s.values()) for s in received(c.json() for c in model.captured)] == [0, one]
        lines = waiting.stdout.splitlines()
        assert (
            "  the next request to llama-cpp-python would send "
            + str(2 * one)
            + (" bytes of tool output")
            in lines
        )
        assert f"  the run's limit: {one} bytes, {one} sent so far" in lines
        run_id = next(ln for ln in lines if ln.startswith("resume it with: ")).split()[6]
        pending = keyed(tmp_path, "runs", "pending", "--json")
        [shown] = json.loads(pending.stdout)
        assert (shown["id"], shown["pending"]["kind"]) == (run_id, "egress")
        assert shown["pending"]["egress"]["request_bytes"] == 2 * one
        wrong = keyed(tmp_path, "runs", "input", run_id, "--json", "{}")
        assert wrong.returncode != 0 and "Traceback" not in wrong.stderr
        assert "waits for approve or deny, not input" in wrong.stdout + wrong.stderr
        approved = keyed(tmp_path, "runs", "approve", run_id)
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert [sum(s.values()) for s in received(c.json() for c in model.captured)] == [
            0, one, 2 * one,
        ]  # fmt: skip
    total = keyed(tmp_path, "egress", "--workspace", str(workspace), "--json")
    assert json.loads(total.stdout) == {
        "workspace": str(workspace), "window_seconds": 86400.0, "wire_bytes": 6 * one,
        "limit_bytes": 100 * one, "on_limit": "approve",
    }  # fmt: skip
    text = keyed(tmp_path, "egress", "--workspace", str(workspace)).stdout
    assert text == (f"workspace {workspace}: {6 * one} bytes of tool output sent in the last "
                    f"1d, of its limit of {100 * one} bytes\n")  # fmt: skip


def test_bad_egress_settings_name_the_file_and_key(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace.toml"
    for body, said in [
        ('on_limit = "ask"', "egress.on_limit: Input should be 'stop' or 'approve'"),
        ('window = "a day"', "egress.window: 'a day' is not a window"),
        ("max_workspace_bytes = -5", "egress.max_workspace_bytes: Input should be greater"),
        ("max_workspace = 5", "egress.max_workspace: unknown key"),
    ]:
        workspace.write_text(f"[egress]\n{body}\n")
        done = tw(tmp_path, "run", "--workspace", str(workspace), "q")
        assert done.returncode == 1 and f"{workspace}: {said}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    option = tw(tmp_path, "run", "--on-egress-limit", "ask", "q")
    assert option.returncode == 2 and "'--on-egress-limit'" in option.stderr


def test_a_run_nobody_can_resume_stops_at_a_limit_that_would_ask(tmp_path: Path) -> None:
    model = FakeModel(TURNS)
    with loopback(model) as base:
        done = keyed(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                     _workspace(tmp_path), "--tool", "list_tables", "--json", "--no-store",
                     "--max-egress-bytes", "1", "--on-egress-limit", "approve", "q",
                     db=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["reason"] == "egress_limit"  # no terminal, no store: stop
    assert [sum(s.values()) for s in received(c.json() for c in model.captured)] == [0]


def test_each_command_says_what_its_time_range_keeps(tmp_path: Path) -> None:
    """One option builder, each command's own words: requests sent, or runs created."""
    egress, listed = tw(tmp_path, "egress", "--help"), tw(tmp_path, "runs", "list", "--help")
    assert "Only requests sent at or after this: a duration" in egress.stdout
    assert "Only requests sent before this: a duration" in egress.stdout
    assert "Runs created at or after this: a duration" in listed.stdout
    assert "Runs created before this: a duration" in listed.stdout
    assert "Runs created" not in egress.stdout and "requests sent" not in listed.stdout
    bad = tw(tmp_path, "egress", "--since", "yesterday-ish")
    assert bad.returncode == 2 and "'--since'" in bad.stderr
