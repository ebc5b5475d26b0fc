"""The one error shape of the inspector API: ``{"error": {"code": ..., "message": ...}}``.

Every failure answers in this shape: our own refusals, FastAPI's validation errors, Starlette's
404/405, and anything unexpected (500, with a fixed message; the exception goes to the log).
Messages name the input that was wrong and why; they never carry exception text or secrets.
Every other JSON body is written by ``json_response``, printable whatever a stored step holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Match, Mount

from toolwire.core.jsonenc import dumps_bytes, sink_dumps_bytes

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    421: "misdirected_request",
    415: "unsupported_media_type",
    422: "invalid_input",
    500: "internal_error",
}
_PROBLEMS_SHOWN = 5  # enough to fix a request; a hostile body could produce thousands
INTERNAL_MESSAGE = "the server failed; see its log"
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
FILE_METHODS = ("GET", "HEAD")  # what StaticFiles answers
_TEMPLATE_PART = re.compile(r"\\\{[^/]*?\\\}")  # ``{run_id}`` once escaped by ``re.escape``


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


# The error answers every API route documents in the OpenAPI document.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 421, 422)
}


class ApiError(Exception):
    """A refusal with a status, a code and a safe message."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _CODES.get(status, "error")
        self.message = message


def error_response(
    status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
) -> Response:
    body = {"error": {"code": code or _CODES.get(status, "error"), "message": message}}
    return Response(dumps_bytes(body), status, headers, media_type="application/json")


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON answer; a value the strict encoder refuses (a NaN in a raw body) is made printable."""
    return Response(sink_dumps_bytes(value), status, headers, media_type="application/json")


def describe_validation(errors: list[Any]) -> str:
    """``body.prompt: String should have at most 100000 characters; ...``"""
    parts = []
    for error in errors[:_PROBLEMS_SHOWN]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "request"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    more = len(errors) - _PROBLEMS_SHOWN
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def allowed_methods(request: Request) -> list[str]:
    """The methods this path allows: a mounted folder of files serves GET and HEAD; an API path
    allows what its OpenAPI document lists, where a literal path wins over a template (as in
    OpenAPI: ``/api/runs/stream`` allows POST, not the GET of ``/api/runs/{run_id}``); any
    other path, what its routes serve."""
    routes = request.app.router.routes
    # A mounted app's scope has the mount in its root path; match from the app's own root.
    scope = {**request.scope, "root_path": request.scope.get("app_root_path", "")}
    if any(isinstance(r, Mount) and r.matches(scope)[0] is not Match.NONE for r in routes):
        return list(FILE_METHODS)
    documented = _documented_methods(request.app.openapi()["paths"], scope["path"])
    if documented:
        return documented
    return [
        method
        for method in HTTP_METHODS
        if any(r.matches({**scope, "method": method})[0] is Match.FULL for r in routes)
    ]


def _documented_methods(paths: Mapping[str, Mapping[str, Any]], path: str) -> list[str]:
    if path in paths:
        found = {method.upper() for method in paths[path]}
    else:
        found = {
            method.upper()
            for template, operations in paths.items()
            if re.fullmatch(_TEMPLATE_PART.sub("[^/]+", re.escape(template)), path)
            for method in operations
        }
    return [method for method in HTTP_METHODS if method in found]


def install(app: FastAPI) -> None:
    """Register the handlers that put every error into the one shape."""

    async def api_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.message, exc.code)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = exc.detail if isinstance(exc.detail, str) else "the request failed"
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
            message = f"{request.method} is not allowed here; use {headers['Allow']}"
        return error_response(exc.status_code, message, headers=headers)

    async def validation_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, describe_validation(list(exc.errors())))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
