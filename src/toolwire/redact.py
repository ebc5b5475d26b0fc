"""Redaction of secret-shaped text: best effort, bounded, not a PII scrubber.

``redact(text)`` masks what commonly leaks through logs, environments and tool output: URL
credentials, Bearer tokens, JWTs, well-known API key shapes, token-like query parameters and
``key=value`` secrets, and e-mail addresses. Each mask names what it replaced, so a reader knows
something was there. Patterns are linear (no nested quantifiers) so hostile input cannot make
them backtrack.
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host: keep the scheme and host, drop the credentials
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,20}://)[^\s/@:]{1,256}:[^\s/@]{1,256}@"),
        r"\1[redacted]@",
    ),
    (re.compile(r"(?i)\bbearer\s+[a-z0-9._~+/=-]{8,}"), "Bearer [redacted]"),
    (re.compile(r"\beyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]{5,}"), "[redacted jwt]"),
    (
        re.compile(
            r"\b(?:sk|pk|rk|ghp|gho|ghs|github_pat|xox[abprs]|glpat|AKIA|AIza)[-_]?[A-Za-z0-9_-]{12,}"
        ),
        "[redacted key]",
    ),
    # token=..., api_key: ..., "password": "..." in query strings, env lines and logs
    (
        re.compile(
            r"(?i)\b([a-z0-9_.-]{0,40}(?:token|secret|password|passwd|api[_-]?key|access[_-]?key"
            r"|private[_-]?key|signature|sig|auth)[a-z0-9_-]{0,20}[\"']?\s{0,3}[=:]\s{0,3}[\"']?)"
            r"(?!\[redacted|bearer \[redacted)[^\s\"'&,;]{1,1024}"
        ),
        r"\1[redacted]",
    ),
    (
        re.compile(r"(?i)\b[a-z0-9._%+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}\b"),
        "[redacted email]",
    ),
)


def redact(text: str) -> str:
    """``text`` with every secret-shaped span replaced by a ``[redacted ...]`` mask."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
