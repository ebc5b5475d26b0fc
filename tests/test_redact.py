from __future__ import annotations

import pytest

from toolwire.redact import redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail ann@example.com now", "mail [redacted email] now"),
        ("Authorization: Bearer abcdefghijkl", "Authorization: Bearer [redacted]"),
        ("postgres://u:pw@db/x", "postgres://[redacted]@db/x"),
        ("https://x/?a=1&token=abc&b=2", "https://x/?a=1&token=[redacted]&b=2"),
        ("jwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "jwt [redacted jwt]"),
        ("key sk_live_abcdefghijklmnop", "key [redacted key]"),
        ('"password": "hunter2"', '"password": "[redacted]"'),
        ("nothing to see", "nothing to see"),
    ],
)
def test_secret_shapes_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redaction_is_linear_on_hostile_input() -> None:
    hostile = ("a@" * 50_000) + ("token" * 20_000)
    assert len(redact(hostile)) > 0
