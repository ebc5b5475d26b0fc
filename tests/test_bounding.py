from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import (
    ARTIFACT_BYTE_CAP,
    ARTIFACT_MAX_DEPTH,
    CONTENT_BYTE_CAP,
    Artifact,
    ArtifactType,
    bound_artifacts,
    bound_content,
)
from toolwire.core.bounding import OMITTED_LABEL, TRUNCATION_MARKER

MARKER_BYTES = len(TRUNCATION_MARKER.encode())


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def test_constants() -> None:
    assert CONTENT_BYTE_CAP == ARTIFACT_BYTE_CAP == 50_000
    assert ARTIFACT_MAX_DEPTH == 64
    assert TRUNCATION_MARKER == "\n…[tool result truncated at 50000 bytes]"
    assert MARKER_BYTES == 42


def test_exactly_at_cap_is_unchanged() -> None:
    text = "a" * CONTENT_BYTE_CAP
    bounded = bound_content(text)
    assert bounded.text == text
    assert bounded.original_bytes == CONTENT_BYTE_CAP
    assert not bounded.truncated


def test_one_over_cap_is_truncated_to_exactly_the_cap() -> None:
    text = "a" * (CONTENT_BYTE_CAP + 1)
    bounded = bound_content(text)
    assert bounded.truncated and bounded.original_bytes == CONTENT_BYTE_CAP + 1
    assert bounded.text == "a" * (CONTENT_BYTE_CAP - MARKER_BYTES) + TRUNCATION_MARKER
    assert utf8_len(bounded.text) == CONTENT_BYTE_CAP


@pytest.mark.parametrize("char", ["é", "€", "😀"])
@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_multibyte_cut_never_splits_a_character(char: str, shift: int) -> None:
    text = "x" * shift + char * CONTENT_BYTE_CAP
    bounded = bound_content(text)
    assert bounded.text.endswith(TRUNCATION_MARKER)
    head = bounded.text[: -len(TRUNCATION_MARKER)]
    assert text.startswith(head)
    size = utf8_len(bounded.text)
    assert CONTENT_BYTE_CAP - len(char.encode()) < size <= CONTENT_BYTE_CAP


def test_invalid_utf8_bytes_become_replacement_characters() -> None:
    assert bound_content(b"ok \xff\xfe end").text == "ok \ufffd\ufffd end"


def test_lone_surrogates_become_replacement_characters() -> None:
    assert bound_content("a\udc80b\ud800").text == "a\ufffdb\ufffd"


# Large inputs are built by repeating a random piece: generating 60 kB character by character
# is slow and finds nothing a repeated piece with a random tail would not.
large_text = st.builds(
    lambda piece, times, tail: piece * times + tail,
    st.text(min_size=1, max_size=12),
    st.integers(min_value=1_000, max_value=60_000),
    st.text(max_size=8),
)
large_bytes = st.builds(
    lambda piece, times: piece * times,
    st.binary(min_size=1, max_size=9),
    st.integers(1_000, 60_000),
)


@given(st.one_of(st.text(), st.binary(), large_text, large_bytes))
def test_any_content_is_valid_utf8_within_cap_with_head_kept(value: str | bytes) -> None:
    bounded = bound_content(value)
    encoded = bounded.text.encode("utf-8")  # raises if not valid UTF-8
    assert len(encoded) <= CONTENT_BYTE_CAP
    coerced = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    coerced = coerced.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if bounded.truncated:
        head = bounded.text[: -len(TRUNCATION_MARKER)]
        assert bounded.text.endswith(TRUNCATION_MARKER)
        assert coerced.startswith(head)
        assert len(encoded) > CONTENT_BYTE_CAP - 4
    else:
        assert bounded.text.encode() == coerced.encode()


@given(large_text.map(lambda t: t.encode("utf-8", "replace").decode()))
def test_large_text_keeps_its_head(text: str) -> None:
    bounded = bound_content(text)
    if utf8_len(text) <= CONTENT_BYTE_CAP:
        assert bounded.text == text
    else:
        assert text.startswith(bounded.text[: -len(TRUNCATION_MARKER)])


def marker_text(artifacts: tuple[Artifact, ...]) -> str:
    assert len(artifacts) == 1
    (marker,) = artifacts
    assert marker.type is ArtifactType.TEXT
    assert marker.label == OMITTED_LABEL
    text = marker.data["text"]
    assert isinstance(text, str)
    return text


def test_valid_table_passes_through_unchanged() -> None:
    table = Artifact.table("customers", ["id", "email"], [["1", "a@example.com"]])
    text = Artifact.text("note", "ünïcode")
    assert bound_artifacts([table, text]) == (table, text)


def test_empty_list_stays_empty() -> None:
    assert bound_artifacts([]) == ()


def nested(depth: int) -> dict[str, Any]:
    """Artifact data whose deepest container sits at ``depth`` (list=1, artifact=2, data=3)."""
    data: dict[str, Any] = {}
    node = data
    for _ in range(depth - 3):
        child: dict[str, Any] = {}
        node["n"] = child
        node = child
    return data


def test_depth_64_is_kept_and_65_is_omitted() -> None:
    kept = Artifact(ArtifactType.TEXT, "deep", nested(64))
    assert bound_artifacts([kept]) == (kept,)
    text = marker_text(bound_artifacts([Artifact(ArtifactType.TEXT, "deep", nested(65))]))
    assert "deeper than 64" in text


def cyclic() -> dict[str, Any]:
    data: dict[str, Any] = {"rows": []}
    data["rows"].append(data)
    return data


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({"x": math.nan}, "non-finite"),
        ({"x": math.inf}, "non-finite"),
        ({"rows": [[-math.inf]]}, "non-finite"),
        ({"x": {1, 2}}, "set"),
        ({"x": b"raw"}, "bytes"),
        ({"x": object()}, "object"),
        ({1: "int key"}, "key"),
        (cyclic(), "cycle"),
    ],
)
def test_unencodable_data_becomes_the_marker(data: Any, why: str) -> None:
    good = Artifact.table("good", ["a"], [["1"]])
    text = marker_text(bound_artifacts([good, Artifact(ArtifactType.TABLE, "bad", data)]))
    assert text.startswith("Artifacts omitted: could not be encoded")
    assert why in text


def test_over_budget_becomes_the_marker() -> None:
    big = Artifact.text("big", "x" * 60_000)
    text = marker_text(bound_artifacts([big]))
    assert f"exceeded {ARTIFACT_BYTE_CAP} bytes" in text
    assert "x" * 10 not in text


def test_budget_counts_encoded_bytes_of_the_whole_list() -> None:
    def sized(n: int) -> Artifact:
        return Artifact.text("", "x" * n)

    overhead = len('[{"type":"text","label":"","data":{"text":""}}]')
    exact = sized(ARTIFACT_BYTE_CAP - overhead)
    assert bound_artifacts([exact]) == (exact,)
    marker_text(bound_artifacts([sized(ARTIFACT_BYTE_CAP - overhead + 1)]))


def test_string_leaves_keys_and_labels_are_coerced() -> None:
    artifact = Artifact(
        ArtifactType.TABLE, "lab\udc80el", {"col\ud800": ["a\udcff", {"k": "v\udc00"}]}
    )
    (out,) = bound_artifacts([artifact])
    assert out.label == "lab\ufffdel"
    assert out.data == {"col\ufffd": ["a\ufffd", {"k": "v\ufffd"}]}


def test_tuples_become_lists() -> None:
    (out,) = bound_artifacts([Artifact(ArtifactType.TABLE, "t", {"rows": (("a",),)})])
    assert out.data == {"rows": [["a"]]}


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30)
)
json_tree = st.recursive(
    json_leaf,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=40,
)


@given(
    st.lists(
        st.tuples(st.text(max_size=20), st.dictionaries(st.text(max_size=8), json_tree)), max_size=4
    )
)
def test_bound_artifacts_never_raises_and_output_always_encodes(
    items: list[tuple[str, dict[str, Any]]],
) -> None:
    from toolwire.core.jsonenc import dumps_bytes

    artifacts = [Artifact(ArtifactType.TABLE, label, data) for label, data in items]
    out = bound_artifacts(artifacts)
    encoded = dumps_bytes([a.to_dict() for a in out])
    assert len(encoded) <= ARTIFACT_BYTE_CAP
    assert len(out) == len(artifacts) or (len(out) == 1 and out[0].label == OMITTED_LABEL)


def test_the_same_large_output_again_gets_the_same_cut_and_another_its_own() -> None:
    kept = "x" * 200_000  # a tool that hands back a document it keeps
    first, again = bound_content(kept), bound_content(kept)
    assert again.text is first.text and again == first
    other = bound_content("y" * 200_000)
    assert (
        other.text == "y" * (CONTENT_BYTE_CAP - len(TRUNCATION_MARKER.encode())) + TRUNCATION_MARKER
    )
    assert (
        bound_content(kept).text
        == "x" * (CONTENT_BYTE_CAP - len(TRUNCATION_MARKER.encode())) + TRUNCATION_MARKER
    )
