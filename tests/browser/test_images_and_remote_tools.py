"""Image artifacts and MCP tools in the inspector, in Chromium: an image is drawn from a data URL
the page's CSP allows, anything else is a visible note; a remote tool shows its server and is
called directly like any tool."""

from __future__ import annotations

import base64
import struct
import time
import zlib
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from toolwire import Artifact, ToolResult, tool
from toolwire.core.bounding import IMAGE_DATA_CAP
from toolwire.inspector import create_app
from toolwire.mcp.hub import HUB
from toolwire.mcp.remote import add_remote_tools

from ..inspector_kit import live_server, registry, settings
from ..mcp.kit import EVERYTHING, workspace
from .harness import Watched, open_step, start_run, wait_status
from .test_page import CONTEXT, REQUEST, fake_stream

pytestmark = pytest.mark.browser


def png(width: int, height: int) -> bytes:
    """A real PNG: white pixels, ``width`` by ``height``."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    rows = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))  # fmt: skip


PICTURE = base64.b64encode(png(3, 2)).decode()
SVG = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=1"/>')


@tool(group="records", data_class="public")
def pictures() -> ToolResult:
    """Return a picture, an SVG and a picture over the cap."""
    return ToolResult.text(
        "three pictures",
        Artifact.image("a small picture", "image/png", PICTURE),
        Artifact.image("a vector drawing", "image/svg+xml", SVG.decode()),
        Artifact.image("a huge picture", "image/png", "A" * 40_000),
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tools = registry()
    tools.register(pictures)
    ws = workspace(tmp_path_factory.mktemp("ws"), f"""
[mcp_servers.everything]
command = "{EVERYTHING}"
enabled = true
""")  # fmt: skip
    assert add_remote_tools(tools, ws) == []
    scripts = {"pictures": [{"tool_calls": [{"name": "pictures", "arguments": {}}]},
                            {"content": "ok"}]}  # fmt: skip
    try:
        with live_server(create_app(settings(registry=tools, scripts=scripts))) as url:
            yield url
    finally:
        HUB.close()


def decoded_width(page: Page, selector: str) -> int:
    """The natural width of the image at ``selector`` once it is decoded (0 if it never is).

    Polled from here: the page's CSP forbids the string evaluation ``wait_for_function`` uses."""
    page.wait_for_selector(selector)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        width: int = page.eval_on_selector(selector, "i => i.complete ? i.naturalWidth : -1")
        if width >= 0:
            return width
        time.sleep(0.05)
    return 0


def images(page: Page) -> list[dict[str, object]]:
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        "#detail .artifact[data-type=image]",
        """s => s.map(a => ({
          img: a.querySelector('img')?.getAttribute('src') ?? null,
          width: a.querySelector('img')?.naturalWidth ?? null,
          notes: [...a.querySelectorAll('.artifact-note')].map(n => n.textContent)}))""",
    )


def test_an_image_is_drawn_and_the_others_are_notes(watched: Watched) -> None:
    page = watched.page
    start_run(page, "pictures")
    wait_status(page, "completed")
    open_step(page, 2, "Artifacts")
    page.wait_for_function("document.querySelector('#detail img.artifact-img')?.complete === true")
    small, vector, huge = images(page)
    assert small == {"img": f"data:image/png;base64,{PICTURE}", "width": 3, "notes": []}
    assert vector == {
        "img": None,
        "width": None,
        "notes": ["Image omitted: 'image/svg+xml' is not a type the page draws."],
    }
    assert huge["img"] is None
    left = IMAGE_DATA_CAP - len(PICTURE)
    assert huge["notes"] == [f"Image omitted: 40000 characters of base64, over the {left} left "
                             "of the 32000 the images of one result share."]  # fmt: skip
    assert page.evaluate("window.__pwned === undefined")


def test_the_page_itself_refuses_images_the_seam_would_never_let_through(
    watched: Watched,
) -> None:
    page = watched.page
    hostile = [
        {"type": "image", "label": "svg", "data": {"mime_type": "image/svg+xml",
                                                    "data": SVG.decode(), "note": ""}},
        {"type": "image", "label": "script", "data": {"mime_type": "image/png",
                                                       "data": "javascript:alert(1)", "note": ""}},
        {"type": "image", "label": "typed", "data": {"mime_type": "image/png;charset=x",
                                                      "data": PICTURE, "note": ""}},
        {"type": "image", "label": "huge", "data": {"mime_type": "image/gif",
                                                     "data": "A" * 32_004, "note": ""}},
        {"type": "image", "label": "empty", "data": {"mime_type": "image/png", "data": "",
                                                      "note": ""}},
        {"type": "image", "label": "odd", "data": {"mime_type": 7}},
    ]  # fmt: skip
    step = {"kind": "tool", "round": 1, "tool_name": "pictures", "tool_call_id": "c1",
            "tool_result": "x", "tool_is_error": False, "tool_artifacts": hostile}  # fmt: skip
    fake_stream(page, CONTEXT, REQUEST, {"type": "step", "step": step},
                {"type": "end", "status": "completed", "final_content": "x"})  # fmt: skip
    start_run(page, "pictures")
    wait_status(page, "completed")
    open_step(page, 1, "Artifacts")
    assert page.query_selector("#detail img") is None
    notes = [i["notes"] for i in images(page)]
    assert notes == [
        ["Image not shown: not a PNG, JPEG, GIF or WebP image."],
        ["Image not shown: the data is not base64."],
        ["Image not shown: not a PNG, JPEG, GIF or WebP image."],
        ["Image not shown: 32004 characters of data, over the 32000 cap."],
        ["No image data."],
    ]
    kinds = page.eval_on_selector_all("#detail .artifact", "s => s.map(a => a.dataset.type)")
    assert kinds[-1] == "json"  # not an image at all: shown as data
    assert page.evaluate("window.__pwned === undefined")


def test_a_remote_tool_shows_its_server_and_a_direct_call_draws_its_image(
    watched: Watched,
) -> None:
    page = watched.page
    page.click(".nav-link[data-view=tools]")
    row = page.locator("tr[data-kind=tool-row]", has_text="everything__get-tiny-image")
    assert row.locator(".badge.server").text_content() == "MCP: everything"
    row.locator("button", has_text="Call…").click()
    page.click("#invoke-panel button.primary")
    # decoded: the CSP let the data URL through
    assert decoded_width(page, "#invoke-panel img.artifact-img") > 0
    assert page.text_content("#invoke-panel pre.block") == (
        "Here's the image you requested:\nThe image above is the MCP logo."
    )
