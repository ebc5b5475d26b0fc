"""A Responses API run that waits for an approval keeps its turn's encrypted reasoning in its
sealed state, on SQLite and PostgreSQL: the resumed run gives it back verbatim (the loopback
server refuses a request that does not)."""

from __future__ import annotations

from typing import Any

from toolwire import ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.providers.http import HttpSettings
from toolwire.providers.responses import ResponsesProvider
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime

from ..providers.responses_server import ResponsesModel, reasoning_item, responses_loopback
from .conftest import Backend

KEY = StateKey.generate()
WRITES: list[int] = []
SCRIPT: list[Any] = [[("write_row", {"n": 1})], "done"]


@tool(data_class="public", requires_approval=True)
def write_row(n: int) -> str:
    WRITES.append(n)
    return f"wrote {n}"


def test_a_resumed_run_gives_its_encrypted_reasoning_back(backend: Backend) -> None:
    WRITES.clear()
    store = backend.open()
    model = ResponsesModel(SCRIPT)
    with responses_loopback(model) as base:

        def adapter() -> ResponsesProvider:
            return ResponsesProvider(model="gpt-5", api_key="sk-test-resume-0000",
                                     base_url=base, http=HttpSettings(max_attempts=1))  # fmt: skip

        runtime = Runtime(ToolRegistry([write_row]), recorder=store, state_key=KEY)
        waiting = runtime.run_sync(RunRequest.of("go", provider=adapter()))
        assert waiting.status is RunStatus.AWAITING_APPROVAL and waiting.pause is not None
        decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ops")
        resumed = Runtime(ToolRegistry([write_row]), recorder=store, state_key=KEY)
        done = resumed.resume_sync(waiting.run_id, decision, provider=adapter())
    store.close()
    assert done.status is RunStatus.COMPLETED and WRITES == [1]
    assert model.problems == [] and len(model.captured) == 2
    second = model.captured[1].json()["input"]
    assert [i for i in second if i["type"] == "reasoning"] == [reasoning_item(0)]
