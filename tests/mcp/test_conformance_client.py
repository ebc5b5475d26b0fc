"""toolwire's MCP client against the official conformance suite's client scenario for
elicitation defaults (SEP-1034): the suite's server asks a question whose every field has a
default, and the client (tests/mcp_conformance/elicitation_client.py, made of toolwire's
connection, form and elicitation modules) accepts the form as shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..mcp_serve.test_conformance import CONFORMANCE, NODE

CLIENT = Path(__file__).parents[1] / "mcp_conformance" / "elicitation_client.py"
SCENARIO = "elicitation-sep1034-client-defaults"
CHECKS = {
    f"client-elicitation-sep1034-{kind}-default"
    for kind in ("string", "integer", "number", "enum", "boolean")
}


def test_the_suite_passes_the_elicitation_defaults_scenario(tmp_path: Path) -> None:
    src = str(Path(__file__).parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [str(NODE), str(CONFORMANCE), "client", "--command", f"{sys.executable} {CLIENT}",
         "--scenario", SCENARIO, "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    found = sorted(tmp_path.rglob("checks.json"))
    assert found, done.stdout + done.stderr
    checks = json.loads(found[-1].read_text())
    failed = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    assert failed == [], json.dumps(failed, indent=1)
    passed = {c["id"] for c in checks if c.get("status") == "SUCCESS"}
    assert passed >= CHECKS, passed
    assert done.returncode == 0, done.stdout + done.stderr
