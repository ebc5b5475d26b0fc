"""Hostile strings: each tries to run script or change the page if it were parsed as HTML."""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import Field, create_model

from toolwire import Artifact, ToolResult, tool
from toolwire.core.text import coerce_utf8

PWN = "window.__pwned=1"
PAYLOADS = [
    f"<script>{PWN}</script>",
    "<SCRIPT SRC=//evil.test/x.js></SCRIPT>",
    f"<img src=x onerror={PWN}>",
    f'<img src="x" onerror="{PWN}">',
    f"<svg onload={PWN}>",
    f"<svg><script>{PWN}</script></svg>",
    f"<svg><animate onbegin={PWN} attributeName=x dur=1s>",
    f"<body onload={PWN}>",
    f"<iframe src=javascript:{PWN}>",
    f'<iframe srcdoc="<script>{PWN}</script>">',
    f"<object data=javascript:{PWN}>",
    f"<embed src=javascript:{PWN}>",
    f"<a href=javascript:{PWN}>x</a>",
    f"javascript:{PWN}",
    f"JaVaScRiPt:{PWN}",
    f" javascript:{PWN}",
    f"java\tscript:{PWN}",
    f"data:text/html,<script>{PWN}</script>",
    f"vbscript:{PWN}",
    f"<details open ontoggle={PWN}>",
    f"<input autofocus onfocus={PWN}>",
    f"<video><source onerror={PWN}>",
    f"<audio src=x onerror={PWN}>",
    f"<marquee onstart={PWN}>",
    f"<math><mtext><table><mglyph><style><img src=x onerror={PWN}>",
    f"<style>@import 'javascript:{PWN}';</style>",
    "<style>body{background:url(https://evil.test/x)}</style>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<link rel=stylesheet href=https://evil.test/x.css>",
    "<meta http-equiv=refresh content='0;url=https://evil.test'>",
    "<base href=https://evil.test/>",
    "<form action=https://evil.test><button>x</button></form>",
    f"&lt;script&gt;{PWN}&lt;/script&gt;",
    f"&#60;img src=x onerror={PWN}&#62;",
    "&amp;&quot;&#x27;&#0;",
    f"\"><script>{PWN}</script>",
    f"'><img src=x onerror={PWN}>",
    f"</textarea><script>{PWN}</script>",
    f"</pre><script>{PWN}</script>",
    f"<!--<script>{PWN}</script>-->",
    f"<![CDATA[<script>{PWN}</script>]]>",
    f"{{{{constructor.constructor('{PWN}')()}}}}",
    f"${{{PWN}}}",
    f"\u202e<script>{PWN}</script>\u202c",
    "\u202egnp.exe",
    "zero\u200bwidth\u200djoin\ufeffbom",
    f"nul\x00byte<script>{PWN}</script>",
    "\x01\x07\x1b[31mred\x1b[0m",
    f"broken\udcff<b>{PWN}</b>",
    "lone \ud800 surrogate",
    "\ufffd replacement",
    f"<scr<script>ipt>{PWN}</scr</script>ipt>",
    f"<img src=`x` onerror=`{PWN}`>",
    f"<x onpointerover={PWN}>hover</x>",
    f"<template><script>{PWN}</script></template>",
    f"<noscript><p title=\"</noscript><img src=x onerror={PWN}>\">",
    "🦀 emoji and ﷽ wide",
    "line\nbreak\r\nand\ttab",
]  # fmt: skip


def shown(payload: str) -> str:
    """What the page must show for ``payload``: itself, with invalid UTF-8 substituted."""
    return coerce_utf8(payload)


@tool(group="hostile", data_class="public")
def hostile_artifacts() -> ToolResult:
    """Every artifact type, with every field taken from the payloads."""
    p = PAYLOADS
    nodes: list[dict[str, Any]] = [
        {"label": x, "children": [{"label": y}]} for x, y in itertools.pairwise(p)
    ]
    return ToolResult.text(
        p[0],
        Artifact.table(p[1], p[:6], [p[i : i + 6] for i in range(0, len(p) - 6, 6)]),
        Artifact.text(p[2], "\n".join(p)),
        Artifact.tree(p[3], nodes),
        Artifact.key_value(p[4], list(zip(p, reversed(p), strict=True))),
        Artifact.code(p[5], "\n".join(p), language=p[6], first_line=1),
        *(Artifact.link(x, x, y) for x, y in zip(p, reversed(p), strict=True)),
    )


PREVIEW_CHUNK = 20  # the most lines a preview shows


@tool(group="hostile", data_class="public", requires_approval=True)
def hostile_write(part: int) -> str:
    """A write whose preview lines are payloads, ``PREVIEW_CHUNK`` at a time."""
    return f"part {part}"


@hostile_write.previewer
def _hostile_preview(part: int) -> list[str]:
    return PAYLOADS[part * PREVIEW_CHUNK : (part + 1) * PREVIEW_CHUNK]


HostileInput = create_model(
    "HostileInput",
    **{
        f"f{i}": (str, Field(default="", title=p, description=PAYLOADS[-1 - i]))
        for i, p in enumerate(PAYLOADS)
    },
)  # type: ignore[call-overload]


@tool(group="hostile", data_class="public", input_model=HostileInput)
def hostile_input(f0: str = "") -> str:
    """Asks for input through a schema whose titles and descriptions are payloads."""
    return "thanks"
