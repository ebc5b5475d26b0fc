"""DNS rebinding on every loopback address ``toolwire mcp --http`` can bind: ``127.0.0.2`` and
``::1`` too, where the SDK itself checks nothing. A foreign ``Host`` is a 421 and a foreign
``Origin`` a 403, before the token is looked at; the server's own names are served."""

from __future__ import annotations

import urllib.parse

import anyio
import httpx
import pytest

from toolwire.mcp.serve_http import CROSS_SITE, MISDIRECTED

from .kit import ACCEPT, INITIALIZE, Host
from .test_http import listed_and_called


@pytest.mark.parametrize("bind", ["127.0.0.2", "::1"])
def test_a_foreign_host_or_origin_is_refused_on_any_loopback_bind(host: Host, bind: str) -> None:
    with host.http("--host", bind) as served:
        assert served.token is not None
        url = urllib.parse.urlsplit(served.url)
        own = url.netloc  # 127.0.0.2:PORT or [::1]:PORT
        port = url.port
        assert port is not None
        auth = {"Authorization": f"Bearer {served.token}"}

        def post(headers: dict[str, str]) -> httpx.Response:
            return httpx.post(served.url, json=INITIALIZE, timeout=10,
                              headers={**ACCEPT, **headers})  # fmt: skip

        for foreign in ("evil.example", f"evil.example:{port}", f"127.0.0.3:{port}",
                        f"{url.hostname}:1", f"localhost.evil:{port}"):  # fmt: skip
            for headers in (auth, {}):  # refused before the token is looked at
                refused = post(headers | {"Host": foreign})
                assert refused.status_code == 421, foreign
                assert refused.json() == {"error": "misdirected_request",
                                          "error_description": MISDIRECTED}  # fmt: skip
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                       f"http://127.0.0.1:{port + 1}"):  # fmt: skip
            refused = post(auth | {"Host": own, "Origin": origin})
            assert refused.status_code == 403, origin
            assert refused.json()["error_description"] == CROSS_SITE
        for name in (own, f"localhost:{port}", f"127.0.0.1:{port}"):
            served_ok = post(auth | {"Host": name, "Origin": f"http://{name}"})
            assert served_ok.status_code == 200, name
        tools, result = anyio.run(listed_and_called, served.url, served.token)
    assert "leak" in tools and not result.is_error
