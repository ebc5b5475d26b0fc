"""The wheel carries the licence the project declares: the LICENSE file, and MIT as its
licence expression in the metadata (built offline, from a copy of the tree)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_holds_the_licence_file_and_declares_mit(tmp_path: Path) -> None:
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
    (wheel,) = (tmp_path / "dist").glob("toolwire-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(licence) == (ROOT / "LICENSE").read_bytes()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        headers = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: MIT" in headers
    assert "License-File: LICENSE" in headers
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
