"""``toolwire run`` with no terminal attached: no one can approve a call the run's containment
holds, so it is refused and the run goes on; over a real process and a real SQLite store."""

from __future__ import annotations

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


def test_a_write_after_reading_records_is_refused_when_no_one_is_at_the_terminal(
    tmp_path: Path,
) -> None:
    shop = Shop(tmp_path)
    before = shop.stock()
    script = shop.script(INJECTED_SCRIPT)
    done = shop.tw("run", "--script", str(script), "--workspace", str(shop.workspace),
                   "--db", shop.db, "--json", "q")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert shop.stock() == before
    with RunStore.open(shop.db) as store:
        (run,) = store.list_runs()
        stored = store.get_run(run.id)
    assert stored is not None and stored.status == "completed"
    tools = [s for s in stored.steps if s["kind"] == "tool"]
    assert [(s["tool_name"], s.get("tool_integrity"), s.get("tool_refused")) for s in tools] == [
        ("read_records", "untrusted", None),
        ("update_record", None, "untrusted_context"),
    ]
