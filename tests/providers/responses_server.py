"""A fake Responses API model over loopback HTTP: every body built by the `openai` SDK's
``Response`` model, every stream event by its ``ResponseStreamEvent`` models.

A script is a list of replies; reply ``n`` is played when the request's input already holds
``n`` assistant turns. Each reply of a reasoning model carries a reasoning item whose
``encrypted_content`` is unique to it; the server checks that every later request gives each
earlier reasoning item back verbatim, just before the items of its turn, and answers HTTP 400
naming what was missing when one does not (``problems`` keeps the words)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from .servers import Captured, loopback

_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
ENCRYPTED = "gAAAAB-opaque-{}"  # what an encrypted reasoning item of reply n holds
USAGE = {
    "input_tokens": 11,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 7,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 18,
}


@dataclass(frozen=True, slots=True)
class Reply:
    """One model turn: text, calls (name, arguments), a refusal, how it ended, its usage."""

    text: str = ""
    calls: Sequence[tuple[str, Mapping[str, Any]]] = ()
    refusal: str | None = None
    status: str = "completed"
    reason: str | None = None  # incomplete_details.reason
    usage: Mapping[str, Any] | None = None
    reasoning: bool = True  # a reasoning item (summary and encrypted content) comes first
    error: Mapping[str, Any] | None = None  # a failed response's error object


def reply(turn: Reply | str | list[tuple[str, dict[str, Any]]], reasoning: bool = True) -> Reply:
    if isinstance(turn, Reply):
        return turn
    if isinstance(turn, str):
        return Reply(text=turn, reasoning=reasoning)
    return Reply(calls=turn, reasoning=reasoning)


def reasoning_item(done: int) -> dict[str, Any]:
    return {
        "id": f"rs_{done}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": f"Thinking about step {done}."}],
        "encrypted_content": ENCRYPTED.format(done),
    }


def response(done: int, model: str, turn: Reply) -> dict[str, Any]:
    """The ``response`` object of reply ``done``, validated and dumped by the SDK."""
    output: list[dict[str, Any]] = [reasoning_item(done)] if turn.reasoning else []
    parts: list[dict[str, Any]] = []
    if turn.text:
        parts.append({"type": "output_text", "text": turn.text, "annotations": []})
    if turn.refusal is not None:
        parts.append({"type": "refusal", "refusal": turn.refusal})
    if parts:
        output.append({"id": f"msg_{done}", "type": "message", "role": "assistant",
                       "status": "completed", "content": parts})  # fmt: skip
    for n, (name, arguments) in enumerate(turn.calls):
        output.append({"id": f"fc_{done}_{n}", "type": "function_call", "status": "completed",
                       "call_id": f"call_{done}_{n}", "name": name,
                       "arguments": json.dumps(arguments)})  # fmt: skip
    body = {
        "id": f"resp_{done}",
        "object": "response",
        "created_at": 1764590000,
        "model": f"{model}-2025",
        "status": turn.status,
        "error": turn.error,
        "incomplete_details": {"reason": turn.reason} if turn.reason else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": dict(turn.usage or USAGE),
    }
    return Response.model_validate(body).model_dump(mode="json", exclude_none=True)


def events(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events a Responses stream sends for ``body``: created, each item added with its
    deltas (text, refusal, summary, arguments in two pieces each) and done, then the final
    event its status names. Each one validated and dumped by the SDK's event models."""
    start = {**body, "status": "in_progress", "output": []}
    start.pop("usage", None)
    out: list[dict[str, Any]] = [{"type": "response.created", "response": start}]
    for index, item in enumerate(body["output"]):
        out += _item_events(index, item)
    final = {"completed": "response.completed", "incomplete": "response.incomplete",
             "failed": "response.failed"}[body["status"]]  # fmt: skip
    out.append({"type": final, "response": dict(body)})
    numbered = [{**e, "sequence_number": n} for n, e in enumerate(out)]
    return [_EVENT.validate_python(e).model_dump(mode="json", exclude_none=True) for e in numbered]


def _item_events(index: int, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    where = {"output_index": index, "item_id": item["id"]}
    out: list[dict[str, Any]] = []
    if item["type"] == "message":
        out.append(_added(index, {**item, "content": [], "status": "in_progress"}))
        for n, part in enumerate(item["content"]):
            at = where | {"content_index": n}
            if part["type"] == "output_text":
                out += [{"type": "response.output_text.delta", **at, "delta": p, "logprobs": []}
                        for p in _halves(part["text"])]  # fmt: skip
            else:
                out += [{"type": "response.refusal.delta", **at, "delta": p}
                        for p in _halves(part["refusal"])]  # fmt: skip
    elif item["type"] == "function_call":
        out.append(_added(index, {**item, "arguments": "", "status": "in_progress"}))
        out += [{"type": "response.function_call_arguments.delta", **where, "delta": p}
                for p in _halves(item["arguments"])]  # fmt: skip
        out.append({"type": "response.function_call_arguments.done", **where,
                    "arguments": item["arguments"], "name": item["name"]})  # fmt: skip
    else:
        added = {k: v for k, v in item.items() if k != "encrypted_content"}
        out.append(_added(index, {**added, "summary": []}))
        for n, part in enumerate(item.get("summary", [])):
            out += [{"type": "response.reasoning_summary_text.delta", **where,
                     "summary_index": n, "delta": p} for p in _halves(part["text"])]  # fmt: skip
    out.append({"type": "response.output_item.done", "output_index": index, "item": dict(item)})
    return out


def _added(index: int, item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": dict(item)}


def _halves(text: str) -> list[str]:
    return [text[: len(text) // 2], text[len(text) // 2 :]]


def sse(stream: list[dict[str, Any]]) -> bytes:
    """Server-sent events named by their type, as the Responses API sends them (no [DONE])."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream).encode()


def assistant_turns(items: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The input's assistant turns: each run of reasoning, function calls and assistant text."""
    turns: list[list[Mapping[str, Any]]] = []
    inside = False
    for item in items:
        mine = item.get("type") in ("reasoning", "function_call") or (
            item.get("type") == "message" and item.get("role") == "assistant"
        )
        if mine and not inside:
            turns.append([])
        if mine:
            turns[-1].append(item)
        inside = mine
    return turns


@dataclass(slots=True)
class ResponsesModel:
    """A scripted Responses API model: records every request, checks every replay."""

    turns: Sequence[Reply | str | list[tuple[str, dict[str, Any]]]]
    captured: list[Captured] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)  # each reply, as the SDK dumped it
    connections: int = 0
    reasoning: bool = True  # a plain turn (text, or calls) comes with a reasoning item

    def reset(self, turns: Sequence[Reply | str | list[tuple[str, dict[str, Any]]]]) -> None:
        """Serve ``turns`` to a new run (its requests and replies start afresh)."""
        self.turns = turns
        self.captured.clear()
        self.problems.clear()
        self.sent.clear()

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes, str]:
        self.captured.append(Captured(path, headers, raw))
        request = json.loads(raw)
        turns = assistant_turns(request["input"]) if isinstance(request.get("input"), list) else []
        problem = self._replay_problem(turns)
        if problem is not None:
            self.problems.append(problem)
            error = {"error": {"message": problem, "type": "invalid_request_error",
                               "param": "input", "code": None}}  # fmt: skip
            return 400, json.dumps(error).encode(), "application/json"
        done = len(turns)
        played = self.turns[done] if done < len(self.turns) else "script exhausted"
        turn = reply(played, self.reasoning)
        body = response(done, request["model"], turn)
        self.sent.append(body)
        if request.get("stream") is True:
            return 200, sse(events(body)), "text/event-stream"
        return 200, json.dumps(body).encode(), "application/json"

    def _replay_problem(self, turns: list[list[Mapping[str, Any]]]) -> str | None:
        """What a request's input lacks of the reasoning this server sent, if anything."""
        for done, turn in enumerate(turns[: len(self.sent)]):
            wanted = [i for i in self.sent[done]["output"] if i["type"] == "reasoning"]
            given = [i for i in turn if i.get("type") == "reasoning"]
            if given != wanted:
                return f"turn {done}: reasoning items {given!r} are not {wanted!r}"
            if wanted and turn[0] != wanted[0]:
                return f"turn {done}: its reasoning item does not come first"
            if wanted:  # beside its reasoning, each item comes with the id it was sent with
                ids = {i.get("call_id", i["type"]): i["id"] for i in self.sent[done]["output"]}
                for item in turn[1:]:
                    if item.get("type") != "reasoning" and item.get("id") != ids.get(
                        item.get("call_id", item.get("type"))
                    ):
                        return f"turn {done}: {item.get('type')} item without its id"
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.server.model.connections += 1  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        model: ResponsesModel = self.server.model  # type: ignore[attr-defined]
        status, out, kind = model.answer(self.path, dict(self.headers), raw)
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def responses_loopback(model: ResponsesModel) -> Iterator[str]:
    """Serve ``model`` on 127.0.0.1; yields the base URL (``.../v1``)."""
    with loopback(model, _Handler) as base:  # type: ignore[arg-type]
        yield f"{base}/v1"
