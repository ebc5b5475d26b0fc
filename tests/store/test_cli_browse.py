"""``toolwire runs list`` filters, ``runs show --json`` and ``runs export``, on both stores."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from toolwire.cli.app import app, load_commands
from toolwire.store.export import SCHEMA, SCHEMA_VERSION

from .conftest import Backend

RUN_LINE = re.compile(r"run ([0-9a-f-]{36}) recorded")
LOOKUP = """
turns:
  - tool_calls: [{name: file_info, arguments: {path: notes.md}}]
    prompt_tokens: 30
    completion_tokens: 3
  - content: "The note says marmalade."
"""
FAILING = """
turns:
  - tool_calls: [{name: no_such_tool, arguments: {}}]
  - content: "That failed."
"""
ANSWER = """
turns:
  - content: "Plain answer."
"""


def invoke(*args: str) -> tuple[int, str, str]:
    load_commands()
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def record(
    tmp_path: Path, backend: Backend, script: str, prompt: str, privacy: str = "full"
) -> str:
    path = tmp_path / f"script-{abs(hash(script))}.yaml"
    path.write_text(script)
    (tmp_path / "files").mkdir(exist_ok=True)
    (tmp_path / "files" / "notes.md").write_text("marmalade\n")
    workspace = tmp_path / "workspace.toml"
    workspace.write_text('files_root = "files"\n')
    code, out, err = invoke("run", prompt, "--script", str(path), "--db", backend.url,
                            "--privacy", privacy, "--workspace", str(workspace))  # fmt: skip
    assert code == 0, out + err
    found = RUN_LINE.search(out + err)
    assert found is not None, out + err
    return found.group(1)


def listed(backend: Backend, *options: str) -> list[str]:
    code, out, err = invoke("runs", "list", "--db", backend.url, "--json", *options)
    assert code == 0, err
    return [run["id"] for run in json.loads(out)]


def test_runs_list_filters_sorts_and_searches(tmp_path: Path, backend: Backend) -> None:
    read = record(tmp_path, backend, LOOKUP, "what does the note say?")
    plain = record(tmp_path, backend, ANSWER, "hello")
    assert listed(backend) == [plain, read]
    assert listed(backend, "--tool", "file_info") == [read]
    assert listed(backend, "--search", "marmal") == [read]
    assert listed(backend, "--search", "hello") == [plain]
    assert listed(backend, "--status", "completed", "--status", "failed") == [plain, read]
    assert listed(backend, "--status", "failed") == []
    assert listed(backend, "--errors") == [] and listed(backend, "--no-errors") == [plain, read]
    assert listed(backend, "--sort", "tokens") == [read, plain]
    assert listed(backend, "--asc") == [read, plain]
    assert listed(backend, "--since", "1h") == [plain, read]
    failed = record(tmp_path, backend, FAILING, "try it")
    assert listed(backend, "--errors") == [failed]
    assert listed(backend, "--until", "2000-01-01") == []
    code, _, err = invoke("runs", "list", "--db", backend.url, "--sort", "price")
    assert code == 2 and "unknown sort 'price'" in err


def test_runs_list_and_export_filter_by_privacy_level(tmp_path: Path, backend: Backend) -> None:
    kept = record(tmp_path, backend, LOOKUP, "what does the note say?")
    bare = record(tmp_path, backend, ANSWER, "hello", privacy="metadata")
    assert listed(backend, "--privacy", "full") == [kept]
    assert listed(backend, "--privacy", "metadata") == [bare]
    assert listed(backend, "--privacy", "redacted") == []
    code, out, err = invoke("runs", "export", "--privacy", "metadata", "--db", backend.url)
    assert code == 0 and err.strip() == "exported 1 run"
    assert [json.loads(line)["id"] for line in out.splitlines()] == [bare]
    code, _, err = invoke("runs", "list", "--db", backend.url, "--privacy", "secret")
    assert code == 2 and "unknown privacy level 'secret'" in err


def test_runs_show_json_is_the_export_record(tmp_path: Path, backend: Backend) -> None:
    run_id = record(tmp_path, backend, LOOKUP, "what does the note say?")
    code, out, _ = invoke("runs", "show", run_id[:8], "--db", backend.url, "--json")
    assert code == 0
    shown = json.loads(out)
    assert (shown["schema"], shown["schema_version"], shown["id"]) == (
        SCHEMA, SCHEMA_VERSION, run_id
    )  # fmt: skip
    assert [s["kind"] for s in shown["steps"]] == ["request", "llm", "tool", "request", "llm"]
    assert shown["final_answer"] == "The note says marmalade."


def test_runs_export_writes_json_lines_oldest_first(tmp_path: Path, backend: Backend) -> None:
    first = record(tmp_path, backend, LOOKUP, "one")
    second = record(tmp_path, backend, ANSWER, "two")
    code, out, err = invoke("runs", "export", "--since", "2000-01-01", "--db", backend.url)
    assert code == 0 and err.strip() == "exported 2 runs"
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["schema"], r["schema_version"], r["id"]) for r in lines] == [
        (SCHEMA, SCHEMA_VERSION, first), (SCHEMA, SCHEMA_VERSION, second)
    ]  # fmt: skip
    assert out.isascii()
    target = tmp_path / "runs.jsonl"
    code, out, err = invoke("runs", "export", "--since", "1d", "--tool", "file_info",
                            "--db", backend.url, "--output", str(target))  # fmt: skip
    assert (code, out, err.strip()) == (0, "", "exported 1 run")
    assert [json.loads(line)["id"] for line in target.read_text().splitlines()] == [first]
    code, _, err = invoke("runs", "export", "--since", "last tuesday", "--db", backend.url)
    assert code == 2 and "'last tuesday' is neither a duration" in err
    code, _, err = invoke("runs", "export", "--db", backend.url, "-o", str(tmp_path / "no/x"))
    assert code == 1 and "cannot write" in err
