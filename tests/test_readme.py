"""The code blocks of the README and the docs' pages work as written.

Every Python block runs (``DEMO_FOLDER`` filled with a demo workspace, in the checkout, as a
reader runs it there), every TOML, YAML, JSON and INI block parses, and every block is in a
language these tests know; the ``sh`` blocks run in ``test_readme_commands``. A ``console``
block is a transcript (``$`` and a command, then what it printed, with ids of some store): each
of its commands must be one the command line takes, options and all. Only the blocks in
``NOT_RUN`` are left out, each with its reason. A block added to a page is run the moment it is
written.
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolwire import RunRequest, Runtime, ScriptedProvider, StateKey, ToolRegistry
from toolwire.core.lifecycle import RunStatus
from toolwire.demo import prepare_demo
from toolwire.tools.api import input_model_of, needs_approval

from .documented import ROOT, Block, blocks, page, section

KNOWN = ("sh", "python", "toml", "yaml", "json", "ini", "text", "console")
# Python blocks not run, keyed by their first line, with the reason. Keep it empty if you can.
NOT_RUN: dict[str, str] = {}
_PARSERS: dict[str, Any] = {
    "toml": tomllib.loads,
    "yaml": yaml.safe_load,
    "json": json.loads,
    "ini": lambda text: configparser.ConfigParser(interpolation=None).read_string(text),
}


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_demo(tmp_path_factory.mktemp("data")).root


def run_block(block: Block, demo_folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run a Python block as a reader would, in the checkout; the names it defined."""
    monkeypatch.chdir(ROOT)
    code = block.code.replace("DEMO_FOLDER", str(demo_folder))
    names: dict[str, Any] = {"__name__": "documented"}
    exec(compile(code, str(block.page), "exec"), names)  # the page's own text
    return names


def test_every_block_is_in_a_language_the_tests_know() -> None:
    assert sorted({b.language for b in blocks()} - set(KNOWN)) == []


def test_the_not_run_list_names_blocks_the_pages_have() -> None:
    firsts = {b.code.splitlines()[0] for b in blocks("python")}
    assert set(NOT_RUN) <= firsts


@pytest.mark.parametrize("block", blocks("python"), ids=str)
def test_the_python_block_runs(
    block: Block, demo_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if block.code.splitlines()[0] in NOT_RUN:
        return
    run_block(block, demo_folder, monkeypatch)


def transcribed() -> list[str]:
    """The ``toolwire`` commands of every ``console`` block, each as written after its ``$``
    (up to a pipe: what follows it is another program)."""
    lines = [line for b in blocks("console") for line in b.code.splitlines()]
    return [line[2:].split(" | ")[0] for line in lines if line.startswith("$ toolwire ")]


@pytest.mark.parametrize("command", transcribed())
def test_a_transcribed_command_is_one_the_command_line_takes(command: str) -> None:
    # With --help last, the parser checks the command, its options and their names, and runs
    # nothing; an unknown command or option is a usage error.
    words = shlex.split(command)[1:]
    done = subprocess.run([sys.executable, "-m", "toolwire", *words, "--help"],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, (command, done.stderr)
    assert f"Usage: toolwire {words[0]}" in done.stdout, done.stdout  # that command's help


@pytest.mark.parametrize("block", [b for b in blocks() if b.language in _PARSERS], ids=str)
def test_the_data_block_parses(block: Block) -> None:
    _PARSERS[block.language](block.code)


def test_the_first_tool_prints_what_its_comments_say(
    demo_folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = [b for b in blocks("python") if b.page == page("quickstart.md")]
    run_block(block, demo_folder, monkeypatch)
    answer, artifacts = capsys.readouterr().out.splitlines()
    assert answer == "There are 12 mugs in stock. completed"
    assert artifacts == "[(<Artifact type='table' label_bytes=5 columns=2 rows=1>,)]"


def test_the_custom_provider_prints_what_its_comment_says(
    demo_folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (block,) = [b for b in blocks("python") if "class HouseModel(BaseProvider)" in b.code]
    assert block.page == page("providers.md")
    run_block(block, demo_folder, monkeypatch)
    assert capsys.readouterr().out == "The sum is 5.\n"


def test_the_approval_example_pauses_with_its_own_preview_and_asks_for_input(
    demo_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = section(page("running.md"), "Runs that wait for a person")
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    names = run_block(Block(page("running.md"), "python", code), demo_folder, monkeypatch)
    refund, send_receipt = names["refund"], names["send_receipt"]
    assert needs_approval(refund) and not needs_approval(send_receipt)
    assert input_model_of(send_receipt) is names["Recipient"]
    provider = ScriptedProvider.from_turns(
        [{"tool_calls": [{"name": "refund", "arguments": {"invoice_id": 7, "amount_cents": 1250}}]}]
    )
    runtime = Runtime(ToolRegistry([refund, send_receipt]), state_key=StateKey.generate())
    outcome = runtime.run_sync(RunRequest.of("refund invoice 7", provider=provider))
    assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
    assert outcome.pause.previews[0].lines == ("invoice 7: refund 12.50",)
