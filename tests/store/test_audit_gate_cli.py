"""``python -m toolwire audit --gate`` as a real process, on SQLite and PostgreSQL: only that
gate's decisions, each line with how many it stands for; a value that is no gate is a usage
error naming the gates."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from toolwire.loop.governance import Gate

from ..governed import governed_run
from .conftest import Backend
from .test_audit_cli import words
from .test_gate_counts import ADMIN_ONLY, WORKSPACE_ONLY, plain_run


def audit(backend: Backend, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")},
           "COLUMNS": "200"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "toolwire", "audit", "--db", backend.url, *args],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def test_the_gate_filter_lists_only_that_gate_with_each_row_counted(backend: Backend) -> None:
    store = backend.open()
    _, governed = governed_run(store)
    plain = plain_run(store)
    store.flush()
    done = audit(backend, "--gate", "offer")
    assert done.returncode == 0, done.stderr
    fields = [re.split(r"  +", line) for line in done.stdout.splitlines()[1:]]  # the header
    assert [(f[1], f[3], f[4], f[5]) for f in fields] == [
        (plain[:8], "offer/requires_admin", str(len(ADMIN_ONLY)), "-"),
        (plain[:8], "offer/no_workspace", str(len(WORKSPACE_ONLY)), "-"),
        (governed.run_id[:8], "offer/not_registered", "1", "ghost"),
        (governed.run_id[:8], "offer/disabled", "1", "off_tool"),
        (governed.run_id[:8], "offer/requires_admin", "1", "admin_tool"),
        (governed.run_id[:8], "offer/trust_zone", "1", "vault"),
    ]
    tools = ", ".join(ADMIN_ONLY)  # a line cuts a long detail; --json has it whole
    assert fields[0][-1] == tools[:160] + "…"
    offers = json.loads(audit(backend, "--gate", "offer", "--run", plain, "--json").stdout)
    assert [(r["reason"], r["count"], r["detail"]) for r in offers] == [
        ("requires_admin", len(ADMIN_ONLY), tools),
        ("no_workspace", len(WORKSPACE_ONLY), ", ".join(WORKSPACE_ONLY)),
    ]
    as_json = json.loads(audit(backend, "--gate", "approval", "--json").stdout)
    assert [(r["gate"], r["reason"], r["actor"], r["count"]) for r in as_json] == [
        ("approval", "denied", "ann", 1)
    ]
    none = audit(backend, "--gate", "rounds")
    assert (none.returncode, none.stdout) == (0, "no gate decisions recorded that match\n")


def test_a_value_that_is_no_gate_is_a_usage_error_naming_the_gates(backend: Backend) -> None:
    backend.open()
    done = audit(backend, "--gate", "offers")
    assert done.returncode == 2 and done.stdout == ""
    names = ", ".join(Gate)
    assert names == "offer, call, approval, context, budget, egress, rounds"
    assert f"invalid value for '--gate': 'offers' is not a gate: choose one of {names}" in words(
        done.stderr
    )
    assert "Traceback" not in done.stderr
    help_text = words(audit(backend, "--help").stdout)
    assert "offer, call, approval, context, budget or rounds" in help_text
