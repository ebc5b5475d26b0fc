"""``toolwire serve``: refusals at the edge, and a real process serving a workspace."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from toolwire.cli.app import app, load_commands
from toolwire.cli.server import inspector_url
from toolwire.demo import prepare_demo
from toolwire.inspector.security import MISDIRECTED
from toolwire.store import RunStore

from .served import free_port, served, served_output, served_process

load_commands()
runner = CliRunner(env={"COLUMNS": "200"})


def test_a_non_loopback_host_needs_allow_remote() -> None:
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "0.0.0.0 is not a loopback address; pass --allow-remote" in result.output


def test_a_missing_workspace_or_script_is_a_clear_error(tmp_path: Path) -> None:
    for option, name in (("--workspace", "ws.toml"), ("--script", "s.yaml")):
        port = str(free_port())  # the refusal comes after the port is bound
        result = runner.invoke(app, ["serve", option, str(tmp_path / name), "--port", port])
        assert result.exit_code == 1
        assert name in result.output and "Traceback" not in result.output


def test_the_url_holds_the_token_in_its_fragment() -> None:
    assert inspector_url("127.0.0.1", 8765, "t0k") == "http://127.0.0.1:8765/#token=t0k"
    assert inspector_url("::1", 80, "t") == "http://[::1]:80/#token=t"


def test_serve_gives_the_tools_its_workspace(tmp_path: Path) -> None:
    shop = prepare_demo(tmp_path / "shop")
    args = ["serve", "--workspace", str(shop.root / "workspace.toml")]
    with served(args, tmp_path / "home") as (base, token):
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.get(base + "/api/tools", timeout=10).status_code == 401
        response = httpx.post(
            base + "/api/tools/list_tables/invoke", json={"arguments": {}}, headers=headers
        )
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["is_error"] is False
    assert "customers" in data["content"] and "orders" in data["content"]


def test_a_busy_port_is_a_clear_error_before_any_url(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen(1)
        result = runner.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 1
    assert f"error: cannot listen on 127.0.0.1:{port}" in result.output
    assert "#token=" not in result.output


def test_stopping_the_server_settles_a_running_run_as_cancelled(tmp_path: Path) -> None:
    script = tmp_path / "hang.yaml"
    script.write_text("turns: [{content: never, delay_ms: 60000}]\n")
    db = tmp_path / "runs.db"
    args = ["serve", "--script", str(script), "--db", f"sqlite:///{db}"]
    with served_process(args, tmp_path / "home") as (base, token, process):
        headers = {"Authorization": f"Bearer {token}"}
        body = {"prompt": "wait", "provider": "scripted"}
        with httpx.stream("POST", base + "/api/runs/stream", json=body, headers=headers) as live:
            lines = live.iter_lines()
            context = json.loads(next(line for line in lines if line.strip()))
            step = json.loads(next(line for line in lines if line.strip()))
            assert (context["type"], step["step"]["kind"]) == ("context", "request")
            started = time.monotonic()
            process.send_signal(signal.SIGINT)
            # uvicorn ends as Ctrl-C does: it re-raises the signal after shutting down (130).
            assert process.wait(timeout=30) in (0, 130)
    assert time.monotonic() - started < 20
    store = RunStore.open(f"sqlite:///{db}")
    stored = store.get_run(context["run_id"])
    store.close()
    assert stored is not None and stored.status == "cancelled"


def test_the_server_answers_only_to_loopback_host_names(tmp_path: Path) -> None:
    with served(["serve"], tmp_path / "home") as (base, token):
        port = base.rsplit(":", 1)[1]
        auth = {"Authorization": f"Bearer {token}"}
        rebound = {"Host": f"rebind.example:{port}"}
        page = httpx.get(base + "/", headers=rebound, timeout=10)
        api = httpx.get(base + "/api/tools", headers=auth | rebound, timeout=10)
        own = [httpx.get(base + "/", headers={"Host": f"{name}:{port}"}, timeout=10)
               for name in ("127.0.0.1", "localhost", "[::1]")]  # fmt: skip
    assert (page.status_code, api.status_code) == (421, 421)
    assert api.json() == {"error": {"code": "misdirected_request", "message": MISDIRECTED}}
    assert [response.status_code for response in own] == [200, 200, 200]


def test_allow_remote_warns_that_plain_http_carries_the_token_in_clear(tmp_path: Path) -> None:
    args = ["serve", "--allow-remote"]
    with served_output(args, tmp_path / "home") as (base, token, printed):
        port = base.rsplit(":", 1)[1]
        headers = {"Authorization": f"Bearer {token}", "Host": f"inspector.lan:{port}"}
        response = httpx.get(base + "/api/tools", headers=headers, timeout=10)
    assert response.status_code == 200
    assert printed.splitlines()[1] == (
        "warning: serving on 127.0.0.1 over plain HTTP: the admin token, prompts and tool "
        "results cross the network unencrypted; put the inspector behind HTTPS (a TLS reverse "
        "proxy) or reach it through an SSH tunnel"
    )


def test_a_loopback_server_prints_no_warning(tmp_path: Path) -> None:
    with served_output(["serve"], tmp_path / "home") as (_, _, printed):
        pass
    assert "warning" not in printed


def test_serve_keeps_runs_in_the_default_store_and_says_where(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("turns: [{content: kept}]\n")
    with served_output(["serve", "--script", str(script)], tmp_path / "home") as (
        base,
        token,
        printed,
    ):
        body = {"prompt": "hi", "provider": "scripted"}
        headers = {"Authorization": f"Bearer {token}"}
        ran = httpx.post(base + "/api/runs", json=body, headers=headers, timeout=30).json()
    default = tmp_path / "home" / "toolwire" / "runs.db"
    assert printed.splitlines()[0] == f"runs are kept in {default}"
    with RunStore.open(str(default)) as store:
        assert [run.id for run in store.list_runs()] == [ran["context"]["run_id"]]


def test_serve_with_a_db_says_where_and_keeps_nothing_in_the_default(tmp_path: Path) -> None:
    db = tmp_path / "mine.db"
    with served_output(["serve", "--db", f"sqlite:///{db}"], tmp_path / "home") as (_, _, out):
        pass
    assert out.splitlines()[0] == f"runs are kept in {db}"
    assert db.is_file() and not (tmp_path / "home" / "toolwire" / "runs.db").exists()
