"""``resolve_route``: a routes file, a Starlette app and a Flask app; nothing is called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core.errors import ConfigError
from toolwire.workspace.config import Workspace, load_workspace
from toolwire.workspace.maps import RouteMap

from .conftest import assert_artifacts_within_text, invoke

DEMO_ROUTES = Path(__file__).parents[2] / "src" / "toolwire" / "demo" / "config" / "routes.txt"
STARLETTE_APP = """
import pathlib
print("the import prints this; it must not reach the answer")
from starlette.applications import Starlette
from starlette.routing import Mount, Route

async def home(request): pathlib.Path("CALLED").write_text("home was called")
async def product(request): pathlib.Path("CALLED").write_text("product was called")
async def user(request): ...

app = Starlette(routes=[
    Route("/", home),
    Route("/products/{id:int}", product, methods=["GET", "PUT"]),
    Mount("/admin", routes=[Route("/users/{name}", user)]),
])
"""
FLASK_APP = """
from flask import Flask
app = Flask(__name__)

@app.get("/orders/<int:order_id>")
def order(order_id):
    raise SystemExit("called")
"""


@pytest.fixture
def routed() -> Workspace:
    return Workspace(routes=RouteMap(file=DEMO_ROUTES))


def app_workspace(tmp_path: Path, source: str, app: str = "site_app:app") -> Workspace:
    (tmp_path / "site_app.py").write_text(source)
    return Workspace(routes=RouteMap(app=app, app_path=tmp_path))


def test_a_route_from_the_routes_file(routed: Workspace) -> None:
    result = invoke(routed, "resolve_route", {"path": "/products/42?ref=mail#top"})
    assert result.content == (
        "request: GET /products/42\nhandler: shop.web:product_detail\nroute: /products/{id:int}\n"
        "methods: GET\nparameters: id=42\nsource: routes.txt:4"
    )
    assert result.artifacts[0].data["items"][1] == ["handler", "shop.web:product_detail"]
    assert_artifacts_within_text(result)


@pytest.mark.parametrize(
    ("arguments", "answer"),
    [
        ({"path": "/static/css/site.css"}, "parameters: file=css/site.css"),
        ({"path": "/cart/items/MUG%2D01", "method": "delete"}, "parameters: sku=MUG-01"),
        ({"path": "/checkout", "method": "POST"}, "handler: shop.checkout:checkout_page"),
        ({"path": "/checkout", "method": "DELETE"},
         "DELETE /checkout: a route has this path for GET, POST only."),
        ({"path": "/products/abc"}, "No route matches GET /products/abc."),
        ({"path": "/nowhere"}, "No route matches GET /nowhere."),
    ],
)  # fmt: skip
def test_routes_file_matching(routed: Workspace, arguments: dict[str, str], answer: str) -> None:
    result = invoke(routed, "resolve_route", arguments)
    assert answer in result.content.split("\n")


def test_a_starlette_app_is_imported_and_never_called(tmp_path: Path) -> None:
    ws = app_workspace(tmp_path, STARLETTE_APP)
    product = invoke(ws, "resolve_route", {"path": "/products/7", "method": "PUT"})
    assert product.content == (
        "request: PUT /products/7\nhandler: site_app.product\nroute: /products/{id:int}\n"
        "methods: GET, HEAD, PUT\nparameters: id=7\nsource: application site_app:app"
    )
    mounted = invoke(ws, "resolve_route", {"path": "/admin/users/ada"})
    assert "route: /admin/users/{name}" in mounted.content
    assert "parameters: name=ada" in mounted.content
    wrong = invoke(ws, "resolve_route", {"path": "/products/7", "method": "DELETE"})
    assert wrong.content == "DELETE /products/7: a route has this path for GET, HEAD, PUT only."
    assert invoke(ws, "resolve_route", {"path": "/x"}).content == "No route matches GET /x."
    assert not (tmp_path / "CALLED").exists()
    assert "prints" not in product.content


def test_a_flask_app(tmp_path: Path) -> None:
    ws = app_workspace(tmp_path, FLASK_APP)
    result = invoke(ws, "resolve_route", {"path": "/orders/12"})
    assert result.content.split("\n")[1:5] == [
        "handler: site_app.order", "route: /orders/<int:order_id>",
        "methods: GET, HEAD, OPTIONS", "parameters: order_id=12",
    ]  # fmt: skip
    post = invoke(ws, "resolve_route", {"path": "/orders/12", "method": "POST"})
    assert post.content == "POST /orders/12: a route has this path for GET, HEAD, OPTIONS only."


@pytest.mark.parametrize(
    ("source", "app", "error"),
    [
        ("raise RuntimeError('db password hunter2')", "site_app:app",
         "the application could not be imported."),
        ("app = 3", "site_app:app",
         "the application is neither a Starlette/FastAPI nor a Flask app."),
        ("x = 1", "site_app:app", "the application could not be imported."),
        ("import time\ntime.sleep(60)", "site_app:app",
         "importing the application took longer than 10 seconds."),
    ],
)  # fmt: skip
def test_a_broken_app_is_a_clear_refusal(
    tmp_path: Path, source: str, app: str, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("toolwire.tools.builtin.routes.IMPORT_SECONDS", 3.0)
    result = invoke(app_workspace(tmp_path, source, app), "resolve_route", {"path": "/"})
    assert result.content == "Error: " + error.replace("10 seconds", "3 seconds")
    assert "hunter2" not in result.content


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"path": "products"}, "path must start with / and be at most 2048 characters."),
        ({"path": "/" + "a" * 2048}, "path must start with / and be at most 2048 characters."),
        ({"path": "/a b"}, "path '/a b' holds spaces or control characters."),
        ({"path": "/a%0Ab"}, "path '/a%0Ab' holds spaces or control characters."),
        ({"path": "/", "method": "GET /"}, "method 'GET /' is not an HTTP method such as GET or"
         " POST."),
        ({"path": "/", "method": ""}, "method '' is not an HTTP method such as GET or POST."),
        ({"path": 5}, 'invalid arguments for tool "resolve_route": path: Input should be a valid'
         " string"),
    ],
)  # fmt: skip
def test_malformed_requests(routed: Workspace, arguments: dict[str, Any], error: str) -> None:
    assert invoke(routed, "resolve_route", arguments).content == "Error: " + error


def test_without_routes_and_with_a_secret_routes_file(tmp_path: Path) -> None:
    assert invoke(Workspace(), "resolve_route", {"path": "/"}).content == (
        "Error: the workspace names no routes file or application."
    )
    for name, text in (
        ("secrets.txt", "GET / a:b\n"),
        ("routes.txt", "-----BEGIN PRIVATE KEY-----"),
    ):
        (tmp_path / name).write_text(text)
        ws = Workspace(routes=RouteMap(file=tmp_path / name))
        assert invoke(ws, "resolve_route", {"path": "/"}).content == (
            "Error: the workspace's routes file cannot be read."
        )


def test_bad_lines_are_skipped_never_echoed(tmp_path: Path) -> None:
    (tmp_path / "routes.txt").write_text(
        "GET /a/{x:nope} bad:convertor\nGET /b/{x}/{x} bad:repeat\nnot a route at all\n"
        "FETCH!,GET /c bad:method\nGET /d good:handler   # a comment\n"
    )
    ws = Workspace(routes=RouteMap(file=tmp_path / "routes.txt"))
    assert invoke(ws, "resolve_route", {"path": "/a/1"}).content == "No route matches GET /a/1."
    assert "handler: good:handler" in invoke(ws, "resolve_route", {"path": "/d"}).content


def test_the_routes_section_loads_from_toml(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "workspace.toml").write_text(
        '[routes]\nfile = "routes.txt"\napp = "shop.web:app"\napp_path = "src"\n'
    )
    assert load_workspace(tmp_path / "workspace.toml").routes == RouteMap(
        file=tmp_path / "routes.txt", app="shop.web:app", app_path=tmp_path / "src"
    )
    (tmp_path / "bad.toml").write_text('[routes]\napp = "shop.web:app"\n')
    with pytest.raises(ConfigError, match=r"routes\.app_path: needed with routes\.app"):
        load_workspace(tmp_path / "bad.toml")
    (tmp_path / "worse.toml").write_text('[routes]\napp = "os; rm -rf /"\napp_path = "src"\n')
    with pytest.raises(ConfigError, match=r"routes\.app: String should match pattern"):
        load_workspace(tmp_path / "worse.toml")


SEGMENTS = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(segments=st.lists(SEGMENTS, min_size=1, max_size=4), method=st.sampled_from(["GET", "POST"]))
def test_every_artifact_value_is_a_line_of_the_text(
    routed: Workspace, segments: list[str], method: str
) -> None:
    result = invoke(routed, "resolve_route", {"path": "/" + "/".join(segments), "method": method})
    assert_artifacts_within_text(result)
    lines = result.content.split("\n")
    for key, value in result.artifacts[0].data["items"] if result.artifacts else []:
        assert f"{key}: {value}" in lines
