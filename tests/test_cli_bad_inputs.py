"""The command-line conventions (``docs/cli-conventions.md``) over every command, through real
``python -m toolwire`` processes.

A table walks each command's bad inputs: each is a usage error (exit status 2) of one
``error:`` line on stderr naming what was wrong and its choices, nothing on stdout, no
traceback and no validator's prefix. A test checks that the table covers every command, so a
new command cannot skip it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.tools.registry import ToolRegistry

from .test_cli_conventions import answers, tw
from .test_cli_suspend import Shop, run_id_of

PRIVACY = "choose one of none, metadata, redacted, full"
ZONES = "choose one of local, private_hosted, external_eu, external_global"
PROVIDERS = "choose one of openai, openai-responses, anthropic, gemini,"
WHEN = "neither a duration (30m, 12h, 7d, 2w) nor an ISO 8601 date or time"
NO_UNIT = "'30' has no unit: write 30d for days"

# (arguments, what the error line says). `{db}` is a store in the test's folder.
BAD_INPUTS = [
    (("run", "q", "--provider", "openia"), f"invalid value for '--provider': unknown provider "
     f"'openia'; {PROVIDERS}"),
    (("run", "q", "--trust-zone", "locall"), f"'--trust-zone': unknown trust zone 'locall': "
     f"{ZONES}"),
    (("run", "q", "--privacy", "ful"), f"'--privacy': unknown privacy level 'ful': {PRIVACY}"),
    (("run", "q", "--reasoning", "extreme"), "'--reasoning': 'extreme' is neither low, medium, "
     "high nor a token budget"),
    (("run", "q", "--max-tokens-field", "max"), "'--max-tokens-field'"),
    (("run", "q", "--region", "eu-west-1.evil.example"), "'--region': 'eu-west-1.evil.example' "
     "is not an AWS region (eu-west-1)"),
    (("run", "q", "--max-rounds", "0"), "'--max-rounds'"),
    (("run", "q", "--max-cost", "-1"), "'--max-cost': a budget in dollars must be a positive"),
    (("run",), "missing argument 'PROMPT'"),
    (("run", "q", "--pirvacy", "full"), "no such option: --pirvacy"),
    (("demo", "--privacy", "ful"), f"'--privacy': unknown privacy level 'ful': {PRIVACY}"),
    (("demo", "--provider", "openia"), f"'--provider': unknown provider 'openia'; {PROVIDERS}"),
    (("demo", "--trust-zone", "locall"), f"'--trust-zone': unknown trust zone 'locall': {ZONES}"),
    (("demo", "--reasoning", "extreme"), "'--reasoning': 'extreme' is neither"),
    (("demo", "--region", "moon"), "'--region': 'moon' is not an AWS region (eu-west-1)"),
    (("serve", "--region", "moon"), "'--region': 'moon' is not an AWS region (eu-west-1)"),
    (("serve", "--privacy", "ful"), f"'--privacy': unknown privacy level 'ful': {PRIVACY}"),
    (("serve", "--provider", "openia"), f"'--provider': unknown provider 'openia'; {PROVIDERS}"),
    (("serve", "--trust-zone", "locall"), f"'--trust-zone': unknown trust zone 'locall': {ZONES}"),
    (("serve", "--port", "0"), "'--port'"),
    (("mcp", "--trust-zone", "locall"), f"'--trust-zone': unknown trust zone 'locall': {ZONES}"),
    (("mcp", "--privacy", "ful"), f"'--privacy': unknown privacy level 'ful': {PRIVACY}"),
    (("mcp-login", "docs", "--workspace", "w.toml", "--timeout", "0"), "'--timeout'"),
    (("mcp-login", "--workspace", "w.toml"), "missing argument 'NAME'"),
    (("worker", "--concurrency", "0"), "'--concurrency'"),
    (("workers", "--recover-after", "0"), "'--recover-after'"),
    (("tools", "--jsn"), "no such option: --jsn"),
    (("examples", "--frce"), "no such option: --frce"),
    (("audit", "--reason", "bogus"), "'--reason': 'bogus' is no reason; choose one of "
     "approval_missing, approved, budget_exhausted,"),
    (("audit", "--since", "soon"), f"'--since': 'soon' is {WHEN}"),
    (("audit", "--since", "30"), f"'--since': {NO_UNIT}"),
    (("audit", "--limit", "0"), "'--limit'"),
    (("egress", "--by", "colour"), "'--by': 'colour' is not a grouping: choose from provider, "
     "tool, class, label, or none"),
    (("egress", "--until", "30"), f"'--until': {NO_UNIT}"),
    (("run", "--max-egress-bytes", "-1", "q"), "'--max-egress-bytes'"),
    (("runs", "list", "--since", "last tuesday"), f"'--since': 'last tuesday' is {WHEN}"),
    (("runs", "list", "--until", "30"), f"'--until': {NO_UNIT}"),
    (("runs", "list", "--sort", "colour", "--db", "{db}"), "unknown sort 'colour': choose one "
     "of"),
    (("runs", "list", "--status", "bogus", "--db", "{db}"), "unknown status 'bogus': choose "
     "from"),
    (("runs", "list", "--privacy", "ful", "--db", "{db}"), f"unknown privacy level 'ful': "
     f"{PRIVACY}"),
    (("runs", "list", "--limit", "x"), "'--limit'"),
    (("runs", "show"), "missing argument 'RUN_ID'"),
    (("runs", "export", "--since", "30"), f"'--since': {NO_UNIT}"),
    (("runs", "purge", "--older-than", "30"), f"'--older-than': {NO_UNIT}"),
    (("runs", "purge", "--older-than", "soon", "--yes"), f"'--older-than': 'soon' is {WHEN}"),
    (("runs", "purge"), "missing option '--older-than'"),
    (("runs", "pending", "--bogus"), "no such option: --bogus"),
    (("runs", "approve"), "missing argument 'RUN_ID'"),
    (("runs", "deny"), "missing argument 'RUN_ID'"),
    (("runs", "input", "abc"), "give exactly one of --json OBJECT, --decline or --cancel"),
    (("runs", "input", "abc", "--decline", "--cancel"), "give exactly one of --json OBJECT"),
    (("runs", "input", "abc", "--json", "[1]"), "--json is not a JSON object"),
    (("runs", "cancel"), "missing argument 'RUN_ID'"),
]  # fmt: skip


def command_of(args: tuple[str, ...]) -> str:
    """``toolwire runs list`` for ``("runs", "list", "--sort", ...)``."""
    words = ["toolwire", args[0]]
    if args[0] == "runs":
        words.append(args[1])
    return " ".join(words)


@pytest.mark.parametrize(("args", "says"), BAD_INPUTS, ids=lambda v: " ".join(v)[:40])
def test_a_bad_input_is_one_usage_error_line(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    done = tw(tmp_path, *(a.replace("{db}", str(tmp_path / "runs.db")) for a in args))
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and says in line, line
    assert line.endswith(f" (see {command_of(args)} --help)"), line
    assert "Value error" not in line and "Traceback" not in done.stderr


def every_command() -> list[str]:
    """Every command's name (``runs list`` for a subcommand), as the command line has them."""
    code = (
        "from toolwire.cli.app import command\n"
        "root = command()\n"
        "for name, cmd in root.commands.items():\n"
        "    subs = getattr(cmd, 'commands', None)\n"
        "    print('\\n'.join(f'{name} {s}' for s in subs) if subs else name)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split("\n")[:-1]


def test_the_table_walks_every_command() -> None:
    walked = {command_of(args).removeprefix("toolwire ") for args, _ in BAD_INPUTS}
    assert sorted(set(every_command()) - walked) == []


HELP_WALK = """
import re, sys
from toolwire.cli.app import command
root = command()
def helps(cmd, path):
    yield path, cmd
    for name, child in getattr(cmd, "commands", {}).items():
        yield from helps(child, [*path, name])
for path, cmd in helps(root, []):
    ctx = cmd.make_context(" ".join(["toolwire", *path]), [], resilient_parsing=True)
    print("=== " + " ".join(path))
    print(cmd.get_help(ctx))
"""


def test_help_names_every_value_and_lists_every_subcommand(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", HELP_WALK], capture_output=True, text=True,
                          check=True, env=env)  # fmt: skip
    pages = dict(re.findall(r"=== (.*)\n((?:(?!=== ).*\n)*)", done.stdout))
    assert len(pages) == len(every_command()) + 2  # the root and the runs group
    for path, page in pages.items():
        assert not re.search(r"<\w[\w| \[\]]*>|\{\w+\}", page), (path, page)
    run = pages["run"]
    assert "toolwire run [OPTIONS] PROMPT" in run
    assert re.search(r"--db +STORE ", run) and re.search(r"--max-rounds +N ", run)
    assert re.search(r"--json +Print", run)  # a flag takes no value
    runs = pages["runs"]
    summary = runs.split("Options")[0]
    subcommands = [name.removeprefix("runs ") for name in every_command() if name[:5] == "runs "]
    for name in subcommands:
        assert re.search(rf"\b{name}\b", summary), (name, summary)  # in the group's own line
        assert re.search(rf"│ {name} ", runs), name  # and in its list of commands


def test_a_runtime_failure_is_one_error_line_with_status_1(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    failures = [
        ("runs", "show", "0000", "--db", store),
        ("runs", "cancel", "0000", "--db", store),
        ("runs", "approve", "0000", "--db", store),
        ("audit", "--run", "0000", "--db", store),
        ("run", "q", "--script", str(tmp_path / "none.yaml")),
    ]
    for args in failures:
        done = tw(tmp_path, *args)
        assert (done.returncode, done.stdout) == (1, ""), (args, done.stderr)
        (line,) = done.stderr.splitlines()
        assert line.startswith("error: "), (args, line)


def stored_runs(tmp_path: Path, count: int) -> list[str]:
    with RunStore.open(str(tmp_path / "runs.db")) as store:
        runtime = Runtime(ToolRegistry(), recorder=store)
        return [runtime.run_sync(RunRequest.of("q", provider=answers())).run_id
                for _ in range(count)]  # fmt: skip


def test_every_command_taking_a_run_id_takes_a_prefix_and_refuses_an_ambiguous_one(
    tmp_path: Path,
) -> None:
    ids = stored_runs(tmp_path, 17)  # two of them share a first hex digit
    store = str(tmp_path / "runs.db")
    first = next(i[0] for i in ids if sum(j[0] == i[0] for j in ids) > 1)
    sharing = sum(i[0] == first for i in ids)
    for verb in ("show", "approve", "deny", "cancel", "input", "audit"):
        command = ("audit", "--run") if verb == "audit" else ("runs", verb)
        extra = ("--json", "{}") if verb == "input" else ()
        done = tw(tmp_path, *command, first, *extra, "--db", store)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.startswith(f"error: {first} is the start of {sharing} run ids ("), (
            command, done.stderr,
        )  # fmt: skip
    audit = tw(tmp_path, "audit", "--run", ids[0][:8], "--db", store, "--json")
    assert (audit.returncode, json.loads(audit.stdout)) == (0, [])  # a run without tools


def test_the_short_id_runs_list_prints_names_a_run_to_every_command(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    waiting = [run_id_of(shop.run().stdout) for _ in range(2)]
    listed = shop.tw("runs", "list", "--db", shop.db).stdout.splitlines()
    shorts = {line.split()[0] for line in listed[1:]}
    assert shorts == {run_id[:8] for run_id in waiting}
    pending = json.loads(shop.tw("runs", "pending", "--db", shop.db, "--json").stdout)
    assert [(r["id"], r["pending"]["calls"][0]["name"]) for r in pending] == [
        (run_id, "update_record") for run_id in reversed(waiting)
    ]
    shown = shop.tw("runs", "show", waiting[0][:8], "--db", shop.db)
    assert shown.stdout.startswith(f"run {waiting[0]}\n")
    approved = shop.tw("runs", "approve", waiting[0][:8], "--db", shop.db)
    assert approved.returncode == 0, approved.stderr
    cancelled = shop.tw("runs", "cancel", waiting[1][:8], "--db", shop.db)
    assert (cancelled.returncode, cancelled.stdout) == (0, f"run {waiting[1]} cancelled\n")
    assert [shop.status(run_id) for run_id in waiting] == ["completed", "cancelled"]
