"""The questions API: a live run's open questions listed, and an answer taken only for the
run and question that asked, from an operator who may decide for the run, and only when it
fits the form; every refusal in the API's one error shape."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from toolwire.inspector import create_app
from toolwire.mcp.asks import ASKS, Ask, Reply
from toolwire.mcp.form import form_of
from toolwire.tools.api import User

from ..inspector_kit import AUTH, settings
from .asgi import asgi_client

pytestmark = pytest.mark.anyio
FORM = {"type": "object", "properties": {"name": {"type": "string"},
                                         "plan": {"enum": ["free", "pro"], "default": "free"}},
        "required": ["name"]}  # fmt: skip
ID = "0123456789abcdef" * 2


def asked(run_id: str = "run-1", acting: str | None = "ada") -> Ask:
    return Ask(id=ID, run_id=run_id, server="signup", tool="signup__join", message="<b>Who?</b>",
               fields=form_of(FORM), wait_s=30, asked_at="2026-01-01T00:00:00+00:00",
               acting=acting)  # fmt: skip


async def client_for(user: User) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(create_app(settings(user=user))) as c:
        yield c


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async for c in client_for(User("admin", is_admin=True)):
        yield c


async def opened(ask: Ask) -> asyncio.Task[Reply | None]:
    task = asyncio.create_task(ASKS.ask(ask))
    await asyncio.sleep(0)  # the task opens the question before it first waits
    assert ASKS.pending(ask.run_id) == [ask]
    return task


async def test_a_runs_open_question_is_listed_and_answered(client: httpx.AsyncClient) -> None:
    task = await opened(asked())
    listed = (await client.get("/api/runs/run-1/questions", headers=AUTH)).json()
    assert listed == {"questions": [asked().to_dict()]}
    assert listed["questions"][0]["message"] == "<b>Who?</b>"  # text: the page shows it as such
    assert (await client.get("/api/runs/run-2/questions", headers=AUTH)).json() == {
        "questions": []}  # fmt: skip
    answer = {"action": "accept", "values": {"name": "Ada"}}
    response = await client.post(f"/api/runs/run-1/questions/{ID}", json=answer, headers=AUTH)
    assert (response.status_code, response.json()) == (200, {"action": "accept", "fields": 2})
    assert await task == Reply(action="accept", content={"name": "Ada", "plan": "free"},
                               by="admin")  # fmt: skip


async def test_an_answer_that_does_not_fit_is_refused_and_the_question_stays_open(
    client: httpx.AsyncClient,
) -> None:
    task = await opened(asked())
    bad = {"action": "accept", "values": {"plan": "gold"}}
    response = await client.post(f"/api/runs/run-1/questions/{ID}", json=bad, headers=AUTH)
    assert (response.status_code, response.json()) == (422, {"error": {
        "code": "invalid_input", "message": "the answer does not fit the form: name: required, "
        'and it has no default; plan: "gold" is not one of the choices offered'}})  # fmt: skip
    assert not task.done()
    declined = {"action": "decline"}
    assert (await client.post(f"/api/runs/run-1/questions/{ID}", json=declined,
                              headers=AUTH)).status_code == 200  # fmt: skip
    assert await task == Reply(action="decline", by="admin")


async def test_an_answer_for_another_run_or_question_is_not_found(
    client: httpx.AsyncClient,
) -> None:
    task = await opened(asked())
    for path in (f"/api/runs/run-2/questions/{ID}", "/api/runs/run-1/questions/" + "f" * 32,
                 "/api/runs/run-1/questions/not-an-id"):  # fmt: skip
        response = await client.post(path, json={"action": "cancel"}, headers=AUTH)
        assert (response.status_code, response.json()) == (
            404,
            {
                "error": {
                    "code": "not_found",
                    "message": "this run has no open question with this id",
                }
            },
        )
    assert not task.done()
    task.cancel()


async def test_an_operator_answers_only_a_run_that_acts_for_them() -> None:
    task = await opened(asked(acting="ada"))
    async for eve in client_for(User("eve")):
        response = await eve.post(f"/api/runs/run-1/questions/{ID}", json={"action": "cancel"},
                                  headers=AUTH)  # fmt: skip
        assert (response.status_code, response.json()["error"]["message"]) == (
            403,
            "this operator may not answer for this run (it acts for someone else)",
        )
    async for ada in client_for(User("ada")):
        response = await ada.post(f"/api/runs/run-1/questions/{ID}", json={"action": "cancel"},
                                  headers=AUTH)  # fmt: skip
        assert response.status_code == 200
    assert await task == Reply(action="cancel", by="ada")


async def test_an_answer_needs_the_token_and_a_known_action(client: httpx.AsyncClient) -> None:
    path = f"/api/runs/run-1/questions/{ID}"
    assert (await client.post(path, json={"action": "cancel"})).status_code == 401
    response = await client.post(path, json={"action": "maybe"}, headers=AUTH)
    assert response.status_code == 422
