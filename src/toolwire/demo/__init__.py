"""The demo workspace: a small shop with a database, source files, documents, configuration,
scheduled jobs, routes, secrets and logs.

``prepare_demo(data_dir)`` creates it under ``data_dir/demo`` once and reuses it afterwards
(a ``.ready`` marker holding ``DEMO_VERSION`` says it is complete; a partial build is never
reused, because it is built in a temporary folder and renamed into place). Its folder and the
data folder, when created here, are 0700. All secrets in it
are fake, and they are there on purpose: the database's password hashes and API tokens, the
``.env`` file and the tokens in the log exist so that one can watch the tools refuse or redact
them. ``SCRIPT_PATH`` is the offline replay that drives the demo with the scripted provider.

Layer: just below the command line. May import every layer below it.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolwire.core.errors import ConfigError
from toolwire.core.private import private_dir
from toolwire.demo._content import write_database, write_env, write_log
from toolwire.workspace.config import Workspace, load_workspace

DEMO_VERSION = "2"  # bump when the content changes, so existing copies are rebuilt
SCRIPT_PATH = Path(__file__).with_name("script.yaml")
PROMPT = (
    "Give me an overview of the shop: customers, the code, the docs and configuration, "
    "and the server's health."
)
_HERE = Path(__file__).parent
# Folders copied as they are: the files root, the documents, the configuration, its schemas.
_FOLDERS = ("files", "docs", "config", "schemas")
_READY = ".ready"


@dataclass(frozen=True, slots=True, kw_only=True)
class Demo:
    """A prepared demo: its folder, its workspace, the replay script and the prompt it answers."""

    root: Path
    workspace: Workspace
    script_path: Path = SCRIPT_PATH
    prompt: str = PROMPT


def prepare_demo(data_dir: Path) -> Demo:
    """Create the demo under ``data_dir/demo`` if it is missing or stale; return it."""
    root = Path(data_dir) / "demo"
    try:
        if not _is_ready(root):
            _rebuild(root)
    except OSError as exc:
        raise ConfigError(f"cannot create the demo in {root}: {exc.strerror or exc}") from None
    return Demo(root=root, workspace=load_workspace(root / "workspace.toml"))


def _is_ready(root: Path) -> bool:
    marker = root / _READY
    return marker.is_file() and marker.read_text().strip() == DEMO_VERSION


def _rebuild(root: Path) -> None:
    private_dir(root.parent)  # the demo holds (fake) secrets and its runs: owner only
    staging = Path(tempfile.mkdtemp(prefix=".demo-", dir=root.parent))
    try:
        _build(staging)
        if root.exists():
            shutil.rmtree(root)
        staging.rename(root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _build(folder: Path) -> None:
    for name in _FOLDERS:
        shutil.copytree(_HERE / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    write_env(folder / "files" / ".env")
    write_database(folder / "shop.db")
    write_log(folder / "logs" / "app.log")
    (folder / "workspace.toml").write_text(WORKSPACE_TOML)
    (folder / _READY).write_text(DEMO_VERSION)


# The documents index goes to the data folder the demo lives in (``..``), beside its runs.
WORKSPACE_TOML = """\
database_url = "sqlite:///shop.db"
files_root = "files"
log_files = ["logs/app.log"]
base_urls = ["https://shop.example"]
documents = "docs"
data_dir = ".."

[files_roots]
docs = "docs"
config = "config"

[config]
folder = "config"
schemas = { "app.toml" = "schemas/app.schema.json" }

[history]
table = "record_history"
field_column = "field"
time_column = "changed_at"

[accounts]
users = "staff"
roles = "roles"

[jobs]
crontab = "config/crontab"
systemd = "config/systemd"
table = "scheduled_jobs"

[routes]
file = "config/routes.txt"
"""
