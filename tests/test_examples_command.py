"""``toolwire examples DIR`` in real processes: the package's examples written out, refused over
files that differ, replaced with ``--force``, and one of them run from DIR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolwire.demo.example_files import EXAMPLES_DIR, example_names

ROOT = Path(__file__).resolve().parents[1]


def tw(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(home), "COLUMNS": "80"}
    env.pop("TOOLWIRE_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args], cwd=cwd, capture_output=True, text=True,
        env=env, stdin=subprocess.DEVNULL, timeout=120, check=False,
    )  # fmt: skip


def test_the_checkout_examples_folder_is_the_package_copy() -> None:
    assert (ROOT / "examples").resolve() == EXAMPLES_DIR.resolve()
    assert example_names() == ["docs.yaml", "lookup.yaml", "mcp-time.yaml", "mcp.toml", "shop.yaml"]


def test_examples_are_written_and_one_runs_from_the_folder(tmp_path: Path) -> None:
    home = tmp_path / "data"
    done = tw(home, tmp_path, "examples", "out")
    assert done.returncode == 0, done.stderr
    for name in example_names():
        assert (tmp_path / "out" / name).read_bytes() == (EXAMPLES_DIR / name).read_bytes()
        assert f"wrote out/{name}\n" in done.stdout
    demo = home / "toolwire" / "demo"
    assert f"Demo workspace: {demo}\n" in done.stdout
    assert "  pip install mcp-server-time\n" in done.stdout  # said where the file is handed out
    line = f"  toolwire run --workspace {demo}/workspace.toml --script out/shop.yaml"
    assert line + " 'Who are our customers?'\n" in done.stdout
    ran = tw(home, tmp_path, *line.split()[1:], "Who are our customers?")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "There are four customers" in ran.stdout
    assert "tool read_records ok" in ran.stdout and "tool count_records ok" in ran.stdout


def test_a_file_that_differs_is_refused_and_nothing_is_written_without_force(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "shop.yaml").write_text("mine\n")
    refused = tw(tmp_path / "data", tmp_path, "examples", "out")
    assert refused.returncode == 1
    assert (
        refused.stderr
        == f"error: would overwrite {Path('out') / 'shop.yaml'}; pass --force to replace them\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["shop.yaml"]
    assert (out / "shop.yaml").read_text() == "mine\n"
    again = tw(tmp_path / "data", tmp_path, "examples", "out", "--force")
    assert again.returncode == 0, again.stderr
    assert (out / "shop.yaml").read_bytes() == (EXAMPLES_DIR / "shop.yaml").read_bytes()
    same = tw(tmp_path / "data", tmp_path, "examples", "out")  # identical files: left alone
    assert same.returncode == 0 and "unchanged out/shop.yaml\n" in same.stdout


def test_a_file_in_the_folders_place_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("")
    done = tw(tmp_path / "data", tmp_path, "examples", "out")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: out exists and is not a folder\n"
