"""A stored run's egress ledger, in Chromium: the run's detail view shows a table of the tool
output it sent, per provider, tool, data class and label, whose numbers are the store's (a
hostile tool name reaches the page as text), with nothing serious for axe-core."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from toolwire.demo._content import write_database
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, live_server, settings
from ..test_cli_run_options import tw
from .axe import audit, axe_context
from .harness import watching

pytestmark = pytest.mark.browser
HOSTILE = "<img src=x onerror=alert(1)>"
TURNS = [
    {"tool_calls": [{"name": "count_records", "arguments": {"table": "products"}},
                    {"name": HOSTILE, "arguments": {}}]},
    {"tool_calls": [{"name": "read_records", "arguments": {"table": "products"}}]},
    {"content": "done"},
]  # fmt: skip


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, RunStore]]:
    folder = tmp_path_factory.mktemp("egress")
    write_database(folder / "shop.sqlite")
    (folder / "workspace.toml").write_text(f'database_url = "sqlite:///{folder / "shop.sqlite"}"\n')
    (folder / "script.json").write_text(json.dumps({"turns": TURNS}))
    done = tw(folder, "run", "--script", str(folder / "script.json"), "--workspace",
              str(folder / "workspace.toml"), "--json", "How many products?")  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    store = RunStore.open(f"sqlite:///{folder / 'runs.sqlite'}", privacy=PrivacyLevel.METADATA)
    try:
        with live_server(create_app(settings(store=store))) as url:
            yield url, run_id, store
    finally:
        store.close()


def test_the_run_view_shows_what_it_sent_each_provider(
    browser: Browser, stored: tuple[str, str, RunStore]
) -> None:
    base, run_id, store = stored
    expected = [
        [t.provider, t.tool, t.data_class, t.label, f"{t.new_bytes:,}", f"{t.wire_bytes:,}"]
        for t in store.egress(run_id=run_id)
    ]
    assert {row[1] for row in expected} == {"count_records", "read_records", "(unregistered)"}
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        page.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
        page.wait_for_selector("#stored-run [data-testid=egress] table")
        shown = page.eval_on_selector_all(
            "#stored-run .egress-table tbody tr",
            "rows => rows.map(r => [...r.cells].map(c => c.textContent))",
        )
        assert shown == expected
        caption = page.text_content("#stored-run .egress-table caption")
        total = sum(t.wire_bytes for t in store.egress(run_id=run_id))
        assert caption is not None and caption.startswith(f"{total:,} bytes on the wire")
        assert page.query_selector("#stored-run .egress img") is None


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_egress_table_has_nothing_serious_for_axe(
    browser: Browser, stored: tuple[str, str, RunStore], scheme: str
) -> None:
    base, run_id, _ = stored
    context = axe_context(browser, 320, scheme)
    page = context.new_page()
    try:
        page.goto(f"{base}/#token={TOKEN}")
        page.wait_for_selector("body[data-ready=true]")
        page.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
        page.wait_for_selector("#stored-run [data-testid=egress] table")
        found = [v for v in audit(page) if any("egress" in n["target"] for n in v["nodes"])]
        assert found == []
    finally:
        context.close()
