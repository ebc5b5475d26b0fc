"""Real MCP servers from npm over stdio: server-everything and server-filesystem."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from toolwire import ToolRegistry
from toolwire.core.result import ArtifactType
from toolwire.loop.seam import remote_budget_spent
from toolwire.tools.api import runs_concurrently

from .kit import EVERYTHING, FILESYSTEM, answers, remote_registry, run, workspace


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    ws = workspace(tmp_path_factory.mktemp("everything"), f"""
[mcp_servers.everything]
command = "{EVERYTHING}"
enabled = true
admin_only = false
data_class = "public"
""")  # fmt: skip
    registry, problems = remote_registry(ws)
    assert problems == []
    return registry


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": f"everything__{name}", "arguments": arguments}


def test_structured_content_becomes_an_artifact_beside_the_text(everything: ToolRegistry) -> None:
    (weather,) = run(everything, [[call("get-structured-content", location="Chicago")]]).trace
    data = json.loads(weather.result)  # the server also writes it as text, for the model
    (kv,) = weather.artifacts
    assert kv.type is ArtifactType.KEY_VALUE
    assert kv.data["items"] == [[k, json.dumps(v) if not isinstance(v, str) else v]
                                for k, v in data.items()]  # fmt: skip


def test_an_image_is_an_image_artifact_and_never_text(everything: ToolRegistry) -> None:
    (image,) = run(everything, [[call("get-tiny-image")]]).trace
    assert image.result == "Here's the image you requested:\nThe image above is the MCP logo."
    (picture,) = image.artifacts
    assert (picture.type, picture.data["mime_type"], picture.data["note"]) == (
        ArtifactType.IMAGE, "image/png", "")  # fmt: skip
    assert base64.b64decode(picture.data["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert picture.data["data"][:40] not in image.result


def test_resources_become_links_texts_and_descriptions(everything: ToolRegistry) -> None:
    links, text, blob = run(everything, [[
        call("get-resource-links", count=3),
        call("get-resource-reference", resourceType="Text", resourceId=1),
        call("get-resource-reference", resourceType="Blob", resourceId=2),
    ]]).trace  # fmt: skip
    assert [a.type for a in links.artifacts] == [ArtifactType.LINK] * 3
    assert all(a.data["url"].startswith("demo://resource/") for a in links.artifacts)
    (embedded,) = text.artifacts
    assert embedded.type is ArtifactType.TEXT and embedded.label == "demo://resource/dynamic/text/1"
    assert embedded.data["text"].startswith("Resource 1: This is a plaintext resource")
    assert embedded.data["text"] not in text.result  # the model reads the server's note only
    (described,) = blob.artifacts
    assert described.type is ArtifactType.KEY_VALUE
    assert described.data["items"][0] == ["uri", "demo://resource/dynamic/blob/2"]


def test_text_meant_for_the_user_only_stays_out_of_the_models_turn(
    everything: ToolRegistry,
) -> None:
    success, failure = run(everything, [[
        call("get-annotated-message", messageType="success"),
        call("get-annotated-message", messageType="error"),
    ]]).trace  # fmt: skip
    assert "Operation completed successfully" not in success.result
    assert success.result.startswith("The tool returned no text; 1 other item(s)")
    assert success.artifacts[0].data == {"text": "Operation completed successfully"}
    assert failure.result == "Error: Operation failed"  # for the assistant too


def test_bad_arguments_are_an_error_result_in_the_servers_words(everything: ToolRegistry) -> None:
    (summed,) = run(everything, [[call("get-sum", a="one", b=2)]]).trace
    assert summed.is_error and summed.artifacts == ()
    assert "Invalid arguments for tool get-sum" in summed.result


def test_long_running_calls_of_one_turn_share_the_session_and_overlap(
    everything: ToolRegistry,
) -> None:
    started = time.perf_counter()
    result = run(everything, [[call("trigger-long-running-operation", duration=1, steps=2)] * 3])
    elapsed = time.perf_counter() - started
    assert [i.is_error for i in result.trace] == [False] * 3
    assert all("Long running operation completed" in i.result for i in result.trace)
    assert elapsed < 2.5  # three one-second calls, at once


def test_a_call_longer_than_the_servers_timeout_is_an_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path, f"""
[mcp_servers.slow]
command = "{EVERYTHING}"
enabled = true
timeout = 1
""")  # fmt: skip
    registry, _ = remote_registry(ws)
    slow = {"name": "slow__trigger-long-running-operation", "arguments": {"duration": 3}}
    echo = {"name": "slow__echo", "arguments": {"message": "still here"}}
    result = run(registry, [[slow], [echo]])
    assert answers(result) == [
        ("slow__trigger-long-running-operation",
         'Error: tool "slow__trigger-long-running-operation" did not answer within 1 seconds.',
         True),
        ("slow__echo", "Echo: still here", False),
    ]  # fmt: skip


def test_the_budget_stops_remote_calls_of_a_real_server(everything: ToolRegistry) -> None:
    echoes = [call("echo", message=str(n)) for n in range(3)]
    result = run(everything, [echoes[:2], echoes[2:]], max_remote_calls=2)
    assert answers(result) == [
        ("everything__echo", "Echo: 0", False),
        ("everything__echo", "Echo: 1", False),
        ("everything__echo", remote_budget_spent(2), True),
    ]


# -- filesystem -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[ToolRegistry, Path]:
    root = tmp_path_factory.mktemp("fs").resolve()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "sub").mkdir()
    ws = workspace(root.parent, f"""
[mcp_servers.fs]
command = "{FILESYSTEM}"
args = ["{root}"]
enabled = true
""", name=f"{root.name}.toml")  # fmt: skip
    registry, problems = remote_registry(ws)
    assert problems == []
    return registry, root


def fs(name: str, **arguments: object) -> dict[str, object]:
    return {"name": f"fs__{name}", "arguments": arguments}


def test_the_filesystem_server_reads_inside_its_folder_only(
    files: tuple[ToolRegistry, Path],
) -> None:
    registry, root = files
    listing, read, outside = run(registry, [[
        fs("list_directory", path=str(root)),
        fs("read_text_file", path=str(root / "notes.txt")),
        fs("read_text_file", path="/etc/hostname"),
    ]]).trace  # fmt: skip
    assert "[FILE] notes.txt" in listing.result and "[DIR] sub" in listing.result
    assert read.result == "alpha\nbeta\n"
    assert read.artifacts[0].data["items"] == [["content", "alpha\nbeta\n"]]
    assert outside.is_error and "denied" in outside.result.lower()


def test_a_write_runs_alone_and_a_read_after_it_sees_it(files: tuple[ToolRegistry, Path]) -> None:
    registry, root = files
    write = registry.get("fs__write_file")
    assert write is not None and not runs_concurrently(write)
    target = str(root / "sub" / "new.txt")
    written, read = run(registry, [[
        fs("write_file", path=target, content="fresh words"),
        fs("read_text_file", path=target),
    ]]).trace  # fmt: skip
    assert not written.is_error and read.result == "fresh words"
    assert (root / "sub" / "new.txt").read_text() == "fresh words"


def test_a_real_servers_tools_reach_outside_and_keep_the_servers_titles(
    everything: ToolRegistry,
) -> None:
    from toolwire.mcp.serve import described
    from toolwire.tools.api import reaches_outside, title_of

    echo = everything.get("everything__echo")
    assert echo is not None and reaches_outside(echo)
    served = described(echo)
    assert served.annotations is not None and served.annotations.open_world_hint is True
    assert served.title == title_of(echo) != ""
    tools = [t for t in (everything.get(n) for n in everything.names()) if t is not None]
    for tool in tools:
        own = getattr(tool, "title", None)
        assert title_of(tool) == (own or f"Everything: {tool.spec.name[12:].replace('-', ' ')}")
