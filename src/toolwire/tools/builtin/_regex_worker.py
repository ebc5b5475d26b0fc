"""Regex search worker, run as ``python -I _regex_worker.py`` with a JSON job on stdin.

It runs in its own process because Python's ``re`` cannot be interrupted: a catastrophic pattern
(``(a+)+$`` on a long line) would otherwise hold the run forever. The parent kills this process
when its time budget ends. It imports the standard library only (``-I`` keeps the parent's
environment and packages out).
"""

import json
import re
import sys


def main() -> None:
    job = json.load(sys.stdin)
    flags = re.IGNORECASE if job["ignore_case"] else 0
    pattern = re.compile(job["pattern"], flags)
    matches: list[list[object]] = []
    for shown, path in job["files"]:
        with open(path, "rb") as handle:
            data = handle.read(job["max_file_bytes"]).decode("utf-8", "replace")
        for number, line in enumerate(data.splitlines(), start=1):
            clipped = line[: job["max_line_chars"]]
            if pattern.search(clipped):
                matches.append([shown, number, clipped])
                if len(matches) >= job["max_matches"]:
                    json.dump({"matches": matches, "truncated": True}, sys.stdout)
                    return
    json.dump({"matches": matches, "truncated": False}, sys.stdout)


if __name__ == "__main__":
    main()
