from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.redact import LEAF_CHAR_CAP, PATTERNS, TRUNCATION_MARKER, mask_secrets, redact

# Fake credentials in the documented shapes; none is real.
CASES = {
    "url_credentials": (
        "clone https://deploy:hunter2pass@git.example.org/repo.git now",
        "clone https://deploy:***@git.example.org/repo.git now",
    ),
    "query_parameter": (
        "GET /cb?code=1&access_token=abc.DEF-123&api_key=zz9 HTTP/1.1",
        "GET /cb?code=1&access_token=***&api_key=*** HTTP/1.1",
    ),
    "secret_assignment": (
        'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" and password: hunter2',
        'aws_secret_access_key = "***" and password: ***',
    ),
    "anthropic_key": (
        "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wx-yz0123 end",
        "key sk-ant-*** end",
    ),
    "openai_key": (
        "use sk-AbCdEfGhIjKlMnOpQrStUvWx or sk-proj-AbCdEfGhIjKlMnOpQr_s-t",
        "use sk-*** or sk-proj-***",
    ),
    "stripe_key": (
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc rk_live_4eC39HqLyjWDarjtT1zdp7dc "
        "pk_test_4eC39HqLyjWDarjtT1",
        "sk_live_*** rk_live_*** pk_test_***",
    ),
    "aws_access_key_id": (
        "id=AKIAIOSFODNN7EXAMPLE, session ASIAY34FZKBOKMUTVV7A.",
        "id=AKIA***, session ASIA***.",
    ),
    "github_token": (
        "ghp_0123456789abcdefghijABCDEFGHIJ012345 gho_0123456789abcdefghijABCDEFGHIJ012345 "
        "ghs_0123456789abcdefghijABCDEFGHIJ012345",
        "ghp_*** gho_*** ghs_***",
    ),
    "github_pat": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_***",
    ),
    "slack_token": (
        "xoxb-123456789012-abcdefABCDEF xoxp-1234567890-xyz xapp-1-A0123-456-abc",
        "xoxb-*** xoxp-*** xapp-***",
    ),
    "google_api_key": (
        "maps AIzaSyA-1234567890abcdefghijklmnopqrstu!",
        "maps AIza***!",
    ),
    "jwt": (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
        "token eyJ***;",
    ),
    "authorization_header": (
        "Authorization: Bearer 0123abcd.EFGH-ijkl_mnop~qr+st/uv=",
        "Authorization: Bearer ***",
    ),
    "email": (
        "write to Jane.Doe+audit@mail.example.co.uk, not me",
        "write to ***@***, not me",
    ),
}


def test_every_pattern_has_a_case() -> None:
    assert sorted(p.name for p in PATTERNS) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_pattern_masks_its_shape_and_keeps_its_prefix(name: str) -> None:
    original, expected = CASES[name]
    (pattern,) = [p for p in PATTERNS if p.name == name]
    assert pattern.apply(original) == expected
    assert redact(original) == expected


@pytest.mark.parametrize(
    "text",
    [
        "sk-short",  # too short to be a key
        "ask-AbCdEfGhIjKlMnOpQrStUvWx",  # inside a longer word
        "monkey=banana",  # a parameter that merely ends in "key"
        "AKIAIOSFODNN7EXAMPLEX",  # 17 characters: not an access key id
        "bearer tokens are short-lived",
        "user@localhost",  # no dot in the domain
        "a table of 3 rows",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_long_leaf_is_cut_after_masking() -> None:
    secret = "sk-" + "A" * 40
    text = "x" * (LEAF_CHAR_CAP - 10) + " " + secret + " " + "y" * 500
    out = redact(text)
    assert out == "x" * (LEAF_CHAR_CAP - 10) + " sk-*** yy" + TRUNCATION_MARKER
    assert "AAAA" not in out


def test_a_leaf_at_the_cap_is_not_marked() -> None:
    assert redact("z" * LEAF_CHAR_CAP) == "z" * LEAF_CHAR_CAP
    assert redact("z" * (LEAF_CHAR_CAP + 1)) == "z" * LEAF_CHAR_CAP + TRUNCATION_MARKER


MEGABYTE = 1_000_000


@pytest.mark.parametrize(
    ("unit", "masked"),
    [
        ("a", None),  # one long run of token characters
        ("sk-", "sk-***"),  # a key prefix repeated without end: one key
        ("token=", "token=***"),  # parameters that swallow each other: one value
        ("a@", None),  # e-mail fragments without a domain
        ("a.", None),  # a domain that never ends in letters
        ("eyJ.", None),  # JWT heads that never complete
        ("x://a:", None),  # URL credentials that never reach "@"
        ("password ", None),  # assignments without a value
        ("Bearer ", None),
        ("AKIA", None),
    ],
)
def test_adversarial_megabyte_is_handled_correctly(unit: str, masked: str | None) -> None:
    # Quadratic patterns would take hours on these; linear ones take well under a second.
    text = unit * (MEGABYTE // len(unit))
    expected = text[:LEAF_CHAR_CAP] + TRUNCATION_MARKER if masked is None else masked
    assert redact(text) == expected


def test_adversarial_megabyte_with_a_secret_at_its_end() -> None:
    text = "a." * (MEGABYTE // 2) + " sk-" + "B" * 30
    assert mask_secrets(text) == "a." * (MEGABYTE // 2) + " sk-***"


secrets = st.sampled_from([original for original, _ in CASES.values()])
noise = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=200)
@given(st.lists(st.one_of(secrets, noise), max_size=8))
def test_planted_secrets_never_survive_surrounding_text(parts: list[str]) -> None:
    text = " ".join(parts)
    out = mask_secrets(text)
    for original, expected in CASES.values():
        for token in _secret_bodies(original, expected):
            assert token not in out


def _secret_bodies(original: str, expected: str) -> list[str]:
    """The words of ``original`` that its masked form dropped (the secrets themselves)."""
    kept = set(expected.split())
    return [w.strip(',.;!"') for w in original.split() if w not in kept and len(w) > 12]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=***"),
        ('export GITHUB_TOKEN="abc123"', 'export GITHUB_TOKEN="***"'),
        ("STRIPE_SECRET_KEY=whatever", "STRIPE_SECRET_KEY=***"),
        ("app.api-key: zzz", "app.api-key: ***"),
        ("MY_SECRET: x", "MY_SECRET: ***"),
        ("keyboard=1 tokens=5 passwordless=1", "keyboard=1 tokens=5 passwordless=1"),
    ],
)
def test_assignments_with_prefixed_names(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected


def test_prefixed_names_stay_linear_on_long_identifiers() -> None:
    hostile = "a-" * 200_000 + "DB_" * 100_000 + "PASSWORD=x"
    assert mask_secrets(hostile).endswith("PASSWORD=***")
