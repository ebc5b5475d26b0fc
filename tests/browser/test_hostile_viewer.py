"""Hostile bytes in the viewer's new places: timeline labels, search results, the compare view,
the exported JSON, highlighted code and deep links. None may run; each must read literally."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from toolwire import Artifact, ToolRegistry, ToolResult, tool
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, TOKEN, echo, factory, live_server
from ..inspector_kit import settings as kit_settings
from .harness import Watched, open_inspector, start_run, wait_status
from .payloads import PAYLOADS, hostile_artifacts, shown
from .test_hostile import FORBIDDEN, hostile_script

pytestmark = pytest.mark.browser
SCOPES = "#timeline, #stored-run, #runs-table, #compare-out, #runs-filters"
CODE_LANGUAGES = ("html", "javascript", "python", "json", "php")


@tool(group="hostile", data_class="public")
def hostile_code() -> ToolResult:
    """Every payload as code, in languages whose grammars parse markup and strings."""
    code = "\n".join(PAYLOADS)
    return ToolResult.text("code", *(Artifact.code(lang, code, language=lang)
                                     for lang in CODE_LANGUAGES))  # fmt: skip


def scripts() -> dict[str, list[dict[str, Any]]]:
    first = hostile_script()
    first[-1] = {**first[-1], "tool_calls": [{"name": "hostile_code", "arguments": {}}]}
    first.append({"content": PAYLOADS[13], "thinking": PAYLOADS[14]})
    calls = [{"name": "echo", "arguments": {"text": x}} for x in PAYLOADS[::-3]]
    other: list[dict[str, Any]] = [{"tool_calls": calls}, {"content": " ".join(PAYLOADS[:20])}]
    return {"hostile": first, "hostile_other": other}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    path: Path = tmp_path_factory.mktemp("hostile-viewer") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.FULL)
    settings = kit_settings(
        registry=ToolRegistry([echo, hostile_artifacts, hostile_code]), store=store,
        privacy_level="full",
    )  # fmt: skip
    settings = type(settings)(**{**_fields(settings), "provider_factory": factory(scripts())})
    with live_server(create_app(settings)) as base:
        runs = {name: _run(base, name, PAYLOADS[9]) for name in ("hostile", "hostile_other")}
        yield {"base": base, **runs}
    store.close()


def _fields(settings: Any) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in settings.__dataclass_fields__}


def _run(base: str, provider: str, prompt: str) -> str:
    answer = httpx.post(f"{base}/api/runs", json={"prompt": prompt, "provider": provider,
                                                  "max_rounds": 10},
                        headers=AUTH, timeout=60)  # fmt: skip
    assert answer.status_code == 200, answer.text
    run_id: str = answer.json()["context"]["run_id"]
    return run_id


@pytest.fixture
def watched(browser: Browser, served: dict[str, str]) -> Iterator[Watched]:
    watched = open_inspector(browser, served["base"], TOKEN)
    yield watched
    watched.page.close()


def assert_inert(watched: Watched) -> None:
    page = watched.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert watched.dialogs == [] and watched.errors == [] and watched.console == []
    found = page.eval_on_selector_all(f":is({SCOPES}) :is({FORBIDDEN})", "e => e.length")
    assert found == 0
    hrefs = page.eval_on_selector_all("main a", "e => e.map(a => a.href)")
    assert all(h.startswith(("http://", "https://")) for h in hrefs)


def texts(page: Page, selector: str) -> list[str]:
    found: list[str] = page.eval_on_selector_all(selector, "e => e.map(x => x.textContent)")
    return found


def open_stored(page: Page, run_id: str) -> None:
    page.goto(page.url.split("#")[0] + f"#run={run_id}")
    page.wait_for_selector(f"#stored-run h3 a:text-is('{run_id}')")


def test_timeline_labels_read_literally_live_and_stored(
    watched: Watched, served: dict[str, str]
) -> None:
    page = watched.page
    start_run(page, "hostile", prompt=PAYLOADS[0])
    wait_status(page, "completed", timeout=30_000)
    tools = texts(page, "#timeline .timeline-row[data-kind=tool] .timeline-label")
    assert tools[0] == f"⚙ {shown(PAYLOADS[2])}"  # a model-chosen tool name
    assert tools[1:] == ["⚙ echo"] * len(PAYLOADS) + ["⚙ hostile_artifacts", "⚙ hostile_code"]
    titles = page.eval_on_selector_all(
        "#timeline .timeline-row[data-kind=tool]", "e => e.map(x => x.title)"
    )
    assert titles[0].startswith(f"⚙ {shown(PAYLOADS[2])}: ")
    assert_inert(watched)
    open_stored(page, served["hostile"])
    stored = texts(page, "#stored-run .timeline-row[data-kind=tool] .timeline-label")
    assert stored == tools
    assert_inert(watched)


def test_search_results_show_hostile_prompts_as_text(
    watched: Watched, served: dict[str, str]
) -> None:
    page = watched.page
    page.click(".nav-link[data-view=runs]")
    page.wait_for_selector("tr.run-row")
    for query in ("onerror pwned", PAYLOADS[0], PAYLOADS[46]):
        page.fill("#runs-q", query)
        page.press("#runs-q", "Enter")
        page.wait_for_selector(f"tr.run-row td[title='{served['hostile']}']")
        previews = texts(page, "tr.run-row td.prompt-preview")
        hostile = page.text_content(
            f"tr.run-row:has(td[title='{served['hostile']}']) td.prompt-preview"
        )
        assert hostile == " ".join(shown(PAYLOADS[9]).split())
        assert set(previews) <= {" ".join(shown(x).split()) for x in (PAYLOADS[9], PAYLOADS[0])}
        assert_inert(watched)
    page.fill("#runs-q", PAYLOADS[2])  # words of markup no run kept together: nothing
    page.press("#runs-q", "Enter")
    page.wait_for_selector("[data-testid=no-runs], tr.run-row")
    assert_inert(watched)


def test_the_compare_view_shows_both_runs_literally(
    watched: Watched, served: dict[str, str]
) -> None:
    page = watched.page
    page.goto(page.url.split("#")[0] + f"#compare={served['hostile']},{served['hostile_other']}")
    page.wait_for_selector("#compare-out section:nth-of-type(5) pre")
    answers = texts(page, "#compare-out section:nth-of-type(5) td pre")
    assert answers == [shown(PAYLOADS[13]), " ".join(shown(x) for x in PAYLOADS[:20])]
    results = texts(page, "#compare-out section:nth-of-type(4) td[data-side=a] pre")
    assert results[0] == f'Error: unknown tool "{shown(PAYLOADS[2])}"'
    assert set(results) >= {shown(x) for x in PAYLOADS[::3]}
    calls = texts(page, "#compare-out section:nth-of-type(4) tbody th")
    assert calls[0] == shown(PAYLOADS[2])
    marked = "".join(texts(page, "#compare-out mark"))
    assert "<script>" in marked  # the words only one side has, marked as text
    assert_inert(watched)


def test_the_exported_json_view_is_the_record_as_text(
    watched: Watched, served: dict[str, str]
) -> None:
    page = watched.page
    run_id = served["hostile"]
    open_stored(page, run_id)
    page.click("#stored-run [data-testid=export]")
    shown_json = page.wait_for_selector("#stored-run .export-json")
    assert shown_json is not None
    record = json.loads(shown_json.text_content() or "")
    assert record == httpx.get(f"{served['base']}/api/runs/{run_id}/export", headers=AUTH).json()
    assert record["final_answer"] == shown(PAYLOADS[13])
    assert_inert(watched)


def test_highlighted_hostile_code_is_still_only_text(
    watched: Watched, served: dict[str, str]
) -> None:
    page = watched.page
    open_stored(page, served["hostile"])
    last_tool = page.eval_on_selector_all("#stored-run ol.steps li[data-kind=tool]",
                                          "e => e.at(-1).dataset.index")  # fmt: skip
    page.click(f"#stored-run ol.steps li[data-index='{last_tool}']")
    page.click("#stored-run .detail .tab:text-is('Artifacts')")
    page.wait_for_selector(
        f"#stored-run .artifact-code.highlighted >> nth={len(CODE_LANGUAGES) - 1}"
    )
    expected = "\n".join(shown(x) for x in PAYLOADS).split("\n")
    for index in range(len(CODE_LANGUAGES)):
        box = f"#stored-run .artifact[data-index='{index}']"
        assert texts(page, f"{box} .line-text") == expected
        kinds = page.eval_on_selector_all(f"{box} .line-text *", "e => e.map(x => x.tagName)")
        assert set(kinds) == {"SPAN"}
        classes = page.eval_on_selector_all(
            f"{box} .line-text span", "e => e.map(x => x.className)"
        )
        assert all(c.startswith("tok-") for c in classes)
    assert_inert(watched)


def test_hostile_deep_links_open_nothing(watched: Watched, served: dict[str, str]) -> None:
    page = watched.page
    base = page.url.split("#")[0]
    for fragment in (f"#run={PAYLOADS[0]}", f"#compare={PAYLOADS[2]},{PAYLOADS[3]}",
                     "#run=../../api/tools", f"#compare={served['hostile']}"):  # fmt: skip
        page.goto(base + fragment)
        page.wait_for_timeout(300)  # nothing to wait for: nothing may happen
        assert page.locator("#stored-run > *").count() == 0
        assert page.locator("#compare-out > *").count() == 0
        assert_inert(watched)
    page.goto(base + f"#run={served['hostile']}&step={PAYLOADS[4]}")  # a run, not a step
    page.wait_for_selector(f"#stored-run h3 a:text-is('{served['hostile']}')")
    assert page.evaluate("window.location.hash") == f"#run={served['hostile']}"
    assert_inert(watched)


def test_trusted_types_leave_no_html_sink_open(watched: Watched) -> None:
    """The CSP's Trusted Types (no policy may be made) make every HTML sink throw: a string
    cannot become markup even if some code tried."""
    attempts = watched.page.evaluate(
        """() => ['innerHTML', 'outerHTML'].map(sink => {
             const probe = document.createElement('div');
             document.body.append(probe);
             try { probe[sink] = '<img src=x onerror="window.__pwned=1">'; return 'allowed'; }
             catch (e) { return e.name; } finally { probe.remove(); }
           }).concat([(() => {
             try { trustedTypes.createPolicy('p', {createHTML: s => s}); return 'allowed'; }
             catch (e) { return e.name; } })()])"""
    )
    assert attempts == ["TypeError", "TypeError", "TypeError"]
    watched.console.clear()  # the refusals were logged as CSP violations, as they should be
    assert_inert(watched)
