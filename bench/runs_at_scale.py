"""The stored-runs API over 100,000 runs: the first page and filtered pages, SQLite and PostgreSQL.

    python bench/runs_at_scale.py               # SQLite; PostgreSQL with $TOOLWIRE_BENCH_PG_URL
    python bench/runs_at_scale.py --runs 20000  # a smaller store

Generates ``--runs`` runs (five steps each: request, model turn asking for a tool, the call,
request, answer), spread over 90 days, across 4 providers, 8 models and 6 tools; one run in
ten fails, one in twenty has a call that errs, one in five is stored at ``full`` with words
to search. Rows are written the way the store writes them (the same tables, columns and search
rows), in bulk. Then each page is asked of the inspector's API in this process (routing,
query, previews and JSON included, no socket): the median and the 95th percentile of
``REPEAT`` requests after one warm-up. Target: the first page and a filtered page each under
100 ms. The PostgreSQL database is emptied first: give one made for it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, insert, text

from toolwire import ScriptedProvider, ToolRegistry
from toolwire.core.jsonenc import dumps
from toolwire.inspector import InspectorSettings, create_app
from toolwire.store import RunStore, schema, search

RUNS = 100_000
REPEAT = 20
TARGET_MS = 100.0
BATCH = 5_000  # runs written per transaction
PROVIDERS = ("openai", "anthropic", "gemini", "scripted")
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-sonnet", "claude-haiku", "gemini-pro", "gemini-flash",
          "local-llama", "replay")  # fmt: skip
TOOLS = ("read_records", "search_records", "browse_folder", "read_source", "search_code", "probe")
WORDS = ("invoice", "customer", "refund", "order", "shipment", "teapot", "kettle", "warehouse",
         "ledger", "sapphire", "marmalade", "quarterly", "account", "payment",
         "delivery")  # fmt: skip
TOKEN = "bench-token-" + "x" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAGES = {
    "first page": "/api/runs?limit=50",
    "status=failed": "/api/runs?limit=50&status=failed",
    "provider+model": "/api/runs?limit=50&provider=anthropic&model=claude-haiku",
    "tool used": "/api/runs?limit=50&tool=probe",
    "has error": "/api/runs?limit=50&has_error=true",
    "one week": "/api/runs?limit=50&since=2024-02-01&until=2024-02-08",
    "privacy full": "/api/runs?limit=50&privacy_level=full",
    "page 100": "/api/runs?limit=50&offset=5000",
    "sort cost": "/api/runs?limit=50&sort=cost",
    "sort tokens asc": "/api/runs?limit=50&sort=tokens&order=asc",
    "search 1 word": "/api/runs?limit=50&q=sapphire",
    "search 2 words": "/api/runs?limit=50&q=marmalade%20ledger",
    "search + filter": "/api/runs?limit=50&q=teapot&status=completed",
    "facets": "/api/facets",
}
START = datetime(2024, 1, 1, tzinfo=UTC)


def generate(url: str, runs: int, seed: int = 17) -> float:
    """Fill the store at ``url`` (created empty) with ``runs`` runs; return the seconds taken."""
    RunStore.open(url).close()  # the schema, as the store makes it
    engine = create_engine(url)
    started = time.perf_counter()
    shuffle = random.Random(seed)
    with engine.begin() as connection:
        text_insert = search.insert(connection.dialect)
        for first in range(0, runs, BATCH):
            rows = [_run(shuffle, n, runs) for n in range(first, min(first + BATCH, runs))]
            connection.execute(insert(schema.runs), [r["run"] for r in rows])
            connection.execute(insert(schema.steps), [s for r in rows for s in r["steps"]])
            bodies = [b for r in rows for b in r["texts"]]
            if bodies:
                connection.execute(text_insert, bodies)
        if connection.dialect.name == "postgresql":
            connection.execute(text("ANALYZE"))
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
    engine.dispose()
    return time.perf_counter() - started


def _run(shuffle: random.Random, n: int, runs: int) -> dict[str, Any]:
    run_id = str(uuid.UUID(int=shuffle.getrandbits(128), version=4))
    created = START + timedelta(seconds=n * 90 * 86_400 / runs + shuffle.random())
    duration = shuffle.uniform(300, 30_000)
    failed = shuffle.random() < 0.1
    tool_error = shuffle.random() < 0.05
    full = shuffle.random() < 0.2
    tool = shuffle.choice(TOOLS)
    prompt_tokens, completion_tokens = shuffle.randint(100, 5000), shuffle.randint(10, 800)
    words = " ".join(shuffle.sample(WORDS, 4))
    run = {
        "uid": n + 1, "id": run_id, "status": "failed" if failed else "completed",
        "created_at": created, "finished_at": created + timedelta(milliseconds=duration),
        "provider": PROVIDERS[n % 4], "model": MODELS[2 * (n % 4) + shuffle.randint(0, 1)],
        "privacy_level": "full" if full else "metadata",
        "termination_reason": None if failed else "completed", "truncated": False, "rounds": 2,
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "final_answer": f"Answer about {words}" if full and not failed else None,
        "final_answer_length": 40, "error": "the provider failed" if failed else None,
        "cancel_requested": False, "settled": True, "cost": round(shuffle.random() / 10, 6),
        "cost_complete": True, "options": dumps({"max_rounds": 5}), "tool_errors": int(tool_error),
        "duration_ms": duration,
    }  # fmt: skip
    steps = _steps(run_id, created, tool, tool_error, full, words)
    bodies = zip(steps, _bodies(tool, full, words), strict=True)
    texts = [{"run_id": run_id, "sequence": s["sequence"], "body": b} for s, b in bodies if b]
    return {"run": run, "steps": steps, "texts": texts}


def _steps(run_id: str, created: datetime, tool: str, tool_error: bool, full: bool,
           words: str) -> list[dict[str, Any]]:  # fmt: skip
    start = created.timestamp() * 1000
    content = {"content_withheld": True} if not full else {"content": f"Looking at {words}"}
    payloads = [
        {"kind": "request", "round": 1, "start_ms": start, "tool_specs": list(TOOLS),
         **({"messages_sent": [{"role": "user", "content": f"Tell me about {words}"}]}
            if full else {"messages_sent_count": 1, "content_withheld": True})},
        {"kind": "llm", "round": 1, "start_ms": start, "duration_ms": 800.0,
         "requested_tool_names": [tool], "prompt_tokens": 100, **content},
        {"kind": "tool", "round": 1, "start_ms": start + 800, "duration_ms": 40.0,
         "tool_name": tool, "tool_is_error": tool_error,
         **({"tool_result": f"rows about {words}"} if full else {"content_withheld": True})},
        {"kind": "request", "round": 2, "start_ms": start + 840, "tool_specs": list(TOOLS)},
        {"kind": "llm", "round": 2, "start_ms": start + 840, "duration_ms": 600.0, **content},
    ]  # fmt: skip
    return [
        {"run_id": run_id, "sequence": i + 1, "kind": p["kind"], "round": p["round"],
         "duration_ms": p.get("duration_ms", 0.0), "payload": dumps(p),
         "tool_name": tool if p["kind"] == "tool" else None,
         "is_error": tool_error if p["kind"] == "tool" else None}
        for i, p in enumerate(payloads)
    ]  # fmt: skip


def _bodies(tool: str, full: bool, words: str) -> list[str]:
    name = " ".join(search.words(tool))
    if not full:
        return ["", name, name, "", ""]
    return [f"tell me about {words}", f"looking at {words} {name}", f"{name} rows about {words}",
            "", f"looking at {words}"]  # fmt: skip


async def measure(url: str) -> dict[str, tuple[float, float, int]]:
    """Each page's median and 95th percentile in ms, and how many runs it matched."""
    store = RunStore.open(url)
    settings = InspectorSettings(
        registry=ToolRegistry(), provider_factory=lambda n, m: ScriptedProvider([]),
        token=TOKEN, store=store,
    )  # fmt: skip
    transport = httpx.ASGITransport(create_app(settings))
    found: dict[str, tuple[float, float, int]] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        for name, path in PAGES.items():
            await client.get(path, headers=AUTH)  # warm-up: plans and caches
            times = []
            for _ in range(REPEAT):
                started = time.perf_counter()
                answer = await client.get(path, headers=AUTH)
                times.append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 200, answer.text
            total = answer.json().get("total", -1)
            found[name] = (statistics.median(times), _p95(times), total)
    store.close()
    return found


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(label: str, seconds: float, found: dict[str, tuple[float, float, int]]) -> bool:
    print(f"\n{label}: generated in {seconds:.0f} s")
    print(f"  {'page':<18} {'median':>9} {'p95':>9} {'matched':>9}")
    ok = True
    for name, (median, p95, total) in found.items():
        shown = "-" if total < 0 else f"{total:,}"
        print(f"  {name:<18} {median:7.1f} ms {p95:7.1f} ms {shown:>9}")
    for name in ("first page", "status=failed", "tool used", "search + filter"):
        ok = ok and found[name][0] < TARGET_MS
    print(
        f"  target (first and filtered pages under {TARGET_MS:.0f} ms): {'met' if ok else 'MISSED'}"
    )
    return ok


def reset_postgres(url: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'runs.db'}"
        seconds = generate(url, args.runs)
        ok = report(f"SQLite, {args.runs:,} runs", seconds, asyncio.run(measure(url))) and ok
    pg = os.environ.get("TOOLWIRE_BENCH_PG_URL")
    if pg:
        reset_postgres(pg)
        seconds = generate(pg, args.runs)
        ok = report(f"PostgreSQL, {args.runs:,} runs", seconds, asyncio.run(measure(pg))) and ok
    else:
        print("\nPostgreSQL: set $TOOLWIRE_BENCH_PG_URL to a database made for this benchmark")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
