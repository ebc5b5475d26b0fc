"""The egress ledger over the inspector's API, on loopback HTTP: a stored run's ledger and the
totals over a time range are the store's numbers, behind the admin token like every run
endpoint; a run the store does not have is a 404, a bad grouping a 422."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from toolwire import RunOptions
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore

from ..inspector_kit import AUTH, live_server, settings
from ..providers.servers import FakeModel, loopback
from ..providers.test_egress_ledger import provider_at, received
from ..store.test_egress_ledger import SECRET_NOTE, registry


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, int]]:
    folder: Path = tmp_path_factory.mktemp("egress-api")
    store = RunStore.open(str(folder / "runs.db"), privacy=PrivacyLevel.NONE)
    model = FakeModel(turns=[[("read_note", {"name": "a"})], [("read_note", {"name": "b"})],
                             "done"])  # fmt: skip
    with loopback(model) as url:
        request = RunRequest.of("go", provider=provider_at(url), options=RunOptions())
        outcome = Runtime(registry(), recorder=store).run_sync(request)
    sent = sum(sum(s.values()) for s in received(c.json() for c in model.captured))
    try:
        with live_server(create_app(settings(store=store))) as base:
            yield base, outcome.run_id, sent
    finally:
        store.close()


def test_a_runs_ledger_is_what_the_server_received(served: tuple[str, str, int]) -> None:
    base, run_id, sent = served
    answer = httpx.get(f"{base}/api/runs/{run_id}/egress", headers=AUTH)
    assert answer.status_code == 200
    new = len(f"a {SECRET_NOTE}".encode()) + len(f"b {SECRET_NOTE}".encode())
    assert answer.json() == {
        "run_id": run_id, "new_bytes": new, "wire_bytes": sent,
        "lines": [{"provider": "openai", "tool": "read_note", "data_class": "content",
                   "label": "untrusted", "new_bytes": new, "wire_bytes": sent}],
    }  # fmt: skip
    assert SECRET_NOTE not in answer.text


def test_totals_split_by_what_is_asked(served: tuple[str, str, int]) -> None:
    base, _, sent = served
    answer = httpx.get(f"{base}/api/egress", params={"since": "1h", "by": "label"}, headers=AUTH)
    assert answer.json()["lines"] == [
        {"label": "untrusted", "new_bytes": answer.json()["new_bytes"], "wire_bytes": sent}
    ]
    old = httpx.get(f"{base}/api/egress", params={"until": "2000-01-01"}, headers=AUTH)
    assert old.json() == {"lines": [], "new_bytes": 0, "wire_bytes": 0}
    bad = httpx.get(f"{base}/api/egress", params={"by": "colour"}, headers=AUTH)
    assert bad.status_code == 422


def test_the_ledger_needs_the_admin_token_and_a_stored_run(served: tuple[str, str, int]) -> None:
    base, run_id, _ = served
    assert httpx.get(f"{base}/api/runs/{run_id}/egress").status_code == 401
    assert httpx.get(f"{base}/api/egress").status_code == 401
    wrong = {"Authorization": "Bearer not-the-token"}
    assert httpx.get(f"{base}/api/runs/{run_id}/egress", headers=wrong).status_code == 401
    missing = httpx.get(f"{base}/api/runs/{'0' * 36}/egress", headers=AUTH)
    assert missing.status_code == 404
