"""``resolve_route``: which handler a URL path is routed to, without calling anything.

The workspace names a routes file (``[routes] file``; its format is in ``_routes``) or an ASGI
or WSGI application (``[routes] app = "module:attribute"`` imported from ``app_path``); the
file is used when both are named. The application is imported in a child process with a time
budget (``_route_worker``), never called, and its output discarded: only the handler's name,
the route's pattern and methods come back. The model's path is validated (absolute, no
control characters, bounded), its query and fragment dropped and its percent-escapes decoded
before matching, as a server would. Everything shown passes through ``toolwire.core.redact``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from toolwire.core.children import run_child
from toolwire.core.errors import ToolRefusal
from toolwire.core.redact import mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    builtin,
    echo,
    format_cell,
    secret_identities,
    workspace_of,
)
from toolwire.tools.builtin._routes import match, read_routes
from toolwire.tools.builtin._secrets import SecretIdentities, read_named_file
from toolwire.workspace.maps import RouteMap

MAX_PATH_CHARS = 2_048  # what servers accept in a request line, give or take
MAX_ROUTES_BYTES = 1_000_000  # a routes file is hand-written
IMPORT_SECONDS = 10.0  # the application's import, in its own process
# The worker's one JSON answer is a few hundred bytes; what the application prints as it is
# imported goes to stderr, which is dropped. More on stdout is not an answer.
MAX_ANSWER_BYTES = 100_000
_WORKER = Path(__file__).with_name("_route_worker.py")
_METHOD = re.compile(r"[A-Z]{1,16}")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


@builtin(group="structure", data_class="configuration", integrity="untrusted")
def resolve_route(path: str, context: ToolContext, method: str = "GET") -> ToolResult:
    """Which handler of the application a URL path (and method) is routed to, from its routes
    file or its ASGI/WSGI app; nothing is called.

    Artifact: ``key_value`` ``{items: [["handler", ...], ["route", ...], ...]}``, the lines of
    the text.
    """
    workspace = workspace_of(context)
    mapping = workspace.routes
    if mapping is None:
        raise ToolRefusal("the workspace names no routes file or application.")
    verb = method.strip().upper()
    if not _METHOD.fullmatch(verb):
        raise ToolRefusal(f"method {echo(method)} is not an HTTP method such as GET or POST.")
    target = _request_path(path)
    if mapping.file is not None:
        answer = _from_file(mapping.file, secret_identities(workspace), verb, target)
    else:
        answer = _from_app(mapping, verb, target)
    asked = f"{verb} {format_cell(mask_secrets(target))}"
    if not answer.get("found"):
        allowed = answer.get("allowed") or []
        if allowed:
            return ToolResult.text(f"{asked}: a route has this path for {', '.join(allowed)} only.")
        return ToolResult.text(f"No route matches {asked}.")
    return _render(asked, answer)


def _request_path(path: str) -> str:
    raw = path.strip()
    if not raw.startswith("/") or len(raw) > MAX_PATH_CHARS:
        raise ToolRefusal(f"path must start with / and be at most {MAX_PATH_CHARS} characters.")
    plain = unquote(raw.split("#", 1)[0].split("?", 1)[0])
    if _CONTROL.search(plain):
        raise ToolRefusal(f"path {echo(path)} holds spaces or control characters.")
    return plain


def _from_file(file: Path, known: SecretIdentities, method: str, path: str) -> dict[str, Any]:
    routes = read_routes(_routes_text(file, known))
    found, allowed = match(routes, method, path)
    if found is None:
        return {"found": False, "allowed": allowed}
    route = found.route
    methods = sorted(route.methods) if route.methods is not None else ["any"]
    return {"found": True, "handler": route.handler, "route": route.pattern, "methods": methods,
            "params": found.params, "source": f"{file.name}:{route.line}"}  # fmt: skip


def _routes_text(path: Path, known: SecretIdentities) -> str:
    text = read_named_file(path, MAX_ROUTES_BYTES, known)
    if text is None:
        raise ToolRefusal("the workspace's routes file cannot be read.")
    return text


def _from_app(mapping: RouteMap, method: str, path: str) -> dict[str, Any]:
    assert mapping.app is not None and mapping.app_path is not None
    job = {"app": mapping.app, "app_path": str(mapping.app_path), "method": method, "path": path}
    try:
        done = run_child(
            [sys.executable, str(_WORKER)],
            stdin=json.dumps(job),
            timeout=IMPORT_SECONDS,
            max_output=MAX_ANSWER_BYTES,
            cwd=mapping.app_path,
        )
    except subprocess.TimeoutExpired:
        raise ToolRefusal(
            f"importing the application took longer than {IMPORT_SECONDS:g} seconds."
        ) from None
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        answer = {"error": "the route lookup failed"}
    if "error" in answer:
        raise ToolRefusal(f"{answer['error']}.")
    return {**answer, "source": f"application {mapping.app}"}


def _render(asked: str, answer: dict[str, Any]) -> ToolResult:
    params = answer.get("params") or {}
    items = [
        ("request", asked),
        ("handler", _shown(answer.get("handler"))),
        ("route", _shown(answer.get("route"))),
        ("methods", _shown(", ".join(answer.get("methods") or []) or "any")),
        ("parameters", _shown(", ".join(f"{k}={v}" for k, v in params.items()) or "none")),
        ("source", _shown(answer.get("source"))),
    ]
    text = "\n".join(f"{key}: {value}" for key, value in items)
    return ToolResult.text(text, Artifact.key_value("route", items))


def _shown(value: object) -> str:
    return format_cell(mask_secrets(str(value or "")))
