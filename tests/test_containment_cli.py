"""``toolwire run`` with no terminal attached: a call the run's containment holds waits for a
person to decide later (``toolwire runs approve``), its reason shown; a run nobody can resume
(``--no-store``) refuses it and goes on. Over real processes and a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

from toolwire.store import RunStore

from .test_cli_suspend import Shop

INJECTED_SCRIPT = """
turns:
  - tool_calls: [{name: read_records, arguments: {table: products}}]
  - tool_calls:
      - {name: update_record, arguments: {table: products, id: 1, values: {stock: 99}}}
  - content: "done"
"""


def test_a_write_after_reading_records_waits_with_its_reason_when_no_one_is_at_the_terminal(
    tmp_path: Path,
) -> None:
    shop = Shop(tmp_path)
    before = shop.stock()
    script = shop.script(INJECTED_SCRIPT)
    done = shop.tw("run", "--script", str(script), "--workspace", str(shop.workspace),
                   "--db", shop.db, "--json", "q")  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "awaiting_approval"
    assert shop.stock() == before
    pending = shop.tw("runs", "pending", "--db", shop.db)
    said = " ".join(pending.stdout.split())
    assert "planned after reading untrusted output of `read_records`" in said, pending.stdout
    with RunStore.open(shop.db) as store:
        (run,) = store.list_runs()
        stored = store.get_run(run.id)
    assert stored is not None and stored.status == "awaiting_approval"
    tools = [s for s in stored.steps if s["kind"] == "tool"]
    assert [(s["tool_name"], s.get("tool_integrity")) for s in tools] == [
        ("read_records", "untrusted")
    ]


def test_a_write_after_reading_records_is_refused_in_a_run_nobody_can_resume(
    tmp_path: Path,
) -> None:
    shop = Shop(tmp_path)
    before = shop.stock()
    script = shop.script(INJECTED_SCRIPT)
    done = shop.tw("run", "--script", str(script), "--workspace", str(shop.workspace),
                   "--no-store", "--json", "q")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert shop.stock() == before
