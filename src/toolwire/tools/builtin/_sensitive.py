"""Sensitive names and cell values: what the database and environment tools never show.

A name (table, column, JSON key, environment variable) is sensitive when, once normalised, one
of its parts is a sensitive word, or it contains a sensitive compound anywhere.

- **Normalised**: NFKC (full-width and ligature forms), Cyrillic and Greek look-alikes mapped to
  the Latin letters they imitate (``p\u0430ssword`` with a Cyrillic ``\u0430``), accents
  stripped, then case-folded. A name cannot dodge the list by how it is spelt.
- **Parts**: split on anything but letters and digits and at camelCase boundaries (``userPw``,
  ``SECRETValue``); a trailing plural ``s`` is ignored. ``SENSITIVE_PARTS`` are matched whole,
  so ``passenger_count``, ``author``, ``keyboard_layout`` and ``monkey`` stay readable while
  ``pass``, ``hashed_pw``, ``auth`` and ``key`` do not.
- **Compounds**: ``SENSITIVE_COMPOUNDS`` are found inside squashed names (``pwhash``,
  ``resettoken``, ``sessionid``, ``mfasecret``, ``privkey``, ``usertokens``). Words that merely
  contain one (``secretary``, ``tokenizer``) are listed in ``BENIGN_WORDS`` and removed first.

Cells: a string that parses as a JSON object or array has the values under sensitive keys
replaced by ``***`` at any depth; every string cell then passes through the redactor. Whatever
matches a model's phrase or filter value against cells matches the shown text (``shown_text``),
never the stored one, so a match count cannot confirm a masked secret.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from toolwire.core.redact import MASK, mask_secrets

SENSITIVE_PARTS = frozenset(
    {
        "password", "passwd", "pwd", "pw", "pass", "passphrase", "secret", "token", "hash",
        "hashed", "salt", "key", "privkey", "priv", "private", "credential", "cred", "creds",
        "session", "sid", "otp", "mfa", "totp", "twofa", "dsn", "auth", "authorization",
        "cookie", "pin", "cvv", "iban", "ssn", "jwt", "bearer", "nonce", "signature",
    }
)  # fmt: skip
SENSITIVE_COMPOUNDS = (
    "password", "passwd", "passphrase", "secret", "token", "credential", "apikey", "privkey",
    "privatekey", "pwhash", "pwdhash", "passhash", "hashedpw", "hashedpass", "sessionid",
    "sessid", "sessionkey", "cookie", "otpseed", "mfaseed", "totpseed", "authkey", "authcode",
)  # fmt: skip
BENIGN_WORDS = ("secretary", "secretaries", "secretariat", "tokeniz")
# Look-alikes that NFKC leaves alone: Cyrillic and Greek letters drawn like Latin ones.
CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁԛԝкмтнвѵһӏАВЕКМНОРСТХУІЈЅ"  # Cyrillic
    "αορνικτυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",  # Greek
    "aeopcyxijsdqwkmthbvhlABEKMHOPCTXYIJSaopvikruxeABEZHIKMNOPTYX",
)
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
_WHITESPACE = re.compile(r"\s+")  # as ``format_cell`` collapses it
MAX_JSON_CELL_CHARS = 100_000  # larger JSON is shown as text, redacted, never parsed
JSON_DEPTH = 32  # deeper structures are masked whole


def latin(name: str) -> str:
    """``name`` after NFKC, look-alike mapping and accent stripping, case kept."""
    mapped = unicodedata.normalize("NFKC", name).translate(CONFUSABLES)
    decomposed = unicodedata.normalize("NFKD", mapped)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def is_sensitive(name: str) -> bool:
    """True when a table, column, key or variable name looks like it holds a secret."""
    plain = latin(name)
    squashed = _NOT_ALNUM.sub("", plain.casefold())
    for word in BENIGN_WORDS:
        squashed = squashed.replace(word, "")
    if any(compound in squashed for compound in SENSITIVE_COMPOUNDS):
        return True
    return any(_sensitive_part(part.casefold()) for part in _PARTS.findall(plain))


def name_parts(name: str) -> list[str]:
    """The parts of a name, case-folded, split as :func:`is_sensitive` splits it."""
    return [part.casefold() for part in _PARTS.findall(latin(name))]


def _sensitive_part(part: str) -> bool:
    return part in SENSITIVE_PARTS or (part.endswith("s") and part[:-1] in SENSITIVE_PARTS)


def safe_cell(value: object) -> object:
    """A cell as it may be shown: JSON masked by key name, strings passed through the redactor."""
    if not isinstance(value, str):
        return value
    return mask_secrets(_masked_json(value))


def shown_text(value: object) -> str | None:
    """A string cell's text as shown (masked, whitespace runs as one space), before any cut;
    None for a cell that is not a string."""
    if not isinstance(value, str):
        return None
    return collapse_whitespace(mask_secrets(_masked_json(value)))


def collapse_whitespace(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _masked_json(text: str) -> str:
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or len(stripped) > MAX_JSON_CELL_CHARS:
        return text
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    return json.dumps(_mask_keys(parsed, 0), ensure_ascii=False)


def _mask_keys(value: Any, depth: int) -> Any:
    if depth > JSON_DEPTH:
        return MASK
    if isinstance(value, dict):
        return {
            key: MASK if is_sensitive(str(key)) else _mask_keys(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_mask_keys(item, depth + 1) for item in value]
    return value
