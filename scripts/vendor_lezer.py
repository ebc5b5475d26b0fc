#!/usr/bin/env python3
"""Vendor the Lezer highlighter into the inspector's static files (run it to update them).

    python scripts/vendor_lezer.py            # the versions pinned below
    python scripts/vendor_lezer.py --latest   # each package's newest version, then pin it here

Fetches each package's tarball with ``npm pack`` (the npm registry), and copies its ES module
(``dist/index.js``) to ``src/toolwire/inspector/static/vendor/lezer/<name>.js`` with its bare
imports (``'@lezer/common'``) rewritten to the sibling files (``'./common.js'``): the page has
no bundler and no import map (an import map is an inline script, which the CSP forbids).
Nothing else in the files changes. Each package's licence is kept beside it, and README.md
lists what was vendored, from where, at which version.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src/toolwire/inspector/static/vendor/lezer"
# Package -> version. The parser runtime first, then one grammar per language the code tools
# name (see toolwire.tools.builtin.code.LANGUAGES); a language without a grammar stays plain.
PINNED = {
    "@lezer/common": "1.5.5",
    "@lezer/highlight": "1.2.5",
    "@lezer/lr": "1.4.12",
    "@lezer/css": "1.3.9",
    "@lezer/go": "1.0.1",
    "@lezer/html": "1.3.13",
    "@lezer/javascript": "1.5.6",
    "@lezer/json": "1.0.3",
    "@lezer/php": "1.0.6",
    "@lezer/python": "1.1.19",
    "@lezer/rust": "1.0.3",
    "@lezer/yaml": "1.0.4",
}
_IMPORT = re.compile(r"""(from\s+)(['"])@lezer/([a-z]+)\2""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latest", action="store_true", help="take each newest version")
    args = parser.parse_args()
    TARGET.mkdir(parents=True, exist_ok=True)
    versions = {}
    with tempfile.TemporaryDirectory() as scratch:
        for package, pinned in PINNED.items():
            spec = package if args.latest else f"{package}@{pinned}"
            versions[package] = vendor(spec, package, Path(scratch))
    write_readme(versions)
    print(json.dumps(versions, indent=2))
    return 0


def vendor(spec: str, package: str, scratch: Path) -> str:
    """Copy one package's module and licence; return the version vendored."""
    packed = subprocess.run(
        ["npm", "pack", "--silent", spec], cwd=scratch, check=True, capture_output=True, text=True
    ).stdout.split()[-1]
    with tarfile.open(scratch / packed) as archive:
        archive.extractall(scratch / packed.removesuffix(".tgz"), filter="data")
    source = scratch / packed.removesuffix(".tgz") / "package"
    meta = json.loads((source / "package.json").read_text())
    name = package.split("/")[1]
    code = (source / "dist/index.js").read_text(encoding="utf-8")
    rewritten = _IMPORT.sub(lambda m: f"{m[1]}{m[2]}./{m[3]}.js{m[2]}", code)
    if re.search(r"""(from|import)\s*\(?\s*['"]@""", rewritten):
        raise SystemExit(f"{package}: an import was not rewritten")
    (TARGET / f"{name}.js").write_text(rewritten, encoding="utf-8")
    (TARGET / f"LICENSE-{name}").write_text((source / "LICENSE").read_text(encoding="utf-8"))
    version: str = meta["version"]
    return version


def write_readme(versions: dict[str, str]) -> None:
    short = {name: name.split("/")[1] for name in versions}
    rows = "\n".join(
        f"| `{short[name]}.js` | `{name}` | {version} | MIT (`LICENSE-{short[name]}`) |"
        for name, version in versions.items()
    )
    (TARGET / "README.md").write_text(README.format(rows=rows), encoding="utf-8")


README = """# Lezer, vendored

The inspector highlights `code` artifacts with [Lezer](https://lezer.codemirror.net/), the
parser system of CodeMirror, maintained by Marijn Haverbeke. Its `highlightCode` function
calls back with each piece of text and its classes, so the page builds text nodes and
`<span class>` elements itself: no HTML string is ever made, and the page's CSP (no inline
script, Trusted Types with no policy) holds. `../../js/codehighlight.js` is the only importer.

| file | npm package | version | licence |
|---|---|---|---|
{rows}

Each file is the package's `dist/index.js`, unchanged except that its imports of other
`@lezer/*` packages name the sibling file (`'./common.js'`), since the page has no bundler and
no import map. To update, run `python scripts/vendor_lezer.py --latest` (it uses `npm pack`),
pin the versions it prints in that script's `PINNED`, and run the browser tests
(`tests/browser/test_viewer.py` highlights every vendored language).
"""


if __name__ == "__main__":
    sys.exit(main())
