"""The AWS event-stream decoder: frames encoded from the specification (not by botocore) read
back the same however the bytes are cut, and bytes of any kind give events or one of the two
typed failures, never another exception."""

from __future__ import annotations

import contextlib
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.providers.bedrock import STREAM_ERROR_STATUSES
from toolwire.providers.eventstream import AwsEventDecoder
from toolwire.providers.sse import MAX_STREAM_BYTES, Event, MalformedStream, StreamTooLarge

from .bedrock_server import event_frame, exception_frame, frame

PAYLOADS = st.dictionaries(st.text(max_size=8), st.text(max_size=40), max_size=4)
NAMES = st.sampled_from(["messageStart", "contentBlockDelta", "contentBlockStop", "metadata"])


def decoded(chunks: list[bytes]) -> list[Event]:
    decoder = AwsEventDecoder(STREAM_ERROR_STATUSES)
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def cut(data: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(st.tuples(NAMES, PAYLOADS), min_size=1, max_size=6),
    points=st.lists(st.integers(min_value=0), max_size=12),
)
def test_any_cut_of_the_frames_gives_the_same_events(
    events: list[tuple[str, dict[str, str]]], points: list[int]
) -> None:
    data = b"".join(event_frame(name, payload) for name, payload in events)
    expected = [Event(name, json.dumps(payload)) for name, payload in events]
    assert decoded([data]) == expected
    assert decoded(cut(data, points)) == expected


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), points=st.lists(st.integers(min_value=0), max_size=4))
def test_bytes_of_any_kind_give_events_or_a_typed_failure(data: bytes, points: list[int]) -> None:
    with contextlib.suppress(MalformedStream, StreamTooLarge):
        decoded(cut(data, points))


@settings(max_examples=100, deadline=None)
@given(
    good=st.lists(st.tuples(NAMES, PAYLOADS), min_size=1, max_size=3),
    flip=st.integers(min_value=0),
)
def test_any_flipped_bit_in_a_frame_is_caught(
    good: list[tuple[str, dict[str, str]]], flip: int
) -> None:
    data = bytearray(b"".join(event_frame(name, payload) for name, payload in good))
    data[flip % len(data)] ^= 1 << (flip % 8)
    with pytest.raises(MalformedStream, match="Checksum mismatch"):  # the prelude's or the frame's
        decoded([bytes(data)])


def test_an_exception_frame_is_an_error_event_with_the_models_status() -> None:
    (event,) = decoded([exception_frame("serviceUnavailableException", "Try later")])
    assert event.event == "error"
    assert json.loads(event.data) == {
        "error": {"code": "503", "type": "serviceUnavailableException", "message": "Try later"}
    }


def test_an_error_frame_names_its_code_and_message() -> None:
    error = frame({":message-type": "error", ":error-code": "InternalFailure",
                   ":error-message": "Boom"}, b"")  # fmt: skip
    (event,) = decoded([error])
    assert json.loads(event.data)["error"] == {
        "code": "InternalFailure", "type": "InternalFailure", "message": "Boom"
    }  # fmt: skip


def test_an_event_frame_without_its_type_is_malformed() -> None:
    with pytest.raises(MalformedStream, match="an event frame without an :event-type header"):
        decoded([frame({":message-type": "event"}, b"{}")])


def test_the_stream_is_capped_in_all() -> None:
    decoder = AwsEventDecoder(STREAM_ERROR_STATUSES)
    one = event_frame("contentBlockDelta", {"text": "x" * 60_000})
    with pytest.raises(StreamTooLarge) as caught:
        for _ in range(MAX_STREAM_BYTES // len(one) + 2):
            decoder.feed(one)
    assert caught.value.limit == "MAX_STREAM_BYTES"
