"""Route lookup worker, run as ``python _route_worker.py`` with a JSON job on stdin.

It imports the workspace's application (``module:attribute``, from ``app_path``) in its own
process, because importing runs the application's code: a slow or broken import cannot hold or
crash the run, and is killed when its time budget ends. The application is never called. What
its import prints goes to stderr, which the parent discards; stdout carries one JSON answer:
``{"found": true, "handler", "route", "methods", "params"}``, ``{"found": false, "allowed":
[...]}`` or ``{"error": "<fixed phrase>"}``.

Starlette and FastAPI applications are matched through their routes' own ``matches`` (mounts
followed), Flask applications through their ``url_map``.
"""

import importlib
import json
import sys
from typing import Any


def describe(endpoint: Any) -> str:
    """``module.qualname`` of a handler, or its type's name for an object without one."""
    target = getattr(endpoint, "__wrapped__", endpoint)
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}.{name}"


def starlette_routes(app: Any) -> Any:
    routes = getattr(app, "routes", None)
    if routes is None and hasattr(app, "router"):
        routes = getattr(app.router, "routes", None)
    return routes


def match_starlette(routes: Any, scope: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    from starlette.routing import Match

    allowed: list[str] = []
    for route in routes:
        matched, child = route.matches(scope)
        if matched is Match.NONE:
            continue
        inner = getattr(route, "routes", None)
        if inner is not None and getattr(route, "endpoint", None) is None:  # a Mount
            nested = match_starlette(inner, {**scope, **child}, prefix + route.path)
            if nested.get("found"):
                return nested
            allowed += nested.get("allowed", [])
            continue
        methods = sorted(getattr(route, "methods", None) or [])
        if matched is Match.FULL:
            params = {k: str(v) for k, v in child.get("path_params", {}).items()}
            handler = describe(getattr(route, "endpoint", route))
            return {"found": True, "handler": handler, "route": prefix + route.path,
                    "methods": methods, "params": params}  # fmt: skip
        allowed += methods
    return {"found": False, "allowed": sorted(set(allowed))}


def match_flask(app: Any, method: str, path: str) -> dict[str, Any]:
    from werkzeug.exceptions import MethodNotAllowed, NotFound

    adapter = app.url_map.bind("localhost")
    try:
        endpoint, params = adapter.match(path, method=method)
    except MethodNotAllowed as exc:
        return {"found": False, "allowed": sorted(exc.valid_methods or [])}
    except NotFound:
        return {"found": False, "allowed": []}
    rule = next(r for r in app.url_map.iter_rules() if r.endpoint == endpoint)
    view = app.view_functions.get(endpoint)
    shown = {k: str(v) for k, v in params.items()}
    return {"found": True, "handler": describe(view) if view else endpoint, "route": rule.rule,
            "methods": sorted(rule.methods or []), "params": shown}  # fmt: skip


def resolve(job: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, job["app_path"])
    module_name, _, attribute = job["app"].partition(":")
    real_stdout, sys.stdout = sys.stdout, sys.stderr  # the import may print; keep stdout clean
    try:
        app: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            app = getattr(app, part)
    except Exception:
        return {"error": "the application could not be imported"}
    finally:
        sys.stdout = real_stdout
    method, path = job["method"], job["path"]
    if hasattr(app, "url_map") and hasattr(app, "view_functions"):
        return match_flask(app, method, path)
    routes = starlette_routes(app)
    if routes is None:
        return {"error": "the application is neither a Starlette/FastAPI nor a Flask app"}
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    return match_starlette(routes, scope)


if __name__ == "__main__":
    answer = resolve(json.loads(sys.stdin.read()))
    sys.stdout.write(json.dumps(answer))
