"""A secrets file is refused by identity across the workspace: a hard link to ``files/.env``
under another name, in another folder the workspace names (the documents folder, the
configuration folder, a second file root), is the same file and is never read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolwire.demo._content import write_env
from toolwire.workspace.config import Workspace
from toolwire.workspace.maps import ConfigMap

from .conftest import invoke

SECRET = "Sup3rS3cret"  # in the demo's .env: DATABASE_URL=...Sup3rS3cret...


@pytest.fixture
def spread(tmp_path: Path) -> Workspace:
    """files/.env, and one hard link to it, under a harmless name, in each other folder."""
    files, docs, config, other = (tmp_path / n for n in ("files", "docs", "config", "other"))
    for folder in (files, docs, config, other):
        folder.mkdir()
    write_env(files / ".env")
    assert SECRET in (files / ".env").read_text()
    os.link(files / ".env", docs / "handbook.md")
    os.link(files / ".env", config / "settings.ini")
    os.link(files / ".env", other / "notes.txt")
    (docs / "intro.md").write_text("# Intro\nwelcome aboard\n")
    (config / "app.ini").write_text("[app]\nname = shop\n")
    (other / "plain.txt").write_text("plain words\n")
    return Workspace(
        files_root=files,
        files_roots={"other": other},
        documents=docs,
        config=ConfigMap(folder=config),
        data_dir=tmp_path / "data",
    )


def test_fetch_document_refuses_a_hard_link_to_the_files_roots_env(spread: Workspace) -> None:
    fetched = invoke(spread, "fetch_document", {"path": "handbook.md"})
    assert fetched.is_error
    assert fetched.content == (
        "Error: no document at 'handbook.md'; give a path search_documents listed."
    )
    found = invoke(spread, "search_documents", {"query": "DATABASE_URL"})
    assert found.content == "No document matches 'DATABASE_URL'."
    assert invoke(spread, "fetch_document", {"path": "intro.md"}).content.startswith(
        "intro.md: Intro (characters 1-"
    )


def test_get_config_refuses_a_hard_link_in_the_configuration_folder(spread: Workspace) -> None:
    read = invoke(spread, "get_config", {"path": "settings.ini"})
    assert read.content == "Error: 'settings.ini' looks like a secrets file and is never read."
    listing = invoke(spread, "get_config")
    assert listing.content == (
        "Configuration files (2):\n- app.ini (INI)\n- settings.ini (secrets file, not read)"
    )


def test_a_second_file_root_refuses_a_hard_link_to_the_first_roots_env(
    spread: Workspace,
) -> None:
    read = invoke(spread, "read_source", {"path": "notes.txt", "root": "other"})
    assert read.content == "Error: 'notes.txt' looks like a secrets file and is never read."
    searched = invoke(spread, "search_code", {"pattern": "DATABASE", "root": "other"})
    assert searched.content == "No matches for 'DATABASE' in 1 files."
    info = invoke(spread, "file_info", {"path": "notes.txt", "root": "other"})
    assert "bytes: withheld" in info.content.splitlines()
    written = invoke(spread, "write_file", {"path": "notes.txt", "text": "x", "root": "other"})
    assert written.content == "Error: 'notes.txt' looks like a secrets file and is never written."
    assert SECRET in (spread.roots()["other"] / "notes.txt").read_text()


def test_a_log_file_linked_to_a_secrets_file_of_any_root_is_not_read(
    spread: Workspace, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    os.link(spread.roots()["other"] / "notes.txt", logs / "app.log")
    other_env = spread.roots()["other"] / "deploy.env"
    write_env(other_env)
    os.link(other_env, logs / "worker.log")
    (logs / "plain.log").write_text("INFO started\n")
    linked = Workspace(
        files_root=spread.files_root,
        files_roots=spread.files_roots,
        log_files=(logs / "app.log", logs / "worker.log", logs / "plain.log"),
    )
    result = invoke(linked, "fetch_logs")
    assert SECRET not in result.content
    assert result.content.splitlines()[0] == "== plain.log (last 1 lines)"
