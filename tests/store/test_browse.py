"""Finding stored runs: filters, sorts, pages, search over the kept text, export, backfill."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, text, update

from toolwire import Artifact, ScriptedProvider, ToolRegistry, ToolResult, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore, schema
from toolwire.store.browse import RunQuery
from toolwire.store.migrations import LATEST

from .conftest import Backend
from .helpers import run


@tool(group="records", data_class="public")
def find_orders(customer: str) -> ToolResult:
    """Find a customer's orders."""
    if customer == "nobody":
        return ToolResult.error("no such customer")
    return ToolResult.text(
        f"Orders of {customer}: blue teapot",
        Artifact.table("orders", ["item"], [["sapphire kettle"]]),
    )


@tool(group="records", data_class="public")
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def script(tool_name: str, argument: dict[str, Any], answer: str) -> ScriptedProvider:
    return ScriptedProvider.from_turns(
        [
            {"tool_calls": [{"name": tool_name, "arguments": argument}]},
            {"content": answer, "prompt_tokens": 10, "completion_tokens": 2},
        ]
    )


def record(store: RunStore, tool_name: str, argument: dict[str, Any], answer: str,
           prompt: str = "question", model: str = "m-1") -> str:  # fmt: skip
    request = RunRequest.of(prompt, provider=script(tool_name, argument, answer), model=model)
    registry = ToolRegistry([find_orders, weather])
    outcome = Runtime(registry, recorder=store).run_sync(request)
    assert outcome.store_error is None
    return outcome.run_id


def ids(store: RunStore, **query: Any) -> list[str]:
    return [run.id for run in store.find_runs(RunQuery(**query)).runs]


@pytest.fixture
def full(backend: Backend) -> RunStore:
    return backend.open(PrivacyLevel.FULL)


def test_filters_pick_runs_by_tool_error_model_and_status(full: RunStore) -> None:
    ada = record(full, "find_orders", {"customer": "ada"}, "Ada ordered a teapot.")
    nobody = record(full, "find_orders", {"customer": "nobody"}, "Nobody found.", model="m-2")
    rain = record(full, "weather", {"city": "Oslo"}, "Sunny.")
    assert ids(full) == [rain, nobody, ada]
    assert ids(full, tool="find_orders") == [nobody, ada]
    assert ids(full, tool="weather") == [rain]
    assert ids(full, tool="no_such_tool") == []
    assert ids(full, has_error=True) == [nobody]
    assert ids(full, has_error=False) == [rain, ada]
    assert ids(full, model="m-2") == [nobody]
    assert ids(full, provider="scripted", statuses=("completed",)) == [rain, nobody, ada]
    assert ids(full, statuses=("failed",)) == []
    assert ids(full, privacy_level="full") == [rain, nobody, ada]
    assert ids(full, privacy_level="metadata") == []
    stored = full.get_run(nobody)
    assert stored is not None and stored.tool_errors == 1 and stored.error is None


def test_a_waiting_run_is_listed_with_what_it_has_done_so_far(full: RunStore) -> None:
    @tool(name="ship", data_class="public", requires_approval=True)
    def ship(order: int) -> str:
        return f"shipped {order}"

    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "find_orders", "arguments": {"customer": "nobody"}}],
         "prompt_tokens": 20, "completion_tokens": 4},
        {"tool_calls": [{"name": "ship", "arguments": {"order": 7}}],
         "prompt_tokens": 30, "completion_tokens": 5},
        {"content": "Shipped."},
    ]  # fmt: skip
    runtime = Runtime(
        ToolRegistry([find_orders, ship]), recorder=full, state_key=StateKey.generate()
    )
    outcome = runtime.run_sync(
        RunRequest.of("ship it", provider=ScriptedProvider.from_turns(turns))
    )
    assert outcome.status is RunStatus.AWAITING_APPROVAL
    (listed,) = full.find_runs(RunQuery(statuses=("awaiting_approval",))).runs
    assert (listed.rounds, listed.prompt_tokens, listed.completion_tokens) == (2, 50, 9)
    assert ids(full, has_error=True) == [outcome.run_id]  # its first call failed
    assert ids(full, sort="rounds") == [outcome.run_id]


def test_a_date_range_pages_and_a_total(full: RunStore, backend: Backend) -> None:
    made = [record(full, "weather", {"city": f"c{i}"}, "ok") for i in range(5)]
    base = datetime(2024, 5, 1, tzinfo=UTC)
    engine = create_engine(full.url)
    with engine.begin() as connection:
        for days, run_id in enumerate(made):
            connection.execute(
                update(schema.runs)
                .where(schema.runs.c.id == run_id)
                .values(created_at=base + timedelta(days=days))
            )
    engine.dispose()
    newest_first = made[::-1]
    page = full.find_runs(RunQuery(limit=2, offset=2))
    assert [r.id for r in page.runs] == newest_first[2:4] and page.total == 5
    window = RunQuery(since=base + timedelta(days=1), until=base + timedelta(days=3))
    assert ids(full, **_fields(window)) == [made[2], made[1]]
    assert full.find_runs(window).total == 2
    assert ids(full, sort="created_at", descending=False) == made


def _fields(query: RunQuery) -> dict[str, Any]:
    return {"since": query.since, "until": query.until}


def test_sorts_put_runs_without_a_value_last_and_never_skip_a_run(full: RunStore) -> None:
    made = [record(full, "weather", {"city": f"c{i}"}, "ok") for i in range(4)]
    engine = create_engine(full.url)
    with engine.begin() as connection:
        for cost, run_id in zip([0.5, None, 2.0, 0.5], made, strict=True):
            connection.execute(
                update(schema.runs).where(schema.runs.c.id == run_id).values(cost=cost)
            )
    engine.dispose()
    assert ids(full, sort="cost") == [made[2], made[3], made[0], made[1]]
    assert ids(full, sort="cost", descending=False) == [made[0], made[3], made[2], made[1]]
    paged = [*ids(full, sort="cost", limit=3), *ids(full, sort="cost", limit=3, offset=3)]
    assert paged == ids(full, sort="cost")
    for sort in ("tokens", "duration", "rounds"):
        assert sorted(ids(full, sort=sort)) == sorted(made)


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_search_finds_only_what_the_privacy_level_kept(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    prompt = "Which orders has grace made? key sk-proj-AbCdEfGhIjKlMnOpQrStUv"
    found = record(store, "find_orders", {"customer": "grace"}, "Grace: one sapphire kettle",
                   prompt=prompt)  # fmt: skip
    other = record(store, "weather", {"city": "Oslo"}, "Sunny.")
    kept = level.keeps_content

    def hits(words: str) -> list[str]:
        return ids(store, search=words)

    assert hits("find_orders") == [found]  # a tool's name is metadata: kept at every level
    assert hits("find") == [found]  # words begin words
    assert hits("teapot") == ([found] if kept else [])  # the tool's result
    assert hits("SAPPHIRE kettle") == ([found] if kept else [])  # an artifact, the answer
    assert hits("grace") == ([found] if kept else [])  # the prompt, the arguments
    assert hits("oslo sunny") == ([other] if kept else [])
    assert hits("teapot oslo") == []  # every word must be found in the same run
    assert hits("<img src=x>") == []  # words of markup, found nowhere
    assert hits("!!!") == []  # no word at all: nothing, not everything
    secret = hits("AbCdEfGhIjKlMnOpQrStUv")
    assert secret == ([found] if level is PrivacyLevel.FULL else [])  # redacted: masked
    assert store.find_runs(RunQuery(search="oslo", tool="weather")).total == (1 if kept else 0)


def test_a_hostile_or_odd_search_is_only_words(full: RunStore) -> None:
    found = record(full, "find_orders", {"customer": "o'brien"}, 'He said "hi" -- AND NOT OR')
    for query in ('"', "'", "*", 'hi" OR "x', "NEAR(hi)", "hi:*", "a & b | !c", "\x00", "hi)"):
        assert isinstance(ids(full, search=query), list)
    assert ids(full, search='said "hi') == [found]
    assert ids(full, search="and not or") == [found]
    with pytest.raises(ValueError, match="at most 500 characters"):
        RunQuery(search="x" * 501)
    with pytest.raises(ValueError, match="unknown sort 'price'"):
        RunQuery(sort="price")
    with pytest.raises(ValueError, match="unknown status 'done'"):
        RunQuery(statuses=("done",))


def test_facets_list_each_filters_values(full: RunStore) -> None:
    record(full, "find_orders", {"customer": "ada"}, "ok")
    record(full, "weather", {"city": "Oslo"}, "ok", model="m-2")
    assert full.facets() == {
        "providers": ["scripted"],
        "models": ["m-1", "m-2"],
        "tools": ["find_orders", "weather"],
        "statuses": ["completed"],
        "privacy_levels": ["full"],
    }


def test_export_walks_every_run_oldest_first_with_its_steps(full: RunStore) -> None:
    made = [record(full, "weather", {"city": f"c{i}"}, "ok") for i in range(3)]
    exported = list(full.export(RunQuery(tool="weather")))
    assert [r.id for r in exported] == made
    assert all([s["kind"] for s in r.steps] == ["request", "llm", "tool", "request", "llm"]
               for r in exported)  # fmt: skip
    assert list(full.export(RunQuery(since=datetime.now(UTC) + timedelta(days=1)))) == []


def test_first_requests_and_id_prefixes(full: RunStore) -> None:
    made = record(full, "weather", {"city": "Oslo"}, "ok", prompt="hello there")
    first = full.first_requests([made, "no-such-run", "bad id!"])
    assert list(first) == [made]
    assert first[made]["messages_sent"] == [{"role": "user", "content": "hello there"}]
    assert full.ids_starting(made[:6]) == [made]
    assert full.ids_starting("%") == [] and full.ids_starting("") == []


def test_purge_takes_the_runs_words_with_it(full: RunStore, backend: Backend) -> None:
    record(full, "find_orders", {"customer": "ada"}, "teapot")
    assert len(ids(full, search="teapot")) == 1
    assert full.purge(older_than_days=0) == 1
    assert ids(full, search="teapot") == []
    assert _text_rows(full) == 0


def _text_rows(store: RunStore) -> int:
    engine = create_engine(store.url)
    with engine.connect() as connection:
        found = connection.execute(text("SELECT count(*) FROM run_text")).scalar_one()
    engine.dispose()
    return int(found)


def test_runs_stored_before_version_9_are_found_once_it_migrates(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.FULL)
    old = record(store, "find_orders", {"customer": "nobody"}, "teapot answer")
    other = run(store).run_id
    store.close()
    _back_to_version_6(store.url)
    again = backend.open(PrivacyLevel.FULL)
    assert ids(again, tool="find_orders") == [old]
    assert ids(again, search="teapot") == [old]  # the answer's words, from the run's row
    assert ids(again, search="nobody") == [old]  # the arguments' words, from its steps
    assert ids(again, has_error=True) == [old]
    stored = again.get_run(old)
    assert stored is not None and stored.duration_ms is not None and stored.tool_errors == 1
    assert stored.options is None  # never recorded: not guessed
    assert {r.id for r in again.list_runs()} == {old, other}


def _back_to_version_6(url: Any) -> None:
    """Undo migration 9 on a database holding runs, as if an older toolwire had written it."""
    engine = create_engine(url)
    with engine.begin() as connection:
        for index in schema.VIEWER_INDEXES:
            connection.execute(text(f"DROP INDEX {index.name}"))
        connection.execute(text("DROP TABLE run_text"))
        for column in schema.VIEWER_RUN_COLUMNS:
            connection.execute(text(f"ALTER TABLE runs DROP COLUMN {column}"))
        for column in schema.VIEWER_STEP_COLUMNS:
            connection.execute(text(f"ALTER TABLE steps DROP COLUMN {column}"))
        connection.execute(update(schema.schema_version).values(version=6))
    engine.dispose()
    assert LATEST == 15  # later migrations add nothing this undo must take away
