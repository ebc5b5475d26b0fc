"""A routes file: one route per line, ``METHODS PATH HANDLER``, matched like Starlette matches.

    # method    path                  handler
    GET         /products/{id:int}    shop.web:product_detail
    GET,POST    /checkout             shop.checkout:checkout_page
    *           /static/{file:path}   shop.web:static_file

``METHODS`` is a comma-separated list or ``*`` (any). A path parameter is ``{name}`` (one
segment) or ``{name:convertor}`` with Starlette's convertors: ``str``, ``int``, ``float``,
``path`` (the rest, slashes included) and ``uuid``. Routes are tried in file order; the first
whose path and method match wins. A line that is not a route is skipped, never echoed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CONVERTORS = {
    "str": "[^/]+",
    "int": "[0-9]+",
    "float": r"[0-9]+(?:\.[0-9]+)?",
    "path": ".*",
    "uuid": "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}
MAX_ROUTES = 5_000  # routes read from one file
_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([A-Za-z]+))?\}")
_METHOD = re.compile(r"[A-Z]+")


@dataclass(frozen=True, slots=True)
class Route:
    line: int
    methods: frozenset[str] | None  # None: any method
    pattern: str
    handler: str
    regex: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class Found:
    route: Route
    params: dict[str, str]


def read_routes(text: str) -> list[Route]:
    """The routes of a routes file (the first ``MAX_ROUTES``); other lines are skipped."""
    routes: list[Route] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        route = _route(number, line) if line else None
        if route is not None:
            routes.append(route)
            if len(routes) >= MAX_ROUTES:
                break
    return routes


def _route(number: int, line: str) -> Route | None:
    parts = line.split()
    if len(parts) != 3 or not parts[1].startswith("/"):
        return None
    methods_text, pattern, handler = parts
    methods = None if methods_text == "*" else frozenset(methods_text.upper().split(","))
    if methods is not None and not all(_METHOD.fullmatch(m) for m in methods):
        return None
    regex = _compile(pattern)
    return None if regex is None else Route(number, methods, pattern, handler, regex)


def _compile(pattern: str) -> re.Pattern[str] | None:
    """The path pattern as a regex with one named group per parameter; None when a parameter
    names an unknown convertor or repeats a name."""
    pieces, names, end = [], set(), 0
    for parameter in _PARAMETER.finditer(pattern):
        name, convertor = parameter.group(1), parameter.group(2) or "str"
        if convertor not in CONVERTORS or name in names:
            return None
        names.add(name)
        pieces += [
            re.escape(pattern[end : parameter.start()]),
            f"(?P<{name}>{CONVERTORS[convertor]})",
        ]
        end = parameter.end()
    pieces.append(re.escape(pattern[end:]))
    return re.compile("".join(pieces))


def match(routes: list[Route], method: str, path: str) -> tuple[Found | None, list[str]]:
    """The first route matching ``path`` and ``method``; else, the methods routes for the
    path would take (empty when no route has the path)."""
    allowed: set[str] = set()
    for route in routes:
        found = route.regex.fullmatch(path)
        if found is None:
            continue
        if route.methods is None or method in route.methods:
            return Found(route, dict(found.groupdict())), []
        allowed |= route.methods
    return None, sorted(allowed)
