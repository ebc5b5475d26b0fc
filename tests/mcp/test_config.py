"""MCP servers in the workspace TOML: validated at load, secrets read from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.core.errors import ConfigError
from toolwire.workspace.mcp_servers import DEFAULT_TIMEOUT_S, Launch, McpServer

from .kit import workspace


def test_a_stdio_and_an_http_server_with_their_defaults(tmp_path: Path) -> None:
    (tmp_path / "srv").mkdir()
    ws = workspace(tmp_path, """
[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }
pass_env = ["HOME"]
data_class = "public"
enabled = true
admin_only = false
timeout = 5

[mcp_servers.local-script]
command = "./srv/run.sh"
cwd = "srv"

[mcp_servers.docs_2]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "DOCS_AUTH" }
""")  # fmt: skip
    time, script, docs = ws.mcp_servers
    assert time == McpServer(
        name="time", command="mcp-server-time", args=("--local-timezone", "UTC"),
        env=(("TZ", "UTC"),), pass_env=("HOME",), cwd=tmp_path.resolve(), data_class="public",
        enabled=True, admin_only=False, timeout=5.0,
    )  # fmt: skip
    assert (time.transport, time.group) == ("stdio", "mcp:time")
    assert script.command == str(tmp_path.resolve() / "srv" / "run.sh")  # the file's folder
    assert script.cwd == (tmp_path / "srv").resolve()
    # Off, admin-only, the strictest data class and a minute, unless the file says otherwise.
    assert (script.enabled, script.admin_only, script.data_class, script.timeout) == (
        False, True, "secret_adjacent", DEFAULT_TIMEOUT_S,
    )  # fmt: skip
    assert docs == McpServer(name="docs_2", url="https://mcp.example.com/mcp",
                             headers=(("Authorization", "DOCS_AUTH"),))  # fmt: skip
    assert docs.transport == "http"


def test_secrets_are_read_when_the_server_starts_and_never_shown(tmp_path: Path) -> None:
    ws = workspace(tmp_path, """
[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "DOCS_AUTH", X-Team = "TEAM" }

[mcp_servers.git]
command = "mcp-server-git"
env = { LANG = "C" }
pass_env = ["GIT_TOKEN"]
""")  # fmt: skip
    docs, git = ws.mcp_servers
    environ = {"DOCS_AUTH": "Bearer s3cr3t-value", "TEAM": "blue", "GIT_TOKEN": "ghp-hidden"}
    launch = docs.launch(environ)
    assert launch.headers == (("Authorization", "Bearer s3cr3t-value"), ("X-Team", "blue"))
    assert git.launch(environ).env == (("LANG", "C"), ("GIT_TOKEN", "ghp-hidden"))
    assert "s3cr3t" not in repr(launch) and "ghp-hidden" not in repr(git.launch(environ))
    assert isinstance(launch, Launch) and hash(launch) == hash(docs.launch(dict(environ)))
    with pytest.raises(ConfigError) as missing:
        docs.launch({"TEAM": "blue"})
    assert str(missing.value) == (
        'MCP server "docs": header Authorization: the environment variable DOCS_AUTH is not set'
    )
    with pytest.raises(ConfigError, match='"git": pass_env GIT_TOKEN: the environment variable'):
        git.launch({})


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[mcp_servers."a__b"]\ncommand = "x"', "mcp_servers.a__b: a server name is 1 to 32"),
        ('[mcp_servers."9lives"]\ncommand = "x"', "mcp_servers.9lives: a server name"),
        (f'[mcp_servers.{"n" * 33}]\ncommand = "x"', "a server name is 1 to 32"),
        ("[mcp_servers.x]\ncommand = 'a'\nurl = 'http://h/'", "give either command (a stdio"),
        ("[mcp_servers.x]\nargs = []", "mcp_servers.x: give either command"),
        ("[mcp_servers.x]\ncommand = ' '", "mcp_servers.x.command: empty"),
        ("[mcp_servers.x]\ncommand = 'a'\nheaders = {A = 'B'}",
         "mcp_servers.x.headers: not a setting of a stdio server"),
        ("[mcp_servers.x]\nurl = 'http://h/'\nargs = ['a']",
         "mcp_servers.x.args: not a setting of an HTTP server"),
        ("[mcp_servers.x]\nurl = 'ftp://h/'", "mcp_servers.x.url: must be an http(s) URL"),
        ("[mcp_servers.x]\nurl = 'https://user:hunter2@h/'", "no user info"),
        ("[mcp_servers.x]\nurl = 'http://h/'\nheaders = {Authorization = 'Bearer abc'}",
         "mcp_servers.x.headers.Authorization: 'Bearer abc' is not the name of the environment"),
        ("[mcp_servers.x]\nurl = 'http://h/'\nheaders = {'a b' = 'V'}",
         "mcp_servers.x.headers: 'a b' is not an HTTP header name"),
        ("[mcp_servers.x]\ncommand = 'a'\npass_env = ['A-B']",
         "mcp_servers.x.pass_env: 'A-B' is not an environment variable name"),
        ("[mcp_servers.x]\ncommand = 'a'\ncwd = 'nowhere'", "mcp_servers.x.cwd: "),
        ("[mcp_servers.x]\ncommand = 'a'\ndata_class = 'contnet'",
         "mcp_servers.x.data_class: unknown data class 'contnet'"),
        ("[mcp_servers.x]\ncommand = 'a'\ncomand = 'b'", "mcp_servers.x.comand: unknown key"),
        ("[mcp_servers.x]\ncommand = 'a'\ntimeout = 0", "mcp_servers.x.timeout: Input should be"),
        ("[mcp_servers.x]\ncommand = 'a'\nenabled = 'yes'", "mcp_servers.x.enabled: Input"),
    ],
)  # fmt: skip
def test_a_bad_server_table_is_a_config_error_naming_the_key(
    tmp_path: Path, table: str, message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        workspace(tmp_path, table)
    assert f"{tmp_path / 'w.toml'}: " in str(error.value)
    assert message in str(error.value)
    assert "hunter2" not in str(error.value)


def test_a_workspace_without_servers_has_none(tmp_path: Path) -> None:
    assert workspace(tmp_path, "").mcp_servers == ()
