"""Personal-data shapes: e-mail addresses, phone numbers, IBANs and card numbers.

Personal data is not a secret. The secret catalogue (:mod:`toolwire.core.redact`) is masked
wherever it occurs; these shapes are masked in tool output only where the run's trust zone may
not see them (the workspace's policy, :mod:`toolwire.tools.disclosure`), and always in a stored
copy at ``redacted`` (:func:`toolwire.core.redact.redact`).

- **E-mail**: ``local@domain.tld``; becomes ``***@***``.
- **Phone**: an international number (``+``, a country code, which never starts with 0, and 8
  to 15 digits in all, spaces, dots, dashes or one pair of brackets between groups) or a North
  American one (``(555) 123-4567``, ``555-123-4567``); becomes ``+***`` or ``***``. Dates,
  times, versions and plain numbers are not phones.
- **IBAN**: two letters, two check digits and 11 to 30 letters or digits (grouped by four or
  not) whose ISO 13616 mod-97 check holds; becomes its country code and ``***``.
- **Card number**: 13 to 19 digits (grouped by spaces or dashes, or not, the first never 0:
  no issuer's number starts so) that pass the Luhn check; becomes ``***``. An order number
  that fails the check is left alone.

Invariants:
- Linear time, as the secret catalogue (a shape starts only where its first character cannot
  continue a run; the checks are on the match alone).
- The standard library only: the search worker, a process that cannot import this package,
  loads this file by its path (:func:`toolwire.tools.disclosure.worker_masks`), so the shapes
  and their checks have this one home.
- A tool that cuts text before the seam masks it cuts at :func:`cut_point`, never through a
  shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# The secret catalogue's mask (``toolwire.core.redact.MASK``, which imports this module; a test
# pins that the two are the same).
MASK = "***"
EMAIL_MASK = f"{MASK}@{MASK}"
PHONE_DIGITS = (8, 15)  # ITU E.164: at most 15 digits; fewer than 8 is an extension or a count
# How far past a cut a shape that runs through it may reach: an e-mail address may be as long
# as RFC 5321 allows (254 characters), every other shape is shorter.
SHAPE_REACH = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class PersonalShape:
    """One personal-data shape: its regex, what a match becomes (``None``: left alone, a
    look-alike that failed its check), and a cheap pre-test."""

    name: str
    regex: re.Pattern[str]
    mask: Callable[[re.Match[str]], str]
    needs: Callable[[str], bool]

    def apply(self, text: str) -> str:
        return self.regex.sub(self.mask, text) if self.needs(text) else text


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` (digits only) pass the Luhn check of payment card numbers."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def iban_valid(compact: str) -> bool:
    """Whether ``compact`` (an IBAN without spaces, upper case) passes the mod-97 check."""
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _email(match: re.Match[str]) -> str:
    return EMAIL_MASK


def _phone(match: re.Match[str]) -> str:
    found = match.group()
    if not PHONE_DIGITS[0] <= len(_digits(found)) <= PHONE_DIGITS[1]:
        return found
    return "+" + MASK if found.startswith("+") else MASK


def _iban(match: re.Match[str]) -> str:
    found = match.group()
    compact = found.replace(" ", "").upper()
    return found[:2] + MASK if iban_valid(compact) else found


def _card(match: re.Match[str]) -> str:
    found = match.group()
    digits = _digits(found)
    return MASK if 13 <= len(digits) <= 19 and luhn_valid(digits) else found


def _has_digit_run(text: str) -> bool:
    return any(c.isdigit() for c in text)


_NOT_AFTER_WORD = r"(?<![A-Za-z0-9_.+\-/:#@])"
_NOT_BEFORE_WORD = r"(?![A-Za-z0-9_]|[.\-/:][0-9])"

SHAPES: tuple[PersonalShape, ...] = (
    PersonalShape(
        name="email",
        regex=re.compile(
            r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]++@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}"
        ),
        mask=_email,
        needs=lambda text: "@" in text,
    ),
    PersonalShape(
        name="iban",
        regex=re.compile(
            rf"{_NOT_AFTER_WORD}[A-Z]{{2}}[0-9]{{2}}(?:[ ]?[A-Z0-9]{{4}}){{2,7}}+"
            rf"(?:[ ]?[A-Z0-9]{{1,3}})?{_NOT_BEFORE_WORD}"
        ),
        mask=_iban,
        needs=_has_digit_run,
    ),
    PersonalShape(
        name="card_number",
        regex=re.compile(
            rf"{_NOT_AFTER_WORD}(?:[1-9][0-9]{{3}}(?:[ \-]?[0-9]{{4}}){{2}}[ \-]?[0-9]{{1,7}}"
            rf"|[1-9][0-9]{{3}}[ \-][0-9]{{6}}[ \-][0-9]{{5}}){_NOT_BEFORE_WORD}"
        ),
        mask=_card,
        needs=_has_digit_run,
    ),
    PersonalShape(
        name="phone",
        regex=re.compile(
            rf"{_NOT_AFTER_WORD}(?:\+[1-9][0-9]{{0,2}}[ .\-]?\(?[0-9]{{1,4}}\)?"
            rf"(?:[ .\-]?[0-9]{{2,4}}){{1,5}}+"
            rf"|\(?[0-9]{{3}}\)?[ .\-][0-9]{{3}}[.\-][0-9]{{4}}"
            rf"|\([0-9]{{3}}\)[0-9]{{3}}-[0-9]{{4}})"
            rf"{_NOT_BEFORE_WORD}"
        ),
        mask=_phone,
        needs=_has_digit_run,
    ),
)


def mask_personal(text: str) -> str:
    """Every personal-data shape in ``text`` masked; no length bound."""
    for shape in SHAPES:
        text = shape.apply(text)
    return text


def spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds personal data: the (start, end) of every match a mask would
    replace, shape by shape, in order of their start."""
    found = [
        match.span()
        for shape in SHAPES
        if shape.needs(text)
        for match in shape.regex.finditer(text)
        if shape.mask(match) != match.group()
    ]
    return sorted(found)


def cut_point(text: str, limit: int) -> int:
    """Where to cut ``text`` at ``limit`` characters or before so that no personal-data shape is
    split: the start of a shape the cut would run through, else ``limit``. Half an address is
    no shape a later mask recognises, so a tool cuts here before the seam masks."""
    return before_shapes(spans(text[: limit + SHAPE_REACH]), limit)


def clipped(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at :func:`cut_point` and marked with "…",
    when it is longer: how every tool shortens text the seam masks after it."""
    return text if len(text) <= limit else text[: cut_point(text, limit)] + "…"


def before_shapes(found: list[tuple[int, int]], limit: int) -> int:
    """``limit``, moved back to the start of any of the ``found`` spans it falls inside."""
    for start, end in reversed(found):
        if start < limit < end:
            limit = start
    return limit
