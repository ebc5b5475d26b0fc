"""The inspector's layout in Chromium, over the demo: every view reflows at 320 and 390 CSS px
and at 200% zoom (WCAG 1.4.10: only a table scrolls, inside its own box); the Tools rows are
one line of buttons; the timeline shows every row and its marks never overlap around a wait;
an opened stored run is in view; the dark theme's text and controls contrast enough (computed
here from the colours the page really draws); reduced motion stops the spinner."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from toolwire.inspector import create_app

from ..inspector_kit import TOKEN, live_server, settings
from .demo_server import VIEWS, demo_inspector, open_view, run_demo
from .harness import Watched, open_step, start_run, wait_status

pytestmark = pytest.mark.browser
# 320: WCAG's reflow width; 390: a phone; 640: a 1280 px window at 200% zoom.
NARROW = (320, 390, 640)
TEXT_CONTRAST = 4.5
UI_CONTRAST = 3.0


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with demo_inspector(tmp_path_factory) as url:
        yield url


@pytest.fixture(scope="module")
def with_runs(browser: Browser, base: str) -> str:
    """Two finished demo runs in the store (the compare view needs two)."""
    page = open_page(browser, base, 1280)
    run_demo(page)
    run_demo(page)
    page.context.close()
    return base


@pytest.fixture(scope="module")
def waited(browser: Browser, base: str) -> str:
    """The id of a demo run whose approval came 2.5 s after it paused."""
    page = open_page(browser, base, 1280)
    run_demo(page, wait_ms=2500)
    run_id = page.text_content("#run-id a") or ""
    page.context.close()
    return run_id


def open_page(browser: Browser, base: str, width: int, **context: Any) -> Page:
    height = 900 if width > 640 else 740
    page = browser.new_context(viewport={"width": width, "height": height}, **context).new_page()
    watched = Watched(page)
    page.goto(f"{base}/#token={TOKEN}")
    page.wait_for_selector("body[data-ready=true]")
    page.set_default_timeout(15_000)
    assert watched.errors == []
    return page


@pytest.mark.parametrize("width", NARROW)
def test_no_view_is_wider_than_the_window(browser: Browser, with_runs: str, width: int) -> None:
    page = open_page(browser, with_runs, width)
    run_demo(page)
    widths = {}
    for view in VIEWS:
        open_view(page, view)
        widths[view] = page.evaluate("document.scrollingElement.scrollWidth")
        # what scrolls sideways is a table's own box, nothing else
        scrollers = page.evaluate(SIDEWAYS_SCROLLERS)
        assert set(scrollers) <= {"table-wrap"}, (view, scrollers)
    assert widths == dict.fromkeys(VIEWS, width)
    page.context.close()


# The classes of the visible elements that scroll sideways (their content is wider than them).
SIDEWAYS_SCROLLERS = """() => [...document.querySelectorAll('main *')].filter((e) => {
  const s = getComputedStyle(e);
  return e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1
    && ['auto', 'scroll'].includes(s.overflowX) && s.overflowX !== 'hidden';
}).map((e) => e.classList[0] ?? e.tagName)"""


@pytest.mark.parametrize("width", (1280, 390))
def test_the_tools_rows_are_one_line_of_buttons(
    browser: Browser, with_runs: str, width: int
) -> None:
    page = open_page(browser, with_runs, width)
    open_view(page, "tools")
    rows = page.eval_on_selector_all(
        "tr[data-kind=tool-row]", "rs => rs.map(r => r.getBoundingClientRect().height)"
    )
    buttons = page.eval_on_selector_all(
        "#tools-list button", "bs => bs.map(b => [b.textContent, b.getBoundingClientRect().height])"
    )
    assert len(rows) > 10
    assert max(rows) <= (80 if width > 640 else 200), rows  # was 184 px at every width
    tall = [text for text, height in buttons if height > 30]  # one line of text is ~22 px
    assert tall == []
    assert page.evaluate("document.scrollingElement.scrollWidth") == width
    page.context.close()


@pytest.mark.parametrize("width", (1280, 390))
def test_the_timeline_shows_every_row_and_its_marks_clear_of_each_other_and_the_wait(
    browser: Browser, base: str, waited: str, width: int
) -> None:
    page = open_page(browser, base, width)
    page.click(".nav-link[data-view=runs]")
    page.locator(f"tr.run-row:has(td[title='{waited}'])").click()
    page.wait_for_selector("#stored-run .timeline-row")
    box = page.eval_on_selector(
        "#stored-run .timeline-rows",
        "b => [b.children.length, b.scrollHeight, b.clientHeight]",
    )
    rows, scrolled, shown = box
    assert rows == 21 and scrolled <= shown, box  # none cut off: all in the box
    gaps = page.locator("#stored-run .timeline-axis > .timeline-gap").count()
    assert gaps == 1  # the 2.5 s wait, drawn short
    labels = page.eval_on_selector_all(
        "#stored-run .timeline-axis :is(.timeline-tick, .timeline-gap-label)",
        """ss => ss.map(s => { const r = s.getBoundingClientRect();
          return [s.textContent, r.left, r.right]; })""",
    )
    texts = [text for text, _, _ in labels]
    # the wait says how long: the 2.5 s asleep, and what a loaded machine added to it
    waits = [float(m.group(1)) for t in texts if (m := re.fullmatch(r"⋯ (\d+\.\d+) s", t))]
    assert len(waits) == 1 and 2.5 <= waits[0] < 10, texts
    assert "0.0 ms" in texts and len(labels) >= 3, texts
    labels.sort(key=lambda label: label[1])
    overlaps = [(a[0], b[0]) for a, b in pairwise(labels) if a[2] > b[1]]
    assert overlaps == []
    left, right = page.eval_on_selector(
        "#stored-run .timeline-axis",
        "a => [a.getBoundingClientRect().left, a.getBoundingClientRect().right]",
    )
    assert left <= labels[0][1] and labels[-1][2] <= right + 0.5, (left, right, labels)
    page.context.close()


@pytest.mark.parametrize("width", (1280, 390))
def test_an_opened_stored_run_is_scrolled_into_view(
    browser: Browser, with_runs: str, width: int
) -> None:
    page = open_page(browser, with_runs, width)
    open_view(page, "runs")
    top = page.eval_on_selector("#stored-run", "b => b.getBoundingClientRect().top")
    assert 0 <= top <= 50, top  # it was 1,040 px below the window
    page.context.close()


@pytest.mark.parametrize("width", (1280, 390))
def test_the_dark_theme_contrasts_enough_in_every_view(
    browser: Browser, with_runs: str, width: int
) -> None:
    page = open_page(browser, with_runs, width, color_scheme="dark")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(246, 247, 249)"  # the light page's
    page.click("#run-button")  # the run view while it waits: the approval panel shows
    wait_status(page, "awaiting_approval", timeout=20_000)
    found = page.evaluate(CONTRAST)
    assert (found["text"], found["controls"]) == ([], []), found
    page.click("#pending button.approve")
    wait_status(page, "completed", timeout=20_000)
    for view in VIEWS:
        open_view(page, view)
        if view == "runs":  # a step with artifacts, and its tabs
            page.click("#stored-run li[data-kind=tool]")
            page.click("#stored-run .tab:text-is('Artifacts')")
        found = page.evaluate(CONTRAST)
        assert found["dark"] and found["checked"] > 20, (view, found)
        assert found["text"] == [], (view, found["text"][:10])
        assert found["controls"] == [], (view, found["controls"][:10])
    page.context.close()


# Every visible text's colour against what it is drawn on (backgrounds composed up to the
# page's), and every form control's edge against what is around it: the failures, each with
# its ratio. Text over a gradient (the timeline's idle stretch) and disabled controls are left
# out, as WCAG leaves them out.
CONTRAST = """() => {
  const rgba = (c) => { const m = c.match(/[\\d.]+/g).map(Number);
    return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => { const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const lum = (c) => { const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05); };
  const behind = (el) => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const s = getComputedStyle(e);
      if (s.backgroundImage !== 'none') return null;
      const c = rgba(s.backgroundColor); if (c[3] > 0) layers.push(c);
      if (c[3] === 1) break; }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]); };
  const text = [], controls = [];
  let checked = 0;
  for (const el of document.querySelectorAll('body *')) {
    if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
    if (el.closest(':disabled, [aria-hidden=true]')) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())
      || (el.matches('input, textarea') && el.value.trim() !== '');
    const s = getComputedStyle(el);
    if (own) { const fg = rgba(s.color); const bg = behind(el);
      if (bg && fg[3] > 0) { checked += 1; const r = ratio(over(fg, bg), bg);
        if (r < TEXT_MIN) {
          text.push([el.tagName, el.className, el.textContent.slice(0, 30), r.toFixed(2)]); } } }
    if (el.matches('input:not([type=checkbox]):not([type=hidden]), select, textarea, button')) {
      const around = behind(el.parentElement); const edge = rgba(s.borderTopColor);
      const fill = behind(el);
      if (around && fill) {
        const r = Math.max(ratio(over(edge, around), around), ratio(fill, around));
        if (r < UI_MIN) {
          controls.push([el.tagName, el.className, el.textContent.slice(0, 20), r.toFixed(2)]);
        } } }
  }
  const dark = lum(behind(document.body)) < 0.05;
  return { dark, checked, text, controls };
}""".replace("TEXT_MIN", str(TEXT_CONTRAST)).replace("UI_MIN", str(UI_CONTRAST))


@pytest.fixture(scope="module")
def kit_base() -> Iterator[str]:
    """The test kit's inspector: its scripts include a call that returns every artifact type."""
    with live_server(create_app(settings())) as url:
        yield url


@pytest.mark.parametrize(("width", "scheme"), [(320, "light"), (320, "dark"), (1280, "dark")])
def test_every_artifact_type_reflows_and_contrasts_in_the_dark(
    browser: Browser, kit_base: str, width: int, scheme: str
) -> None:
    page = open_page(browser, kit_base, width, color_scheme=scheme)
    start_run(page, "every")
    wait_status(page, "completed")
    open_step(page, 2, "Artifacts")
    types = page.eval_on_selector_all("#detail .artifact", "s => s.map(a => a.dataset.type)")
    assert types == ["table", "text", "tree", "key_value", "code", "link"]
    assert page.evaluate("document.scrollingElement.scrollWidth") == width
    if scheme == "dark":
        found = page.evaluate(CONTRAST)
        assert found["dark"] and (found["text"], found["controls"]) == ([], []), found
    page.context.close()


@pytest.mark.parametrize("motion", ("reduce", "no-preference"))
def test_reduced_motion_stops_the_spinner(browser: Browser, base: str, motion: str) -> None:
    page = open_page(browser, base, 1280, reduced_motion=motion)
    name = page.evaluate(
        """() => { const s = document.createElement('span'); s.className = 'spinner';
          document.body.append(s); return getComputedStyle(s).animationName; }"""
    )
    assert name == ("none" if motion == "reduce" else "spin")
    page.context.close()
