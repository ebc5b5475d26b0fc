"""A stored run that required an output schema, in Chromium: the model step's checked answer
is its own tab, a tree of text (hostile strings stay text), and an answer that did not match
shows the schema's words for why."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import TOKEN, live_server, settings
from ..test_cli_run_options import tw
from .harness import watching

pytestmark = pytest.mark.browser
HOSTILE = '<img src=x onerror="window.__pwned=1">'
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live inspector over a store holding one CLI run whose second answer matched."""
    folder = tmp_path_factory.mktemp("output")
    (folder / "city.json").write_text(json.dumps(SCHEMA))
    turns = [{"content": "Oslo, I think"}, {"content": json.dumps({"city": HOSTILE})}]
    (folder / "script.json").write_text(json.dumps({"turns": turns}))
    done = tw(folder, "run", "--script", str(folder / "script.json"), "--no-tools",
              "--privacy", "full", "--output-schema", str(folder / "city.json"), "--json",
              "Which city?")  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    store = RunStore.open(f"sqlite:///{folder / 'runs.sqlite'}", privacy=PrivacyLevel.FULL)
    try:
        with live_server(create_app(settings(store=store, privacy_level="full"))) as url:
            yield url, run_id
    finally:
        store.close()


def test_the_checked_answer_is_a_tab_of_text_and_the_miss_says_why(
    browser: Browser, stored: tuple[str, str]
) -> None:
    base, run_id = stored
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        page.evaluate("(hash) => { window.location.hash = hash; }", f"run={run_id}")
        page.wait_for_selector("#stored-run ol.steps li[data-kind=llm]")
        llms = page.eval_on_selector_all("#stored-run ol.steps li[data-kind=llm]",
                                         "e => e.map(x => x.dataset.index)")  # fmt: skip
        assert len(llms) == 2
        page.click(f"#stored-run ol.steps li[data-index='{llms[0]}']")
        tabs = page.eval_on_selector_all(
            "#stored-run .detail .tab", "e => e.map(x => x.textContent)"
        )
        assert "Output" not in tabs  # the first answer did not match
        problem = page.text_content("#stored-run .detail dd[data-kind=output_problem]")
        assert problem == "the answer is not one JSON document"
        page.click(f"#stored-run ol.steps li[data-index='{llms[1]}']")
        page.click("#stored-run .detail .tab:text-is('Output')")
        view = page.wait_for_selector("#stored-run [data-testid=model-output]")
        assert view is not None
        text = view.text_content() or ""
        assert "city" in text and json.dumps(HOSTILE) in text  # as JSON text
        assert page.query_selector_all("#stored-run [data-testid=model-output] img") == []
        assert page.evaluate("window.__pwned") is None
