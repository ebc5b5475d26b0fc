"""The catalogue against a realistic corpus: every secret-bearing line masked so that no part of
its secret can be read, every benign look-alike left exactly as it was; and the same through the
tools that read such lines (``fetch_document``, ``list_scheduled_jobs``, ``fetch_logs``).

The corpus is data: ``tests/data/secret_corpus.txt`` (toolwire's own lines, fake values),
``tests/data/detect_secrets_fixtures.txt`` (detect-secrets' test fixtures, their source
named) and ``tests/data/benign_lookalikes.txt``.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from toolwire import ToolCall, ToolContext, ToolResult, User
from toolwire.core.redact import mask_secrets
from toolwire.core.trust import TrustZone
from toolwire.loop.seam import Seam
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace, load_workspace

DATA = Path(__file__).parent.parent / "data"
MIN_FRAGMENT = 3  # a fragment of a secret this long, or longer, must not be readable


def _pairs(name: str) -> list[tuple[str, str]]:
    rows = []
    for raw in (DATA / name).read_text(encoding="utf-8").splitlines():
        if raw and not raw.startswith("#"):
            secret, line = raw.split("\t", 1)
            rows.append((secret, line.replace("\\n", "\n")))
    return rows


CORPUS = _pairs("secret_corpus.txt")
FIXTURES = _pairs("detect_secrets_fixtures.txt")
SECRET_LINES = CORPUS + FIXTURES
BENIGN = [
    line
    for line in (DATA / "benign_lookalikes.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
]


def readable_parts(secret: str, public: str, shown: str) -> list[str]:
    """The parts of ``secret`` still in ``shown``: the whole, or any word of it (a run of
    letters and digits of ``MIN_FRAGMENT`` or more), unless ``public`` (what the text says
    besides its secrets) holds it too."""
    found = [secret] if secret in shown and secret not in public else []
    for word in re.findall(rf"[A-Za-z0-9]{{{MIN_FRAGMENT},}}", secret):
        if word in shown and word not in public:
            found.append(word)
    return found


def test_the_corpus_is_as_large_as_the_red_team_s() -> None:
    assert len(CORPUS) >= 46
    assert len(FIXTURES) >= 40
    assert len(BENIGN) >= 30


@pytest.mark.parametrize(("secret", "line"), SECRET_LINES, ids=[s[:24] for s, _ in SECRET_LINES])
def test_no_part_of_a_secret_is_readable(secret: str, line: str) -> None:
    shown = mask_secrets(line)
    assert readable_parts(secret, line.replace(secret, " "), shown) == [], shown
    assert "***" in shown


@pytest.mark.parametrize("line", BENIGN)
def test_a_benign_look_alike_is_left_alone(line: str) -> None:
    assert mask_secrets(line) == line


def test_a_secret_in_a_large_adversarial_line_is_still_found_quickly() -> None:
    # Many near-misses in one line before a real secret: linear patterns find it in time.
    hostile = ('password = "' * 20_000) + "\n" + ("curl -u a:" * 20_000) + "\n"
    text = hostile + "sshpass -p 'Ssh Pa55' ssh deploy@host\n"
    assert mask_secrets(text).endswith("sshpass -p '***' ssh deploy@host\n")


# -- through the tools that read such lines --------------------------------------------------

ADMIN = User("admin", is_admin=True)
# A file holding a private key is refused whole by every file tool (a stronger rule, tested
# with the secret files): the tools read the rest.
READ_LINES = [(s, line) for s, line in SECRET_LINES if "PRIVATE KEY" not in line]
LINES = [line for _, line in READ_LINES]


def _invoke(workspace: Workspace, name: str, arguments: dict[str, object]) -> ToolResult:
    seam = Seam(ToolRegistry(builtin_tools()))
    context = ToolContext(user=ADMIN, workspace=workspace, trust_zone=TrustZone.LOCAL)
    call = ToolCall.of("call_1", name, arguments)
    return asyncio.run(seam.invoke(call, frozenset({name}), context)).result


def _everything(result: ToolResult) -> str:
    return result.content + "\n" + "\n".join(repr(a.data) for a in result.artifacts)


# The tools' own words (artifact keys): "and" in "command" is not a secret's.
TOOL_WORDS = " source name schedule command problem columns rows items path title characters"


def _assert_masked(shown: str) -> None:
    # What the lines say besides their own secrets may be shown.
    public = "\n".join(line.replace(secret, " ") for secret, line in READ_LINES) + TOOL_WORDS
    for secret, _ in READ_LINES:
        assert readable_parts(secret, public, shown) == [], secret


@pytest.fixture
def corpus_workspace(tmp_path: Path) -> Workspace:
    body = "\n".join(line.replace("\n", " ") for line in LINES)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runbook.md").write_text("# Runbook\n\n" + body + "\n")
    (tmp_path / "app.log").write_text(body + "\n")
    crontab = "".join(f"# job {n}\n*/5 * * * * {line}\n" for n, line in enumerate(LINES))
    (tmp_path / "crontab").write_text(crontab)
    (tmp_path / "workspace.toml").write_text(
        'documents = "docs"\ndata_dir = "data"\nlog_files = ["app.log"]\n'
        '[jobs]\ncrontab = "crontab"\n'
    )
    return load_workspace(tmp_path / "workspace.toml")


def test_fetch_document_shows_no_part_of_any_secret(corpus_workspace: Workspace) -> None:
    result = _invoke(corpus_workspace, "fetch_document", {"path": "runbook.md"})
    assert not result.is_error, result.content
    assert result.content.startswith("runbook.md: Runbook (characters 1-")
    _assert_masked(_everything(result))


def test_fetch_logs_shows_no_part_of_any_secret(corpus_workspace: Workspace) -> None:
    result = _invoke(corpus_workspace, "fetch_logs", {"lines": 200})
    assert not result.is_error, result.content
    assert LINES[0][:10] in result.content
    _assert_masked(_everything(result))


def test_list_scheduled_jobs_shows_no_part_of_any_secret(corpus_workspace: Workspace) -> None:
    result = _invoke(corpus_workspace, "list_scheduled_jobs", {})
    assert not result.is_error, result.content
    assert "job 0" in result.content
    _assert_masked(_everything(result))
