"""A run held at its egress limit in Chromium: the panel shows the request's bytes against the
limit as text, and approving from the page sends it and the run goes on live."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel
from toolwire.workspace.config import load_workspace

from ..inspector_kit import call, waiting_registry
from .harness import Watched, start_run, stored_inspector, wait_status

pytestmark = pytest.mark.browser
PANEL = "#view-run .pending-panel"
SCRIPT = [{"tool_calls": [call("lookup", {"customer": "Ada"})]}, {"content": "Ada has orders."}]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("workspace") / "workspace.toml"
    path.write_text('[egress]\nmax_run_bytes = 1\non_limit = "approve"\n')
    with stored_inspector(tmp_path_factory, PrivacyLevel.METADATA, registry=waiting_registry(),
                          state_key=StateKey.generate(), workspace=load_workspace(path),
                          scripts={"metered": SCRIPT}) as url:  # fmt: skip
        yield url


def test_the_panel_shows_the_held_request_and_approving_sends_it(watched: Watched) -> None:
    page = watched.page
    start_run(page, "metered")
    wait_status(page, "awaiting_approval")
    assert page.text_content(f"{PANEL} h3") == "Approval needed"
    said = page.text_content(f"{PANEL} .pending-egress") or ""
    assert "The next request to metered would send " in said
    assert "The run's limit: 1 bytes, 0 bytes sent so far." in said
    assert page.query_selector(f"{PANEL} .pending-call") is None
    page.click(f"{PANEL} button.approve")
    wait_status(page, "completed")
    assert page.text_content("#final pre") == "Ada has orders."
    assert watched.errors == [] and not [m for m in watched.console if m.startswith("error")]
