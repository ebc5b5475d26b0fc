"""Error excerpts: short, one line, and no secret survives, whatever surrounds it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.providers.redact import EXCERPT_CHARS, MASK, excerpt, redact

TEXT = st.text(st.characters(codec="utf-8"), max_size=300)
KEYS = st.text("0123456789abcdef", min_size=16, max_size=48).map(lambda h: f"key-{h}")


@settings(max_examples=200)
@given(before=TEXT, after=TEXT, key=KEYS, repeat=st.integers(1, 40))
def test_the_configured_key_never_survives_and_the_excerpt_is_bounded(
    before: str, after: str, key: str, repeat: int
) -> None:
    body = (before + key + after) * repeat
    short = excerpt(body, key)
    assert key not in short
    assert len(short) <= EXCERPT_CHARS
    assert "\n" not in short


@settings(max_examples=100)
@given(start=st.integers(150, 220), after=TEXT)
def test_no_fragment_of_the_key_survives_where_the_cut_falls(start: int, after: str) -> None:
    key = "k3y-0123456789abcdef"
    short = excerpt("x" * start + " " + key + after, key)
    assert "k3y-01" not in short
    assert len(short) <= EXCERPT_CHARS


def test_key_shapes_are_masked_without_knowing_the_key() -> None:
    body = (
        "openai sk-proj-AbCdEf123456GhIjKl anthropic sk-ant-api03-XyZ_987654abcdef gemini "
        "AIzaSyA1b2C3d4E5f6G7h8I9j0kLmNoPqRsTuVw Authorization: Bearer abc.def.ghi "
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig "
        "url postgresql://admin:hunter2@db/prod "
        "blob 0123456789abcdef0123456789abcdef0123"
    )
    assert redact(body) == (
        "openai sk-proj-*** anthropic sk-ant-*** gemini "
        "AIza*** Authorization: Bearer *** "
        "jwt eyJ*** "
        "url postgresql://admin:***@db/prod "
        f"blob {MASK}"
    )


def test_excerpts_use_the_one_catalogue() -> None:
    # Shapes the excerpt's former list of its own let through into logged errors.
    body = "id AKIAIOSFODNN7EXAMPLE, x_api_key=zz9top, owner ops@example.com, hf_" + "a1" * 17
    assert excerpt(body) == "id AKIA***, x_api_key=***, owner ***@***, hf_***"


def test_plain_error_text_is_kept_and_flattened() -> None:
    body = '{\n  "error": {\n    "message": "model not found",\n    "type": "invalid"\n  }\n}'
    assert excerpt(body) == '{ "error": { "message": "model not found", "type": "invalid" } }'


def test_a_long_excerpt_is_clipped_with_an_ellipsis() -> None:
    short = excerpt("word " * 100)
    assert len(short) == EXCERPT_CHARS
    assert short == ("word " * 40)[: EXCERPT_CHARS - 1] + "…"


def test_an_endpoint_keeps_its_long_path_of_short_words_and_loses_a_key_in_it() -> None:
    from toolwire.providers.redact import url_excerpt

    azure = "https://res.openai.azure.com/openai/deployments/gpt-4o-mini-prod/chat/completions"
    vertex = ("https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/"
              "europe-west4/publishers/google/models/gemini-2.5-flash:generateContent")  # fmt: skip
    assert url_excerpt(azure) == azure
    assert url_excerpt(vertex) == vertex
    opaque = "Zq8xW2vY7uT4sR1pO6nM3lK9jH5gF0dS"  # 32 characters of no known shape
    assert url_excerpt(f"https://gw.example/{opaque}/v1") == "https://gw.example/[redacted]/v1"
    slashed = "abc/def+ghi"  # a configured key with a slash in it
    assert url_excerpt(f"https://gw.example/{slashed}/v1", slashed) == (
        "https://gw.example/[redacted]/v1"
    )
