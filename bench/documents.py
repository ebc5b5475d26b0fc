"""The documents index on a generated corpus of 5,000 documents (Markdown, text and HTML).

Measures, on this machine:
- building the index from nothing (walk, read, hash, strip HTML, mask, FTS5 insert);
- a refresh that finds nothing changed (what every search pays first), and one after 50
  documents changed;
- ``search_documents`` per query, end to end through the tool (refresh, FTS5 match, bm25 rank,
  snippets, text and artifact), over a set of one-, two- and three-word queries, some rare,
  some common, one that only matches with any word; and the bare FTS5 query for comparison.

Target: under 50 ms per query. Run: ``PYTHONPATH=src python bench/documents.py``.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolwire import ToolContext, User
from toolwire.tools.builtin._doc_index import DocumentIndex, match_expression
from toolwire.tools.builtin.documents import index_dir, search_documents
from toolwire.workspace.config import Workspace

DOCUMENTS = 5_000
WORDS_PER_DOCUMENT = (150, 900)  # a short note to a long page
VOCABULARY = 4_000  # distinct words in the corpus; a few are very common (Zipf-like draw)
QUERIES = [
    "refund", "shipping policy", "invoice overdue reminder", "word17", "word3999",
    "word1 word2", "warehouse", "zzz refund", "word250 word251 word252", "return label",
]  # fmt: skip
ROUNDS = 20  # each query is timed this many times; the median is reported
TARGET_MS = 50.0


def corpus(folder: Path, seed: int = 7) -> None:
    """Write ``DOCUMENTS`` files into ``folder``: a third each Markdown, text and HTML."""
    draw = random.Random(seed)
    words = [f"word{n}" for n in range(VOCABULARY)]
    words[:8] = ["refund", "shipping", "policy", "invoice", "warehouse", "return", "label", "order"]
    weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
    for n in range(DOCUMENTS):
        body = " ".join(draw.choices(words, weights, k=draw.randint(*WORDS_PER_DOCUMENT)))
        sub = folder / f"section{n % 25:02}"
        sub.mkdir(exist_ok=True)
        kind = n % 3
        if kind == 0:
            (sub / f"doc{n}.md").write_text(f"# Document {n}\n\n{body}\n")
        elif kind == 1:
            (sub / f"doc{n}.txt").write_text(f"Document {n}\n{body}\n")
        else:
            html = f"<html><head><title>Document {n}</title></head><body><p>{body}</p></body>"
            (sub / f"doc{n}.html").write_text(html + "</html>\n")


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def median_ms(action: Callable[[], object], rounds: int = ROUNDS) -> float:
    return statistics.median(timed(action) for _ in range(rounds))


def _searcher(index: DocumentIndex, query: str) -> Callable[[], object]:
    return lambda: index.search(match_expression(query), 10, personal=True)


def _caller(context: ToolContext, query: str) -> Callable[[], object]:
    return lambda: search_documents.execute({"query": query}, context)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        docs, data = Path(tmp) / "docs", Path(tmp) / "data"
        docs.mkdir()
        corpus(docs)
        workspace = Workspace(documents=docs, data_dir=data)
        context = ToolContext(user=User("admin", is_admin=True), workspace=workspace)
        with DocumentIndex(docs, index_dir(workspace)) as index:
            build = timed(index.refresh)
            unchanged = median_ms(index.refresh, 5)
            for n in range(0, 150, 3):
                path = docs / f"section{n % 25:02}" / f"doc{n}.md"
                path.write_text(path.read_text() + "\nrefund appended\n")
            changed = timed(index.refresh)
            bare = {q: median_ms(_searcher(index, q)) for q in QUERIES}
        print(f"corpus: {DOCUMENTS} documents, {VOCABULARY} distinct words")
        print(f"index build (from nothing): {build:8.0f} ms")
        print(f"refresh, nothing changed:   {unchanged:8.1f} ms")
        print(f"refresh, 50 changed:        {changed:8.1f} ms")
        print(f"{'query':28} {'search_documents':>17} {'bare FTS5':>10}")
        worst = 0.0
        for query in QUERIES:
            tool = median_ms(_caller(context, query))
            worst = max(worst, tool)
            print(f"{query!r:28} {tool:14.1f} ms {bare[query]:7.2f} ms")
        verdict = "under" if worst < TARGET_MS else "OVER"
        print(f"slowest query: {worst:.1f} ms ({verdict} the {TARGET_MS:.0f} ms target)")


if __name__ == "__main__":
    main()
