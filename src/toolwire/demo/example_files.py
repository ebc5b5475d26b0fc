"""The example scripts and workspace files that ``toolwire examples`` writes out.

They ship inside the package (``toolwire/demo/examples/``, the one copy; a checkout's
``examples`` folder is a link to it), so the documented commands such as
``--script examples/shop.yaml`` work from an installed wheel as well as from a checkout.
The scripts replay turns over the demo workspace (see :func:`toolwire.demo.prepare_demo`);
``mcp.toml`` starts the ``mcp-server-time`` server, which is installed on its own.

Writing never replaces a file that differs from the example unless asked to: every file is
checked before the first is written, so a refusal leaves the folder as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from toolwire.core.errors import ConfigError

EXAMPLES_DIR = Path(__file__).with_name("examples")
NEEDS_INSTALL = {"mcp.toml": "pip install mcp-server-time"}  # what a file's server needs


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    """What writing the examples did: the files written, and those already identical."""

    folder: Path
    written: tuple[str, ...]
    unchanged: tuple[str, ...]


def example_names() -> list[str]:
    """The examples' file names, sorted."""
    return sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".yaml", ".toml"))


def write_examples(folder: Path, *, force: bool = False) -> Written:
    """Write every example into ``folder`` (created if missing).

    A file already there with the example's bytes is left alone; one that differs is refused
    (a ``ConfigError`` naming each) unless ``force``, and then nothing is written."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} exists and is not a folder")
    sources = {name: (EXAMPLES_DIR / name).read_bytes() for name in example_names()}
    unchanged = [n for n, data in sources.items() if _holds(folder / n, data)]
    differing = [n for n in sources if (folder / n).exists() and n not in unchanged]
    if differing and not force:
        named = ", ".join(str(folder / n) for n in differing)
        raise ConfigError(f"would overwrite {named}; pass --force to replace them")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = [n for n in sources if n not in unchanged]
        for name in written:
            (folder / name).write_bytes(sources[name])
    except OSError as exc:
        raise ConfigError(f"cannot write the examples to {folder}: {exc.strerror or exc}") from None
    return Written(folder=folder, written=tuple(written), unchanged=tuple(unchanged))


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.is_file() and path.read_bytes() == data
    except OSError:
        return False
