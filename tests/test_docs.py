"""The docs site's generated parts: the command-line reference covers the whole command line,
and the screenshot script takes a PNG of the current page (in Debian's Chromium)."""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer

from toolwire.cli.app import command

from .documented import DOCS, ROOT

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SCREENSHOT_TIMEOUT_S = 300  # a demo server and a browser on a loaded machine


def load(name: str) -> ModuleType:
    """A module of ``docs/hooks``, loaded from its file as mkdocs loads it."""
    spec = importlib.util.spec_from_file_location(name, DOCS / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hook() -> ModuleType:
    return load("cli_reference")


def walk(cmd: Any, path: str) -> list[tuple[str, Any]]:
    found = [(path, cmd)]
    for name, child in getattr(cmd, "commands", {}).items():
        if not child.hidden:
            found += walk(child, f"{path} {name}")
    return found


def test_the_cli_page_holds_the_marker_the_hook_fills() -> None:
    module = hook()
    assert module.MARKER in (DOCS / "cli.md").read_text()
    filled = module.on_page_markdown("before\n" + module.MARKER + "\nafter")
    assert filled.startswith("before\n## `toolwire`\n") and filled.endswith("\nafter")
    assert module.on_page_markdown("no marker") == "no marker"


def test_the_cli_reference_has_every_command_and_option() -> None:
    reference = hook().reference()
    commands = walk(command(), "toolwire")
    assert {"toolwire examples", "toolwire runs approve", "toolwire run"} <= {
        p for p, _ in commands
    }
    for path, cmd in commands:
        assert f"`{path}`\n" in reference, path
        section = reference.split(f"`{path}`\n", 1)[1].split("\n#", 1)[0]
        context = typer.Context(cmd, info_name=path)
        for param in cmd.get_params(context):
            record = param.get_help_record(context)
            if record is not None and not getattr(param, "hidden", False):
                assert f"| `{record[0]}` |" in section, (path, record[0])


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", path
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.browser
def test_the_screenshot_script_takes_the_current_page(tmp_path: Path) -> None:
    output = tmp_path / "shot" / "inspector.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "screenshot.py"), "--output", str(output)],
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")},
        capture_output=True, text=True, timeout=SCREENSHOT_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith(f"wrote {output}\n")
    assert png_size(output) == (1280, 900)
    assert png_size(DOCS / "inspector.png") == png_size(output)  # the committed one, same view
    assert output.stat().st_size > 20_000  # a drawn page, not a blank one


def test_the_api_pages_read_sphinx_roles_as_code() -> None:
    module = load("sphinx_roles")
    text = "See :func:`bound_content` and :class:`~toolwire.core.errors.ToolRefusal`, ``x``."
    assert (
        module.plain(text) == "See `bound_content` and `toolwire.core.errors.ToolRefusal`, ``x``."
    )
