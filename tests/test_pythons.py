"""The Pythons the package supports are declared once and agree everywhere: the classifiers name
3.11 to 3.14, ``requires-python`` starts at the first, ruff and mypy check for it, the tests
run under one of them, and the second Python scripts/test runs a part of the suite under is one
of them too."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = ["3.11", "3.12", "3.13", "3.14"]
CLASSIFIER = "Programming Language :: Python :: "


def pyproject() -> dict[str, object]:
    found: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return found


def test_the_classifiers_name_each_supported_python() -> None:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    named = [c.removeprefix(CLASSIFIER) for c in project["classifiers"] if c.startswith(CLASSIFIER)]
    assert [v for v in named if re.fullmatch(r"3\.\d+", v)] == SUPPORTED
    assert "3 :: Only" in named
    assert project["requires-python"] == f">={SUPPORTED[0]}"


def test_the_checks_target_the_oldest_and_the_tests_run_on_a_supported_one() -> None:
    tools = pyproject()["tool"]
    assert isinstance(tools, dict)
    assert tools["ruff"]["target-version"] == "py" + SUPPORTED[0].replace(".", "")
    assert tools["mypy"]["python_version"] == SUPPORTED[0]
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in SUPPORTED


def test_the_test_command_runs_a_second_supported_python() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    (second,) = re.findall(r"^SECOND_PYTHON=(\S+)$", script, re.MULTILINE)
    assert second in SUPPORTED[1:]
