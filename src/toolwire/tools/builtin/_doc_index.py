"""The documents index: SQLite FTS5 over a documents folder, kept in the data directory.

Invariants:
- The index lives in the data directory, one file per documents folder (named by a hash of the
  folder's resolved path), never inside the folder it indexes; its folder is 0700, its file 0600.
- Only what a model may read is stored. Secrets files (by name, path, hard link or content; see
  ``_secrets``) are never indexed, and every title and text is masked (``toolwire.core.redact``)
  before it is stored, so neither a snippet nor a match can show or confirm a secret.
- Personal data (``toolwire.core.personal``) is kept in two views, one per kind of zone: ``docs``
  holds it as written, for a zone the workspace's policy shows it to; ``docs_masked`` holds it
  masked, for every other zone. A search, a fetch and its paging read one view only (chosen by
  ``personal``), so a zone that reads addresses masked can neither find one, nor count the
  documents holding one, nor be shown half of one by a snippet's highlighting or a page's cut;
  and a zone shown them finds them. The index records the catalogue it masked with and is
  rebuilt when the catalogue changes.
- Refresh is incremental: a file is read again only when its signature (size, modification and
  change times, inode) changed, and indexed again only when its SHA-256 changed too; a file gone
  from the folder leaves the index. The walk skips hidden folders and never follows a symlinked
  folder; a symlinked file counts only when it resolves inside the folder.
- A model's query never reaches FTS5 as syntax: it is cut into words and each word is quoted.
- Each document is indexed on its own, within its limits (``_per_file``): one too large, too
  slow to extract and mask, unreadable or breaking its reader is kept out with its reason (told
  to the model; a secrets file or a binary is left out without one), and the rest are indexed.
  A refresh that runs out of its call's time leaves the files it did not reach for the next.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import NamedTuple

from toolwire.core.personal import mask_personal
from toolwire.core.private import private_dir, private_file
from toolwire.core.redact import catalogue_spec, mask_secrets
from toolwire.tools.builtin._doc_snippet import CLOSE, CUT, MARKS, OPEN, whole
from toolwire.tools.builtin._doc_text import SUFFIXES, extract
from toolwire.tools.builtin._paths import contained
from toolwire.tools.builtin._per_file import (
    BROKE_READER,
    CALL_SECONDS,
    UNREADABLE,
    Budget,
    NotChecked,
    larger_than,
)
from toolwire.tools.builtin._secrets import SecretIdentities, has_secret_content, is_secret_file

SCHEMA_VERSION = 3  # bump when the tables change: an older index is rebuilt (2: two views,
# 3: a reason kept for a document left out)
PERSONAL_MASKS = 1  # bump when the personal-data shapes change: an older index is rebuilt
# Bump when the rule for which files are secret changes: an index built under an older rule
# may hold a file the new one withholds (2: hard links to any of the workspace's secrets files).
SECRET_RULE_VERSION = 2
MAX_DOCUMENT_BYTES = 2_000_000  # a long manual; larger files are data, not documents
# One document's extraction and masking: a 2 MB manual takes about a second on a busy machine;
# the stages are looked at in between (a stage, bounded by the size cap, runs to its end).
DOCUMENT_SECONDS = 10.0
MAX_UNINDEXED_LISTED = 5  # documents left out, listed with their reasons in one answer
MAX_DOCUMENTS = 50_000  # files considered per folder: bounds one refresh's walk
MAX_QUERY_WORDS = 16  # a question, not a document
# Each call opens the index afresh; reading it through the operating system's page cache
# (mmap) instead of a new connection's empty one halves a search for a common word.
MMAP_BYTES = 256 * 2**20
BUSY_MS = 10_000  # how long one refresh waits for another to finish writing
SNIPPET_TOKENS = 20  # words around the best match in a hit's snippet
TITLE_WEIGHT = 4.0  # a word in the title counts as much as four in the body
_WORD = re.compile(r"\w+\*?")
_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, signature TEXT NOT NULL,
    sha256 TEXT, indexed INTEGER NOT NULL, reason TEXT
);
CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE docs_masked USING fts5(
    title, body, tokenize = 'unicode61 remove_diacritics 2'
);
"""
# Personal data as written, and masked: the index's text. The statements name their table with
# an f-string (S608), always one of these, never anything a model or a file chose.
VIEWS = ("docs", "docs_masked")


@dataclass(frozen=True, slots=True)
class Refresh:
    """What one refresh changed, and how many documents the index holds after it."""

    added: int
    changed: int
    removed: int
    documents: int
    waiting: int = 0  # new or changed files the refresh ran out of time for


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    title: str
    snippet: str


@dataclass(frozen=True, slots=True)
class Document:
    path: str
    title: str
    text: str


class _Known(NamedTuple):
    """What the index holds for one file."""

    id: int
    signature: str
    sha256: str | None
    indexed: bool


log = logging.getLogger("toolwire.tools.builtin")

# Per index file, in this process: (generation, files) as of the last refresh here. The
# generation in the index's meta table moves on every write, so a copy another process has
# outdated is read again from the index.
_KNOWN: dict[str, tuple[int, dict[str, _Known]]] = {}


class _Seen(NamedTuple):
    """A file the walk found: its path in the folder, on disk, and its status."""

    relative: str
    full: str
    info: os.stat_result


def index_file(folder: Path, index_dir: Path) -> Path:
    """Where the index of ``folder`` lives inside ``index_dir``."""
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:24]
    return index_dir / f"{key}.sqlite3"


def match_expression(query: str, *, any_word: bool = False) -> str:
    """``query`` as an FTS5 expression: each word quoted (``"refund"``, ``"pay"*``), all of
    them required unless ``any_word``. Empty when the query has no words."""
    words = _WORD.findall(query)[:MAX_QUERY_WORDS]
    terms = [f'"{w[:-1]}"*' if w.endswith("*") else f'"{w}"' for w in words]
    return (" OR " if any_word else " ").join(terms)


@functools.cache
def _fingerprint() -> str:
    """What the stored text depends on besides the files: the schema, the masking catalogue
    and the suffixes indexed. A change rebuilds the index."""
    spec = json.dumps([SCHEMA_VERSION, SECRET_RULE_VERSION, catalogue_spec(), PERSONAL_MASKS,
                       sorted(SUFFIXES)])  # fmt: skip
    return hashlib.sha256(spec.encode()).hexdigest()


class DocumentIndex:
    """One open index of one documents folder; use it as a context manager."""

    def __init__(
        self, folder: Path, index_dir: Path, known: SecretIdentities | None = None
    ) -> None:
        """``known``: the workspace's secrets files (None: the folder's own)."""
        self.folder = folder.resolve()
        self.known = SecretIdentities([self.folder]) if known is None else known
        self.path = index_file(folder, index_dir)
        private_dir(index_dir)
        private_file(self.path)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        try:
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            self._prepare()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def open(
        cls, folder: Path, index_dir: Path, known: SecretIdentities | None = None
    ) -> DocumentIndex:
        """The index, rebuilt from nothing when its file is not a database any more: it is a
        cache of the folder, and a damaged cache is discarded, not kept failing."""
        try:
            return cls(folder, index_dir, known)
        except sqlite3.DatabaseError:
            path = index_file(folder, index_dir)
            for damaged in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                damaged.unlink(missing_ok=True)
            return cls(folder, index_dir, known)

    def __enter__(self) -> DocumentIndex:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def _prepare(self) -> None:
        with self._transaction():
            tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
            if "meta" in tables:
                query = "SELECT value FROM meta WHERE key = 'fingerprint'"
                row = self._db.execute(query).fetchone()
                if row is not None and row[0] == _fingerprint():
                    return
                for name in (*VIEWS, "files", "meta"):
                    self._db.execute(f"DROP TABLE IF EXISTS {name}")
            for statement in _TABLES.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute("INSERT INTO meta VALUES ('fingerprint', ?)", (_fingerprint(),))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` when the block raises."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def refresh(self) -> Refresh:
        """Bring the index in line with the folder; read only files that changed."""
        key = str(self.path)
        try:
            with self._transaction():
                generation = int(self._meta("generation") or 0)
                known = self._known(key, generation)
                counts, dirty = self._sync(known, Budget(CALL_SECONDS))
                if dirty:
                    generation += 1
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (str(generation),)
                    )
        except BaseException:
            _KNOWN.pop(key, None)
            raise
        _KNOWN[key] = (generation, known)
        total = sum(1 for entry in known.values() if entry.indexed)
        return Refresh(
            counts["added"], counts["changed"], counts["removed"], total, counts["waiting"]
        )

    def _meta(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def _known(self, key: str, generation: int) -> dict[str, _Known]:
        """What the index holds per file: this process's copy while no other process wrote."""
        cached = _KNOWN.get(key)
        if cached is not None and cached[0] == generation:
            return dict(cached[1])
        rows = self._db.execute("SELECT path, id, signature, sha256, indexed FROM files")
        return {row[0]: _Known(row[1], row[2], row[3], bool(row[4])) for row in rows}

    def _sync(self, known: dict[str, _Known], budget: Budget) -> tuple[dict[str, int], bool]:
        counts = {"added": 0, "changed": 0, "removed": 0, "waiting": 0}
        seen: set[str] = set()
        dirty = False
        for found in self._walk():
            seen.add(found.relative)
            old = known.get(found.relative)
            signature = _signature(found.info)
            if old is None or old.signature != signature:
                if budget.spent:  # left as it is: the next refresh sees it new or changed
                    counts["waiting"] += 1
                    continue
                outcome, known[found.relative] = self._update(found, signature, old)
                if outcome in counts:
                    counts[outcome] += 1
                dirty = True
        for path in known.keys() - seen:
            counts["removed"] += self._remove(known.pop(path))
            dirty = True
        return counts, dirty

    def _walk(self) -> Iterator[_Seen]:
        """Candidate files, in path order; plain strings on the hot path (pathlib is slow)."""
        count = 0
        stack = [(str(self.folder), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=_name)
            except OSError:
                continue
            folders = []
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith("."):
                        folders.append((entry.path, f"{prefix}{entry.name}/"))
                    continue
                found = self._candidate(entry, prefix)
                if found is not None:
                    count += 1
                    if count > MAX_DOCUMENTS:
                        return
                    yield found
            stack.extend(reversed(folders))

    def _candidate(self, entry: os.DirEntry[str], prefix: str) -> _Seen | None:
        name = entry.name
        dot = name.rfind(".")
        if dot <= 0 or name[dot:].lower() not in SUFFIXES:  # ".md" alone is a hidden file
            return None
        if entry.is_symlink() and not contained(self.folder, Path(entry.path)):
            return None
        try:
            info = entry.stat()
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        return _Seen(prefix + name, entry.path, info)

    def _update(self, found: _Seen, signature: str, old: _Known | None) -> tuple[str, _Known]:
        """Index one new or changed file: which count it adds to ("touched" adds to none),
        and what the index now holds for it."""
        data, reason = self._readable(found)
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        if old is not None and digest is not None and old.sha256 == digest and old.indexed:
            self._db.execute("UPDATE files SET signature = ? WHERE id = ?", (signature, old.id))
            return "touched", old._replace(signature=signature)
        document = None
        if data is not None:
            try:
                document = _prepared(PurePosixPath(found.relative), data)
            except NotChecked as exc:
                reason = exc.reason
            except Exception:  # one document breaking its reader must not stop the others
                log.exception("indexing a document failed")
                reason = BROKE_READER
        if old is None:
            cursor = self._db.execute(
                "INSERT INTO files (path, signature, sha256, indexed) VALUES (?, ?, ?, 0)",
                (found.relative, signature, digest),
            )
            row_id = int(cursor.lastrowid or 0)
        else:
            row_id = old.id
        self._delete_text(row_id)  # a new id too: text left by a writer that lost its files row
        was_indexed = old is not None and old.indexed
        self._db.execute(
            "UPDATE files SET signature = ?, sha256 = ?, indexed = ?, reason = ? WHERE id = ?",
            (signature, digest, int(document is not None), reason, row_id),
        )
        now = _Known(row_id, signature, digest, document is not None)
        if document is None:
            return ("removed" if was_indexed else "skipped"), now
        title, text = document
        for view, shown in zip(VIEWS, (_as_written, mask_personal), strict=True):
            self._db.execute(
                f"INSERT INTO {view} (rowid, title, body) VALUES (?, ?, ?)",  # noqa: S608
                (row_id, shown(title), shown(text)),
            )
        return ("changed" if was_indexed else "added"), now

    def _delete_text(self, row_id: int) -> None:
        for view in VIEWS:
            self._db.execute(f"DELETE FROM {view} WHERE rowid = ?", (row_id,))  # noqa: S608

    def _readable(self, found: _Seen) -> tuple[bytes | None, str | None]:
        """The file's bytes, or None and why when it must not be indexed: the reason is None
        where none may be told (a secrets file) or none is needed (a binary is no document)."""
        if found.info.st_size > MAX_DOCUMENT_BYTES:
            return None, larger_than(MAX_DOCUMENT_BYTES)
        if is_secret_file(self.folder, Path(found.full), sniff_bytes=0, known=self.known):
            return None, None
        try:
            with open(found.full, "rb") as handle:
                data = handle.read(MAX_DOCUMENT_BYTES + 1)
        except OSError:
            return None, UNREADABLE
        if len(data) > MAX_DOCUMENT_BYTES:
            return None, larger_than(MAX_DOCUMENT_BYTES)
        if b"\x00" in data or has_secret_content(data):
            return None, None
        return data, None

    def _remove(self, gone: _Known) -> int:
        self._delete_text(gone.id)
        self._db.execute("DELETE FROM files WHERE id = ?", (gone.id,))
        return int(gone.indexed)

    def search(self, expression: str, limit: int, *, personal: bool) -> tuple[list[Hit], int]:
        """The best ``limit`` hits for an FTS5 ``expression`` (from :func:`match_expression`),
        best first, and how many documents match in all; ``personal``: in the view with
        personal data as written (else masked)."""
        docs = _view(personal)
        # Rank first, snippets after: SQLite would otherwise build a snippet for every match
        # before sorting, and a common word matches most of the folder.
        rows = self._db.execute(
            f"WITH top AS (SELECT rowid, bm25({docs}, ?, 1.0) AS score FROM {docs}"  # noqa: S608
            f" WHERE {docs} MATCH ? ORDER BY score LIMIT ?)"
            f" SELECT files.path, {docs}.title, snippet({docs}, 1, ?, ?, ?, ?), top.rowid"
            " FROM top"
            f" JOIN {docs} ON {docs}.rowid = top.rowid JOIN files ON files.id = top.rowid"
            f" WHERE {docs} MATCH ? ORDER BY top.score, files.path",
            (TITLE_WEIGHT, expression, limit, OPEN, CLOSE, CUT, SNIPPET_TOKENS, expression),
        ).fetchall()
        counting = f"SELECT count(*) FROM {docs} WHERE {docs} MATCH ?"  # noqa: S608
        total = self._db.execute(counting, (expression,)).fetchone()[0]
        hits = [
            Hit(path, title, self._whole(docs, snippet, row)) for path, title, snippet, row in rows
        ]
        return hits, int(total)

    def _whole(self, docs: str, snippet: str, row_id: int) -> str:
        """The hit's snippet with no personal-data shape cut or split (``_doc_snippet``)."""
        statement = f"SELECT body FROM {docs} WHERE rowid = ?"  # noqa: S608
        body = self._db.execute(statement, (row_id,)).fetchone()
        return whole(snippet, "" if body is None else str(body[0]))

    def fetch(self, path: str, *, personal: bool) -> Document | None:
        """The indexed document at ``path`` (relative, with forward slashes), if there is one,
        in the view ``personal`` names (as :meth:`search`)."""
        docs = _view(personal)
        row = self._db.execute(
            f"SELECT files.path, {docs}.title, {docs}.body FROM files JOIN {docs}"  # noqa: S608
            f" ON {docs}.rowid = files.id WHERE files.path = ? AND files.indexed = 1",
            (path,),
        ).fetchone()
        return None if row is None else Document(*row)

    def reason(self, path: str) -> str | None:
        """Why the document at ``path`` is not indexed, when there is a reason to tell."""
        row = self._db.execute(
            "SELECT reason FROM files WHERE path = ? AND indexed = 0", (path,)
        ).fetchone()
        return None if row is None else row[0]

    def unindexed(self) -> tuple[list[tuple[str, str]], int]:
        """The first ``MAX_UNINDEXED_LISTED`` documents left out with a reason to tell,
        ``(path, reason)`` in path order, and how many there are in all."""
        where = " FROM files WHERE indexed = 0 AND reason IS NOT NULL"
        rows = self._db.execute(
            f"SELECT path, reason{where} ORDER BY path LIMIT ?", (MAX_UNINDEXED_LISTED,)
        ).fetchall()
        total = self._db.execute(f"SELECT count(*){where}").fetchone()[0]
        return [(str(path), str(reason)) for path, reason in rows], int(total)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _signature(info: os.stat_result) -> str:
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


def _view(personal: bool) -> str:
    """The table of the view with personal data as written (``personal``) or masked."""
    return VIEWS[0] if personal else VIEWS[1]


def _as_written(text: str) -> str:
    return text


def _prepared(path: PurePosixPath, data: bytes) -> tuple[str, str]:
    """A document's title and text as stored, secrets masked (personal data is masked per view
    when it is written), within ``DOCUMENT_SECONDS``."""
    budget = Budget(DOCUMENT_SECONDS)
    document = extract(path, data)
    budget.check()
    # Without the snippet's marks, which no document needs and a snippet must not hold.
    title = mask_secrets(document.title.translate(MARKS))
    text = mask_secrets(document.text.translate(MARKS))
    budget.check()
    return title, text
