"""The inspector's edges: Host names (DNS rebinding), body caps, and 405 answers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from toolwire.inspector import create_app
from toolwire.inspector.security import CROSS_SITE, MISDIRECTED

from ..inspector_kit import AUTH, settings
from .asgi import asgi_client

pytestmark = pytest.mark.anyio
BODY_TOO_LARGE = {
    "error": {
        "code": "payload_too_large",
        "message": "the request body is larger than 2000000 bytes",
    }
}


def client_for(allow_remote: bool = False) -> httpx.AsyncClient:
    app = create_app(settings(allow_remote=allow_remote))
    return asgi_client(app)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with client_for() as c:
        yield c


REBOUND = ["rebind.example:8765", "rebind.example", "127.0.0.1", "127.0.0.1:80",
           "localhost:9999", "127.0.0.2:8765", "::1", "localhost.evil:8765", ""]  # fmt: skip


@pytest.mark.parametrize("host", REBOUND)
async def test_another_host_name_is_refused_before_any_routing(
    client: httpx.AsyncClient, host: str
) -> None:
    for method, path in (("GET", "/"), ("GET", "/api/tools"), ("POST", "/api/runs"),
                         ("GET", "/static/js/main.js"), ("GET", "/nowhere")):  # fmt: skip
        response = await client.request(method, path, headers=AUTH | {"Host": host})
        assert response.status_code == 421, (host, path)
        assert response.json() == {"error": {"code": "misdirected_request", "message": MISDIRECTED}}
        assert "content-security-policy" in response.headers


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LocalHost:8765"]
)
async def test_loopback_names_with_the_bound_port_are_served(
    client: httpx.AsyncClient, host: str
) -> None:
    assert (await client.get("/", headers={"Host": host})).status_code == 200
    assert (await client.get("/api/tools", headers=AUTH | {"Host": host})).status_code == 200


async def test_allow_remote_serves_any_host_name() -> None:
    async with client_for(allow_remote=True) as remote:
        response = await remote.get("/api/tools", headers=AUTH | {"Host": "inspector.lan:8765"})
    assert response.status_code == 200


async def test_a_chunked_body_over_the_cap_is_413_like_a_declared_one(
    client: httpx.AsyncClient,
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"prompt": "'
        for _ in range(21):
            yield b"x" * 100_000
        yield b'"}'

    chunked = await client.post("/api/runs", content=chunks(), headers=AUTH)
    assert "content-length" not in chunked.request.headers
    assert (chunked.status_code, chunked.json()) == (413, BODY_TOO_LARGE)
    declared = await client.post("/api/runs", content=b"x" * 2_000_001, headers=AUTH)
    assert (declared.status_code, declared.json()) == (413, BODY_TOO_LARGE)


async def test_a_chunked_body_under_the_cap_is_read(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"prompt": "'
        yield b"x" * 1_000
        yield b'", "colour": 1}'

    json_type = {"Content-Type": "application/json"}
    response = await client.post("/api/runs", content=chunks(), headers=AUTH | json_type)
    assert response.status_code == 422
    assert response.json()["error"]["message"] == "body.colour: Extra inputs are not permitted"


ALLOWED = [
    ("DELETE", "/api/tools", "GET"),
    ("DELETE", "/api/runs", "GET, POST"),  # two routes share the path
    ("DELETE", "/api/tools/lookup", "PUT"),
    ("GET", "/api/tools/lookup/invoke", "POST"),
    ("PUT", "/", "GET"),
    ("POST", "/static/js/main.js", "GET, HEAD"),
    ("DELETE", "/api/runs/abc", "GET"),
    ("DELETE", "/api/runs/stream", "POST"),  # a literal path wins over /api/runs/{run_id}
    ("PATCH", "/api/runs/x/cancel", "POST"),
    ("OPTIONS", "/api/defaults", "GET"),
]


@pytest.mark.parametrize(("method", "path", "allow"), ALLOWED)
async def test_a_405_names_the_methods_the_path_allows(
    client: httpx.AsyncClient, method: str, path: str, allow: str
) -> None:
    response = await client.request(method, path, headers=AUTH)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json() == {
        "error": {
            "code": "method_not_allowed",
            "message": f"{method} is not allowed here; use {allow}",
        }
    }


@pytest.mark.parametrize("bound", ["127.0.0.2", "[::1]"])
async def test_an_inspector_bound_to_another_loopback_address_answers_there_only(
    bound: str,
) -> None:
    app = create_app(settings())
    base = f"http://{bound}:8765"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=base) as client:
        assert (await client.get("/api/tools", headers=AUTH)).status_code == 200
        for foreign in ("127.0.0.3:8765", "rebind.example:8765", f"{bound}:9999"):
            response = await client.get("/api/tools", headers=AUTH | {"Host": foreign})
            assert response.status_code == 421, foreign
        for origin in ("http://rebind.example:8765", "null", f"http://{bound}:9999"):
            response = await client.get("/api/tools", headers=AUTH | {"Origin": origin})
            assert response.status_code == 403, origin
            assert response.json() == {"error": {"code": "forbidden", "message": CROSS_SITE}}
        same = await client.get("/api/tools", headers=AUTH | {"Origin": base})
        assert same.status_code == 200
