"""The wheel carries the licence the project declares (the LICENSE file, and MIT as its
licence expression in the metadata) and the examples, which ``toolwire examples`` writes out of
it (built offline, from a copy of the tree)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from toolwire.demo.example_files import example_names

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the tree."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(tree)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    (built_wheel,) = (tmp_path / "dist").glob("toolwire-*.whl")
    return built_wheel


def test_the_wheel_holds_the_licence_file_and_declares_mit(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(licence) == (ROOT / "LICENSE").read_bytes()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        headers = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: MIT" in headers
    assert "License-File: LICENSE" in headers
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")


def test_the_wheel_holds_the_examples_and_toolwire_examples_writes_them_from_it(
    wheel: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        held = {n for n in archive.namelist() if n.startswith("toolwire/demo/examples/")}
        assert held == {f"toolwire/demo/examples/{name}" for name in example_names()}
        archive.extractall(tmp_path / "installed")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "installed"),
           "XDG_DATA_HOME": str(tmp_path / "data")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "examples", "out"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == example_names()
