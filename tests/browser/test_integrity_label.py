"""A stored run's tool step, in Chromium: the detail view shows the integrity label of what the
call put in the model's context, as a small badge of text."""

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
from .harness import watching

pytestmark = pytest.mark.browser
TURNS = [
    {"tool_calls": [{"name": "count_records", "arguments": {"table": "products"}}]},
    {"tool_calls": [{"name": "read_records", "arguments": {"table": "products"}}]},
    {"content": "done"},
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live inspector over a store holding one CLI run: a trusted count, an untrusted read."""
    folder = tmp_path_factory.mktemp("labels")
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
            yield url, run_id
    finally:
        store.close()


def test_each_tool_step_shows_its_integrity_label(
    browser: Browser, stored: tuple[str, str]
) -> None:
    base, run_id = stored
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        page.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
        page.wait_for_selector("#stored-run ol.steps li[data-kind=tool]")
        tools = page.eval_on_selector_all("#stored-run ol.steps li[data-kind=tool]",
                                          "e => e.map(x => x.dataset.index)")  # fmt: skip
        shown = []
        for index, name in zip(tools, ["count_records", "read_records"], strict=True):
            page.click(f"#stored-run ol.steps li[data-index='{index}']")
            page.wait_for_selector(f"#stored-run .detail .detail-title:text-is('Tool · {name}')")
            badge = page.wait_for_selector("#stored-run .detail .detail-head .integrity")
            assert badge is not None
            shown.append((badge.text_content(), badge.get_attribute("title")))
        assert shown == [
            ("trusted", "The model read this output as trusted"),
            ("untrusted", "The model read this output as untrusted: words someone else chose"),
        ]
