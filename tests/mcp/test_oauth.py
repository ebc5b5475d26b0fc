"""An MCP server that asks for OAuth: the auth table checked at load, a run that cannot sign
in saying how to, a sign-in through the loopback callback (the library's and the command
line's), tokens kept private and reused, and refusals named without a secret in them.

The server (``servers/oauth_notes.py``) is its own authorization server on loopback; the
person who signs in is a headless browser that follows its redirect back to toolwire."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from toolwire.core.errors import ConfigError
from toolwire.mcp.auth import token_path
from toolwire.mcp.connection import Connection, McpFailure
from toolwire.mcp.sign_in import DONE_TEXT, LoopbackSignIn
from toolwire.workspace.mcp_auth import McpAuth

from ..documented import blocks
from ..served import free_port
from .kit import answers, http_server, remote_registry, run, workspace

SECRET = "machine-secret-5f0c2a9e"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with http_server("oauth_notes.py", SECRET) as url:
        yield url


def notes(url: str, folder: Path, auth: str) -> str:
    return f"""
data_dir = "{folder}"

[mcp_servers.notes]
url = "{url}"
enabled = true
data_class = "public"

[mcp_servers.notes.auth]
{auth}
"""


async def browse(url: str) -> None:
    """The person: opens the URL, and follows the authorization server's redirect back."""
    async with httpx.AsyncClient(timeout=20) as web:
        answer = await web.get(url)
        page = await web.get(answer.headers["location"])
        assert page.text.endswith(f"<p>{DONE_TEXT}</p>")


def test_an_auth_table_is_read_with_its_defaults(tmp_path: Path) -> None:
    ws = workspace(tmp_path, notes("https://mcp.example.com/mcp", tmp_path, 'kind = "oauth"'))
    (server,) = ws.mcp_servers
    assert server.auth == McpAuth(kind="oauth", redirect_port=8767, tokens=tmp_path,
                                  source=str(tmp_path / "w.toml"))  # fmt: skip
    machine = workspace(tmp_path, notes("https://mcp.example.com/mcp", tmp_path, """
kind = "client_credentials"
client_id = "machine"
client_secret_env = "MACHINE_SECRET"
scopes = ["notes:read", "notes:write"]
issuer = "https://auth.example.com"
"""))  # fmt: skip
    (auth,) = [s.auth for s in machine.mcp_servers]
    assert auth is not None
    assert (auth.token_endpoint_auth, auth.scopes) == ("client_secret_basic",
                                                       ("notes:read", "notes:write"))  # fmt: skip


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ('kind = "oauth"\nclient_secret_env = "sk-live 4f9a"',
         'client_secret_env: the name of the environment variable holding the secret, not the '
         "secret itself"),
        ('kind = "oauth"\nscopes = ["a"]', 'auth.scopes: not a setting of kind "oauth"'),
        ('kind = "client_credentials"\nclient_id = "m"\nredirect_port = 9000',
         'auth.redirect_port: not a setting of kind "client_credentials"'),
        ('kind = "client_credentials"\nclient_id = "m"',
         "auth: give either client_secret_env or private_key_env (private_key_jwt), not both"),
        ('kind = "client_credentials"\nclient_secret_env = "S"',
         "auth.client_id: a client_credentials client needs its client_id"),
        ('kind = "oauth"\nclient_secret_env = "S"', "give its client_id too"),
        ('kind = "oauth"\nclient_metadata_url = "https://example.com"',
         "auth.client_metadata_url: an https URL with a path"),
        ('kind = "password"', "mcp_servers.notes.auth.kind: Input should be 'oauth' or"),
        ('kind = "oauth"\nsecret = "x"', "mcp_servers.notes.auth.secret: unknown key"),
    ],
)  # fmt: skip
def test_a_wrong_auth_table_is_an_error_naming_the_file_and_key(
    tmp_path: Path, auth: str, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        workspace(tmp_path, notes("https://mcp.example.com/mcp", tmp_path, auth))
    assert str(refused.value).startswith(f"{tmp_path / 'w.toml'}: ")
    assert message in str(refused.value)
    assert "sk-live" not in str(refused.value)


def test_a_stdio_server_takes_no_auth_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"mcp_servers.time.auth: not a setting of a stdio"):
        workspace(tmp_path, '[mcp_servers.time]\ncommand = "x"\n[mcp_servers.time.auth]\n'
                  'kind = "oauth"\n')  # fmt: skip


def test_a_run_that_cannot_sign_in_says_how_to(server: str, tmp_path: Path) -> None:
    ws = workspace(tmp_path, notes(server, tmp_path, 'kind = "oauth"'))
    registry, problems = remote_registry(ws)
    assert len(registry) == 0
    assert problems == [
        f'MCP server "notes": no tools: notes: the server needs a sign-in (OAuth): sign in once '
        f"with `toolwire mcp-login notes --workspace {tmp_path / 'w.toml'}`, then run again"
    ]


def test_a_sign_in_keeps_private_tokens_that_later_runs_use(
    server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = f'kind = "oauth"\nredirect_port = {free_port()}'
    ws = workspace(tmp_path, notes(server, tmp_path, auth))
    (notes_server,) = ws.mcp_servers
    launch = notes_server.launch(os.environ)
    assert notes_server.auth is not None
    sign_in = LoopbackSignIn("notes", notes_server.auth.redirect_port, show=browse)

    async def sign_in_once() -> list[str]:
        connection = Connection(launch, sign_in=sign_in)
        try:
            return [tool.name for tool in await connection.list_tools()]
        finally:
            await connection.close()

    assert asyncio.run(sign_in_once()) == ["add"]
    kept = token_path(launch)
    assert kept.parent == tmp_path / "mcp-auth"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    stored = json.loads(kept.read_text())
    assert stored["tokens"]["access_token"].startswith("at-")
    assert stored["client"]["client_id"].startswith("registered-")
    # A run, with nobody to sign in, uses the kept tokens.
    registry, problems = remote_registry(workspace(tmp_path, notes(server, tmp_path, auth)))
    assert (problems, registry.names()) == ([], ["notes__add"])
    result = run(registry, [[{"name": "notes__add", "arguments": {"a": 2, "b": 3}}]],
                 trust_zone="external_global")  # fmt: skip
    assert answers(result) == [("notes__add", "5", False)]
    held = (stored["tokens"]["access_token"], stored["tokens"]["refresh_token"])
    assert all(token not in repr(result) + str(result.trace) + caplog.text for token in held)


def test_a_refused_secret_is_named_with_its_status_and_never_shown(
    server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = 'kind = "client_credentials"\nclient_id = "machine"\nclient_secret_env = "MACHINE"'
    ws = workspace(tmp_path, notes(server, tmp_path, auth), environ={"MACHINE": "wrong-4d2c1b"})
    registry, problems = remote_registry(ws)
    assert len(registry) == 0
    (problem,) = problems
    assert problem.startswith(
        'MCP server "notes": no tools: notes: the authorization server refused the token '
        "request (HTTP 401): invalid_client: refused what was sent: Basic "
    )
    encoded = "bWFjaGluZTp3cm9uZy00ZDJjMWI"  # machine:wrong-4d2c1b, as Basic sends it
    assert "wrong-4d2c1b" not in problem and encoded not in problem
    assert "invalid_client" in caplog.text
    assert "wrong-4d2c1b" not in caplog.text and encoded not in caplog.text


def test_the_client_credentials_grant_signs_in_with_nobody_there(
    server: str, tmp_path: Path
) -> None:
    auth = 'kind = "client_credentials"\nclient_id = "machine"\nclient_secret_env = "MACHINE"'
    ws = workspace(tmp_path, notes(server, tmp_path, auth), environ={"MACHINE": SECRET})
    registry, problems = remote_registry(ws)
    assert (problems, registry.names()) == ([], ["notes__add"])
    (launch,) = {tool.launch for tool in registry}  # type: ignore[attr-defined]
    assert SECRET not in token_path(launch).read_text()  # the tokens only, never the secret


def test_the_login_command_prints_the_address_and_keeps_the_tokens(
    server: str, tmp_path: Path
) -> None:
    port = free_port()
    workspace(tmp_path, notes(server, tmp_path, f'kind = "oauth"\nredirect_port = {port}'))
    command = [sys.executable, "-m", "toolwire", "mcp-login", "notes", "--workspace",
               str(tmp_path / "w.toml"), "--timeout", "60"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if line.startswith("http://127.0.0.1:"):
            asyncio.run(browse(line.strip()))
            break
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, "".join(lines) + err
    assert lines[0].startswith("Open this address in a browser to sign in")
    assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in lines[-1]
    assert out.startswith("signed in to notes: it lists 1 tools; the tokens are kept in ")
    kept = Path(out.rsplit(" ", 1)[1].strip())
    assert kept.parent == tmp_path / "mcp-auth"
    tokens = json.loads(kept.read_text())["tokens"]
    shown = "".join(lines) + out + err
    assert tokens["access_token"] not in shown and tokens["refresh_token"] not in shown


def test_the_login_command_names_a_server_the_workspace_lacks(tmp_path: Path) -> None:
    workspace(tmp_path, notes("https://mcp.example.com/mcp", tmp_path, 'kind = "oauth"'))
    done = subprocess.run([sys.executable, "-m", "toolwire", "mcp-login", "docs", "--workspace",
                           str(tmp_path / "w.toml")], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"error: {tmp_path / 'w.toml'}: no MCP server is named 'docs' (it "
                           "has: notes)\n")  # fmt: skip


def test_an_unauthorized_call_gives_the_model_the_fixed_text() -> None:
    from toolwire.mcp.remote import failure_text

    text = failure_text(McpFailure("unauthorized", "notes: token at-1 refused"), "notes__add", 5)
    assert text == ('Error: the server of tool "notes__add" refused toolwire\'s sign-in; '
                    "nothing was executed. The operator has to sign in to it again.")  # fmt: skip


def test_an_expired_token_is_refreshed_before_it_is_sent(server: str, tmp_path: Path) -> None:
    auth = f'kind = "oauth"\nredirect_port = {free_port()}'
    (notes_server,) = workspace(tmp_path, notes(server, tmp_path, auth)).mcp_servers
    launch = notes_server.launch(os.environ)
    sign_in = LoopbackSignIn("notes", int(auth.rsplit(" ", 1)[1]), show=browse)

    async def listed(sign_in: LoopbackSignIn | None) -> list[str]:
        connection = Connection(launch, sign_in=sign_in)
        try:
            return [tool.name for tool in await connection.list_tools()]
        finally:
            await connection.close()

    assert asyncio.run(listed(sign_in)) == ["add"]
    kept = token_path(launch)
    stored = json.loads(kept.read_text())
    # The server would refuse this token; it expired an hour ago, and the refresh token works.
    stored["tokens"]["access_token"], stored["expires_at"] = "at-expired", time.time() - 3600
    kept.write_text(json.dumps(stored))
    assert asyncio.run(listed(None)) == ["add"]  # nobody signed in: the refresh did it
    refreshed = json.loads(kept.read_text())
    assert refreshed["tokens"]["access_token"] not in (
        "at-expired",
        stored["tokens"]["access_token"],
    )
    assert refreshed["expires_at"] > time.time() + 3000


def test_the_documented_auth_tables_load_as_written(tmp_path: Path) -> None:
    (toml,) = [b.code for b in blocks("toml") if b.page.name == "workspace.md"
               and "[mcp_servers.docs.auth]" in b.code]  # fmt: skip
    docs, reports = workspace(tmp_path, toml).mcp_servers
    assert docs.auth is not None and reports.auth is not None
    assert (docs.auth.kind, docs.auth.redirect_port) == ("oauth", 8767)
    assert (reports.auth.kind, reports.auth.client_secret_env, reports.auth.scopes) == (
        "client_credentials", "REPORTS_CLIENT_SECRET", ("reports:read",))  # fmt: skip
    (line,) = [line for b in blocks("console") for line in b.code.splitlines()
               if line.startswith("$ toolwire mcp-login")]  # fmt: skip
    assert line == "$ toolwire mcp-login docs --workspace workspace.toml"  # as the test above runs


def test_tokens_revoked_mid_session_fail_the_call_as_unauthorized(
    server: str, tmp_path: Path
) -> None:
    port = free_port()
    (notes_server,) = workspace(tmp_path, notes(server, tmp_path, f'kind = "oauth"\n'
                                                f"redirect_port = {port}")).mcp_servers  # fmt: skip
    launch = notes_server.launch(os.environ)

    async def sign_in_then_lose_it() -> McpFailure:
        signed_in = Connection(launch, sign_in=LoopbackSignIn("notes", port, show=browse))
        await signed_in.list_tools()
        await signed_in.close()
        connection = Connection(launch)  # a run's: nobody to sign in
        try:
            await connection.list_tools()
            async with httpx.AsyncClient() as web:
                await web.post(server.removesuffix("/mcp") + "/forget")
            with pytest.raises(McpFailure) as refused:
                await connection.call("add", {"a": 1, "b": 2})
            return refused.value
        finally:
            await connection.close()

    failure = asyncio.run(sign_in_then_lose_it())
    assert failure.kind == "unauthorized"
    assert str(failure).startswith("notes: the server needs a sign-in (OAuth): sign in once with "
                                   "`toolwire mcp-login notes --workspace ")  # fmt: skip
    assert str(failure).endswith(", during the call of 'add'")
