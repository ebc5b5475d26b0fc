"""The run form's provider fields in Chromium, against OpenAI-compatible servers on loopback:
the base URL and tool choice the server was started with fill the form, what is typed there is
what the run sends (to the URL typed, with the choice typed), and a server that reports no
usage makes the page say "tokens unknown" live, in the step list and in the stored runs."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from toolwire.inspector import RunDefaults, create_app, provider_factory
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import live_server, settings
from ..providers.servers import FakeModel, loopback
from .harness import Watched, open_step, wait_status

pytestmark = pytest.mark.browser

TURNS: list[Any] = [[("lookup", {"customer": "Ada"})], "Ada has 2 orders."]
ESTIMATED = re.compile(r"tokens unknown \(about (\d+) estimated\)")


class Unreported(FakeModel):
    """A server that never reports usage, whole or streamed (llama-cpp-python's streams)."""

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        out, kind = super().respond(path, headers, body)
        if kind != "application/json":  # a stream: without the chunk of usage, if asked for
            events = out.decode().split("\n\n")
            return "\n\n".join(e for e in events if '"usage"' not in e).encode(), kind
        reply = json.loads(out)
        reply.pop("usage", None)
        return json.dumps(reply).encode(), kind


@dataclasses.dataclass(frozen=True)
class Servers:
    inspector: str
    served_url: str  # the server's --base-url: the form starts with it
    served: FakeModel
    typed_url: str  # another server, typed into the form
    typed: FakeModel


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    served, typed = FakeModel(turns=TURNS), Unreported(turns=TURNS)
    path = tmp_path_factory.mktemp("runs") / "runs.db"
    store = RunStore.open(f"sqlite:///{path}", privacy=PrivacyLevel.METADATA)
    with loopback(served) as served_root, loopback(typed) as typed_root:
        served_url, typed_url = f"{served_root}/v1", f"{typed_root}/v1"
        kit = settings(store=store, privacy_level=str(PrivacyLevel.METADATA))
        inspector = dataclasses.replace(
            kit,
            provider_factory=provider_factory(None, base_url=served_url),
            defaults=RunDefaults(provider="llama-cpp-python", model="smollm2",
                                 base_url=served_url, tool_choice="auto"),
        )  # fmt: skip
        try:
            with live_server(create_app(inspector)) as url:
                yield Servers(url, served_url, served, typed_url, typed)
        finally:
            store.close()


@pytest.fixture(scope="module")
def base(servers: Servers) -> str:
    return servers.inspector


def test_the_form_starts_with_the_served_base_url_and_tool_choice(
    watched: Watched, servers: Servers
) -> None:
    page = watched.page
    values = {f: page.input_value(f"#{f}") for f in ("provider", "model", "base-url",
                                                      "tool-choice")}  # fmt: skip
    assert values == {
        "provider": "llama-cpp-python",
        "model": "smollm2",
        "base-url": servers.served_url,
        "tool-choice": "auto",
    }
    modes = page.eval_on_selector_all("#tool-choice-modes option", "os => os.map(o => o.value)")
    assert modes == ["auto", "none", "required"]


def test_a_typed_base_url_and_tool_choice_are_what_the_run_sends(
    watched: Watched, servers: Servers
) -> None:
    page = watched.page
    before = len(servers.served.captured)
    page.fill("#prompt", "Orders for Ada?")
    page.fill("#base-url", servers.typed_url)
    page.fill("#tool-choice", "lookup")
    page.click("#run-button")
    wait_status(page, "completed")
    assert len(servers.served.captured) == before  # the served URL was not called
    sent = [c.json() for c in servers.typed.captured[-2:]]
    assert [c.path for c in servers.typed.captured[-2:]] == ["/v1/chat/completions"] * 2
    # llama-cpp-python takes a named choice; a forced choice holds for the first round only
    assert [b["tool_choice"] for b in sent] == [
        {"type": "function", "function": {"name": "lookup"}},
        "auto",
    ]
    assert "authorization" not in {k.lower() for k in servers.typed.captured[-1].headers}

    # the server reported no usage: the counts are estimates, and the page says so
    tokens = page.text_content("#metric-tokens .metric-value") or ""
    estimate = ESTIMATED.fullmatch(tokens)
    assert estimate is not None and int(estimate[1]) > 0, tokens
    usages = page.locator("#steps li[data-kind=llm] [data-testid=step-usage]").all_text_contents()
    assert len(usages) == 2 and all(re.fullmatch(r"~\d+ tok \(estimated\)", u) for u in usages)
    open_step(page, 1)
    facts = page.locator("#detail [data-testid=model-facts] dd[data-kind=tokens_estimated]")
    assert facts.text_content() == (
        "tokens unknown: the provider reported none; the counts above are estimates"
    )

    # and so do the stored runs: the list and the run's own page
    page.click(".nav-link[data-view=runs]")
    row = page.locator("tr.run-row").first
    row.wait_for()
    cells = row.locator("td").all_text_contents()
    assert cells[4:8] == ["llama-cpp-python", "smollm2", "2", tokens]
    row.click()
    page.wait_for_selector("#stored-run ol.steps li[data-kind=llm]")
    assert page.text_content("#stored-run #metric-tokens .metric-value") == tokens


def test_a_run_whose_server_reports_usage_shows_its_count(
    watched: Watched, servers: Servers
) -> None:
    page = watched.page
    page.fill("#prompt", "Orders for Ada?")
    page.fill("#base-url", servers.served_url)
    page.fill("#tool-choice", "auto")
    page.click("#run-button")
    wait_status(page, "completed")
    assert page.text_content("#metric-tokens .metric-value") == "36"  # 18 a call, two calls
    assert servers.served.captured[-1].json()["tool_choice"] == "auto"


def test_a_cost_priced_from_estimated_tokens_says_estimated_live_and_stored(
    watched: Watched, servers: Servers
) -> None:
    """OpenRouter's price table prices its models at any base URL: here, the server that
    reports no usage, so the price is of toolwire's estimate."""
    page = watched.page
    page.fill("#prompt", "Orders for Ada?")
    page.fill("#provider", "openrouter")
    page.fill("#model", "openai/gpt-4o-mini")
    page.fill("#base-url", servers.typed_url)
    page.fill("#tool-choice", "auto")
    page.click("#run-button")
    wait_status(page, "completed")
    estimated = re.compile(r"\$0\.[0-9]+ \(estimated\)")
    cost = page.text_content("#metric-cost .metric-value") or ""
    assert estimated.fullmatch(cost), cost
    usages = page.locator("#steps li[data-kind=llm] [data-testid=step-usage]").all_text_contents()
    assert usages and all(re.search(r" · \$0\.[0-9]+ \(estimated\)$", u) for u in usages), usages

    page.click(".nav-link[data-view=runs]")
    row = page.locator("tr.run-row").first
    row.wait_for()
    assert row.locator("td.cost").text_content() == cost
    row.click()
    page.wait_for_selector("#stored-run ol.steps li[data-kind=llm]")
    assert page.text_content("#stored-run #metric-cost .metric-value") == cost
