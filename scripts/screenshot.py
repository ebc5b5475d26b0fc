"""Take docs/inspector.png: a scripted run in the inspector, its Artifacts tab open.

    PYTHONPATH=src python scripts/screenshot.py

Uses Playwright with Debian's Chromium (TOOLWIRE_CHROMIUM overrides the path) against the
inspector served on a loopback port. Offline: the model is a scripted replay.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402
from tests.browser.harness import CHROMIUM_ARGS  # noqa: E402
from tests.inspector_kit import TOKEN, live_server, settings  # noqa: E402

from toolwire.inspector import create_app  # noqa: E402

OUTPUT = ROOT / "docs" / "inspector.png"


def main() -> None:
    OUTPUT.parent.mkdir(exist_ok=True)
    with live_server(create_app(settings())) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("TOOLWIRE_CHROMIUM", "/usr/bin/chromium"),
            args=CHROMIUM_ARGS,
        )
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(f"{base}/#token={TOKEN}")
        page.wait_for_selector("body[data-ready=true]")
        page.fill("#prompt", "What has customer Ada ordered?")
        page.fill("#provider", "every")
        page.click("#run-button")
        page.wait_for_selector("#run-status[data-status=completed]")
        page.click("#steps li[data-index='2']")
        page.click("#detail .tab:text-is('Artifacts')")
        page.screenshot(path=str(OUTPUT))
        browser.close()
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
