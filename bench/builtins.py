"""Built-in tool overhead, as ratios against a reference measured in the same process.

- ``read_records`` (reflection, sensitive-name checks, formatting, one-pass text and artifact)
  against a bare SQLAlchemy select of the same 50 rows.
- ``search_code`` (a child process per search, for its time budget) against the same regex
  search done in this process.

Run: ``PYTHONPATH=src python bench/builtins.py``.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import text

from toolwire import ToolContext, User
from toolwire.tools.builtin.code import search_code
from toolwire.tools.builtin.records import read_records
from toolwire.workspace.config import Workspace

ROUNDS = 30


def best(action: Callable[[], object], rounds: int = ROUNDS) -> float:
    """Best wall time of ``rounds`` runs: the least disturbed measurement."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def setup(folder: Path) -> Workspace:
    database = folder / "bench.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, note TEXT, qty INT)")
        rows = [(f"item {n}", "lorem ipsum " * 10, n) for n in range(1000)]
        db.executemany("INSERT INTO items (name, note, qty) VALUES (?, ?, ?)", rows)
    db.close()
    files = folder / "files"
    files.mkdir()
    for n in range(50):
        (files / f"m{n}.py").write_text("def f(x):\n    return x + 1\n" * 100)
    return Workspace(database_url=f"sqlite:///{database}", files_root=files)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = setup(Path(tmp))
        context = ToolContext(user=User("admin", is_admin=True), workspace=workspace)
        engine = workspace.engine()

        def raw_select() -> object:
            with engine.connect() as connection:
                return connection.execute(text("SELECT * FROM items LIMIT 50")).fetchall()

        tool_time = best(lambda: read_records.execute({"table": "items", "limit": 50}, context))
        raw_time = best(raw_select)
        print(
            f"read_records / raw select: {tool_time / raw_time:.1f}x "
            f"({tool_time * 1000:.2f} ms vs {raw_time * 1000:.2f} ms)"
        )

        pattern = re.compile(r"return x \+ 1")
        sources = sorted((Path(tmp) / "files").iterdir())

        def in_process() -> int:
            return sum(
                1 for p in sources for line in p.read_text().splitlines() if pattern.search(line)
            )

        args = {"pattern": r"return x \+ 1", "regex": True}
        search_time = best(lambda: search_code.execute(args, context), rounds=10)
        local_time = best(in_process, rounds=10)
        print(
            f"search_code / in-process search: {search_time / local_time:.1f}x "
            f"({search_time * 1000:.1f} ms vs {local_time * 1000:.2f} ms)"
        )
        workspace.dispose()


if __name__ == "__main__":
    main()
