"""Secrets files, for every file tool: by name, by content, through hard links; and search_code
matches only what the model may see, so it cannot confirm a secret character by character."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core.personal import mask_personal
from toolwire.core.redact import mask_secrets
from toolwire.demo._content import ENV_SECRETS
from toolwire.tools.builtin._secrets import is_secret_name, is_secret_path
from toolwire.workspace.config import Workspace

from .conftest import invoke

OPENSSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
PPK = "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIPrivateBody0123\n"
KUBECONFIG = (
    "users:\n- name: admin\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURQ==\n"
)
ENVRC = "export PGPASSWORD=envrc-pw-0001\n"


def root_of(workspace: Workspace) -> Path:
    root = workspace.files_root
    assert root is not None
    return root


def test_search_code_is_not_an_oracle(workspace: Workspace) -> None:
    root = root_of(workspace)
    (root / "config.py").write_text('OPENAI = "sk-proj-ORACLE0abcdefghijklmnop"\n')
    for probe in ("sk-proj-ORACLE0", "sk-proj-ORACLEX", "ORACLE", r"sk-proj-O\w+"):
        regex = "\\" in probe
        result = invoke(workspace, "search_code", {"pattern": probe, "regex": regex})
        assert result.content.startswith("No matches for ")
    shown = invoke(workspace, "search_code", {"pattern": "OPENAI"})
    assert shown.content == "Matches for 'OPENAI':\nconfig.py:1: OPENAI = \"sk-proj-***\""


def test_search_code_never_searches_a_hard_link_to_dot_env(workspace: Workspace) -> None:
    root = root_of(workspace)
    os.link(root / ".env", root / "notes.txt")
    result = invoke(workspace, "search_code", {"pattern": "Sup3rS3cret"})
    assert result.content == "No matches for 'Sup3rS3cret' in 2 files."
    assert invoke(workspace, "search_code", {"pattern": "DATABASE_URL"}).content == (
        "No matches for 'DATABASE_URL' in 2 files."
    )


def test_search_code_skips_files_with_private_keys(workspace: Workspace) -> None:
    (root_of(workspace) / "notes.md").write_text("ops notes\n" + OPENSSH_KEY)
    result = invoke(workspace, "search_code", {"pattern": "ops notes"})
    assert result.content == "No matches for 'ops notes' in 3 files."


SECRET_FILES = {
    "deploy_key": OPENSSH_KEY,
    "key.ppk": PPK,
    ".env~": "DB_PASSWORD=tilde-pw-0001\n",
    ".env.bak": "DB_PASSWORD=bak-pw-0001\n",
    ".envrc": ENVRC,
    "kubeconfig": KUBECONFIG,
    ".git-credentials": "https://bob:gitcred-0001@github.com\n",
    ".netrc": "machine h login bob password netrc-0001\n",
    ".pgpass": "db:5432:*:bob:pgpass-0001\n",
    "id_work": OPENSSH_KEY,
    "service-account-prod.json": '{"private_key_id": "sa-0001"}\n',
    ".kube/config": KUBECONFIG,
    ".aws/credentials": "[default]\naws_secret_access_key = awscred-0001\n",
    ".docker/config.json": '{"auths": {"r": {"auth": "docker-0001"}}}\n',
    "ops/notes.txt": "see below\n" + OPENSSH_KEY,  # by content alone
    "cluster.yaml": KUBECONFIG,  # by content alone
}


@pytest.mark.parametrize("path", sorted(SECRET_FILES))
def test_secret_files_are_refused_by_every_file_tool(workspace: Workspace, path: str) -> None:
    target = root_of(workspace) / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(SECRET_FILES[path])
    read = invoke(workspace, "read_source", {"path": path})
    assert read.content == f"Error: '{path}' looks like a secrets file and is never read."
    written = invoke(workspace, "write_file", {"path": path, "text": "x"})
    assert written.content == (f"Error: '{path}' looks like a secrets file and is never written.")
    assert target.read_text() == SECRET_FILES[path]
    found = invoke(workspace, "find_files", {"pattern": path})
    assert found.content == (
        f"Files matching '{path}' (1):\n- {path} (secrets file, details withheld)"
    )
    info = invoke(workspace, "file_info", {"path": path})
    assert "bytes: withheld\nmodified: withheld\n" in info.content
    assert info.content.endswith("secret_like_name: yes")


def test_a_hard_link_to_a_secret_file_is_that_file(workspace: Workspace) -> None:
    root = root_of(workspace)
    os.link(root / ".env", root / "harmless.txt")
    read = invoke(workspace, "read_source", {"path": "harmless.txt"})
    assert read.content == "Error: 'harmless.txt' looks like a secrets file and is never read."
    written = invoke(workspace, "write_file", {"path": "harmless.txt", "text": "x"})
    assert written.content == (
        "Error: 'harmless.txt' looks like a secrets file and is never written."
    )
    listing = invoke(workspace, "browse_folder", {"path": "."})
    assert "  - harmless.txt (secrets file, details withheld)\n" in listing.content
    for secret in ENV_SECRETS.values():
        assert secret not in read.content + listing.content


def test_a_hard_link_between_ordinary_files_stays_readable(workspace: Workspace) -> None:
    root = root_of(workspace)
    os.link(root / "README.md", root / "README.copy.md")
    result = invoke(workspace, "read_source", {"path": "README.copy.md"})
    assert result.content == "README.copy.md lines 1-1 of 1:\nhello"


@pytest.mark.parametrize(
    "name",
    [
        ".env", ".env~", ".env.bak", ".env.swp", "#.env#", ".id_rsa.swp", ".envrc", ".netrc",
        ".pgpass", "key.ppk", "server.key", "tls.pem", "id_rsa", "id_ed25519", "id_work",
        "deploy_key", "kubeconfig", ".git-credentials", ".npmrc", ".pypirc",
        "credentials.json", "service-account-prod.json", "KUBECONFIG",
    ],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "id_rsa.pub", "deploy_key.pub", "id_mapping.json", "app.py", "README.md", "keyboard.py",
        "config", "environment.md", "passenger.csv", "monkey.txt", "token_usage.py",
    ],
)  # fmt: skip
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_secret_paths_by_their_tail() -> None:
    assert is_secret_path(".kube/config")
    assert is_secret_path("home/ada/.aws/credentials")
    assert is_secret_path(".docker/config.json")
    assert not is_secret_path("src/config")
    assert not is_secret_path("docker/config.json")


line_text = st.text(
    st.characters(codec="utf-8", exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
    max_size=60,
)
planted = st.sampled_from(
    [
        "sk-proj-abcdefghijklmnopqrst",
        "password=hunter2hunter2",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "ada@example.com",
        "https://bob:pa/ss@h",
    ]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=line_text, secret=planted, after=line_text)
def test_every_reported_line_is_masked_and_nothing_unmasked_matches(
    workspace: Workspace, before: str, secret: str, after: str
) -> None:
    line = before + secret + after
    (root_of(workspace) / "probe.txt").write_text(line + "\n", encoding="utf-8")
    visible = mask_personal(mask_secrets(line))  # a run of no known zone: the least trusted
    result = invoke(workspace, "search_code", {"pattern": secret, "ignore_case": False})
    if secret in visible:
        assert result.content == f"Matches for {secret!r}:\nprobe.txt:1: {visible}"
    else:
        assert result.content.startswith("No matches for ")


def test_fetch_logs_never_reads_a_log_that_is_a_secrets_file(workspace: Workspace) -> None:
    root = root_of(workspace)
    os.link(root / ".env", root / "app.log")
    for log in (root / "app.log", root / ".env"):
        configured = Workspace(files_root=root, log_files=(log,))
        result = invoke(configured, "fetch_logs", {"lines": 10})
        assert result.content == "Error: the workspace has no readable log files."


def test_fetch_logs_masks_a_private_key_block(workspace: Workspace, tmp_path: Path) -> None:
    log = tmp_path / "keys.log"
    log.write_text("dumped:\n" + OPENSSH_KEY + "done\n")
    result = invoke(Workspace(log_files=(log,)), "fetch_logs", {"lines": 10})
    assert result.content == (
        "== keys.log (last 5 lines)\ndumped:\n-----BEGIN OPENSSH PRIVATE KEY-----***\ndone"
    )
