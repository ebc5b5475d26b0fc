"""Regex search worker, run as ``python -I _regex_worker.py`` with a JSON job on stdin.

It runs in its own process because Python's ``re`` cannot be interrupted: a catastrophic pattern
(``(a+)+$`` on a long line) would otherwise hold the run forever. The parent kills this process
when its time budget ends. It imports the standard library only, so the job carries, as data,
the redactor's catalogue (``masks``: source, flags, template, keywords, in order) and the
private-key content test (``secret_content``); where the run's zone reads personal data masked,
``personal`` is the path of ``toolwire/core/personal.py`` (itself standard library only), loaded
from that file so its shapes and checks (Luhn, mod 97) have one home.

What the model may see is what is searched: each line is masked first (secrets, then personal
data), then cut, then matched, and a matching line is reported masked. A file whose content is
secret is skipped whole.
"""

import importlib.util
import json
import re
import sys
from collections.abc import Callable

Mask = tuple["re.Pattern[str]", str, list[str]]


def compile_masks(spec: list[list[object]]) -> list[Mask]:
    """The catalogue from its JSON form: [source, flags, template, keywords] per pattern."""
    masks: list[Mask] = []
    for source, flags, template, keywords in spec:
        assert isinstance(flags, int) and isinstance(keywords, list)
        masks.append((re.compile(str(source), flags), str(template), [str(k) for k in keywords]))
    return masks


def mask(line: str, masks: list[Mask]) -> str:
    lowered = line.lower()
    for pattern, template, keywords in masks:
        if not keywords or any(word in lowered for word in keywords):
            line = pattern.sub(template, line)
    return line


def personal_masker(path: object) -> Callable[[str], str]:
    """The personal-data mask of the module at ``path``; None: personal data is shown."""
    if path is None:
        return _as_it_is
    spec = importlib.util.spec_from_file_location("_toolwire_personal", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is made
    spec.loader.exec_module(module)
    masker: Callable[[str], str] = module.mask_personal
    return masker


def _as_it_is(text: str) -> str:
    return text


def main() -> None:
    job = json.load(sys.stdin)
    flags = re.IGNORECASE if job["ignore_case"] else 0
    pattern = re.compile(job["pattern"], flags)
    secret = re.compile(job["secret_content"].encode("ascii"))
    masks = compile_masks(job["masks"])
    personal = personal_masker(job["personal"])
    matches: list[list[object]] = []
    for shown, path in job["files"]:
        with open(path, "rb") as handle:
            raw = handle.read(job["max_file_bytes"])
        if secret.search(raw):
            continue
        for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
            visible = personal(mask(line, masks))[: job["max_line_chars"]]
            if pattern.search(visible):
                matches.append([shown, number, visible])
                if len(matches) >= job["max_matches"]:
                    json.dump({"matches": matches, "truncated": True}, sys.stdout)
                    return
    json.dump({"matches": matches, "truncated": False}, sys.stdout)


if __name__ == "__main__":
    main()
