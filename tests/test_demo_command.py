"""``toolwire demo`` end to end: a real process on a fresh data directory, driven over HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .served import free_port, served, served_output

DEMO = [sys.executable, "-m", "toolwire", "demo"]


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """``toolwire demo`` on a fresh user data directory: (base URL, token, data home)."""
    home = tmp_path / "data"
    with served(["demo"], home) as (base, token):
        yield base, token, home


def test_demo_serves_the_page_and_a_scripted_run_completes_with_artifacts(
    demo_server: tuple[str, str, Path],
) -> None:
    base, token, home = demo_server
    page = httpx.get(base + "/", timeout=10)
    assert page.status_code == 200
    assert '<script type="module"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]

    headers = {"Authorization": f"Bearer {token}"}
    defaults = httpx.get(base + "/api/defaults", headers=headers, timeout=10).json()
    assert defaults["provider"] == "scripted" and defaults["prompt"]

    body = {"prompt": defaults["prompt"], "provider": "scripted"}
    first = streamed(base + "/api/runs/stream", body, headers)
    assert first[0]["type"] == "context"
    assert first[0]["replay_label"].startswith("Demo replay")
    end = first[-1]
    assert (end["type"], end["status"]) == ("end", "awaiting_approval")
    pending = end["pending"]
    assert [c["name"] for c in pending["calls"]] == ["write_file"]
    assert pending["previews"][0]["failed"] is False
    review = home / "toolwire" / "demo" / "files" / "notes" / "review.md"
    assert not review.exists()
    waiting = httpx.get(base + "/api/runs?waiting=true", headers=headers, timeout=10).json()
    assert [r["id"] for r in waiting["runs"]] == [end["run_id"]]

    decision = {"action": "approve", "digest": pending["digest"]}
    rest = streamed(base + f"/api/runs/{end['run_id']}/decision", decision, headers)
    assert (rest[0]["type"], rest[0]["run_id"]) == ("context", end["run_id"])
    assert (rest[-1]["type"], rest[-1]["status"]) == ("end", "completed")
    assert rest[-1]["final_content"].startswith("The shop has four customers")
    assert review.read_text().startswith("# Review: cart total\n")
    events = first + rest
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert [s["decided_by"] for s in steps if s["kind"] == "decision"] == ["admin"]
    tool_steps = [s for s in steps if s["kind"] == "tool"]
    assert len(tool_steps) == 10 and not any(s["tool_is_error"] for s in tool_steps)
    assert tool_steps[-1]["tool_name"] == "write_file"
    kinds = {a["type"] for s in tool_steps for a in s.get("tool_artifacts", [])}
    assert {"table", "tree", "code", "key_value"} <= kinds

    everything = json.dumps(events)
    assert "password_hash" not in json.dumps([s["tool_artifacts"] for s in tool_steps[:1]])
    assert "$argon2" not in everything and "pbkdf2" not in everything

    assert (home / "toolwire" / "demo" / "shop.db").is_file()
    # the documents index is in the data folder, beside the store, not in the documents
    (index,) = (home / "toolwire" / "documents").glob("*.sqlite3")
    assert index.stat().st_size > 0
    assert not list((home / "toolwire" / "demo" / "docs").rglob("*.sqlite3"))
    assert (home / "toolwire" / "runs.db").is_file()  # the store every command uses
    stored = httpx.get(base + "/api/runs", headers=headers, timeout=10).json()
    assert stored["runs"][0]["status"] == "completed"


def streamed(url: str, body: dict[str, Any], headers: dict[str, str]) -> list[dict[str, Any]]:
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200
        return [json.loads(line) for line in response.iter_lines() if line.strip()]


def test_demo_with_a_real_provider_and_no_key_fails_clearly(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["XDG_DATA_HOME"] = str(tmp_path)
    done = subprocess.run(
        [*DEMO, "--provider", "openai", "--model", "m", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: provider openai needs an API key: set OPENAI_API_KEY\n"
    assert not (tmp_path / "toolwire").exists()  # checked before anything is written


def test_an_unusable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = subprocess.run(
        [*DEMO, "--data-dir", str(blocker / "x"), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr
        == f"error: cannot create the demo in {blocker / 'x' / 'demo'}: Not a directory\n"
    )


def test_demo_on_a_busy_port_fails_before_writing_anything(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("TOOLWIRE_DB", None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for extra in ([], ["--data-dir", str(tmp_path / "mine")]):
            done = subprocess.run(
                [sys.executable, "-m", "toolwire", "demo", "--port", str(port), *extra],
                capture_output=True, text=True, env=env, timeout=60, check=False,
            )  # fmt: skip
            assert (done.returncode, done.stdout) == (1, "")
            assert done.stderr == (
                f"error: cannot listen on 127.0.0.1:{port}: Address already in use; "
                "choose another --port\n"
            )
    assert sorted(tmp_path.iterdir()) == []  # no demo folder, no store, no key file


def test_demo_data_dir_holds_the_demo_its_store_and_its_key(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    with served_output(["demo", "--data-dir", str(mine)], tmp_path / "data") as (_, _, printed):
        pass
    assert f"runs are kept in {mine / 'runs.db'}\n" in printed
    names = {p.name for p in mine.iterdir()} - {"runs.db-wal", "runs.db-shm"}
    assert names == {"demo", "runs.db", "state.key"}
    assert not (tmp_path / "data").exists()
