"""``toolwire audit`` on SQLite and PostgreSQL: the governance log of a scripted run, its
filters, its JSON, and a clear error for a time it cannot read."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from toolwire import ScriptedProvider
from toolwire.cli import audit  # noqa: F401  (registers the command)
from toolwire.cli.app import app
from toolwire.policy.privacy import PrivacyLevel

from ..fakes import call
from ..governed import EXPECTED, governed_run
from .conftest import Backend
from .helpers import run


def audit_of(backend: Backend, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["audit", "--db", backend.url, *args])
    return result.exit_code, result.stdout, result.stderr


def words(text: str) -> str:
    """A usage error's text without the box it is drawn in."""
    return " ".join(text.translate(str.maketrans("│╭╮╰╯─", "      ")).split())


def test_audit_lists_each_refusal_of_a_scripted_run_newest_first(backend: Backend) -> None:
    _, ended = governed_run(backend.open())
    code, out, _ = audit_of(backend)
    assert code == 0
    header, *lines = out.splitlines()
    assert header.split() == ["AT", "RUN", "ROUND", "GATE/REASON", "COUNT", "TOOL", "BY", "DETAIL"]
    assert len(lines) == len(EXPECTED)
    rows = [re.split(r"  +", line) for line in lines]
    for fields, (gate, reason, actor, tool) in zip(rows, reversed(EXPECTED), strict=True):
        assert fields[1] == ended.run_id[:8]
        assert fields[3:7] == [f"{gate}/{reason}", "1", tool or "-", actor]
    assert rows[-1][2] == "1" and rows[0][2] == "4"
    assert lines[0].endswith("after 4 rounds, 110 tokens")


def test_audit_filters_and_prints_json(backend: Backend) -> None:
    _, ended = governed_run(backend.open())
    code, out, _ = audit_of(backend, "--tool", "lookup", "--reason", "not_an_object", "--json")
    assert code == 0
    (row,) = json.loads(out)
    assert row | {"at": "", "sequence": 0} == {
        "run_id": ended.run_id, "sequence": 0, "at": "", "round": 2, "gate": "call",
        "reason": "not_an_object", "actor": "runtime", "tool": "lookup", "detail": None,
        "count": 1,
    }  # fmt: skip
    code, out, _ = audit_of(backend, "--run", ended.run_id[:10], "--since", "1h", "--json")
    assert code == 0 and len(json.loads(out)) == len(EXPECTED)
    code, out, _ = audit_of(backend, "--since", "2999-01-01")
    assert (code, out) == (0, "no gate decisions recorded that match\n")
    code, out, _ = audit_of(backend, "--limit", "2", "--json")
    assert [r["reason"] for r in json.loads(out)] == ["budget_exhausted", "denied"]


def test_an_unreadable_time_or_run_is_a_clear_error(backend: Backend) -> None:
    code, _, err = audit_of(backend, "--since", "yesterday")
    assert code == 2
    assert "'yesterday' is neither a duration (30m, 12h, 7d, 2w) nor an ISO 8601" in words(err)
    code, out, err = audit_of(backend, "--run", "ffff")
    assert (code, out, err) == (1, "", "error: no run with id ffff\n")
    code, _, err = audit_of(backend, "--tool", "")
    assert code == 2 and "give 1 to 255 characters" in words(err)


def test_a_model_chosen_tool_name_reaches_the_terminal_harmless(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.FULL)  # below redacted the name is kept as a digest
    hostile = "x\x1b[2J\x9bname"
    run(store, ScriptedProvider.from_turns([{"tool_calls": [call(hostile)]}, {"content": "ok"}]))
    code, out, _ = audit_of(backend)
    assert code == 0
    assert "x\\x1b[2J\\x9bname" in out and "\x1b" not in out and "\x9b" not in out


def test_an_empty_log_says_so(backend: Backend) -> None:
    backend.open()
    assert audit_of(backend)[:2] == (0, "no gate decisions recorded\n")
