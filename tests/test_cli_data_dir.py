"""Deciding on the runs of a ``toolwire demo --data-dir DIR`` by the short id ``runs list``
prints: ``runs pending|approve|deny|input|cancel`` take ``--data-dir DIR`` (its store
``DIR/runs.db`` and its state key) and a prefix of a run's id, as ``runs show`` does.

Real processes over a real SQLite store. The folder is laid out by the code ``demo`` lays it out
with, and the deciding process has no other key: no ``$TOOLWIRE_STATE_KEY``, none in the user
data directory.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from toolwire.cli.keys import key_file, make_key
from toolwire.providers.scripted import ScriptedProvider
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store.engine import choose_store
from toolwire.tools.registry import ToolRegistry

from .fakes import plugin
from .test_cli_suspend import INPUT_PLUGIN, INPUT_SCRIPT, UPDATE_SCRIPT, Shop, run_id_of

TWO_WRITES = """
turns:
  - tool_calls:
      - {name: update_record, arguments: {table: products, id: 1, values: {stock: 98}}}
  - tool_calls:
      - {name: update_record, arguments: {table: products, id: 1, values: {stock: 99}}}
  - content: "Stock is 99 now."
"""


class DemoFolder(Shop):
    """A shop whose runs are kept in a demo's ``--data-dir``: its store and its key file."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.folder = tmp_path / "demo-data"
        make_key(self.folder)  # as `toolwire demo --data-dir` makes it
        self.db = choose_store(None, folder=self.folder).target  # DIR/runs.db, as demo opens
        with RunStore.open(self.db) as store:
            store.set_tool_state("update_record", True)
        del self.env["TOOLWIRE_STATE_KEY"]
        self.key = key_file(self.folder).read_text().strip()

    def waiting(self, script: str = UPDATE_SCRIPT, *extra: str) -> str:
        """A run of ``script`` left waiting in the folder's store, sealed with its key; its id."""
        path = str(self.script(script))
        workspace = ["--workspace", str(self.workspace)]
        self.env["TOOLWIRE_STATE_KEY"] = self.key  # `toolwire run` reads no --data-dir
        try:
            done = self.tw("run", "--script", path, *workspace, "--db", self.db, *extra, "q")
        finally:
            del self.env["TOOLWIRE_STATE_KEY"]
        assert done.returncode == 3, done.stdout + done.stderr
        return run_id_of(done.stdout)

    def runs(self, verb: str, *args: str) -> tuple[int, str, str]:
        done = self.tw("runs", verb, *args, "--data-dir", str(self.folder))
        return done.returncode, done.stdout, done.stderr


@pytest.fixture
def demo(tmp_path: Path) -> DemoFolder:
    return DemoFolder(tmp_path)


def test_the_default_places_hold_neither_the_key_nor_the_run(demo: DemoFolder) -> None:
    run_id = demo.waiting()
    done = demo.tw("runs", "approve", run_id)  # the user data directory's store and key
    assert done.returncode == 1
    assert demo.status(run_id) == "awaiting_approval"


def test_approve_by_short_id_in_a_demo_data_dir(demo: DemoFolder) -> None:
    before = demo.stock()
    run_id = demo.waiting()
    code, out, err = demo.runs("pending")
    assert code == 0, err
    assert any(line.startswith(f"run {run_id}  awaiting_approval") for line in out.splitlines())
    assert "  call 1: update_record" in out.splitlines()
    code, out, err = demo.runs("approve", run_id[:8], "--reason", "restock")
    assert code == 0, out + err
    assert f"run {run_id} recorded" in out
    assert (demo.status(run_id), demo.stock(), before) == ("completed", 99, before)
    assert demo.tool_steps(run_id) == ["update_record"]


def test_a_short_id_names_the_run_in_any_store(tmp_path: Path) -> None:
    shop = Shop(tmp_path)  # --db and the environment's key, no --data-dir
    run_id = run_id_of(shop.run().stdout)
    done = shop.tw("runs", "approve", run_id[:8], "--db", shop.db)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (shop.status(run_id), shop.stock()) == ("completed", 99)


def test_deny_by_short_id_in_a_demo_data_dir(demo: DemoFolder) -> None:
    before = demo.stock()
    run_id = demo.waiting()
    code, out, err = demo.runs("deny", run_id[:8].upper(), "--reason", "not today")
    assert code == 0, out + err
    assert demo.status(run_id) == "completed" and demo.stock() == before


def test_a_run_waiting_again_says_to_resume_it_in_the_same_data_dir(demo: DemoFolder) -> None:
    run_id = demo.waiting(TWO_WRITES)
    code, out, err = demo.runs("approve", run_id[:8])
    assert code == 3, out + err
    lines = out.splitlines()
    assert f"resume it with: toolwire runs approve {run_id} --data-dir {demo.folder}" in lines
    assert f"or deny it with: toolwire runs deny {run_id} --data-dir {demo.folder}" in lines
    code, out, err = demo.runs("approve", run_id[:12])
    assert code == 0, out + err
    assert (demo.status(run_id), demo.stock()) == ("completed", 99)


def test_input_by_short_id_in_a_demo_data_dir(demo: DemoFolder) -> None:
    site = demo.tmp / "site"
    site.mkdir()
    plugin(site, INPUT_PLUGIN, "paint = twplugin:paint")
    demo.env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    run_id = demo.waiting(INPUT_SCRIPT, "--tool", "paint")
    code, out, err = demo.runs("input", run_id[:8], "--json", '{"colour": "scarlet"}')
    assert code == 0, out + err
    assert any(line.endswith("0 artifacts): painted scarlet") for line in out.splitlines())
    assert demo.status(run_id) == "completed"


def test_cancel_by_short_id_in_a_demo_data_dir(demo: DemoFolder) -> None:
    run_id = demo.waiting()
    assert demo.runs("cancel", run_id[:8]) == (0, f"run {run_id} cancelled\n", "")
    assert demo.status(run_id) == "cancelled"
    code, _, err = demo.runs("cancel", run_id[:8])
    assert (code, err) == (1, f"error: no running or waiting run has the id {run_id}\n")


def test_an_ambiguous_or_unknown_prefix_changes_nothing(demo: DemoFolder) -> None:
    waiting = demo.waiting()
    with RunStore.open(demo.db) as store:  # 17 runs in all: two share a first hex digit
        runtime = Runtime(ToolRegistry(), recorder=store)
        for _ in range(16):
            answers = ScriptedProvider.from_turns([{"content": "ok"}])
            runtime.run_sync(RunRequest.of("q", provider=answers))
        ids = [summary.id for summary in store.list_runs(limit=100)]
    first = Counter(i[0] for i in ids).most_common(1)[0][0]
    for verb in ("approve", "deny", "input", "cancel"):
        extra = ["--json", '{"colour": "red"}'] if verb == "input" else []
        code, out, err = demo.runs(verb, first, *extra)
        assert (code, out) == (2, ""), verb
        assert re.fullmatch(rf"error: {first} is the start of \d+ run ids \({first}.*\); give "
                            rf"more of the id \(see toolwire runs {verb} --help\)\n", err
                            ), err  # fmt: skip
        assert demo.runs(verb, "g", *extra) == (1, "", "error: no run with id g\n"), verb
    assert demo.status(waiting) == "awaiting_approval"
    assert demo.tool_steps(waiting) == []
