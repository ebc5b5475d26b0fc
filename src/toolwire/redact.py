"""The redactor: masks secret-shaped substrings in one string and bounds its length.

Best effort, not a PII scrubber: it knows a catalogue of credential shapes (provider API keys,
cloud and VCS tokens, JWTs, ``Bearer`` headers, credentials in URLs and token-like query
parameters or assignments) and e-mail addresses. Each match keeps a short recognisable prefix
(``sk-***``, ``token=***``) so a reader can tell what was there without learning it.

Invariants:
- Linear time. Python's ``re`` backtracks, so every pattern is built not to: a token pattern
  may only start where the previous character cannot belong to the token (a negative
  look-behind), so each run of token characters is tried once; repeated classes that a later
  literal must follow are possessive (``++``) so a failed attempt never re-scans.
- Secrets are masked over the whole string before it is cut, so a secret straddling the cut
  can never leave a recognisable tail or head behind.
- The result is at most ``LEAF_CHAR_CAP`` characters plus ``TRUNCATION_MARKER``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# A stored string leaf is for an audit reader, not for replay; 2,000 characters shows what
# happened while keeping one step's payload small.
LEAF_CHAR_CAP = 2000
TRUNCATION_MARKER = "… [truncated]"
MASK = "***"

# Characters a token is made of; a token pattern never starts right after one of them.
_TOKEN = r"A-Za-z0-9_\-"  # noqa: S105 (a character class, not a password)
_NOT_AFTER_TOKEN = rf"(?<![{_TOKEN}])"

# Names of query parameters and assignments whose value is a credential.
_QUERY_NAMES = (
    r"access_token|refresh_token|id_token|auth_token|token|api_key|apikey|api-key|key"
    r"|client_secret|secret|password|passwd|pwd|signature|sig"
)
_ASSIGNED_NAMES = (
    r"secret_access_key|session_token|client_secret|api[_\-]?key|access_token|auth_token"
    r"|secret_key|private_key|password|passwd|passphrase|token|secret|credentials?"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretPattern:
    """One named secret shape and how a match is masked."""

    name: str
    regex: re.Pattern[str]
    replacement: str | Callable[[re.Match[str]], str]

    def apply(self, text: str) -> str:
        return self.regex.sub(self.replacement, text)


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group("prefix") + MASK


def _initials(names: str) -> str:
    """The first letters of ``names`` in both cases: a cheap test before the alternation."""
    letters = {name[0] for name in names.split("|")}
    return "".join(sorted(letters | {c.upper() for c in letters}))


def _pattern(name: str, regex: str, flags: int = 0) -> SecretPattern:
    """A pattern whose ``prefix`` group survives and whose remainder becomes the mask."""
    return SecretPattern(name=name, regex=re.compile(regex, flags), replacement=_keep_prefix)


# Order matters: URL parts first (they hold other shapes), specific prefixes before general
# ones (``sk-ant-`` before ``sk-``), JWTs before ``Bearer``, e-mail last.
PATTERNS: tuple[SecretPattern, ...] = (
    _pattern(
        "url_credentials",
        r"(?<![A-Za-z0-9+.\-])(?P<prefix>[A-Za-z][A-Za-z0-9+.\-]*+://[^\s:/@]++:)[^\s/@]++(?=@)",
    ),
    _pattern(
        "query_parameter",
        rf"(?<![A-Za-z0-9_\-])(?=[{_initials(_QUERY_NAMES)}])(?P<prefix>(?:{_QUERY_NAMES})=)"
        r"[^&\s#\"'<>]++",
        re.IGNORECASE,
    ),
    _pattern(
        "secret_assignment",
        # An optional identifier prefix (DB_PASSWORD, STRIPE_SECRET_KEY, app.api-key): each
        # segment ends at a separator outside its class, so a split is found in one pass, and
        # a match may only start where no identifier character precedes it.
        rf"(?<![A-Za-z0-9_.\-])(?P<prefix>(?:[A-Za-z0-9]+[_.\-])*(?:{_ASSIGNED_NAMES})"
        r"[\"']?\s*+[:=]\s*+[\"']?)[^\s\"'&,;]++",
        re.IGNORECASE,
    ),
    _pattern("anthropic_key", rf"{_NOT_AFTER_TOKEN}(?P<prefix>sk-ant-)[{_TOKEN}]{{16,}}"),
    _pattern("openai_key", rf"{_NOT_AFTER_TOKEN}(?P<prefix>sk-(?:proj-)?)[{_TOKEN}]{{16,}}"),
    _pattern(
        "stripe_key",
        rf"{_NOT_AFTER_TOKEN}(?P<prefix>(?:sk|rk|pk)_(?:live|test)_)[A-Za-z0-9]{{16,}}",
    ),
    _pattern(
        "aws_access_key_id", r"(?<![A-Z0-9])(?P<prefix>(?:AKIA|ASIA))[A-Z0-9]{16}(?![A-Z0-9])"
    ),
    _pattern("github_token", rf"{_NOT_AFTER_TOKEN}(?P<prefix>gh[pousr]_)[A-Za-z0-9]{{36,}}"),
    _pattern("github_pat", rf"{_NOT_AFTER_TOKEN}(?P<prefix>github_pat_)[A-Za-z0-9_]{{22,}}"),
    _pattern(
        "slack_token", rf"{_NOT_AFTER_TOKEN}(?P<prefix>xox[baprs]-|xapp-)[A-Za-z0-9\-]{{10,}}"
    ),
    _pattern("google_api_key", rf"{_NOT_AFTER_TOKEN}(?P<prefix>AIza)[{_TOKEN}]{{35}}"),
    _pattern("jwt", rf"{_NOT_AFTER_TOKEN}(?P<prefix>eyJ)[{_TOKEN}]++\.[{_TOKEN}]++\.[{_TOKEN}]++"),
    _pattern(
        "authorization_header",
        r"(?<![A-Za-z0-9_])(?P<prefix>Bearer\s++)[A-Za-z0-9._~+/=\-]{8,}",
        re.IGNORECASE,
    ),
    SecretPattern(
        name="email",
        regex=re.compile(
            r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]++@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"
        ),
        replacement=f"{MASK}@{MASK}",
    ),
)


def mask_secrets(text: str) -> str:
    """Every catalogued secret shape in ``text`` masked; no length bound."""
    for pattern in PATTERNS:
        text = pattern.apply(text)
    return text


def redact(text: str) -> str:
    """``text`` with secrets masked, then cut to ``LEAF_CHAR_CAP`` characters plus a marker."""
    masked = mask_secrets(text)
    if len(masked) <= LEAF_CHAR_CAP:
        return masked
    return masked[:LEAF_CHAR_CAP] + TRUNCATION_MARKER
