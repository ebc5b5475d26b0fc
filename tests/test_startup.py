"""`import toolwire` and `toolwire --help` load none of the heavy modules.

Checked by the modules a fresh interpreter has loaded, never by timing (bench/startup.py
measures the time).
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "httpx", "psycopg", "pydantic")
ADAPTERS = (
    "toolwire.providers.openai",
    "toolwire.providers.anthropic",
    "toolwire.providers.gemini",
    "toolwire.providers.http",
    "toolwire.inspector",
    "toolwire.store.runs",
    "toolwire.runs.runtime",
)
REPORT = "import sys; print('\\n'.join(sorted(sys.modules)))"


def loaded_after(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{REPORT}"], capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def heavy_among(modules: set[str]) -> list[str]:
    roots = {m.split(".")[0] for m in modules}
    return sorted({*(h for h in HEAVY if h in roots), *(a for a in ADAPTERS if a in modules)})


def test_import_toolwire_loads_nothing_heavy() -> None:
    assert heavy_among(loaded_after("import toolwire")) == []


def test_help_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from toolwire.cli.app import main\n"
        "sys.argv = ['toolwire', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    modules = loaded_after(code)
    assert "toolwire.cli.run" in modules and "toolwire.cli.decisions" in modules  # all commands
    assert heavy_among(modules) == []


def test_a_name_used_from_the_facade_loads_what_it_needs() -> None:
    modules = loaded_after("from toolwire import ToolLoop, tool")
    assert "toolwire.loop.loop" in modules and "pydantic" in modules
    assert "httpx" not in modules  # a loop needs no HTTP until a provider does
