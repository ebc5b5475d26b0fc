"""Code tools: ``read_source`` and ``search_code`` over the workspace's files root.

Both refuse secrets files (by name, content or hard link; see ``_secrets``) and mask secret
shapes (``toolwire.core.redact``) in what they return. ``search_code`` is not an oracle: its worker
masks each line first (secrets, and personal data where the run's trust zone reads it masked, by
the same shapes and checks as the seam: ``toolwire.tools.disclosure.worker_masks``) and matches
the pattern against the masked line, the text the model may see, so a pattern cannot confirm a
secret's characters nor an address the zone is not shown; secrets files are never searched.
``search_code`` bounds every dimension of a regex search: the pattern
(``MAX_PATTERN_CHARS``), the files (``MAX_FILES`` of at most ``MAX_FILE_BYTES``), the line length
searched (``MAX_LINE_CHARS``) and the time (``SEARCH_SECONDS``, enforced by running the search in
a child process that is killed when the budget ends).
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from toolwire.core.children import run_child
from toolwire.core.errors import ToolRefusal
from toolwire.core.redact import mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    Root,
    builtin,
    echo,
    files_root,
    secret_identities,
    workspace_of,
)
from toolwire.tools.builtin._paths import check_relative, display, regular_file, walk_files
from toolwire.tools.builtin._secrets import (
    SECRET_CONTENT,
    SecretIdentities,
    is_secret_file,
    is_secret_path,
)
from toolwire.tools.disclosure import worker_masks
from toolwire.workspace.maps import DEFAULT_ROOT

MAX_LINES = 400  # one screenful of a module; page with start_line for more
MAX_FILE_BYTES = 2_000_000  # larger files are data or generated, not source to read
MAX_PATTERN_CHARS = 200  # a search pattern, not a program
MAX_FILES = 2_000  # files searched per call
MAX_LINE_CHARS = 2_000  # minified lines are cut; bounds the work per regex match
MAX_MATCHES = 100  # lines returned per search
SEARCH_SECONDS = 3.0  # wall time for one search, including the worker's start-up
# The worker's answer: MAX_MATCHES lines of MAX_LINE_CHARS characters, each at most 6 bytes
# once JSON-escaped, with room for paths; more is not an answer.
MAX_ANSWER_BYTES = 2 * MAX_MATCHES * MAX_LINE_CHARS * 6
_WORKER = Path(__file__).with_name("_regex_worker.py")
LANGUAGES = {
    ".py": "python", ".js": "javascript", ".ts": "typescript", ".html": "html", ".css": "css",
    ".sql": "sql", ".sh": "bash", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
    ".json": "json", ".md": "markdown", ".php": "php", ".go": "go", ".rs": "rust", ".txt": "",
}  # fmt: skip

Line = Annotated[int, Field(ge=1)]


@builtin(group="code", data_class="source_code", integrity="untrusted", requires_admin=True)
def read_source(
    context: ToolContext,
    path: str,
    start_line: Line = 1,
    end_line: Line | None = None,
    root: Root = DEFAULT_ROOT,
) -> ToolResult:
    """Read lines ``start_line``..``end_line`` (at most 400) of a source file, secrets redacted.

    Artifact: ``code`` ``{code, language, first_line}``, the same lines as the text.
    """
    top = files_root(context, root)
    target = regular_file(top, path)
    if is_secret_path(check_relative(path)) or is_secret_file(
        top.resolve(), target, known=secret_identities(workspace_of(context))
    ):
        raise ToolRefusal(f"{echo(path)} looks like a secrets file and is never read.")
    lines = _source_lines(target, path)
    last = min(len(lines), end_line or start_line + MAX_LINES - 1, start_line + MAX_LINES - 1)
    if start_line > len(lines):
        raise ToolRefusal(
            f"{echo(path)} has {len(lines)} lines; start_line {start_line} is past it."
        )
    if last < start_line:
        raise ToolRefusal("end_line must not be before start_line.")
    code = mask_secrets("\n".join(lines[start_line - 1 : last]))
    shown = display(top, target)
    header = f"{shown} lines {start_line}-{last} of {len(lines)}:"
    language = LANGUAGES.get(target.suffix.lower(), "")
    artifact = Artifact.code(shown, code, language=language, first_line=start_line)
    return ToolResult.text(f"{header}\n{code}", artifact)


@builtin(group="code", data_class="source_code", integrity="untrusted", requires_admin=True)
def search_code(
    context: ToolContext,
    pattern: str,
    *,
    regex: bool = False,
    ignore_case: bool = True,
    glob: str = "*",
    root: Root = DEFAULT_ROOT,
) -> ToolResult:
    """Search source files for a substring (or a regular expression when ``regex`` is true).

    Bounded: 200-character patterns, lines cut at 2,000 characters, 100 matches, 3 seconds.
    """
    if not pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise ToolRefusal(f"pattern must be 1 to {MAX_PATTERN_CHARS} characters.")
    source = pattern if regex else re.escape(pattern)
    try:
        re.compile(source)
    except re.error as exc:
        raise ToolRefusal(f"invalid regular expression: {exc.msg} at position {exc.pos}.") from None
    known = secret_identities(workspace_of(context))
    files = _searchable(files_root(context, root), glob, known)
    result = _run_worker(source, ignore_case, files, worker_masks(context))
    lines = [f"{p}:{n}: {text}" for p, n, text in result["matches"]]
    if not lines:
        return ToolResult.text(f"No matches for {echo(pattern)} in {len(files)} files.")
    more = "\n(more matches not shown: narrow the pattern)" if result["truncated"] else ""
    return ToolResult.text(f"Matches for {echo(pattern)}:\n" + "\n".join(lines) + more)


def _source_lines(target: Path, path: str) -> list[str]:
    if target.stat().st_size > MAX_FILE_BYTES:
        raise ToolRefusal(f"{echo(path)} is larger than {MAX_FILE_BYTES} bytes.")
    data = target.read_bytes()
    if b"\x00" in data:
        raise ToolRefusal(f"{echo(path)} is a binary file.")
    return data.decode("utf-8", "replace").splitlines()


def _searchable(root: Path, glob: str, known: SecretIdentities) -> list[list[str]]:
    if not glob or len(glob) > MAX_PATTERN_CHARS:
        raise ToolRefusal(f"glob must be 1 to {MAX_PATTERN_CHARS} characters.")
    base = root.resolve()
    files = []
    for entry in walk_files(base, base):
        shown = display(root, entry)
        if not fnmatch.fnmatchcase(entry.name, glob):
            continue
        if is_secret_file(base, entry, sniff_bytes=0, known=known):
            continue  # by content: the worker skips it as it reads it
        files.append([shown, str(entry)])
        if len(files) >= MAX_FILES:
            break
    return files


def _run_worker(
    source: str, ignore_case: bool, files: list[list[str]], masks: dict[str, Any]
) -> dict[str, Any]:
    job = {
        "pattern": source,
        "ignore_case": ignore_case,
        "files": files,
        "max_file_bytes": MAX_FILE_BYTES,
        "max_line_chars": MAX_LINE_CHARS,
        "max_matches": MAX_MATCHES,
        "secret_content": SECRET_CONTENT.pattern.decode("ascii"),
        **masks,
    }
    try:
        done = run_child(
            [sys.executable, "-I", str(_WORKER)],
            stdin=json.dumps(job),
            timeout=SEARCH_SECONDS,
            max_output=MAX_ANSWER_BYTES,
        )
    except subprocess.TimeoutExpired:
        raise ToolRefusal(
            f"the search took longer than {SEARCH_SECONDS:g} seconds and was stopped; "
            "simplify the pattern (nested repetition such as (a+)+ backtracks badly)."
        ) from None
    if done.returncode != 0 or done.overflowed:
        raise ToolRefusal("the search failed.")
    out: dict[str, Any] = json.loads(done.stdout)
    return out
