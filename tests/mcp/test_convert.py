"""An MCP tool listing as a ToolSpec, and an MCP result as a ToolResult (no server needed)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from toolwire import Artifact
from toolwire.core.result import ArtifactType
from toolwire.mcp.convert import structured, to_result
from toolwire.mcp.spec import DESCRIPTION_CHARS, SCHEMA_BYTES, parameters, tool_name, tool_spec
from toolwire.tools.registry import TOOL_NAME

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nimage").decode()
# What OpenAI and Anthropic accept; Gemini also wants a letter or _ first (TOOL_NAME checks both).
VENDOR_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def text(value: str, audience: Any = None) -> TextContent:
    notes = None if audience is None else Annotations(audience=audience)
    return TextContent(type="text", text=value, annotations=notes)


# -- names and schemas ------------------------------------------------------------------------


def test_names_are_prefixed_and_made_safe_for_every_provider() -> None:
    assert tool_name("time", "get_current_time") == "time__get_current_time"
    assert tool_name("everything", "get-tiny-image") == "everything__get-tiny-image"
    assert tool_name("fs", "files/read.text v2") == "fs__files_read_text_v2"
    assert tool_name("fs", "") == "fs___"
    long_a, long_b = tool_name("srv", "x" * 70 + "a"), tool_name("srv", "x" * 70 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b
    assert long_a.startswith("srv__xxxxx")


@given(server=st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,31}", fullmatch=True), remote=st.text())
def test_every_name_is_one_every_provider_accepts(server: str, remote: str) -> None:
    name = tool_name(server, remote)
    assert VENDOR_NAME.fullmatch(name) and TOOL_NAME.fullmatch(name)


def test_the_schema_goes_out_as_an_object_schema_without_its_dialect() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "echoArguments",
        "type": "object",
        "properties": {"message": {"type": "string", "title": "Message"}},
        "required": ["message"],
    }
    assert parameters(schema) == {
        "type": "object",
        "properties": {"message": {"type": "string", "title": "Message"}},
        "required": ["message"],
    }
    assert parameters({}) == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, "its input schema is not an object schema"),
        ("nope", "its input schema is not an object schema"),
        ({"type": "object", "properties": []}, "its input schema's properties are not an object"),
        ({"type": "object", "default": float("nan")}, "its input schema is not plain JSON"),
        ({"type": "object", "description": "x" * SCHEMA_BYTES}, "over 16000"),
    ],
)
def test_a_schema_no_adapter_could_send_is_refused(schema: Any, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        parameters(schema)


def test_the_description_is_the_servers_or_its_title_cut_to_the_undocumented_bound() -> None:
    assert tool_spec("s__t", "  Does it.  ", None, {}).description == "Does it."
    assert tool_spec("s__t", None, "A title", {}).description == "A title"
    assert tool_spec("s__t", "d" * 5000, None, {}).description == "d" * 5000  # OpenAI cuts it
    long = tool_spec("s__t", "d" * (DESCRIPTION_CHARS + 10), None, {}).description
    assert len(long) == DESCRIPTION_CHARS and long.endswith("…")


# -- results ----------------------------------------------------------------------------------


def test_text_goes_to_the_model_and_everything_else_to_artifacts() -> None:
    result = CallToolResult(
        content=[
            text("first"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            text("for the person only", audience=["user"]),
            text("second", audience=["user", "assistant"]),
            ResourceLink(type="resource_link", name="report", uri="https://example.com/r.pdf",
                         description="The report"),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="embedded words")),
            EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri="file:///logo.png", mime_type="image/png", blob=PNG)),
            EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri="file:///data.bin", mime_type="application/octet-stream", blob="AAAA")),
            AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
        ],
        structured_content={"city": "Oslo", "temperature": -3.5, "rain": False, "note": None},
    )  # fmt: skip
    converted = to_result(result, "srv__t")
    assert converted.content == "first\nsecond"
    assert not converted.is_error
    assert converted.artifacts == (
        Artifact.image("image (2)", "image/png", PNG),
        Artifact.text("text for the user (3)", "for the person only"),
        Artifact.link("report", "https://example.com/r.pdf", "The report"),
        Artifact.text("file:///notes.txt", "embedded words"),
        Artifact.image("file:///logo.png", "image/png", PNG),
        Artifact.key_value("file:///data.bin", [("uri", "file:///data.bin"),
                           ("type", "application/octet-stream"),
                           ("size", "4 characters of base64")]),
        Artifact.text("audio (9)", "Audio (audio/wav, 8 characters of base64): not played."),
        Artifact.key_value("structured content", [("city", "Oslo"), ("temperature", "-3.5"),
                           ("rain", "false"), ("note", "")]),
    )  # fmt: skip


def test_an_error_result_carries_the_servers_text_and_no_artifacts() -> None:
    result = CallToolResult(
        content=[text("Invalid timezone"), ImageContent(type="image", data=PNG,
                                                        mime_type="image/png")],
        structured_content={"x": 1},
        is_error=True,
    )  # fmt: skip
    converted = to_result(result, "srv__t")
    assert (converted.is_error, converted.content, converted.artifacts) == (
        True, "Invalid timezone", ())  # fmt: skip
    silent = to_result(CallToolResult(content=[], is_error=True), "srv__t")
    assert silent.content == 'Error: tool "srv__t" failed.'


def test_a_result_with_no_text_for_the_model_says_what_was_kept_back() -> None:
    image = ImageContent(type="image", data=PNG, mime_type="image/png")
    converted = to_result(CallToolResult(content=[image], structured_content={"a": 1}), "s__t")
    assert converted.content == (
        "The tool returned no text; 2 other item(s) were kept for the operator and are not "
        "shown here."
    )
    assert to_result(CallToolResult(content=[]), "s__t").content == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"result": [{"id": 1, "name": "Ada"}, {"id": 2, "role": None}]},
         Artifact.table("result", ["id", "name", "role"], [["1", "Ada", ""], ["2", "", ""]])),
        ([{"a": True}], Artifact.table("structured content", ["a"], [["true"]])),
        ({"rows": []}, Artifact.code("structured content", '{\n  "rows": []\n}', language="json")),
        ({"a": {"b": 1}},
         Artifact.code("structured content", '{\n  "a": {\n    "b": 1\n  }\n}', language="json")),
        ({"only": "one"}, Artifact.key_value("structured content", [("only", "one")])),
        ({"xs": [1, 2]},
         Artifact.code("structured content", '{\n  "xs": [\n    1,\n    2\n  ]\n}',
                       language="json")),
    ],
)  # fmt: skip
def test_structured_content_takes_the_shape_that_shows_it_best(value: Any, expected: Any) -> None:
    assert structured(value) == expected


def test_every_artifact_made_is_of_a_known_type() -> None:
    kinds = {structured({"a": 1}).type, structured([{"a": 1}]).type, structured({"a": [1]}).type}
    assert kinds == {ArtifactType.KEY_VALUE, ArtifactType.TABLE, ArtifactType.CODE}
