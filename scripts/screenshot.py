"""Take docs/inspector.png: the demo's replay in the inspector, a table artifact open.

    python scripts/screenshot.py [--output PATH]

``scripts/docs --screenshot`` runs it before building the docs; ``--output`` writes the PNG
elsewhere (the tests take one into a scratch folder).

Starts ``toolwire demo`` on a fresh data directory and a free loopback port, then drives it
with Playwright and Debian's Chromium (TOOLWIRE_CHROMIUM overrides the path). Offline.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "inspector.png"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_demo(data_home: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "XDG_DATA_HOME": data_home}
    command = [sys.executable, "-m", "toolwire", "demo", "--port", str(free_port())]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    for line in process.stdout:
        if match := re.search(r"http://\S+#token=\S+", line):
            return process, match.group()
    raise RuntimeError("toolwire demo printed no URL")


def main() -> None:
    parser = argparse.ArgumentParser(description="Take the inspector's screenshot for the docs.")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the PNG")
    output = parser.parse_args().output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        process, url = start_demo(home)
        try:
            shoot(url, output)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(20)
    print(f"wrote {output}")


def shoot(url: str, output: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("TOOLWIRE_CHROMIUM", "/usr/bin/chromium"),
            args=CHROMIUM_ARGS,
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for _ in range(100):  # the server may still be binding its port
            try:
                page.goto(url)
                break
            except Exception:
                time.sleep(0.1)
        page.wait_for_selector("body[data-ready=true]")
        page.click("#run-button")
        page.wait_for_selector("#run-status[data-status=awaiting_approval]")
        page.click("#view-run .pending-panel button.approve")  # the replay's one write
        page.wait_for_selector("#run-status[data-status=completed]")
        page.click("#steps li[data-index='2']")
        page.click("#detail .tab:text-is('Artifacts')")
        page.screenshot(path=str(output))
        browser.close()


if __name__ == "__main__":
    main()
