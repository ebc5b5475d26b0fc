"""botocore's own ``bedrock-runtime`` service model, and a checker of JSON values against its
shapes: unknown keys refused, required members present, unions with one member, types, enums,
lengths and ranges checked. Request bodies the adapter builds, and the fixtures the fake server
answers with, are held to it."""

from __future__ import annotations

import base64
import binascii
import re
from functools import cache
from typing import Any

from botocore.loaders import Loader


@cache
def service_model() -> dict[str, Any]:
    model: dict[str, Any] = Loader().load_service_model("bedrock-runtime", "service-2")
    return model


def shapes() -> dict[str, Any]:
    found: dict[str, Any] = service_model()["shapes"]
    return found


def problems(shape_name: str, value: Any, path: str = "$") -> list[str]:
    """What is wrong with ``value`` as the shape ``shape_name``; [] when nothing is."""
    shape = shapes()[shape_name]
    kind = shape["type"]
    if kind == "structure":
        return [] if shape.get("document") else _structure(shape, value, path)
    if kind == "list":
        return _list(shape, value, path)
    if kind == "map":
        return _map(shape, value, path)
    return _scalar(shape, kind, value, path)


def _structure(shape: dict[str, Any], value: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: not an object"]
    members = shape.get("members", {})
    found = [f"{path}.{k}: no such member" for k in value if k not in members]
    found += [f"{path}.{k}: sent in the URI, not the body" for k in value
              if k in members and members[k].get("location")]  # fmt: skip
    body_members = {k for k, m in members.items() if not m.get("location")}
    found += [f"{path}.{k}: required" for k in shape.get("required", [])
              if k in body_members and k not in value]  # fmt: skip
    if shape.get("union") and len(value) != 1:
        found.append(f"{path}: a union needs exactly one member, has {sorted(value)}")
    for key, item in value.items():
        if key in members:
            found += problems(members[key]["shape"], item, f"{path}.{key}")
    return found


def _list(shape: dict[str, Any], value: Any, path: str) -> list[str]:
    if not isinstance(value, list):
        return [f"{path}: not a list"]
    found = _length(shape, len(value), path)
    for n, item in enumerate(value):
        found += problems(shape["member"]["shape"], item, f"{path}[{n}]")
    return found


def _map(shape: dict[str, Any], value: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: not an object"]
    found: list[str] = []
    for key, item in value.items():
        found += problems(shape["key"]["shape"], key, f"{path}<key>")
        found += problems(shape["value"]["shape"], item, f"{path}.{key}")
    return found


def _scalar(shape: dict[str, Any], kind: str, value: Any, path: str) -> list[str]:
    if kind == "string":
        if not isinstance(value, str):
            return [f"{path}: not a string"]
        if "enum" in shape and value not in shape["enum"]:
            return [f"{path}: {value!r} is not one of {shape['enum']}"]
        if "pattern" in shape and not _matches(shape["pattern"], value):
            return [f"{path}: {value[:40]!r} does not match {shape['pattern'][:60]!r}"]
        return _length(shape, len(value), path)
    if kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path}: not an integer"]
        return _range(shape, value, path)
    if kind in ("float", "double"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return [f"{path}: not a number"]
        return _range(shape, value, path)
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{path}: not a boolean"]
    if kind == "blob":
        return _blob(value, path)
    if kind == "timestamp":
        return [] if isinstance(value, int | float | str) else [f"{path}: not a timestamp"]
    return [f"{path}: a shape of type {kind} this checker does not know"]


def _matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:  # a pattern in a dialect Python's re does not read: not checked
        return True


def _blob(value: Any, path: str) -> list[str]:
    if not isinstance(value, str):
        return [f"{path}: a blob is a base64 string in JSON"]
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return [f"{path}: not base64"]
    return []


def _length(shape: dict[str, Any], length: int, path: str) -> list[str]:
    if length < shape.get("min", 0):
        return [f"{path}: shorter than {shape['min']}"]
    if "max" in shape and length > shape["max"]:
        return [f"{path}: longer than {shape['max']}"]
    return []


def _range(shape: dict[str, Any], value: float, path: str) -> list[str]:
    if value < shape.get("min", float("-inf")) or value > shape.get("max", float("inf")):
        return [f"{path}: {value} out of range"]
    return []


def stream_event_shape(event: str) -> str:
    """The shape of a ConverseStream event of this name (``contentBlockDelta``...)."""
    member: str = shapes()["ConverseStreamOutput"]["members"][event]["shape"]
    return member


def error_statuses() -> dict[str, int]:
    """Each in-stream error of ConverseStream and its shape's HTTP status."""
    members = shapes()["ConverseStreamOutput"]["members"]
    return {
        name: shapes()[m["shape"]]["error"]["httpStatusCode"]
        for name, m in members.items()
        if shapes()[m["shape"]].get("exception")
    }
