"""A run whose provider reported no usage is "tokens unknown" wherever the store shows it: its
one run, its page of runs, its export, its follower's progress; derived from the steps'
``tokens_estimated`` at every privacy level, and never from a key of that name nested in what
the provider sent."""

from __future__ import annotations

import pytest

from toolwire import RunOptions, ToolCall
from toolwire.core.lifecycle import TerminationReason
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import UNKNOWN_USAGE, CompletionResponse, Usage
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store.browse import RunQuery

from ..fakes import PricedModel
from .conftest import Backend
from .helpers import registry

UNREPORTED = CompletionResponse(content="an answer", usage=UNKNOWN_USAGE, model="gpt-4o-mini")
REPORTED = CompletionResponse(content="an answer", usage=Usage(12, 3), model="gpt-4o-mini")
# A provider body that holds the flag's name, nested, where only a run's raw capture keeps it.
NESTED = CompletionResponse(content="an answer", usage=Usage(12, 3), model="gpt-4o-mini",
                            raw={"meta": {"tokens_estimated": True}})  # fmt: skip


def _run(store: RunStore, answer: CompletionResponse, *, capture_raw: bool = False) -> RunOutcome:
    options = RunOptions(allowed_tools=[], capture_raw=capture_raw)
    request = RunRequest.of("what?", provider=PricedModel(answer), model="gpt-4o-mini",
                            options=options)  # fmt: skip
    return Runtime(registry(), recorder=store).run_sync(request)


def _known_everywhere(store: RunStore, run_id: str) -> list[bool]:
    stored = store.get_run(run_id)
    progress = store.progress(run_id)
    exported = [r for r in store.export(RunQuery()) if r.id == run_id]
    assert stored is not None and progress is not None and len(exported) == 1
    return [
        stored.tokens_known,
        stored.to_dict()["tokens_known"],
        store.list_runs(limit=1)[0].tokens_known,
        store.find_runs(RunQuery(limit=5)).runs[0].tokens_known,
        progress.run.tokens_known,
        exported[0].tokens_known,
    ]


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_run_without_reported_usage_is_tokens_unknown_at_every_level(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    outcome = _run(store, UNREPORTED)
    assert outcome.result is not None and outcome.result.usage.known is False
    assert _known_everywhere(store, outcome.run_id) == [False] * 6
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert stored.prompt_tokens + stored.completion_tokens > 0  # the estimate budgets counted
    assert [s.get("tokens_estimated") for s in stored.steps if s["kind"] == "llm"] == [True]


def test_a_run_with_reported_usage_is_known(store: RunStore) -> None:
    outcome = _run(store, REPORTED)
    assert _known_everywhere(store, outcome.run_id) == [True] * 6
    stored = store.get_run(outcome.run_id)
    assert stored is not None and (stored.prompt_tokens, stored.completion_tokens) == (12, 3)


def test_a_nested_key_of_the_same_name_does_not_make_tokens_unknown(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.FULL)
    outcome = _run(store, NESTED, capture_raw=True)
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    raws = [s.get("raw") for s in stored.steps if s["kind"] == "llm"]
    assert raws == [{"meta": {"tokens_estimated": True}}]  # kept, nested, as the server sent it
    assert _known_everywhere(store, outcome.run_id) == [True] * 6


def test_a_budget_that_counted_an_estimate_says_so_in_the_governance_log(store: RunStore) -> None:
    calling = CompletionResponse(tool_calls=(ToolCall("c1", "lookup", '{"query": "x"}'),),
                                 usage=UNKNOWN_USAGE, model="gpt-4o-mini")  # fmt: skip
    options = RunOptions(max_total_tokens=1)
    request = RunRequest.of("what?", provider=PricedModel(calling), model="gpt-4o-mini",
                            options=options)  # fmt: skip
    outcome = Runtime(registry(), recorder=store).run_sync(request)
    assert outcome.result is not None
    assert outcome.result.reason is TerminationReason.BUDGET_EXHAUSTED
    total, cost = outcome.result.usage.total_tokens, outcome.result.cost.shown
    (logged,) = [d for d in store.list_gate_decisions() if d.run_id == outcome.run_id]
    assert (logged.reason, logged.detail) == (
        "budget_exhausted",
        f"after 1 rounds, tokens unknown (about {total} estimated), ${cost:.6f} (estimated)",
    )  # fmt: skip


def test_a_nul_the_model_wrote_does_not_break_finding_unknown_tokens(backend: Backend) -> None:
    # PostgreSQL's JSON types refuse the escape a NUL is stored as: the check must not.
    store = backend.open(PrivacyLevel.FULL)
    nul = CompletionResponse(content="a\x00b \\u0000 \\\x00", usage=UNKNOWN_USAGE,
                             model="gpt-4o-mini")  # fmt: skip
    outcome = _run(store, nul)
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    (llm,) = [s for s in stored.steps if s["kind"] == "llm"]
    assert llm["content"] == "a\x00b \\u0000 \\\x00"  # kept as written, at full privacy
    assert _known_everywhere(store, outcome.run_id) == [False] * 6
