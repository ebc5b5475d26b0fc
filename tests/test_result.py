from __future__ import annotations

import dataclasses
import pickle

import pytest

from toolwire import Artifact, ArtifactType, ChatMessage, ToolResult

SECRET = "canary-7f3a-cell"


def table() -> Artifact:
    return Artifact.table("rows", ["id", "secret"], [[1, SECRET]])


def test_text_keeps_content_and_artifacts_in_order() -> None:
    a, b = table(), Artifact.text("note", "hello")
    result = ToolResult.text("two artifacts", a, b)
    assert result.content == "two artifacts"
    assert result.is_error is False
    assert result.artifacts == (a, b)


def test_error_has_no_artifacts_and_takes_none() -> None:
    result = ToolResult.error("Error: nope")
    assert (result.content, result.is_error, result.artifacts) == ("Error: nope", True, ())
    with pytest.raises(TypeError):
        ToolResult.error("x", table())  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "build",
    [
        lambda: ToolResult(),
        lambda: ToolResult("x", False, ()),
        lambda: ToolResult(content="x", is_error=False, artifacts=()),
    ],
)
def test_direct_construction_is_refused(build: object) -> None:
    with pytest.raises(TypeError, match=r"ToolResult\.text\(\) or ToolResult\.error\(\)"):
        build()  # type: ignore[operator]


def test_has_no_string_form() -> None:
    result = ToolResult.text("visible", table())
    with pytest.raises(TypeError):
        str(result)
    with pytest.raises(TypeError):
        format(result, "")
    with pytest.raises(TypeError):
        f"{result}"
    with pytest.raises(TypeError):
        "%s" % (result,)  # noqa: UP031
    with pytest.raises(TypeError):
        bytes(result)


def test_repr_shows_sizes_never_data() -> None:
    result = ToolResult.text("héllo", table())
    text = repr(result)
    assert text == "<ToolResult is_error=False content_bytes=6 artifacts=1>"
    assert SECRET not in text and "héllo" not in text


def test_is_frozen() -> None:
    result = ToolResult.text("x")
    with pytest.raises(AttributeError):
        result.content = "y"
    with pytest.raises(AttributeError):
        del result.artifacts
    with pytest.raises(dataclasses.FrozenInstanceError):
        table().label = "other"  # type: ignore[misc]


def test_cannot_be_pickled() -> None:
    with pytest.raises(TypeError):
        pickle.dumps(ToolResult.text("x", table()))


@pytest.mark.parametrize("content", [None, b"bytes", 3, ["a"]])
def test_content_must_be_str(content: object) -> None:
    with pytest.raises(TypeError):
        ToolResult.text(content)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolResult.error(content)  # type: ignore[arg-type]


def test_artifacts_must_be_artifacts() -> None:
    with pytest.raises(TypeError):
        ToolResult.text("x", {"type": "table"})  # type: ignore[arg-type]


def test_table_constructor_stringifies_cells() -> None:
    artifact = Artifact.table("t", ["a", "b"], [[1, None], [2.5, True]])
    assert artifact.type is ArtifactType.TABLE
    assert artifact.data == {"columns": ["a", "b"], "rows": [["1", "None"], ["2.5", "True"]]}
    assert artifact.to_dict() == {"type": "table", "label": "t", "data": artifact.data}


def test_text_artifact() -> None:
    assert Artifact.text("l", "body").to_dict() == {
        "type": "text",
        "label": "l",
        "data": {"text": "body"},
    }


def test_artifact_type_values() -> None:
    assert ArtifactType.TABLE.value == "table"
    assert ArtifactType.TEXT.value == "text"


@pytest.mark.parametrize("content", [ToolResult.text("x"), b"x", None, 1, ["x"]])
def test_tool_result_message_accepts_only_str(content: object) -> None:
    with pytest.raises(TypeError):
        ChatMessage.tool_result("call_1", content)  # type: ignore[arg-type]


def test_tool_result_message_refuses_str_subclass() -> None:
    class Sneaky(str):
        pass

    with pytest.raises(TypeError):
        ChatMessage.tool_result("call_1", Sneaky("x"))


def test_tool_result_message() -> None:
    message = ChatMessage.tool_result("call_1", "42", is_error=True)
    assert message.to_dict() == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "call_1",
        "is_error": True,
    }


def test_richer_artifact_constructors() -> None:
    tree = Artifact.tree("files", [{"label": "src", "children": [{"label": "a.py"}]}])
    assert tree.to_dict() == {
        "type": "tree",
        "label": "files",
        "data": {"nodes": [{"label": "src", "children": [{"label": "a.py", "children": []}]}]},
    }
    assert Artifact.key_value("env", [("A", 1)]).data == {"items": [["A", "1"]]}
    assert Artifact.code("x.py", "print()", language="python", first_line=7).data == {
        "code": "print()",
        "language": "python",
        "first_line": 7,
    }
    assert Artifact.link("docs", "https://example.com").data == {
        "url": "https://example.com",
        "text": "https://example.com",
    }
