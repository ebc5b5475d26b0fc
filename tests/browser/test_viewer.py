"""The trace viewer in Chromium: timeline, tokens and cost, the stored runs at scale (filters,
sorts, search, pages), export, re-run, compare, highlighted code and deep links."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from toolwire import Artifact, ToolResult, tool
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, TOKEN, call, live_server, registry, settings
from .harness import Watched, open_inspector, start_run, stored_inspector, wait_status, watching

pytestmark = pytest.mark.browser
NAP_S = 0.4
ONLY_A = "\N{MINUS SIGN} only A"
DASH = "\N{EN DASH}"
SAMPLES = {
    "python": 'def greet(name):\n    return f"hi {name}"  # say hi',
    "javascript": "const x = 1; // one\nfunction f() { return 'a'; }",
    "typescript": "let n: number = 2;\ninterface P { id: string }",
    "json": '{"a": [1, true, null], "b": "text"}',
    "css": "body { color: red; }\n/* note */",
    "html": '<p class="x">Hi <b>there</b></p>\n<script>alert(1)</script>',
    "yaml": "key: value\nlist:\n  - 1  # a comment",
    "go": 'package main\nfunc main() { println("go") }',
    "rust": 'fn main() { let s = "rust"; }',
    "php": '$x = "php"; // note\necho $x;',
}


@tool(group="viewer", data_class="public")
async def nap(label: str) -> str:
    """Sleep a little: calls of one turn overlap."""
    await asyncio.sleep(NAP_S)
    return f"rested {label}"


@tool(group="viewer", data_class="public")
def show_code() -> ToolResult:
    """One code artifact per highlighted language, and one in a language with no grammar."""
    artifacts = [Artifact.code(lang, code, language=lang) for lang, code in SAMPLES.items()]
    return ToolResult.text("code", *artifacts, Artifact.code("sql", "SELECT 1;", language="sql"))


SCRIPTS = {
    "parallel": [{"tool_calls": [call("nap", {"label": f"n{i}"}) for i in range(3)],
                  "prompt_tokens": 40, "completion_tokens": 4},
                 {"content": "All rested.", "prompt_tokens": 50, "completion_tokens": 3}],
    "coder": [{"tool_calls": [call("show_code")]}, {"content": "Shown."}],
    "answer": [{"content": "Ada has 3 orders and a blue teapot."}],
    "other_answer": [{"content": "Ada has 2 orders and a blue kettle."}],
}  # fmt: skip


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tools = registry()
    tools.register(nap)
    tools.register(show_code)
    with stored_inspector(
        tmp_path_factory, PrivacyLevel.FULL, scripts=SCRIPTS, registry=tools
    ) as url:
        yield url


def api_run(base: str, provider: str, prompt: str = "go", **body: Any) -> str:
    answer = httpx.post(f"{base}/api/runs", json={"prompt": prompt, "provider": provider, **body},
                        headers=AUTH, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    run_id: str = answer.json()["context"]["run_id"]
    return run_id


def stored_run(page: Page, run_id: str) -> None:
    page.click(".nav-link[data-view=runs]")
    page.locator("tr.run-row").first.wait_for()
    page.locator(f"tr.run-row:has(td[title='{run_id}'])").click()
    page.wait_for_selector(f"#stored-run h3 a:text-is('{run_id}')")


def bars(page: Page, scope: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.eval_on_selector_all(
        f"{scope} .timeline-row",
        """rows => rows.map(r => ({kind: r.dataset.kind, index: Number(r.dataset.index),
             label: r.querySelector('.timeline-label').textContent,
             left: parseFloat(r.querySelector('.timeline-bar').style.left),
             width: parseFloat(r.querySelector('.timeline-bar').style.width),
             selected: r.classList.contains('selected')}))""",
    )
    return found


def test_the_live_timeline_puts_concurrent_calls_side_by_side(watched: Watched) -> None:
    page = watched.page
    start_run(page, "parallel")
    wait_status(page, "completed")
    rows = bars(page, "#timeline")
    assert [r["kind"] for r in rows] == ["request", "llm", "tool", "tool", "tool", "request",
                                         "llm"]  # fmt: skip
    naps = [r for r in rows if r["kind"] == "tool"]
    assert [r["label"] for r in naps] == ["⚙ nap"] * 3
    assert max(r["left"] for r in naps) - min(r["left"] for r in naps) < 10  # at once
    assert all(r["width"] > 50 for r in naps)  # the naps are most of the run
    assert rows[-1]["selected"]  # the newest step, as in the list
    page.click("#timeline .timeline-row[data-index='3']")
    assert page.get_attribute("#steps li[data-index='3']", "aria-selected") == "true"
    assert page.text_content("#detail .detail-title") == "Tool · nap"
    assert bars(page, "#timeline")[3]["selected"]
    assert page.text_content("#timeline .timeline-head") is not None


def test_tokens_and_cost_show_per_call_in_the_summary_and_the_table(watched: Watched) -> None:
    page = watched.page
    start_run(page, "parallel")
    wait_status(page, "completed")
    usage = page.eval_on_selector_all("#steps .step-usage", "e => e.map(x => x.textContent)")
    assert usage == ["44 tok", "53 tok"]  # a script has no price: no cost to show
    assert page.text_content("#metric-tokens .metric-value") == "97"
    assert page.text_content("#metric-tokens .metric-more") == "90 in · 7 out"
    page.click(".nav-link[data-view=runs]")
    row = page.locator("tr.run-row").first
    row.wait_for()
    assert row.locator("td").nth(7).text_content() == "97"
    assert row.locator("td").nth(7).get_attribute("title") == "90 in, 7 out"


def test_a_priced_model_shows_its_cost_per_call(browser: Browser, base: str) -> None:
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        start_run(page, "streaming")
        wait_status(page, "completed", timeout=20_000)
        usage = page.text_content("#steps .step-usage") or ""
        assert re.fullmatch(r"2000 tok · \$0\.\d+", usage), usage
        assert page.text_content("#metric-cost .metric-value") == usage.split(" · ")[1]


def test_stored_runs_filter_sort_search_and_page_on_the_server(browser: Browser, base: str) -> None:
    many = [api_run(base, "answer", prompt=f"question {n}") for n in range(52)]
    coder = api_run(base, "coder", prompt="show me code")
    with watching(browser, base, TOKEN) as watched:
        page = watched.page
        page.click(".nav-link[data-view=runs]")
        page.wait_for_selector("[data-testid=pager-text]")
        total = int((page.text_content("[data-testid=pager-text]") or "").split(" of ")[1])
        assert total >= 53
        assert page.text_content("[data-testid=pager-text]") == f"1{DASH}50 of {total}"
        assert page.locator("tr.run-row").count() == 50
        page.click("#runs-pager button:text-is('Older →')")
        page.wait_for_selector(
            f"[data-testid=pager-text]:text-is('51{DASH}{min(100, total)} of {total}')"
        )
        page.select_option("#runs-tool", "show_code")
        page.wait_for_selector(f"[data-testid=pager-text]:text-is('1{DASH}1 of 1')")
        assert page.get_attribute("tr.run-row td:nth-child(2)", "title") == coder
        page.select_option("#runs-tool", "")
        page.wait_for_selector(f"[data-testid=pager-text]:text-is('1{DASH}50 of {total}')")
        page.fill("#runs-q", "question 51")
        page.press("#runs-q", "Enter")
        page.wait_for_function(
            "id => { const rows = document.querySelectorAll('tr.run-row');"
            " return rows.length === 1 && rows[0].querySelector(`td[title='${id}']`); }",
            arg=many[51],
        )  # only the one run: the unfiltered page that came before also lists it
        assert page.text_content("[data-testid=pager-text]") == f"1{DASH}1 of 1"
        page.fill("#runs-q", "no-such-word-anywhere")
        page.press("#runs-q", "Enter")
        page.wait_for_selector("[data-testid=no-runs]")
        assert "No stored run has these words" in (page.text_content("[data-testid=no-runs]") or "")
        page.fill("#runs-q", "")
        page.press("#runs-q", "Enter")
        page.wait_for_selector("tr.run-row")
        page.click("th button[data-sort=tokens]")
        page.wait_for_selector("th[aria-sort=descending] button[data-sort=tokens]")
        tokens = [int(t) for t in page.eval_on_selector_all(
            "tr.run-row td:nth-child(8)", "e => e.map(x => x.textContent)")]  # fmt: skip
        assert tokens == sorted(tokens, reverse=True) and tokens[0] > 0
        page.click("th button[data-sort=tokens]")
        page.wait_for_selector("th[aria-sort=ascending] button[data-sort=tokens]")
        page.select_option("#runs-status", "failed")
        page.wait_for_selector("[data-testid=no-runs]")


def test_export_shows_the_record_and_saves_it_as_a_file(watched: Watched, base: str) -> None:
    run_id = api_run(base, "answer")
    page = watched.page
    stored_run(page, run_id)
    page.click("#stored-run [data-testid=export]")
    shown = page.wait_for_selector("#stored-run .export-json")
    assert shown is not None
    record = json.loads(shown.text_content() or "")
    expected = httpx.get(f"{base}/api/runs/{run_id}/export", headers=AUTH).json()
    assert record == expected and record["schema_version"] == 1
    with page.expect_download() as download:
        page.click("#stored-run [data-testid=download]")
    assert download.value.suggested_filename == f"toolwire-run-{run_id}.json"
    assert json.loads(Path(download.value.path()).read_text()) == expected


def test_rerun_fills_the_form_runs_the_edited_prompt_and_links_both_ways(
    watched: Watched, base: str
) -> None:
    original = api_run(base, "answer", prompt="How many orders?", system_prompt="Be short.",
                       max_rounds=3, temperature=0.4, allowed_tools=["lookup"])  # fmt: skip
    page = watched.page
    stored_run(page, original)
    page.click("#stored-run [data-testid=rerun]")
    page.wait_for_selector("#rerun-banner:not([hidden])")
    assert page.input_value("#prompt") == "How many orders?"
    assert page.input_value("#system-prompt") == "Be short."
    assert page.input_value("#provider") == "answer"
    assert page.input_value("#max-rounds") == "3" and page.input_value("#temperature") == "0.4"
    checked = page.eval_on_selector_all("input[name=tool]:checked", "e => e.map(x => x.value)")
    assert checked == ["lookup"]
    page.fill("#prompt", "How many orders now?")
    page.click("#run-button")
    wait_status(page, "completed")
    assert page.is_hidden("#rerun-banner")
    again = page.text_content("#run-id a") or ""
    assert page.text_content("#run-id") == f"Run {again} · re-run of {original}"
    stored_run(page, again)
    assert page.text_content("#stored-run .run-links") == f"Re-run of {original}"
    messages = page.evaluate(
        f"fetch('/api/runs/{again}', {{headers: {{Authorization: 'Bearer {TOKEN}'}}}})"
        ".then(r => r.json()).then(r => r.steps[0].messages_sent)"
    )
    assert messages[-1] == {"role": "user", "content": "How many orders now?"}
    stored_run(page, original)
    page.wait_for_selector("#stored-run .reruns")
    assert page.text_content("#stored-run .reruns a") == again[:12]


def test_two_checked_runs_compare_with_their_differences_marked(
    watched: Watched, base: str
) -> None:
    first = api_run(base, "answer")
    second = api_run(base, "parallel", max_rounds=4)
    page = watched.page
    page.click(".nav-link[data-view=runs]")
    for run_id in (second, first):  # A is the one ticked first
        page.locator(f"tr.run-row:has(td[title='{run_id}']) .compare-check").check()
    page.click("#runs-compare")
    page.wait_for_selector("#compare-out .compare-table")
    assert page.evaluate("window.location.hash") == f"#compare={second},{first}"
    differing = page.eval_on_selector_all(
        "#compare-out section:nth-of-type(1) tr.diff th", "e => e.map(x => x.textContent)"
    )
    assert {"Provider", "Rounds", "Option max_rounds"} <= set(differing)
    assert "Privacy level" not in differing
    marks = page.eval_on_selector_all(
        "#compare-out section:nth-of-type(3) tbody tr",
        "rows => rows.map(r => r.querySelector('.compare-mark').textContent)",
    )
    assert marks == ["", *[ONLY_A] * 5, "≠"]  # the turn asking, 3 naps, a request; answers
    inserted = page.eval_on_selector_all(
        "#compare-out section:nth-of-type(5) mark.diff-ins", "e => e.map(x => x.textContent)"
    )
    assert inserted == ["Ada", "has", "3", "orders", "and", "a", "blue", "teapot."]
    api_other = api_run(base, "other_answer")
    page.goto(f"{base}/#compare={first},{api_other}")  # the same page: the fragment changes
    page.wait_for_selector(f"[data-testid=compare-heads] a:text-is('{api_other}')")
    assert page.eval_on_selector_all(
        "#compare-out section:nth-of-type(5) mark", "e => e.map(x => x.textContent)"
    ) == ["3", "teapot.", "2", "kettle."]


def test_code_artifacts_are_highlighted_in_every_vendored_language(
    watched: Watched, base: str
) -> None:
    run_id = api_run(base, "coder")
    page = watched.page
    stored_run(page, run_id)
    page.click("#stored-run ol.steps li[data-kind=tool]")
    page.click("#stored-run .detail .tab:text-is('Artifacts')")
    page.wait_for_selector(f"#stored-run .artifact-code.highlighted >> nth={len(SAMPLES) - 1}")
    boxes = page.eval_on_selector_all(
        "#stored-run .artifact[data-type=code]",
        """boxes => boxes.map(b => ({
             label: b.querySelector('.artifact-label').textContent,
             lit: b.querySelector('.artifact-code').classList.contains('highlighted'),
             tokens: b.querySelectorAll('.line-text span[class^=tok-]').length,
             lines: [...b.querySelectorAll('.line-text')].map(l => l.textContent),
             other: b.querySelectorAll('.line-text *:not(span)').length}))""",
    )
    assert [b["label"] for b in boxes] == [*SAMPLES, "sql"]
    for box in boxes:
        code = SAMPLES.get(box["label"], "SELECT 1;")
        assert box["lines"] == code.split("\n")  # the text reads exactly as it was
        assert box["other"] == 0  # only spans: nothing from the code became an element
        assert box["lit"] == (box["label"] != "sql") and (box["tokens"] > 0) == box["lit"]
    assert page.locator("#stored-run .artifact-code script").count() == 0


def test_a_deep_link_opens_the_run_and_step_after_the_token_prompt(
    browser: Browser, base: str
) -> None:
    run_id = api_run(base, "parallel")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    watched = Watched(page)
    page.goto(f"{base}/#run={run_id}&step=4")
    page.wait_for_selector("body[data-ready=true]")
    assert page.is_visible("#token-form")
    page.fill("#token-input", f"http://127.0.0.1:1/#token={TOKEN}")  # the printed URL works
    page.click("#token-form button")
    page.wait_for_selector("#stored-run ol.steps li.selected")
    assert page.get_attribute("#stored-run ol.steps li.selected", "data-index") == "3"
    assert page.text_content("#stored-run .detail .detail-title") == "Tool · nap"
    assert page.is_hidden("#token-form")
    page.click("#stored-run ol.steps li[data-index='1']")
    assert page.evaluate("window.location.hash") == f"#run={run_id}&step=2"
    fresh = browser.new_page()
    fresh.goto(f"{base}/#token={TOKEN}&run={run_id}&step=5")
    fresh.wait_for_selector("#stored-run ol.steps li.selected[data-index='4']")
    assert fresh.evaluate("window.location.hash") == f"#run={run_id}&step=5"  # token gone
    assert watched.errors == [] and watched.dialogs == []
    fresh.close()
    page.close()


def test_a_wrong_token_typed_at_the_prompt_is_refused_clearly(browser: Browser, base: str) -> None:
    page = browser.new_page()
    page.goto(f"{base}/#run={'0' * 36}")
    page.wait_for_selector("#token-form:not([hidden])")
    page.fill("#token-input", "not-the-token-" + "y" * 20)
    page.click("#token-form button")
    page.wait_for_selector("#auth-banner:not([hidden])")
    assert page.text_content("#auth-state") == "token no longer valid"
    assert page.is_visible("#token-form")
    page.fill("#token-input", TOKEN)
    page.click("#token-form button")
    page.wait_for_selector("#stored-run .banner.error:text-is('no stored run has this id')")
    assert page.is_hidden("#token-form")
    page.close()


def test_a_run_kept_at_metadata_says_why_it_cannot_be_rerun(
    browser: Browser, tmp_path: Path
) -> None:
    store = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}", privacy=PrivacyLevel.METADATA)
    app = create_app(settings(store=store, privacy_level="metadata", scripts=SCRIPTS))
    with live_server(app) as url:
        run_id = api_run(url, "answer")
        watched = open_inspector(browser, url, TOKEN)
        page = watched.page
        stored_run(page, run_id)
        page.click("#stored-run [data-testid=rerun]")
        refusal = page.wait_for_selector("[data-testid=rerun-refused]")
        assert refusal is not None and refusal.text_content() == (
            "This run cannot be re-run: its request is not kept at privacy level metadata "
            "(only at full, or sealed while the run waits)."
        )
        assert watched.errors == []
        page.close()
    store.close()
