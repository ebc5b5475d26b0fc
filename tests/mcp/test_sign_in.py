"""The loopback end of a sign-in: it answers only the callback, hands the SDK what came back,
fails with the authorization server's own words when it refused, and gives up after a while;
and the bound every refusal's text is kept within."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.mcp.auth_errors import DESCRIPTION_CHARS, AuthFailure, bounded
from toolwire.mcp.sign_in import DONE_TEXT, FAILED_TEXT, LoopbackSignIn

from ..served import free_port


def returning(*paths: str) -> tuple[LoopbackSignIn, list[httpx.Response]]:
    """A sign-in whose browser, shown the URL, comes back to each of ``paths`` in turn."""
    pages: list[httpx.Response] = []

    async def show(url: str) -> None:
        async with httpx.AsyncClient(timeout=10) as web:
            pages.extend([await web.get(f"http://127.0.0.1:{port}{path}") for path in paths])

    port = free_port()
    return LoopbackSignIn("notes", port, show=show, seconds=2), pages


async def signed_in(sign_in: LoopbackSignIn) -> object:
    await sign_in.redirect("https://auth.example.com/authorize?state=s1")
    return await sign_in.callback()


def test_the_callback_hands_over_the_code_and_state_and_nothing_else_answers() -> None:
    sign_in, pages = returning("/favicon.ico", "/callback?code=c-1&state=s1&iss=https%3A%2F%2Fa")
    result = asyncio.run(signed_in(sign_in))
    assert result.model_dump() == {"code": "c-1", "state": "s1", "iss": "https://a"}  # type: ignore[attr-defined]
    assert [p.status_code for p in pages] == [404, 200]
    assert pages[1].text.endswith(f"<p>{DONE_TEXT}</p>") and "c-1" not in pages[1].text


def test_a_refusal_the_browser_brings_back_fails_with_its_words() -> None:
    sign_in, pages = returning("/callback?error=access_denied&error_description=No+thanks&state=s1")
    with pytest.raises(AuthFailure) as refused:
        asyncio.run(signed_in(sign_in))
    assert str(refused.value) == ("notes: the authorization server refused the sign-in: "
                                  "access_denied: No thanks")  # fmt: skip
    assert pages[0].text.endswith(f"<p>{FAILED_TEXT}</p>")


def test_a_browser_that_never_comes_back_is_given_up_on() -> None:
    sign_in, _ = returning()
    with pytest.raises(AuthFailure, match=r"^notes: no sign-in came back within 2 s$"):
        asyncio.run(signed_in(sign_in))


@settings(deadline=None)  # a loaded machine is slow, not wrong
@given(st.text(), st.lists(st.text(alphabet="abcdef0123456789", min_size=6), max_size=3))
def test_a_refusal_is_one_short_line_without_what_it_hides(text: str, hide: list[str]) -> None:
    shown = bounded(" ".join([text, *hide, text]), DESCRIPTION_CHARS, hide)
    assert shown is not None and len(shown) <= DESCRIPTION_CHARS + 1
    assert "\n" not in shown and all(value not in shown for value in hide)
